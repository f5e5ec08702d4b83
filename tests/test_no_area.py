"""``none``: the answer for an abstract that fits no area. An answer like any other (kept,
undoable, exported, counted), never suggested again, and not trained on."""

import csv
import io
import json
import sys

import pytest
from conftest import copy_project, run
from hypothesis import given
from hypothesis import strategies as st

from tagger.errors import LabelError
from tagger.labelling import label_session
from tagger.labels import labelled, load_areas, load_training_set
from tagger.labelstore import NONE

PILE = [
    "We bound the regret of online convex optimisation with delayed feedback.",
    "A recommender system ranks items for users from implicit feedback on a shopping site.",
    "Robots learn grasping from human video demonstrations.",
    "We forecast electricity demand from smart-meter time series with seasonal decomposition.",
    "We quantise the weights of large language models to four bits for fast inference on GPUs.",
]


def pile_project(folder, monkeypatch):
    """A project in ``folder`` (the seeds' labels, the shipped model) with ``pile.jsonl`` of
    :data:`PILE`, the folder the commands run in."""
    copy_project(folder, ("labels", "seeds", "models"))
    (folder / "pile.jsonl").write_text("".join(json.dumps({"abstract": t}) + "\n" for t in PILE))
    monkeypatch.chdir(folder)
    return folder


@pytest.fixture
def project(tmp_path, monkeypatch):
    return pile_project(tmp_path, monkeypatch)


def own_labelled_file(folder, monkeypatch, capsys, table: str, pile: str) -> None:
    """In ``folder``, where the commands then run: ``mine.csv`` (``table``, labelled abstracts
    of one's own), ``pile.txt`` (``pile``) and ``own/``, the model trained on mine.csv."""
    monkeypatch.chdir(folder)
    (folder / "mine.csv").write_text(table)
    (folder / "pile.txt").write_text(pile)
    assert run(capsys, "train", "--data", "mine.csv", "--model", "own")[0] == 0


def label_rows(folder) -> list[dict]:
    return list(csv.DictReader(io.StringIO((folder / "labels" / "labels.csv").read_text(encoding="utf-8"))))


def answer(monkeypatch, capsys, answers: str, *args: str):
    monkeypatch.setattr(sys, "stdin", io.StringIO(answers))
    return run(capsys, "label", "pile.jsonl", *args)


def test_none_is_an_answer_kept_with_its_topic_and_never_suggested_again(project, monkeypatch, capsys):
    status, out, err = answer(monkeypatch, capsys, "none Recommender  systems\nn\ntheory\n", "--n", "3")
    assert status == 0, err
    assert out.count("  labelled none (fits no area)") == 2
    rows = label_rows(project)[-3:]
    assert [row["area"] for row in rows[:2]] == [NONE, NONE]
    assert [row["topic"] for row in rows] == ["recommender systems", "", ""]
    assert "labelled 3 (2 fit no area), skipped 0" in err
    none_ids = {row["abstract_id"] for row in rows[:2]}
    # never suggested again, nor shown again by label
    status, out, _ = run(capsys, "suggest", "pile.jsonl", "--n", "10")
    assert status == 0 and not none_ids & {line.split()[1] for line in out.splitlines()}
    # exported with its topic and counted, never trained on
    status, out, err = run(capsys, "labels", "-o", "all.csv")
    exported = list(csv.DictReader(io.StringIO((project / "all.csv").read_text(encoding="utf-8"))))
    assert [(r["area"], r["topic"]) for r in exported if r["abstract_id"] in none_ids] == [
        (NONE, "recommender systems"),
        (NONE, ""),
    ]
    training_set = load_training_set("labels", ["seeds"])
    assert len(training_set.labels) == 39 and NONE not in training_set.labels
    assert training_set.no_area == 2  # (train's count of them: tests/test_team.py, and below)


def test_a_none_answer_is_undone_like_any_other(project, monkeypatch, capsys):
    status, out, _ = answer(monkeypatch, capsys, "n\nu\n1\n", "--n", "2")
    assert status == 0 and "  undone: none for " in out
    rows = label_rows(project)
    assert rows[-1]["area"] != NONE and len(rows) == 39


def test_none_and_n_are_understood_in_any_case_and_an_empty_topic_is_none(project, monkeypatch, capsys):
    status, out, _ = answer(monkeypatch, capsys, "NONE\nN   \n", "--n", "2")
    assert status == 0 and out.count("labelled none") == 2
    assert [row.get("topic", "") for row in label_rows(project)[-2:]] == ["", ""]


@given(topic=st.text(max_size=40) | st.text(min_size=190, max_size=230))
def test_any_topic_is_kept_as_one_line_of_words_or_refused(topic):
    """A topic is kept as one line of words the labels can hold, or refused with one clear
    line (a lone surrogate, a control character, or over MAX_TOPIC characters): never kept as
    something labels.csv cannot read back."""
    from tagger.errors import ArgumentError
    from tagger.labelling import parse_no_area
    from tagger.labelstore import MAX_TOPIC

    kept = " ".join(topic.lower().split())
    try:
        parsed = parse_no_area(f"none {topic}")
    except ArgumentError as error:
        assert str(error).startswith("the topic ")
        assert len(kept) > MAX_TOPIC or any(
            c < " " or "\x7f" <= c < "\xa0" or "\ud800" <= c <= "\udfff" for c in kept
        )
    else:
        assert parsed == kept and len(kept) <= MAX_TOPIC
        kept.encode("utf-8")  # (every character can be written)
    assert parse_no_area(f"nonetheless {topic}") is None


def test_no_area_of_ones_own_is_named_none(tmp_path):
    (tmp_path / "areas.csv").write_text("slug,name,description,keywords\nnone,Nothing,d,\nbio,Bio,d,\n")
    with pytest.raises(LabelError, match="'none' is the answer for an abstract that fits no area"):
        load_areas(tmp_path / "areas.csv")


def test_a_labelled_file_s_none_rows_are_counted_not_trained_on(tmp_path):
    texts = ["Robots grasp.", "Robots walk.", "Cells divide.", "Genes encode.", "Users rate films."]
    training_set = labelled(texts, ["bots", "bots", "bio", "bio", "none"])
    assert training_set.slugs == ("bio", "bots") and training_set.no_area == 1
    assert len(training_set.texts) == 4


def test_the_session_passes_the_topic_to_the_store(shipped):
    from tagger.labelling import Suggestion
    from tagger.labels import Area
    from tagger.reading import Abstract

    queue = [
        Suggestion(Abstract(f"p{i}", text, "pile", i + 1, i + 1), shipped.predict(text))
        for i, text in enumerate(PILE[:2])
    ]
    saved = []
    answers = iter(["none graphs", "none"])
    result = label_session(
        queue,
        tuple(Area(slug, slug) for slug in shipped.areas),
        lambda a, area, topic="", remark=None: saved.append((a.id, area, topic)),
        lambda _: next(answers),
        lambda _: None,
    )
    assert saved == [("p0", NONE, "graphs"), ("p1", NONE, "")]
    assert result.no_area == 2


def test_the_report_counts_the_abstracts_that_fit_no_area_among_the_labelled_and_apart(
    project, monkeypatch, capsys
):
    status, _, err = answer(monkeypatch, capsys, "none recommender\ntheory\n", "--n", "2")
    assert status == 0, err
    assert run(capsys, "predict", "pile.jsonl", "-o", "tags.csv")[0] == 0
    status, _, err = run(capsys, "report", "tags.csv", "-o", "r.html")
    page = (project / "r.html").read_text()
    # the shipped model answers none: a none label is one like the others, and said apart too
    assert status == 0 and "2 of these abstracts are labelled: the tag is right for" in page
    assert "1 is labelled as fitting no area (counted above): " in page and " tagged none" in page


def test_a_users_own_labelled_file_takes_none_with_its_topic_and_trains_without_it(
    tmp_path, monkeypatch, capsys
):
    own_labelled_file(
        tmp_path,
        monkeypatch,
        capsys,
        "abstract,area\nRobots grasp cups.,bots\nLegged robots walk.,bots\nProteins fold.,bio\nGenes encode.,bio\n",
        "Users rate films on a website.\n\nRobot arms stack blocks.\n",
    )
    monkeypatch.setattr(sys, "stdin", io.StringIO("none Recommender\n"))
    status, _, err = run(capsys, "label", "pile.txt", "--model", "own", "--data", "mine.csv", "--n", "1")
    assert status == 0, err
    rows = list(csv.DictReader(io.StringIO((tmp_path / "mine.csv").read_text(encoding="utf-8"))))
    assert (rows[-1]["area"], rows[-1]["none_topic"]) == (NONE, "recommender")
    assert "added the columns none_topic (empty for the 4 labels before)" in err
    status, _, err = run(capsys, "train", "--data", "mine.csv", "--model", "own")
    assert status == 0 and "trained on 4 labelled abstracts and 1 that fit no area (not trained on)" in err
    # a file holding 'none' answers is still of the model's areas: labelling goes on
    monkeypatch.setattr(sys, "stdin", io.StringIO("bots\n"))
    status, _, err = run(capsys, "label", "pile.txt", "--model", "own", "--data", "mine.csv", "--n", "1")
    assert status == 0, err


def test_a_none_topic_never_touches_a_topic_column_of_the_user_s_own(tmp_path, monkeypatch, capsys):
    """A labelled file's own Topic column is the user's data: a none answer's topic goes to
    none_topic (it turned 'video' into 'astronomy')."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.csv").write_text(
        "abstract,area,Topic\nRobots grasp cups.,bots,video\nLegged robots walk.,bots,x\n"
        "Proteins fold.,bio,y\nGenes encode.,bio,z\n"
    )
    assert run(capsys, "train", "--data", "mine.csv", "--model", "m")[0] == 0
    monkeypatch.setattr(sys, "stdin", io.StringIO("none astronomy\n"))
    status, _, err = run(
        capsys, "label", "mine.csv", "--data", "mine.csv", "--model", "m", "--relabel", "--n", "1"
    )
    assert status == 0, err
    rows = list(csv.DictReader(io.StringIO((tmp_path / "mine.csv").read_text(encoding="utf-8"))))
    assert [r["Topic"] for r in rows] == ["video", "x", "y", "z"]
    assert [r["none_topic"] for r in rows if r["area"] == NONE] == ["astronomy"]


def test_a_huge_or_unwritable_topic_is_refused_at_every_door_and_the_labels_stay_readable(
    project, monkeypatch, capsys
):
    """33 M characters typed as a topic bricked labels.csv (every later label, labels and
    train exited 2); now the terminal says why and asks again, and Python refuses it."""
    from tagger.errors import ArgumentError
    from tagger.labelstore import ProjectLabels
    from tagger.reading import read_abstracts

    status, out, err = answer(monkeypatch, capsys, "none " + "x" * 300 + "\nnone graphs\n", "--n", "1")
    assert status == 0, err
    assert "the topic 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'... is 300 characters" in out + err
    assert label_rows(project)[-1]["topic"] == "graphs"
    first = next(iter(read_abstracts(["pile.jsonl"])))
    for topic in ("y" * 33_000_000, "a\ud800b", "bell \x07"):
        with pytest.raises(ArgumentError, match="the topic "):
            ProjectLabels("labels", "seeds").add(first, NONE, topic)
    assert run(capsys, "labels", "-o", "all.csv")[0] == 0


@pytest.mark.slow  # two trainings of 662 labels (5 s): in the slow run
def test_abstracts_that_fit_no_area_raise_the_review_threshold_over_them(training_set, shipped):
    """Too few to learn the answer none from, the review threshold counts the final model's tag
    of each abstract labelled as fitting no area as wrong: those it is sure of push the
    threshold above them."""
    import dataclasses

    import numpy as np

    from tagger.labels import NO_AREA_MIN
    from tagger.plan import Plan
    from tagger.training import Run, train

    run = Run(plan=Plan(leave_one_out_max=0))
    some = dataclasses.replace(
        training_set.subset(range(0, len(training_set.labels), 8)), no_area_texts=(), no_area_ids=()
    )
    before = train(some, shipped.card.settings, run=run)
    sure = sorted(some.texts, key=lambda text: -before.predict(text).confidence)[: NO_AREA_MIN - 1]
    no_area = tuple(text.replace(".", " of the outside world.", 1) for text in sure)
    after = train(dataclasses.replace(some, no_area_texts=no_area), shipped.card.settings, run=run)
    assert (before.card.review.no_area, after.card.review.no_area) == (None, NO_AREA_MIN - 1)
    assert after.card.review.threshold > before.card.review.threshold
    assert after.card.review.share_flagged > before.card.review.share_flagged
    assert np.isclose(after.card.evaluation.accuracy, before.card.evaluation.accuracy)  # the same tags


def test_evaluate_sets_the_review_threshold_as_train_does(seed_set, shipped):
    """tagger evaluate measures what tagger train reports: the review threshold counts the
    abstracts that fit no area there too (it left them out)."""
    import dataclasses

    from tagger.plan import Plan
    from tagger.training import Run, train, validate

    no_area = (
        "Users rate films on a website and we recommend items to them.",
        "Smart meters forecast demand.",
    )
    labelled = dataclasses.replace(seed_set, no_area_texts=no_area)
    _, validation, _ = validate(labelled, shipped.card.settings, run=Run(plan=Plan(leave_one_out_max=0)))
    model = train(labelled, shipped.card.settings, run=Run(plan=Plan(leave_one_out_max=0)))
    assert validation.review.no_area == 2 and validation.review == model.card.review


OUTSIDE = [
    "We forecast electricity demand from smart-meter time series with seasonal decomposition.",
    "A recommender system ranks items for shoppers from their clicks on a retail website.",
    "We survey how nurses use a scheduling app in hospital wards: interviews with 30 staff.",
    "A database index speeds up range queries over sorted keys on disk.",
    "We measure the spectra of distant galaxies with a ground telescope.",
    "Software engineers review code faster with a new diff viewer, a user study shows.",
    "A radio receiver decodes signals in noisy channels with a new modulation scheme.",
    "We prove a combinatorial identity about integer partitions.",
    "A survey of citizens about public transport satisfaction in three cities.",
    "We forecast retail sales from weekly time series of past sales and holidays.",
    "Graph mining finds dense communities in a social network of email senders.",
    "A logic programming language for knowledge representation with default rules.",
]


def test_the_model_answers_none_itself_when_it_has_enough_none_labels(seed_set, shipped):
    """From NO_AREA_MIN abstracts labelled none on, none is an answer of the model: its own
    row of the card, a tag with a confidence, flagged or not like any other."""
    import dataclasses

    from tagger.labels import NO_AREA_MIN
    from tagger.plan import Plan
    from tagger.training import Run, train, trained_said

    assert len(OUTSIDE) >= NO_AREA_MIN
    labelled_set = dataclasses.replace(seed_set, no_area_texts=tuple(OUTSIDE))
    model = train(labelled_set, shipped.card.settings, run=Run(plan=Plan(leave_one_out_max=0)))
    assert model.areas[-1] == NONE and model.card.labelled_per_area[NONE] == len(OUTSIDE)
    assert model.card.evaluation.per_area[NONE]["support"] == len(OUTSIDE)
    tags = model.predict(["We forecast electricity demand from smart meter time series of households."])
    assert tags[0].area == NONE and 0 < tags[0].confidence <= 1
    assert model.predict(["A robot arm grasps objects from camera images."])[0].area != NONE
    # the card's figures count every label, none among them, and those with an area apart
    figures = model.card.evaluation
    assert figures.with_area["labelled_abstracts"] == len(seed_set.labels) and 0 < figures.answered_none < 1
    said = trained_said(model.card, 0)
    assert (
        f"trained on {len(seed_set.labels) + len(OUTSIDE)} labelled abstracts, {len(OUTSIDE)} of them "
        in said
    )
    assert f"on the {len(seed_set.labels)} with an area: accuracy " in said and "answered none: " in said


def test_too_few_none_labels_to_learn_from_say_so(seed_set, shipped):
    import dataclasses

    from tagger.errors import TaggerWarning
    from tagger.plan import Plan
    from tagger.training import Run, train

    labelled_set = dataclasses.replace(seed_set, no_area_texts=tuple(OUTSIDE[:3]))
    with pytest.warns(
        TaggerWarning, match="3 abstract.s. labelled none: too few to learn the answer none from"
    ):
        model = train(labelled_set, shipped.card.settings, run=Run(plan=Plan(leave_one_out_max=0)))
    assert NONE not in model.areas and model.card.review.no_area == 3


def test_the_shipped_model_answers_none_through_every_door(capsys):
    """predict, tag_dataframe and the command line's rows give the answer none alike."""
    import pandas as pd

    from tagger import predict, tag_dataframe

    text = "We forecast electricity demand from smart-meter time series with seasonal decomposition."
    assert predict(text).area == NONE
    assert tag_dataframe(pd.DataFrame({"abstract": [text]}))["area"].tolist() == [NONE]
    status, out, _ = run(capsys, "predict", "--text", text)
    assert status == 0 and out.splitlines()[1].split(",")[4] == NONE


def test_the_estimator_learns_none_from_its_labels(seed_set):
    """A scikit-learn user's labels with none among them: none is one of the classes."""
    from tagger.estimator import TaggerClassifier

    texts = list(seed_set.texts) + OUTSIDE
    labels = list(seed_set.labels) + [NONE] * len(OUTSIDE)
    classifier = TaggerClassifier().fit(texts, labels)
    assert NONE in classifier.classes_
    assert (classifier.predict(OUTSIDE) == NONE).mean() >= 0.5  # (what it learnt from: answered none)
    # too few to learn from: none is no class (its probability would be no column)
    from tagger.errors import TaggerWarning

    with pytest.warns(TaggerWarning, match="too few to learn the answer none from"):
        few = TaggerClassifier().fit(list(seed_set.texts) + OUTSIDE[:3], list(seed_set.labels) + [NONE] * 3)
    assert NONE not in few.classes_ and few.predict_proba(OUTSIDE).shape == (len(OUTSIDE), len(few.classes_))
