"""Who labelled what, and when: each answer keeps its annotator and time in labels.csv; a
second annotator's label of the same abstract sits beside the first (the same annotator's
replaces their own); ``tagger labels`` exports the labels with their texts, and
``--agreement`` gives Cohen's kappa and the disagreements to review."""

import csv
import io
import json
import re
import shutil
import sys

import pytest
from conftest import ROOT, run
from hypothesis import given
from hypothesis import strategies as st

from tagger.errors import TaggerWarning
from tagger.labels import load_training_set
from tagger.labelstore import ProjectLabels
from tagger.reading import Abstract, abstract_id

AREAS = ["robotics", "theory", "vision"]
TEXTS = [
    "A quadruped robot learns to climb stairs from proprioception alone.",
    "We prove a regret bound for contextual bandits with linear rewards.",
    "A diffusion model generates images of faces from text prompts.",
    "We quantize the weights of language models to four bits for faster inference.",
    "Membership inference attacks recover which records trained a model.",
    "Graph neural networks predict the properties of molecules for drug discovery.",
]


@pytest.fixture
def project(tmp_path):
    """A project of its own areas, no labels yet (labels.csv as tagger init --empty makes it)."""
    (tmp_path / "labels").mkdir()
    shutil.copy(ROOT / "labels" / "areas.csv", tmp_path / "labels")
    (tmp_path / "labels" / "labels.csv").write_text("abstract_id,area,title,annotator,labelled_at\n")
    (tmp_path / "seeds").mkdir()
    return tmp_path


def abstract(i: int) -> Abstract:
    return Abstract(f"p{i}", TEXTS[i], "pile.jsonl", i + 1, i + 1)


def rows(project) -> list[dict]:
    return list(csv.DictReader(io.StringIO((project / "labels" / "labels.csv").read_text(encoding="utf-8"))))


def test_each_answer_keeps_its_annotator_and_time(project):
    ProjectLabels(project / "labels", project / "seeds", annotator="alice").add(abstract(0), "robotics")
    [row] = rows(project)
    assert row["annotator"] == "alice" and row["abstract_id"] == abstract_id(TEXTS[0])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", row["labelled_at"]), row


def test_two_annotators_labels_sit_side_by_side_and_ones_own_relabel_replaces_ones_own(project):
    alice = ProjectLabels(project / "labels", project / "seeds", annotator="alice")
    bob = ProjectLabels(project / "labels", project / "seeds", annotator="bob")
    alice.add(abstract(2), "vision")
    bob.add(abstract(2), "generative")
    alice.add(abstract(2), "generative")  # alice changes her mind: her label is replaced
    assert sorted((r["annotator"], r["area"]) for r in rows(project)) == [
        ("alice", "generative"),
        ("bob", "generative"),
    ]
    undo = bob.add(abstract(2), "safety")
    assert bob.undo(undo) and sorted(r["area"] for r in rows(project)) == ["generative", "generative"]


def test_a_label_without_an_annotator_is_replaced_by_anyones_answer(project):
    (project / "labels" / "labels.csv").write_text(
        f"abstract_id,area,title\n{abstract_id(TEXTS[1])},vision,\n"
    )
    with pytest.warns(
        TaggerWarning, match=r"labels\.csv: added the columns annotator, labelled_at, answer_id"
    ):
        ProjectLabels(project / "labels", project / "seeds", annotator="carol").add(abstract(1), "theory")
    assert [(r["annotator"], r["area"]) for r in rows(project)] == [("carol", "theory")]


def test_disagreeing_annotators_leave_the_abstract_out_of_training_with_a_warning(project):
    for i, area in enumerate(["robotics", "theory", "generative", "systems", "safety", "science"]):
        ProjectLabels(project / "labels", project / "seeds", annotator="alice").add(abstract(i), area)
    ProjectLabels(project / "labels", project / "seeds", annotator="bob").add(abstract(0), "rl")
    ProjectLabels(project / "labels", project / "seeds", annotator="bob").add(abstract(1), "theory")
    with pytest.warns(
        TaggerWarning, match=r"1 abstract\(s\) labelled differently by two annotators: left out"
    ):
        training = load_training_set(project / "labels", [project / "seeds"])
    assert sorted(training.texts) == sorted(TEXTS[1:])


def test_labels_are_exported_with_their_texts_and_annotators_agreement_measured(project, capsys, monkeypatch):
    from sklearn.metrics import cohen_kappa_score

    monkeypatch.chdir(project)
    alice_areas = ["robotics", "theory", "generative", "systems", "safety", "science"]
    bob_areas = ["robotics", "theory", "vision", "systems", "safety", "optimization"]
    for who, areas in (("alice", alice_areas), ("bob", bob_areas)):
        store = ProjectLabels(project / "labels", project / "seeds", annotator=who)
        for i, area in enumerate(areas):
            store.add(abstract(i), area)
    status, out, _ = run(capsys, "labels")
    exported = [json.loads(line) for line in out.splitlines()]
    assert status == 0 and len(exported) == 12
    assert {(e["annotator"], e["abstract"], e["area"]) for e in exported} == {
        (who, TEXTS[i], areas[i])
        for who, areas in (("alice", alice_areas), ("bob", bob_areas))
        for i in range(6)
    }
    assert all(e["abstract_id"] == abstract_id(e["abstract"]) and e["labelled_at"] for e in exported)
    status, out, _ = run(capsys, "labels", "--agreement")
    kappa = cohen_kappa_score(alice_areas, bob_areas)
    assert status == 0
    assert (
        f"alice and bob: 6 abstracts labelled by both, agreeing on 4 (67%), Cohen's kappa {kappa:.2f}" in out
    )
    assert "2 disagreement(s): none settled by review yet" in out
    for i in (2, 5):
        assert re.search(rf"  p{i}  alice {alice_areas[i]}, bob {bob_areas[i]}", out), out  # (its file's id)
    status, _, _ = run(capsys, "labels", "-o", project / "labels.jsonl")
    assert status == 0 and len((project / "labels.jsonl").read_text().splitlines()) == 12


def test_a_label_added_by_hand_without_annotator_and_time_is_read(project):
    """The README says to add abstract_id, area and title by hand: a row without the two
    columns the store adds is a label, by nobody named."""
    ProjectLabels(project / "labels", project / "seeds", annotator="alice").add(abstract(0), "robotics")
    with open(project / "labels" / "labels.csv", "a", encoding="utf-8") as stream:
        stream.write(f"{abstract_id(TEXTS[1])},theory,by hand\n")
    (project / "seeds" / "more.jsonl").write_text(json.dumps({"abstract": TEXTS[1]}) + "\n")
    training = load_training_set(project / "labels", [project / "seeds"])
    assert sorted(zip(training.texts, training.labels)) == sorted(
        [(TEXTS[0], "robotics"), (TEXTS[1], "theory")]
    )
    ProjectLabels(project / "labels", project / "seeds", annotator="bo").add(abstract(1), "rl")  # replaces it
    assert [(r["annotator"], r["area"]) for r in rows(project)] == [("alice", "robotics"), ("bo", "rl")]


def test_labels_outside_a_project_is_one_clear_error(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for options in ([], ["--agreement"]):
        status, out, err = run(capsys, "labels", *options)
        assert (status, out) == (2, "") and err.startswith(
            "tagger: labels/labels.csv: file not found. Run 'tagger init'"
        )


def test_the_annotator_is_the_login_or_the_option(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    monkeypatch.setattr("getpass.getuser", lambda: "login-name")
    for i, option in ((0, []), (1, ["--annotator", "dana"])):
        (project / f"pile{i}.txt").write_text(TEXTS[2 * i] + "\n\n" + TEXTS[2 * i + 1] + "\n")
        monkeypatch.setattr(sys, "stdin", io.StringIO("robotics\ntheory\n"))
        status, _, err = run(capsys, "label", f"pile{i}.txt", "--n", "2", *option)
        assert status == 0, err
    who = {r["abstract_id"]: r["annotator"] for r in rows(project)}
    assert [who[abstract_id(text)] for text in TEXTS[:4]] == ["login-name"] * 2 + ["dana"] * 2


def test_an_annotator_s_name_is_trimmed_and_checked_at_every_door(project, capsys, monkeypatch):
    """' ana' is ana (her own answers are hers: her relabel replaces them); a name with a line
    end, a comma or nothing in it is refused with one clear line, by the command line and by
    Python alike."""
    from tagger.errors import ArgumentError

    monkeypatch.chdir(project)
    ProjectLabels("labels", "seeds", annotator="ana").add(abstract(0), "robotics")
    ProjectLabels("labels", "seeds", annotator=" ana ").add(abstract(0), "theory")
    assert [(r["annotator"], r["area"]) for r in rows(project)] == [("ana", "theory")]
    (project / "pile.txt").write_text(TEXTS[1] + "\n")
    for name in ("a\nb", "ana,ben", "  ", "x" * 65):
        monkeypatch.setattr(sys, "stdin", io.StringIO("theory\n"))
        status, _, err = run(capsys, "label", "pile.txt", "--n", "1", "--annotator", name)
        assert status == 1 and "the annotator's name" in err and "Traceback" not in err, (name, err)
        with pytest.raises(ArgumentError, match="the annotator's name"):
            ProjectLabels("labels", "seeds", annotator=name)
    status, _, err = run(capsys, "label", "pile.txt", "--web", "--annotators", "ana,b\tc")
    assert status == 1 and "the annotator's name 'b\\tc' holds '\\t'" in err, err
    assert len(rows(project)) == 1


def test_one_name_on_a_page_with_overlap_gets_that_annotator_s_queue(project, monkeypatch):
    """--annotators ana --overlap: ana's queue leaves out what ana labelled, not what the
    person who runs the page labelled."""
    from tagger.model import load_model
    from tagger.project import Project

    monkeypatch.chdir(project)
    monkeypatch.setattr("getpass.getuser", lambda: "runner")
    ProjectLabels("labels", "seeds", annotator="ana").add(abstract(0), "robotics")
    ProjectLabels("labels", "seeds", annotator="runner").add(abstract(1), "theory")
    here = Project()
    pile = [abstract(i) for i in range(4)]
    desks = here.desks(pile, load_model(), here.store(), 4, names=["ana"], overlap=True)
    queue, store = desks["ana"]
    assert store.annotator == "ana"
    assert sorted(item.abstract.id for item in queue) == ["p1", "p2", "p3"]


@given(
    st.lists(
        st.one_of(
            st.tuples(
                st.just("answer"), st.sampled_from(["ann", "bo"]), st.integers(0, 3), st.sampled_from(AREAS)
            ),
            st.tuples(st.just("undo"), st.sampled_from(["ann", "bo"])),
        ),
        max_size=25,
    )
)
def test_two_annotators_answers_and_undos_leave_each_ones_latest_label(tmp_path_factory, steps):
    """Any sequence of two annotators' answers and undos: labels.csv holds, for each abstract
    and annotator, exactly the area that annotator last gave and did not take back."""
    folder = tmp_path_factory.mktemp("team")
    (folder / "labels").mkdir()
    shutil.copy(ROOT / "labels" / "areas.csv", folder / "labels")
    (folder / "labels" / "labels.csv").write_text("abstract_id,area,title,annotator,labelled_at\n")
    stores = {who: ProjectLabels(folder / "labels", folder / "seeds", annotator=who) for who in ("ann", "bo")}
    expected: dict[tuple[str, str], str] = {}
    done: dict[str, list] = {"ann": [], "bo": []}
    for step in steps:
        if step[0] == "answer":
            _, who, i, area = step
            key = (abstract_id(TEXTS[i]), who)
            done[who].append((key, expected.get(key), stores[who].add(abstract(i), area)))
            expected[key] = area
        elif done[step[1]]:
            key, before, receipt = done[step[1]].pop()
            assert stores[step[1]].undo(receipt)
            if before is None:
                expected.pop(key)
            else:
                expected[key] = before
    held = rows(folder)
    assert {(r["abstract_id"], r["annotator"]): r["area"] for r in held} == expected and len(held) == len(
        expected
    )


def test_undo_never_takes_back_another_session_s_answer_of_the_same_annotator(project):
    """Two terminals as ana (the login name: the usual case): A answers, B gives the same answer
    a moment later, then A undoes. B's answer was saved and stays: A's answer is no longer
    there to take back (the two were the same bytes, and undo took B's)."""
    labels = project / "labels"
    first, second = (ProjectLabels(labels, project / "seeds", annotator="ana") for _ in range(2))
    mine = first.add(abstract(0), "robotics")
    second.add(abstract(0), "robotics")
    assert not first.undo(mine)
    assert [(r["annotator"], r["area"]) for r in rows(project)] == [("ana", "robotics")]


@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("answer"), st.integers(0, 1), st.integers(0, 2), st.sampled_from(AREAS[:2])),
            st.tuples(st.just("undo"), st.integers(0, 1)),
        ),
        max_size=25,
    )
)
def test_two_sessions_of_one_annotator_undo_only_their_own_answers(tmp_path_factory, steps):
    """Any interleaving of two sessions of one annotator (answers, often alike, and undos): an
    undo takes back its session's answer only while that answer is the label, and then puts
    back what the answer replaced; labels.csv holds each abstract's label as that says."""
    folder = tmp_path_factory.mktemp("sessions")
    (folder / "labels").mkdir()
    shutil.copy(ROOT / "labels" / "areas.csv", folder / "labels")
    (folder / "labels" / "labels.csv").write_text("abstract_id,area,title,annotator,labelled_at\n")
    sessions = [ProjectLabels(folder / "labels", folder / "seeds", annotator="ana") for _ in range(2)]
    label: dict[int, tuple[int, str] | None] = {}  # abstract -> (answer number, area)
    receipts: list[list] = [[], []]
    for number, step in enumerate(steps):
        if step[0] == "answer":
            _, who, i, area = step
            receipts[who].append((number, i, label.get(i), sessions[who].add(abstract(i), area)))
            label[i] = (number, area)
        elif receipts[step[1]]:
            number_, i, before, receipt = receipts[step[1]].pop()
            still = label.get(i) is not None and label[i][0] == number_
            assert sessions[step[1]].undo(receipt) == still
            if still:
                label[i] = before
    expected = {abstract_id(TEXTS[i]): held[1] for i, held in label.items() if held is not None}
    assert {r["abstract_id"]: r["area"] for r in rows(folder)} == expected
    assert len(rows(folder)) == len(expected)


def test_a_labels_header_of_another_case_is_the_same_columns(project, capsys, monkeypatch):
    """``Annotator`` is ``annotator``: agreement finds both annotators, and the next answer
    neither adds a second column nor sees a false conflict."""
    monkeypatch.chdir(project)
    (project / "labels" / "labels.csv").write_text("Abstract_ID,Area,Title,Annotator,Labelled_At,Answer_ID\n")
    for who, area in (("alice", "robotics"), ("bob", "theory")):
        ProjectLabels(project / "labels", project / "seeds", annotator=who).add(abstract(0), area)
    ProjectLabels(project / "labels", project / "seeds", annotator="alice").add(abstract(0), "vision")
    lines = (project / "labels" / "labels.csv").read_text().splitlines()
    assert lines[0] == "Abstract_ID,Area,Title,Annotator,Labelled_At,Answer_ID" and len(lines) == 3
    assert [(r["Annotator"], r["Area"]) for r in rows(project)] == [("alice", "vision"), ("bob", "theory")]
    status, out, _ = run(capsys, "labels", "--agreement")
    assert status == 0 and "alice and bob: 1 abstracts labelled by both, agreeing on 0" in out


def test_kappa_on_a_handful_of_shared_abstracts_says_it_means_little_yet(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    for who, areas in (("alice", ["robotics", "theory"]), ("bob", ["robotics", "vision"])):
        store = ProjectLabels(project / "labels", project / "seeds", annotator=who)
        for i, area in enumerate(areas):
            store.add(abstract(i), area)
    status, out, _ = run(capsys, "labels", "--agreement")
    assert status == 0 and out.splitlines()[0].endswith(
        "(on 2: too few to mean much yet; 20 or more shared abstracts measure it)"
    )


ROUND_TRIP = [
    "A quadruped robot learns to climb stairs from proprioception alone.",
    "A robot arm folds towels from twenty human demonstrations.",
    "A mobile manipulator navigates a kitchen and grasps unseen objects.",
    "We prove a regret bound for contextual bandits with linear rewards.",
    "A lower bound on the sample complexity of learning halfspaces.",
    "Convergence rates of stochastic gradient descent on convex losses.",
    "A diffusion model generates images of faces from text prompts.",
    "We quantize the weights of language models to four bits for faster inference.",
]


def test_the_labels_export_trains_as_it_is_one_label_per_abstract(project, capsys, monkeypatch):
    """labels -> export -> train --data: two annotators' labels of one abstract were refused
    ("labelled 'beta' at ... and 'alpha' here"); alike they are one label, different they are
    left out with a count, as the project's own labels are."""
    monkeypatch.chdir(project)
    agreed = ["robotics"] * 3 + ["theory"] * 3
    for who, last in (("alice", ["generative", "llm"]), ("bob", ["vision", "systems"])):
        store = ProjectLabels(project / "labels", project / "seeds", annotator=who)
        for i, area in enumerate(agreed + last):
            store.add(Abstract(f"p{i}", ROUND_TRIP[i], "pile.jsonl", i + 1, i + 1), area)
    for name in ("export.csv", "export.jsonl"):
        assert run(capsys, "labels", "-o", name)[0] == 0
        status, _, err = run(capsys, "train", "--data", name, "--model", f"model-{name}")
        assert status == 0, err
        assert "2 abstract(s) labelled differently by two annotators: left out of training" in err
        assert "trained on 6 labelled abstracts" in err


def test_several_people_overlapping_on_a_labelled_file_is_refused_before_anything_is_written(tmp_path):
    """--data mine.csv --web --annotators ana,ben --overlap: both answered t0936 and the file
    kept one row, no annotator, while both pages said saved. A labelled file keeps one answer
    an abstract: the combination is refused (dealing the queue out between them still works)."""
    from tagger.errors import UsageError
    from tagger.model import load_model
    from tagger.project import Project

    mine = tmp_path / "mine.csv"
    mine.write_text("abstract,area\n" + "".join(f'"{text}",robotics\n' for text in TEXTS[:2]))
    before = mine.read_bytes()
    here = Project(data=str(mine))
    pile = [abstract(i) for i in range(2, 6)]
    with pytest.raises(
        UsageError, match="--overlap with --data: a labelled file keeps one answer an abstract"
    ):
        here.desks(pile, load_model(), here.store(), 4, names=["ana", "ben"], overlap=True)
    dealt = here.desks(pile, load_model(), here.store(), 4, names=["ana", "ben"], overlap=False)
    assert sorted(len(queue) for queue, _ in dealt.values()) == [2, 2]
    assert mine.read_bytes() == before


def test_a_share_of_overlap_shows_that_share_of_each_queue_to_a_second_annotator(
    tmp_path, monkeypatch, capsys
):
    """--overlap 0.2 with a page of several people: the queue is dealt out, and a fifth of each
    one's abstracts goes to the next one too (agreement on part of the queue, for a fifth of
    the work); alone, a share has no second person to go to: one clear error."""
    from tagger.model import load_model
    from tagger.project import Project

    monkeypatch.chdir(tmp_path)
    (tmp_path / "labels").mkdir()
    shutil.copy(ROOT / "labels" / "areas.csv", tmp_path / "labels")
    here = Project()
    from conftest import SEED_FILES

    from tagger.reading import read_abstracts

    pile = [a._replace(id=f"p{i}") for i, a in enumerate(list(read_abstracts(SEED_FILES))[:20])]
    desks = here.desks(pile, load_model(), here.store(), 20, names=["ana", "ben"], overlap=0.2)
    assert all(len({item.abstract.id for item in queue}) == len(queue) for queue, _ in desks.values())
    ana, ben = ({item.abstract.id for item in desks[name][0]} for name in ("ana", "ben"))
    assert len(ana & ben) == 4 and len(ana | ben) == 20  # a fifth of each one's ten, and every one
    assert len(ana) == len(ben) == 12
    whole = here.desks(pile, load_model(), here.store(), 20, names=["ana", "ben"], overlap=1.0)
    assert all(len(queue) == 20 for queue, _ in whole.values())
    (tmp_path / "pile.jsonl").write_text("".join(json.dumps({"abstract": a.text}) + "\n" for a in pile))
    status, _, err = run(capsys, "label", "pile.jsonl", "--overlap", "0.2")
    assert status == 1 and "--overlap 0.2 shows a share of each one's abstracts to a second person" in err
    status, _, err = run(capsys, "label", "pile.jsonl", "--overlap", "1.5")
    assert status == 1 and "'1.5' is no share" in err
