import csv
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
from conftest import LABELS, ROOT, SEED_FILES, copy_project, keep_labels
from hypothesis import given
from hypothesis import strategies as st

from tagger import load_model
from tagger.cli import main
from tagger.labelling import label_session, suggest
from tagger.labels import load_areas, load_training_set
from tagger.labelstore import ProjectLabels
from tagger.reading import Abstract, abstract_id, read_abstracts

PILE = [
    "We bound the regret of online convex optimisation with delayed feedback.",
    "A diffusion model generates protein structures conditioned on binding sites.",
    "A diffusion model generates protein structures conditioned on binding sites!",  # near-duplicate
    "Robots learn grasping from human video demonstrations.",
    "We quantise the weights of large language models to four bits for fast inference on GPUs.",
    "Variational inference for Gaussian process classification with many classes.",
    "Agents explore sparse-reward environments with intrinsic motivation and model-based planning.",
]


def pile_file(folder):
    path = folder / "pile.jsonl"
    path.write_text("".join(json.dumps({"abstract": text}) + "\n" for text in PILE), encoding="utf-8")
    return path


def test_margin_sampling_ranks_by_margin_without_near_duplicates(shipped, tmp_path):
    abstracts = list(read_abstracts([pile_file(tmp_path)]))
    queue = suggest(abstracts, shipped, n=10, density=0, diversity=0, balance=0)
    margins = [item.margin for item in queue]
    assert margins == sorted(margins)
    texts = [item.abstract.text for item in queue]
    assert len(queue) == len(PILE) - 1 and sum("protein structures" in t for t in texts) == 1


def test_suggest_picks_unsure_typical_and_different_abstracts(shipped, tmp_path):
    abstracts = list(read_abstracts([pile_file(tmp_path)]))
    queue = suggest(abstracts, shipped, n=10)
    assert len(queue) == len(PILE) - 1 and len({item.abstract.id for item in queue}) == len(queue)
    assert sum("protein structures" in item.abstract.text for item in queue) == 1  # no near-duplicates
    assert suggest(abstracts, shipped, n=2) == queue[:2]  # greedy: a longer queue extends a shorter one
    excluded = suggest(abstracts, shipped, n=10, exclude=[queue[0].abstract.id])
    assert queue[0].abstract.id not in {item.abstract.id for item in excluded}


def test_no_predicted_area_takes_the_whole_queue(shipped):
    """Sentences of the seeds and the development set's abstracts as a pile: margin sampling
    alone crowds the queue with a few areas; suggest spreads it over the predicted areas."""
    files = [*SEED_FILES, ROOT / "seeds" / "modern-2022-24.jsonl"]
    sentences = [s for a in read_abstracts(files) for s in a.text.split(". ") if len(s.split()) > 8]
    pile = [Abstract(str(i), text, "pile", i, i) for i, text in enumerate(sentences)]
    balanced = Counter(item.prediction.area for item in suggest(pile, shipped, n=12))
    plain = Counter(
        item.prediction.area for item in suggest(pile, shipped, n=12, density=0, diversity=0, balance=0)
    )
    assert max(balanced.values()) < max(plain.values())
    assert len(balanced) > len(plain)


def session(queue, answers, areas):
    saved, shown = [], []
    replies = iter(answers)

    def ask(prompt):
        try:
            return next(replies)
        except StopIteration:
            raise EOFError from None

    result = label_session(
        queue,
        areas,
        lambda abstract, area, topic, remark: saved.append((abstract.id, area)),
        ask,
        shown.append,
    )
    return result, saved, "\n".join(shown)


def test_session_accepts_guesses_slugs_prefixes_skips_and_quits(shipped, tmp_path):
    areas = load_areas(LABELS / "areas.csv")
    queue = suggest(list(read_abstracts([pile_file(tmp_path)])), shipped, n=10)
    answers = ["2", "xyz", "?", "a", "robotics", "s", "prob", "q", "1"]
    result, saved, shown = session(queue, answers, areas)
    assert saved == [
        (queue[0].abstract.id, queue[0].guesses()[1][0]),
        (queue[1].abstract.id, "robotics"),
        (queue[3].abstract.id, "probabilistic"),
    ]
    assert result.labelled == saved and result.skipped == 1 and result.quit
    assert "not understood: 'xyz'" in shown and "probabilistic (Probabilistic methods and causality)" in shown
    assert "[5/" in shown and "[6/" not in shown  # quit at the fifth


def test_answers_are_read_without_regard_to_case(shipped, tmp_path):
    areas = load_areas(LABELS / "areas.csv")
    queue = suggest(list(read_abstracts([pile_file(tmp_path)])), shipped, n=4)
    result, saved, shown = session(queue, ["Theory", "PROB", "S", "Q"], areas)
    assert saved == [(queue[0].abstract.id, "theory"), (queue[1].abstract.id, "probabilistic")]
    assert result.skipped == 1 and result.quit and "not understood" not in shown


def test_the_start_of_two_slugs_names_both(shipped, tmp_path):
    areas = load_areas(LABELS / "areas.csv")
    queue = suggest(list(read_abstracts([pile_file(tmp_path)])), shipped, n=2)
    _, saved, shown = session(queue, ["r", "ro"], areas)
    assert "'r' starts rl and robotics: type more of it" in shown
    assert "not understood" not in shown and saved == [(queue[0].abstract.id, "robotics")]


@given(st.sampled_from([a.slug for a in load_areas(LABELS / "areas.csv")]), st.data())
def test_every_slug_and_its_unique_starts_name_it_in_any_case(slug, data):
    from tagger.labelling import _choice

    slugs = [a.slug for a in load_areas(LABELS / "areas.csv")]
    unique = [n for n in range(1, len(slug) + 1) if sum(s.startswith(slug[:n]) for s in slugs) == 1]
    n = data.draw(st.sampled_from(unique))
    typed = "".join(c.upper() if data.draw(st.booleans()) else c for c in slug[:n])
    assert _choice(typed, [], slugs) == (slug, [])


def test_end_of_input_ends_the_session(shipped, tmp_path):
    queue = suggest(list(read_abstracts([pile_file(tmp_path)])), shipped, n=3)
    result, saved, _ = session(queue, ["s"], load_areas(LABELS / "areas.csv"))
    assert result.quit and result.skipped == 1 and saved == []


@pytest.fixture
def project(tmp_path):
    """A copy of the repository's labels, seeds and model to label in."""
    copy_project(tmp_path, ("labels", "seeds", "models"))
    pile_file(tmp_path)
    return tmp_path


def test_add_label_keeps_the_abstract_then_the_label(project):
    abstract = Abstract("p1", "Robots grasp cups.", "pile.jsonl", 1, 1, title="Grasping")
    ProjectLabels(project / "labels", project / "seeds").add(abstract, "robotics")
    training_set = load_training_set(project / "labels", [project / "seeds"])
    assert len(training_set.labels) == 39
    assert training_set.labels[-1] == "robotics" and training_set.texts[-1] == "Grasping. Robots grasp cups."
    record = json.loads((project / "seeds" / "labelled.jsonl").read_text(encoding="utf-8"))
    assert record == {
        "id": abstract_id("Robots grasp cups."),
        "title": "Grasping",
        "abstract": "Robots grasp cups.",
        "source": "pile.jsonl",
        "source_id": "p1",
    }


def test_label_command_with_piped_answers(project, monkeypatch, capsys):
    monkeypatch.chdir(project)
    monkeypatch.setattr(sys, "stdin", io.StringIO("1\ns\nrobotics\n"))
    assert main(["label", "pile.jsonl", "--n", "4"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("4 abstract(s) to label, most useful first.")
    assert "area? 1\n  labelled " in out and "area? robotics\n  labelled robotics" in out
    assert err.startswith("model: models/ of this folder")  # which model guesses, said first
    assert err.splitlines()[1:] == [
        "labelled 2, skipped 1; saved to labels/labels.csv. Retrain with 'tagger train'."
    ]
    training_set = load_training_set("labels", ["seeds"])
    assert len(training_set.labels) == 40 and training_set.labels[-1] == "robotics"
    # Labelled abstracts are not suggested again; the rest are, as the library ranks them.
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    assert main(["suggest", "pile.jsonl", "--n", "10"]) == 0
    listed = [line.split()[1] for line in capsys.readouterr().out.splitlines()]
    labelled = set(training_set.ids[-2:])
    rest = [a for a in read_abstracts(["pile.jsonl"]) if a.id not in labelled]
    assert listed == [item.abstract.id for item in suggest(rest, load_model("models"), n=10)]
    assert not labelled & set(listed) and len(listed) >= len(PILE) - 1 - 2


def label_rows(project):
    with open(project / "labels" / "labels.csv", newline="", encoding="utf-8") as stream:
        return list(csv.DictReader(stream))


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT])
def test_an_interrupted_session_keeps_every_confirmed_label(project, stop):
    process = subprocess.Popen(
        [sys.executable, "-m", "tagger", "label", "pile.jsonl"],
        cwd=project,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    for answer in ("1", "2"):
        process.stdin.write(answer + "\n")
        process.stdin.flush()
    deadline = time.monotonic() + 60
    while len(label_rows(project)) < 40 and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(stop)  # the session is waiting for the third answer
    _, err = process.communicate(timeout=60)
    rows = label_rows(project)
    assert len(rows) == 40
    assert load_training_set(project / "labels", [project / "seeds"]).ids[-2:] == tuple(
        r["abstract_id"] for r in rows[-2:]
    )
    assert not list((project / "labels").glob(".*.tmp-*")) and not list((project / "seeds").glob(".*.tmp-*"))
    if stop == signal.SIGINT:
        assert process.returncode == 130 and err.strip().splitlines()[-1] == "tagger: interrupted"
    else:
        assert process.returncode == -signal.SIGKILL


def test_suggest_prints_json_lines_for_scripts(tmp_path, capsys, shipped):
    path = pile_file(tmp_path)
    assert main(["suggest", str(path), "--n", "3", "--format", "jsonl", "--model", str(ROOT / "models")]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    expected = suggest(list(read_abstracts([path])), shipped, n=3)
    assert [r["id"] for r in records] == [item.abstract.id for item in expected]
    assert [r["rank"] for r in records] == [1, 2, 3]
    for record, item in zip(records, expected):
        assert record["source"] == str(path) and record["position"] == item.abstract.position
        assert record["margin"] == round(item.margin, 4)
        assert [g["area"] for g in record["guesses"]] == [area for area, _ in item.guesses()]


def test_the_queue_sees_an_abstract_once_by_its_text(tmp_path, shipped):
    with_id = tmp_path / "a.jsonl"
    with_id.write_text(
        json.dumps({"abstract": PILE[0], "id": "x1"}) + "\n" + json.dumps({"abstract": PILE[3]}) + "\n"
    )
    without = tmp_path / "b.txt"
    without.write_text(PILE[0] + "\n")
    queue = suggest(read_abstracts([with_id, without]), shipped, n=10)
    assert sorted(item.abstract.text for item in queue) == sorted([PILE[0], PILE[3]])
    # labelled, it is left out whatever id it comes with; a file id alone excludes nothing
    assert (
        suggest(read_abstracts([with_id]), shipped, n=10, exclude={abstract_id(PILE[0])})[0].abstract.text
        == PILE[3]
    )
    assert len(suggest(read_abstracts([with_id]), shipped, n=10, exclude={"x1"})) == 2
    # two abstracts that share an id in two files are two abstracts
    other = tmp_path / "c.jsonl"
    other.write_text(json.dumps({"abstract": PILE[4], "id": "x1"}) + "\n")
    assert len(suggest(read_abstracts([with_id, other]), shipped, n=10)) == 3


MINE = (
    "abstract,area\n"
    "Robots grasp cups with tactile sensing.,bots\nLegged robots walk on rough terrain.,bots\n"
    "Arms learn manipulation from video.,bots\nProteins fold into structures.,bio\n"
    "Genomes encode regulatory networks.,bio\nCells divide under stress signals.,bio\n"
)


def test_the_loop_works_on_a_users_own_areas_with_undo(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.csv").write_text(MINE)
    (tmp_path / "pile.txt").write_text(
        "Quadruped robots climb stairs.\n\nEnzymes catalyse protein folding.\n"
    )
    assert main(["train", "--data", "mine.csv", "--model", "own"]) == 0
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdin", io.StringIO("1\nu\nbio\n2\n"))
    assert main(["label", "pile.txt", "--model", "own", "--data", "mine.csv"]) == 0
    out = capsys.readouterr().out
    assert "pile.txt #1 (line 1)" in out and "pile.txt #2 (line 3)" in out and "  undone: " in out
    rows = list(csv.DictReader(io.StringIO((tmp_path / "mine.csv").read_text(encoding="utf-8"))))
    assert len(rows) == 8 and rows[-2]["area"] == "bio"  # the undone answer replaced, not added
    assert Counter(r["abstract"] for r in rows).most_common(1)[0][1] == 1
    # Its abstracts count as labelled: nothing left to suggest.
    assert main(["suggest", "pile.txt", "--model", "own", "--data", "mine.csv"]) == 0
    assert capsys.readouterr().out == ""
    # Without --data, the message says where answers would go.
    assert main(["label", "pile.txt", "--model", "own"]) == 1
    assert (
        "the model was trained on your own labelled file (mine.csv). Give that file with --data"
        in capsys.readouterr().err
    )


def test_label_and_suggest_read_a_users_file_by_its_own_column_names(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.csv").write_text(MINE.replace("abstract,area", "text,label", 1))
    (tmp_path / "pile.csv").write_text(
        "text\nQuadruped robots climb stairs.\nEnzymes catalyse protein folding.\n"
    )
    columns = ["--column", "text", "--label-column", "label"]
    assert main(["train", "--data", "mine.csv", *columns, "--model", "own"]) == 0
    capsys.readouterr()
    # Without the column names, the file's missing columns are named.
    assert main(["suggest", "pile.csv", "--model", "own", "--data", "mine.csv", "--column", "text"]) == 2
    assert capsys.readouterr().err == (
        "tagger: mine.csv:1: missing column(s) area (has: text, label). The header row must name text, area, "
        "or name yours with --column and --label-column.\n"
    )
    assert main(["suggest", "pile.csv", "--model", "own", "--data", "mine.csv", *columns]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2
    monkeypatch.setattr(sys, "stdin", io.StringIO("bots\nq\n"))
    assert main(["label", "pile.csv", "--model", "own", "--data", "mine.csv", *columns]) == 0
    capsys.readouterr()
    rows = list(csv.DictReader(io.StringIO((tmp_path / "mine.csv").read_text(encoding="utf-8"))))
    assert list(rows[0]) == ["text", "label"] and len(rows) == 7 and rows[-1]["label"] == "bots"
    assert main(["suggest", "pile.csv", "--model", "own", "--data", "mine.csv", *columns]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1  # the answered one counts as labelled


@pytest.mark.parametrize(
    "answers, labels, summary",
    [
        ("1\nu\nq\n", 38, "labelled 0, skipped 0"),  # undo takes a project label back
        # answer the first, skip the second, undo (back to the first), answer both: none skipped
        ("1\ns\nu\n1\n1\nq\n", 40, "labelled 2, skipped 0"),
    ],
    ids=["undo", "skipped-then-answered"],
)
def test_undo_takes_an_answer_back_and_what_was_skipped_after_it_comes_again(
    project, monkeypatch, capsys, answers, labels, summary
):
    monkeypatch.chdir(project)
    monkeypatch.setattr(sys, "stdin", io.StringIO(answers))
    assert main(["label", "pile.jsonl", "--n", "3"]) == 0
    assert len(label_rows(project)) == labels and summary in capsys.readouterr().err


def test_relabel_says_whether_an_answer_replaces_the_label_or_goes_beside_another_annotators(
    project, monkeypatch, capsys
):
    keep_labels(project, 12)
    monkeypatch.chdir(project)
    monkeypatch.setattr(sys, "stdin", io.StringIO("1\n"))
    assert main(["label", "pile.jsonl", "--n", "1", "--annotator", "ben"]) == 0
    capsys.readouterr()
    for annotator, note in (
        ("ana", "labelled by ben too; your answer is kept beside theirs, s leaves it"),
        ("ben", "now; your answer replaces yours, s leaves it"),
    ):
        monkeypatch.setattr(sys, "stdin", io.StringIO("s\n"))
        assert main(["label", "pile.jsonl", "--relabel", "--n", "1", "--annotator", annotator]) == 0
        assert note in capsys.readouterr().out, annotator


def test_a_second_pass_is_blind_until_the_answer(project, monkeypatch, capsys):
    """--relabel as ana of ben's label: the terminal said "labelled robotics by ben" and the
    model's top three before the answer (the page hides both, so that they do not lead you).
    Now neither shows before the answer (the guesses on request, '?'); both show after it."""
    keep_labels(project, 12)
    monkeypatch.chdir(project)
    monkeypatch.setattr(sys, "stdin", io.StringIO("1\n"))
    assert main(["label", "pile.jsonl", "--n", "1", "--annotator", "ben"]) == 0
    given = label_rows(project)[-1]["area"]
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdin", io.StringIO("?\ntheory\n"))
    assert main(["label", "pile.jsonl", "--relabel", "--n", "1", "--annotator", "ana"]) == 0
    out = capsys.readouterr().out
    before, after = out.split("area? ?", 1)
    assert "labelled by ben too" in before and given not in before.split("labelled by ben too")[1]
    assert not re.search(r"^1\) ", before, re.MULTILINE)  # (no guesses)
    assert "the model's guesses: 1) " in after
    assert re.search(rf"labelled theory; the model said \w+ \d\.\d\d; ben said {given}", after), after


def test_relabel_shows_the_labels_the_model_doubts_most_first(project, monkeypatch, capsys):
    keep_labels(project, 15)
    monkeypatch.chdir(project)
    rows = label_rows(project)
    flipped = rows[0]["abstract_id"]
    true_area = rows[0]["area"]
    wrong = "theory" if true_area != "theory" else "robotics"
    text = (project / "labels" / "labels.csv").read_text(encoding="utf-8")
    (project / "labels" / "labels.csv").write_text(
        text.replace(f"{flipped},{true_area},", f"{flipped},{wrong},", 1)
    )
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{true_area}\n" * 5))
    assert main(["label", "seeds", "--relabel", "--n", "5"]) == 0
    out = capsys.readouterr().out
    assert f"id {flipped}" in out and f"labelled {wrong} now" in out  # among the five most doubted
    assert {r["abstract_id"]: r["area"] for r in label_rows(project)}[flipped] == true_area
    assert len(label_rows(project)) == 15  # the answer replaced the label: none added


def test_relabel_judges_each_label_by_a_model_that_never_saw_it():
    """A label flipped to a wrong area: the model trained on it agrees with it more than a
    model that never saw it does; the queue shows that out-of-fold guess, flipped label first."""
    from tagger.labelling import relabel_queue
    from tagger.labels import labelled_set
    from tagger.reading import Abstract
    from tagger.training import train

    words = {
        "bots": "robot gripper grasp arm legged walking manipulation",
        "bio": "protein cell genome enzyme folding gene tissue",
        "astro": "galaxy star telescope orbit planet cosmic redshift",
    }
    texts, areas = [], []
    for area, vocabulary in words.items():
        for i in range(6):
            chosen = vocabulary.split()
            texts.append(f"{chosen[i]} {chosen[(i + 1) % 7]} {chosen[(i + 3) % 7]} study {i}")
            areas.append(area)
    areas[2] = "bio"  # a robot abstract labelled bio
    training_set = labelled_set(texts, areas, "mine.csv")
    model = train(training_set)
    abstracts = [Abstract(str(i), text, "mine.csv", i + 1, i + 2) for i, text in enumerate(texts)]
    current = dict(zip(training_set.ids, training_set.labels))
    [item, *_] = relabel_queue(abstracts, model, current, 3, training_set)
    assert item.abstract.text == texts[2] and item.current == "bio"
    assert item.prediction.scores["bio"] < model.predict(texts[2]).scores["bio"]
    assert item.prediction.area == "bots"
