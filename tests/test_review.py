"""A review settles disagreements: ``tagger label --review`` walks the abstracts whose
annotators disagree, shows each one's answer, and records the reviewer's final label, which
training uses; the export marks it; agreement figures are of the annotators alone."""

import csv
import io
import json
import sys

import pytest
from conftest import copy_project, run

from tagger.labels import labelled, load_training_set
from tagger.labelstore import REVIEW, ProjectLabels
from tagger.reading import read_abstracts

PILE = [
    ("A quadruped robot learns to climb stairs from proprioception.", "robotics", "rl"),
    ("We prove a regret bound for contextual bandits with linear rewards.", "theory", "theory"),
    ("A diffusion model generates images from text prompts in four steps.", "generative", "vision"),
    ("Membership inference attacks recover which records trained a language model.", "safety", "safety"),
]


@pytest.fixture
def project(tmp_path, monkeypatch):
    """Two annotators' labels of four abstracts, disagreeing on two."""
    copy_project(tmp_path, ("labels", "seeds", "models"))
    path = tmp_path / "pile.jsonl"
    path.write_text(
        "".join(json.dumps({"id": f"p{i}", "abstract": t}) + "\n" for i, (t, _, _) in enumerate(PILE))
    )
    abstracts = list(read_abstracts([path]))
    for name, column in (("ana", 1), ("ben", 2)):
        store = ProjectLabels(tmp_path / "labels", tmp_path / "seeds", name)
        for abstract, row in zip(abstracts, PILE):
            store.add(abstract, row[column])
    monkeypatch.chdir(tmp_path)
    return tmp_path


def label_rows(folder) -> list[dict]:
    return list(csv.DictReader(io.StringIO((folder / "labels" / "labels.csv").read_text(encoding="utf-8"))))


def test_a_review_settles_each_disagreement_with_a_final_label_training_uses(project, monkeypatch, capsys):
    with pytest.warns(UserWarning, match="2 abstract"):
        before = load_training_set("labels", ["seeds"])
    assert len(before.labels) == 38 + 2  # the two they agree on; the two they disagree on left out
    monkeypatch.setattr(sys, "stdin", io.StringIO("rl\nvision\n"))
    status, out, err = run(capsys, "label", "--review", "--annotator", "rita")
    assert status == 0, err
    assert out.count("annotators said ") == 2
    assert "annotators said ana robotics, ben rl; your answer is the final label" in out
    assert "labelled 2, skipped 0" in err
    finals = [row for row in label_rows(project) if row["role"] == REVIEW]
    assert [(r["annotator"], r["area"]) for r in finals] == [("rita", "rl"), ("rita", "vision")]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no disagreement is left out any more
        after = load_training_set("labels", ["seeds"])
    assert len(after.labels) == 38 + 4
    by_text = dict(zip(after.texts, after.labels))
    assert by_text[PILE[0][0]] == "rl" and by_text[PILE[2][0]] == "vision"
    # nothing left to review
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    status, _, err = run(capsys, "label", "--review", "--annotator", "rita")
    assert status == 0 and "nothing to review: every disagreement has a final label" in err


def test_the_export_marks_the_final_labels_and_trains_as_the_project_does(project, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("rl\nvision\n"))
    assert run(capsys, "label", "--review", "--annotator", "rita")[0] == 0
    assert run(capsys, "labels", "-o", "all.csv")[0] == 0
    rows = list(csv.DictReader(io.StringIO((project / "all.csv").read_text(encoding="utf-8"))))
    assert [(r["annotator"], r["role"]) for r in rows if r["annotator"] == "rita"] == [("rita", REVIEW)] * 2
    from_export = labelled("all.csv")
    assert sorted(zip(from_export.texts, from_export.labels)) == sorted(zip(*_project_labels()))
    assert len(from_export.labels) == 4 + 38


def _project_labels():
    training_set = load_training_set("labels", ["seeds"])
    return training_set.texts, training_set.labels


def test_agreement_is_of_the_annotators_and_says_what_the_review_settled(project, monkeypatch, capsys):
    status, out, _ = run(capsys, "labels", "--agreement")
    assert status == 0 and "ana and ben: 4 abstracts labelled by both, agreeing on 2 (50%)" in out
    assert "2 disagreement(s): none settled by review yet ('tagger label --review' settles them)" in out
    monkeypatch.setattr(sys, "stdin", io.StringIO("rl\n"))
    assert run(capsys, "label", "--review", "--annotator", "rita", "--n", "1")[0] == 0
    status, out, _ = run(capsys, "labels", "--agreement")
    assert (
        "ana and ben: 4 abstracts labelled by both, agreeing on 2 (50%)" in out
    )  # the reviewer is no annotator
    assert "rita" not in out.split("disagreement")[0]
    assert "2 disagreement(s): 1 settled by review, 1 to review" in out
    assert "ana robotics, ben rl -> rl (rita)" in out


def test_a_review_answer_is_undone_and_an_annotator_never_replaces_a_final_label(
    project, monkeypatch, capsys
):
    monkeypatch.setattr(sys, "stdin", io.StringIO("rl\nu\nrobotics\nq\n"))
    assert run(capsys, "label", "--review", "--annotator", "rita")[0] == 0
    finals = [row for row in label_rows(project) if row["role"] == REVIEW]
    assert [r["area"] for r in finals] == ["robotics"]
    # ana answering again replaces her own label, not the reviewer's
    abstract = next(iter(read_abstracts(["pile.jsonl"])))
    ProjectLabels("labels", "seeds", "ana").add(abstract, "vision")
    rows = label_rows(project)
    assert [r["area"] for r in rows if r["role"] == REVIEW] == ["robotics"]
    assert next(r["area"] for r in rows if r["annotator"] == "ana") == "vision"


def later_answers(monkeypatch) -> None:
    """Every answer from now on a second after the one before, all after the fixture's."""
    from tagger import labelstore

    seconds = iter(range(10**6))
    monkeypatch.setattr(
        labelstore, "_now", lambda: f"2100-01-01T00:{next(seconds) // 60:02d}:{next(seconds) % 60:02d}Z"
    )


@pytest.mark.parametrize("ben_too", [True, False])
def test_a_review_settles_the_answers_it_saw_and_a_later_answer_opens_it_again(
    project, monkeypatch, capsys, ben_too
):
    """ana robotics, ben rl, rita's review settles rl; then ana answers safety (and ben too).
    When both now say safety, their agreement stands and the review's label is no longer the
    final one; when they differ again, the abstract is to review again, left out of training
    until then. Training, the export's final column and the agreement say the same."""
    later_answers(monkeypatch)
    abstract = next(iter(read_abstracts(["pile.jsonl"])))
    ProjectLabels("labels", "seeds", "rita", reviewing=True).add(abstract, "rl")
    assert dict(zip(*_project_labels()))[PILE[0][0]] == "rl"
    for name in ("ana", "ben") if ben_too else ("ana",):
        ProjectLabels("labels", "seeds", name).add(abstract, "safety")
    status, out, _ = run(capsys, "labels", "--agreement")
    assert status == 0
    assert run(capsys, "labels", "-o", "all.csv")[0] == 0
    exported = list(csv.DictReader(io.StringIO((project / "all.csv").read_text(encoding="utf-8"))))
    mine = [r for r in exported if r["abstract"] == PILE[0][0]]
    assert [r["final"] for r in mine if r["role"] == REVIEW] == ["no"]
    if ben_too:
        assert dict(zip(*_project_labels()))[PILE[0][0]] == "safety"
        assert "1 disagreement(s): none settled by review yet" in out  # (the other abstract)
        assert sorted(r["area"] for r in mine if r["final"] == "yes") == ["safety"]
    else:
        with pytest.warns(UserWarning, match="2 abstract"):
            assert PILE[0][0] not in _project_labels()[0]
        assert "2 disagreement(s): none settled by review yet" in out
        assert "ana safety, ben rl  |" in out
        assert not any(r["final"] == "yes" for r in mine)


def test_review_needs_a_project_and_paths_are_needed_otherwise(project, capsys):
    status, _, err = run(capsys, "label")
    assert status == 1 and "give the abstracts to label" in err
    status, _, err = run(capsys, "label", "pile.jsonl", "--review", "--relabel")
    assert status == 1 and "--relabel: not allowed with argument --review" in err


def test_an_abstract_is_named_by_its_own_file_s_id_wherever_people_read_it(tmp_path, monkeypatch, capsys):
    """The screen showed 'id 2505.03584', while --agreement, --review and the export showed
    the digest of its text: the pile's own id is kept with the text and shown in all three."""
    copy_project(tmp_path, ("labels", "seeds", "models"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "feed.jsonl").write_text(
        json.dumps({"id": "2505.03584", "abstract": PILE[0][0]})
        + "\n"
        + json.dumps({"id": "2505.00001", "abstract": PILE[1][0]})
        + "\n"
    )
    first, second = read_abstracts(["feed.jsonl"])
    for name, area in (("ana", "robotics"), ("ben", "rl")):
        ProjectLabels("labels", "seeds", name).add(first, area)
        ProjectLabels("labels", "seeds", name).add(second, "theory")
    status, out, _ = run(capsys, "labels", "--agreement")
    assert status == 0 and "  2505.03584  ana robotics, ben rl  |" in out, out
    assert run(capsys, "labels", "-o", "all.csv")[0] == 0
    exported = list(csv.DictReader(io.StringIO((tmp_path / "all.csv").read_text(encoding="utf-8"))))
    assert {r["source_id"] for r in exported if r["abstract"] in (PILE[0][0], PILE[1][0])} == {
        "2505.03584",
        "2505.00001",
    }
    monkeypatch.setattr(sys, "stdin", io.StringIO("rl\n"))
    status, out, err = run(capsys, "label", "--review", "--annotator", "rita")
    assert status == 0 and "id 2505.03584" in out, out + err
