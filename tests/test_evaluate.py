from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tagger.evaluate import (
    accuracy_interval,
    calibration_bins,
    compare,
    expected_calibration_error,
    format_comparison,
    possible_label_errors,
    review_threshold,
    summary,
)


def test_ece_by_hand():
    confidence = np.array([0.95, 0.95, 0.55, 0.55])
    correct = np.array([True, False, True, True])
    # bin 0.9-1.0: conf 0.95, acc 0.5 -> gap 0.45; bin 0.5-0.6: conf 0.55, acc 1.0 -> gap 0.45
    assert expected_calibration_error(confidence, correct) == pytest.approx(0.45)
    assert [(b["count"], b["accuracy"]) for b in calibration_bins(confidence, correct)] == [
        (2, 1.0),
        (2, 0.5),
    ]


def test_a_calibrated_predictor_has_small_ece():
    rng = np.random.default_rng(0)
    confidence = rng.uniform(0.2, 1.0, 20000)
    assert expected_calibration_error(confidence, rng.random(20000) < confidence) < 0.02
    assert expected_calibration_error(confidence, np.ones(20000, bool)) > 0.3  # underconfident


@given(st.lists(st.tuples(st.floats(0, 1), st.booleans()), min_size=1, max_size=50))
def test_ece_is_a_weighted_gap_between_0_and_1(pairs):
    confidence, correct = (np.array(x) for x in zip(*pairs))
    bins = calibration_bins(confidence, correct)
    assert sum(b["count"] for b in bins) == len(pairs)
    assert 0.0 <= expected_calibration_error(confidence, correct) <= 1.0


def test_review_threshold_is_the_lowest_confidence_meeting_the_target():
    confidence = np.array([0.99, 0.9, 0.8, 0.7, 0.6, 0.5])
    correct = np.array([True, True, False, True, True, False])
    # accuracy from the top: 1, 1, 2/3, 3/4, 4/5, 4/6
    assert review_threshold(confidence, correct, 0.75) == 0.6
    assert review_threshold(confidence, correct, 0.9) == 0.9
    assert review_threshold(confidence, np.zeros(6, bool), 0.9) == 1.0


def test_review_threshold_never_splits_a_tie():
    """Predictions of one confidence are all flagged or none: a threshold set inside a run
    of ties (the confidence ceiling makes them) left the wrong ones of the run unflagged."""
    confidence = np.array([0.97, 0.97, 0.97, 0.97, 0.9, 0.8])
    correct = np.array([True, False, False, False, True, True])
    assert review_threshold(confidence, correct, 0.9) == 1.0


@given(
    st.lists(st.tuples(st.sampled_from([0.2, 0.5, 0.7, 0.9, 0.97]), st.booleans()), min_size=1, max_size=60),
    st.sampled_from([0.5, 0.8, 0.93]),
)
def test_what_the_review_threshold_leaves_unflagged_meets_its_target(pairs, target):
    confidence, correct = (np.array(x) for x in zip(*pairs))
    threshold = review_threshold(confidence, correct, target)
    unflagged = confidence >= threshold
    assert threshold == 1.0 or correct[unflagged].mean() >= target
    lower = confidence[confidence < threshold]  # and no lower threshold meets it
    assert all(correct[confidence >= t].mean() < target for t in set(lower.tolist()))


def test_summary_figures_and_confusion():
    slugs = ["a", "b", "c"]
    probabilities = np.array([[0.8, 0.1, 0.1], [0.6, 0.3, 0.1], [0.2, 0.7, 0.1]])
    result = summary(["a", "b", "b"], probabilities, slugs)
    assert result["accuracy"] == pytest.approx(2 / 3, abs=1e-4)
    assert result["macro_f1"] == pytest.approx((2 / 3 + 2 / 3) / 2, abs=1e-4)  # "c" has no labels
    assert result["confusion"] == {"areas": slugs, "counts": [[1, 0, 0], [1, 1, 0], [0, 0, 0]]}
    assert result["per_area"]["b"] == {"precision": 1.0, "recall": 0.5, "f1": 0.6667, "support": 2}


def test_possible_label_errors_are_labels_the_model_finds_unlikely():
    probabilities = np.array([[0.98, 0.02], [0.4, 0.6], [0.2, 0.8], [0.99, 0.01], [0.5, 0.5]])
    suspects = possible_label_errors(
        ["x", "y", "z", "w", "v"], ["text x", "text y", "text z", "text w", "text v"], ["b", "a", "b", "b", "a"],
        probabilities, ["a", "b"], below=0.03,
    )  # fmt: skip
    assert [(s["abstract_id"], s["label"], s["predicted"]) for s in suspects] == [
        ("w", "b", "a"),
        ("x", "b", "a"),
    ]
    assert suspects[1]["snippet"] == "text x" and suspects[1]["label_probability"] == 0.02
    assert suspects[0]["confidence"] == 0.99


def test_compare_reports_figures_and_moved_abstracts(shipped):
    old = replace(shipped.card.evaluation, labelled_abstracts=38, accuracy=0.7, macro_f1=0.6, ece=0.2)
    new = replace(shipped.card.evaluation, labelled_abstracts=40, accuracy=0.75, macro_f1=0.65, ece=0.1)
    comparison = compare(old, new, ["a", "b", "c"], ["a", "c", "c"])
    assert comparison["changed"] == 1 and comparison["compared"] == 3
    text = format_comparison(comparison)
    assert "accuracy                 0.700     0.750" in text and "1 of 3 abstracts changed area" in text
    assert compare(None, new, [], ["a"])["changed"] is None


def test_the_reliability_legend_hides_no_bar(shipped):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tagger.evaluate import reliability_figure

    rng = np.random.default_rng(0)
    confidence = rng.uniform(0.1, 1.0, 300)
    figure = reliability_figure(shipped.card.evaluation, confidence, rng.random(300) < confidence)
    figure.canvas.draw()
    [axes] = figure.axes
    [legend] = figure.legends
    assert not legend.get_window_extent().overlaps(axes.get_window_extent())
    plt.close(figure)


def test_the_reliability_counts_sit_clear_of_the_dots(shipped):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tagger.evaluate import reliability_figure

    rng = np.random.default_rng(1)
    confidence = np.concatenate([rng.uniform(0.1, 1.0, 300), [0.35, 0.36]])  # a bin where nothing is right
    correct = np.concatenate([rng.random(300) < confidence[:300], [False, False]])
    figure = reliability_figure(shipped.card.evaluation, confidence, correct)
    figure.canvas.draw()
    [axes] = figure.axes
    dots = next(line for line in axes.lines if line.get_marker() == "o")
    centres = axes.transData.transform(dots.get_xydata())
    radius = dots.get_markersize() / 72 * figure.dpi / 2
    counts = [text for text in axes.texts if text.get_text().isdigit()]
    assert len(counts) == len(centres) >= 8
    for text in counts:
        box = text.get_window_extent().padded(radius)
        assert not any(box.contains(x, y) for x, y in centres), text.get_text()
    plt.close(figure)


def test_the_confusion_matrix_keeps_its_colour_bar_inside_the_picture(tmp_path, shipped):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.image import imread

    from tagger.evaluate import write_plots

    rng = np.random.default_rng(0)
    confidence = rng.uniform(0.1, 1.0, 50)
    confusion_path, _ = write_plots(
        shipped.card.evaluation, confidence, rng.random(50) < confidence, tmp_path
    )
    pixels = imread(confusion_path)[..., :3]
    ink = (pixels < 0.9).any(axis=2)  # anything not white
    assert not ink[:, -6:].any() and not ink[:, :6].any() and not ink[-6:].any() and not ink[:6].any()


TEST_ROWS = [
    ("Robots grasp cups with a two-finger gripper on a mobile manipulator.", "robotics"),
    ("We prove a regret bound for contextual bandits with linear rewards.", "theory"),
    ("A diffusion model generates images of anime faces from text prompts.", "generative"),
    (
        "We quantize the weights of large language models to four bits for faster inference on GPUs.",
        "systems",
    ),
    ("Membership inference attacks recover which records trained a model.", "safety"),
]


def labelled_test_file(folder, rows=TEST_ROWS):
    import csv

    path = folder / "test.csv"
    with open(path, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(["abstract", "area"])
        writer.writerows(rows)
    return path


def test_a_saved_model_is_tested_on_a_labelled_file(capsys, tmp_path, shipped):
    from conftest import ROOT, run

    status, out, err = run(
        capsys,
        "evaluate",
        "--model",
        ROOT / "models",
        "--data",
        labelled_test_file(tmp_path),
        "--plots",
        tmp_path,
    )
    assert status == 0
    predicted = [p.area for p in shipped.predict([text for text, _ in TEST_ROWS])]
    right = sum(p == area for p, (_, area) in zip(predicted, TEST_ROWS))
    lines = out.splitlines()
    assert lines[0] == f"the model in {ROOT / 'models'} tested on 5 labelled abstracts"
    low, high = accuracy_interval(right / 5, 5)
    assert lines[1] == f"accuracy  {right / 5:.3f} (95% interval {low:.2f}-{high:.2f})"
    assert lines[5].startswith(f"review    below {shipped.review_threshold:.3f} confidence: ")
    assert "labelled \\ predicted" in out and "note:" not in err
    assert (tmp_path / "reliability.png").read_bytes().startswith(b"\x89PNG")


def test_top_k_accuracy_and_the_figures_as_json(capsys, tmp_path, shipped):
    """evaluate gives top-k accuracy (the labelled area among the k likeliest, as fastText's
    test gives P@k) and, with --format json, every figure as one JSON object on stdout."""
    import json

    from conftest import ROOT, run

    test = labelled_test_file(tmp_path)
    status, text, _ = run(capsys, "evaluate", "--model", ROOT / "models", "--data", test)
    status_json, out, _ = run(
        capsys, "evaluate", "--model", ROOT / "models", "--data", test, "--format", "json"
    )
    assert status == status_json == 0
    figures = json.loads(out)
    probabilities = shipped.predict_proba([t for t, _ in TEST_ROWS])
    truth = np.array([list(shipped.areas).index(area) for _, area in TEST_ROWS])
    ranks = (probabilities > probabilities[np.arange(5), truth][:, None]).sum(axis=1)
    expected = {str(k): round(float((ranks < k).mean()), 4) for k in (2, 3)}
    assert figures["evaluation"]["top_k"] == expected
    assert text.splitlines()[2] == f"top-k     top-2 {expected['2']:.3f}, top-3 {expected['3']:.3f}" + (
        "   (the labelled area among the k likeliest)"
    )
    assert (
        figures["evaluation"]["labelled_abstracts"] == 5
        and figures["evaluation"]["accuracy"] <= expected["2"]
    )
    assert set(figures["review"]) >= {"threshold", "share_flagged", "accuracy_unflagged"}
    low, high = figures["evaluation"]["accuracy_interval_95"]  # every figure of the text report
    assert f"(95% interval {low:.2f}-{high:.2f})" in text and low <= figures["evaluation"]["accuracy"] <= high
    assert set(figures["evaluation"]["per_area"]) == set(shipped.areas)


def test_testing_a_model_on_what_it_learnt_from_says_so(capsys, tmp_path, shipped, seed_set):
    from conftest import ROOT, run

    rows = list(zip(seed_set.texts[:4], seed_set.labels[:4]))
    status, _, err = run(
        capsys, "evaluate", "--model", ROOT / "models", "--data", labelled_test_file(tmp_path, rows)
    )
    assert status == 0
    assert (
        "note: the model was trained on 4 of these 4 labelled abstracts: its figures on them are not held out"
        in err
    )


def test_a_model_tested_on_areas_it_does_not_know_or_without_data_is_refused(capsys, tmp_path):
    from conftest import ROOT, run

    path = labelled_test_file(tmp_path, [*TEST_ROWS, ("Cooking pasta.", "cooking")])
    status, out, err = run(capsys, "evaluate", "--model", ROOT / "models", "--data", path)
    assert (status, out) == (2, "") and err.startswith(
        f"tagger: {path}: 1 area(s) the model does not know: 'cooking'"
    )
    status, _, err = run(capsys, "evaluate", "--model", ROOT / "models")
    assert status == 1 and "--model needs --data" in err


def _headline(text: str) -> dict[str, str]:
    """The figures of an evaluate report or a train line: accuracy, macro-F1, ECE, as printed."""
    import re

    return dict(re.findall(r"(accuracy|macro-F1|ECE)\s+(\d\.\d{3})", text))


PILE = (
    "robot arms grasp cups and plates with tactile feedback",
    "proteins fold into structures predicted by language models",
    "a regret bound for bandits with heavy tails",
    "diffusion models sample images from noise",
    "policy gradients learn to walk on rough terrain",
)


@pytest.mark.slow  # trains
def test_evaluate_measures_exactly_what_train_reports(capsys, tmp_path, monkeypatch):
    """One definition of each figure: evaluate cross-validates the recipe train runs, with the
    same pile (--unlabelled) and the settings the model in ./models chose."""
    from conftest import copy_project, run

    copy_project(tmp_path, ("labels", "seeds"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pile.txt").write_text("\n\n".join(PILE) + "\n")
    status, _, trained = run(capsys, "train", "--unlabelled", "pile.txt")
    assert status == 0, trained
    status, report, _ = run(capsys, "evaluate", "--unlabelled", "pile.txt")
    assert status == 0 and "pseudo-labels chosen inside each fold" in report.splitlines()[0]
    line = next(
        line for line in trained.splitlines() if line.startswith("trained on")
    )  # (not the comparison)
    assert _headline(report) == _headline(line) and len(_headline(line)) == 3
    status, without, _ = run(capsys, "evaluate")
    assert status == 0 and "pseudo-labels" not in without.splitlines()[0]


@pytest.mark.slow  # trains
def test_evaluate_in_a_new_project_measures_the_recipe_its_first_train_runs(capsys, tmp_path, monkeypatch):
    """Before any model is saved in ./models, train replaces the model that tagged until now
    (the shipped one, of the same areas) and keeps its settings; evaluate measures that very
    recipe (it once took no model as the one replaced, and measured another)."""
    from conftest import copy_project, run

    copy_project(tmp_path, ("labels", "seeds"))
    monkeypatch.chdir(tmp_path)
    status, report, measured = run(capsys, "evaluate")
    assert status == 0, measured
    status, _, trained = run(capsys, "train")
    assert status == 0, trained
    line = next(line for line in trained.splitlines() if line.startswith("trained on"))
    assert _headline(report) == _headline(line)
    assert ("kept the settings the previous model chose" in measured) == (
        "kept the settings the previous model chose" in trained
    )


def test_a_tie_is_no_answer_flagged_counted_apart_and_never_right(shipped):
    from tagger.prediction import NO_AREA

    prediction = shipped.predict("zzqx wvvt ppqr")  # no word the model knows: every area alike
    assert prediction.area == NO_AREA and prediction.needs_review and prediction.tags == []
    probabilities = np.array([[0.5, 0.5], [0.5, 0.5], [0.9, 0.1], [0.2, 0.8]])
    figures = summary(["a", "b", "a", "b"], probabilities, ["a", "b"])
    assert figures["accuracy"] == 0.5 and figures["ties"] == 2  # the two ties count wrong, whichever label
    assert summary(["a", "b"], probabilities[2:], ["a", "b"])["ties"] is None


def test_the_command_line_counts_ties_apart(capsys, tmp_path):
    from conftest import run

    (tmp_path / "a.txt").write_text("zzqx wvvt ppqr.\n\nRobots grasp cups with a two-finger gripper.\n")
    status, out, err = run(capsys, "predict", tmp_path / "a.txt")
    rows = out.splitlines()[1:]
    assert status == 0 and rows[0].split(",")[3] == "" and rows[0].endswith(",True,")
    assert "robotics 1, no area 1 (two areas equally likely" in err
