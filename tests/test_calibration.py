import numpy as np
import pytest
from conftest import SEED_FILES, evidence
from hypothesis import example, given
from hypothesis import strategies as st
from prose import stdlib_docstrings

from tagger import predict
from tagger.calibration import (
    Scores,
    TopLabelMap,
    calibrated,
    fit_calibration,
    fit_top_label,
    shrink_factor,
)
from tagger.reading import read_abstracts

SEED_TEXTS = [a.text for a in read_abstracts(SEED_FILES)]
known_words = st.sampled_from(" ".join(SEED_TEXTS[:5]).split())
mixed_text = st.lists(known_words | st.text(max_size=20), max_size=60).map(" ".join)


@given(st.lists(mixed_text, max_size=4))
def test_the_model_counts_evidence_as_training_does(shipped, texts):
    _, counted = shipped.features.transform_with_evidence(texts)
    np.testing.assert_array_equal(counted, evidence(texts, set(shipped.vocabulary)))


@given(
    st.lists(st.floats(-5, 5), min_size=3, max_size=3),
    st.floats(0, 200),
    st.floats(0, 200),
    st.floats(0.01, 10),
)
def test_less_evidence_is_never_more_confident(scores, fewer, more, scale):
    fewer, more = sorted((fewer, more))
    linear = np.array([scores, scores])
    table = Scores(linear, np.zeros_like(linear), np.array([fewer, more]))
    probabilities = calibrated(table, temperature=0.5, evidence_scale=scale)
    assert probabilities[0].max() <= probabilities[1].max() + 1e-12
    assert calibrated(Scores(linear[:1], np.zeros((1, 3)), np.zeros(1)), 0.5, scale) == pytest.approx(1 / 3)


def test_the_fit_recovers_a_known_temperature_and_evidence_scale():
    rng = np.random.default_rng(0)
    n, k, temperature, scale = 4000, 4, 0.5, 8.0
    linear = rng.normal(size=(n, k))
    known = rng.integers(1, 80, size=n).astype(float)
    table = Scores(linear, np.zeros_like(linear), known)
    probabilities = calibrated(table, temperature, scale)
    truth = np.array([rng.choice(k, p=p) for p in probabilities])
    half = n // 2
    fitted = fit_calibration(
        table.take(np.arange(half)), truth[:half], table.take(np.arange(half, n)), truth[half:]
    )
    assert fitted == pytest.approx((temperature, scale), rel=0.25)


def test_text_with_little_evidence_is_unsure_and_flagged(shipped):
    for text in ("hello world", "We thank the reviewers."):
        prediction = predict(text)
        assert prediction.confidence < 0.3 and prediction.needs_review, text
    # One word of an area is some evidence (abstracts cut to their first three words are
    # right about 40% of the time, and the calibration is fitted on them): unsure, flagged.
    assert predict("images").needs_review
    prose = predict(stdlib_docstrings())
    assert np.mean([p.confidence for p in prose]) < 0.3
    assert all(p.needs_review for p in prose)


def test_a_short_clear_sentence_gets_its_area():
    assert predict("We propose a new GAN for anime faces.").area == "generative"
    assert predict("We prove a regret bound for contextual bandits.").area == "theory"


def test_the_shipped_card_says_what_its_calibration_was_fitted_on(shipped):
    calibration = shipped.card.calibration
    assert "top-label" in calibration.method
    assert f"{shipped.card.evaluation.labelled_abstracts} labelled abstracts" in calibration.fitted_on
    # of every source: preprints of 2025, proceedings of 2022-24 and 2015-16; its figures cross-fitted
    assert (
        "arxiv-2025.jsonl 3671, modern-2022-24-train.jsonl 1768, modern-2022-24.jsonl 344, "
        "conference-2015-16.jsonl 300" in calibration.fitted_on
    )
    assert "figures cross-fitted (5 parts, each calibrated on the others)" in calibration.fitted_on


probability_rows = st.lists(
    st.lists(st.floats(0, 1), min_size=2, max_size=6).filter(lambda row: sum(row) > 1e-6),
    min_size=1,
    max_size=5,
).filter(lambda rows: len({len(row) for row in rows}) == 1)


@given(probability_rows, st.floats(0.05, 20), st.floats(-20, 20), st.floats(0, 100), st.floats(0, 100))
def test_the_top_label_map_keeps_probabilities_and_the_ranking(rows, slope, offset, fitted, evidence):
    probabilities = np.array(rows) / np.array(rows).sum(axis=1, keepdims=True)
    mapped = TopLabelMap(slope, offset, fitted).apply(probabilities, np.full(len(rows), evidence))
    np.testing.assert_allclose(mapped.sum(axis=1), 1.0)
    assert (mapped >= 0).all()
    for before, after in zip(probabilities, mapped):
        order = np.argsort(-before, kind="stable")
        assert np.argmax(after) == order[0]  # the top area stays the top area
        others = order[1:]
        assert (np.diff(after[others]) <= 1e-12).all()  # the others keep their order
        if before[order[0]] == before[order[1]]:  # a tie at the top is left as it is
            np.testing.assert_allclose(after, before)


def test_the_top_label_maps_lift_fades_with_evidence_below_what_it_was_fitted_on():
    rows = np.array([[0.5, 0.3, 0.2]] * 3)
    top = TopLabelMap(slope=0.5, offset=1.0, evidence=40.0)
    mapped = top.apply(rows, np.array([0.0, 20.0, 80.0]))[:, 0]
    flattened = top.confidence(np.array([0.5]), np.zeros(1), 3)[0]  # no lift
    lifted = top.confidence(np.array([0.5]), np.ones(1), 3)[0]
    assert mapped == pytest.approx(
        [flattened, top.confidence(np.array([0.5]), np.full(1, 0.5), 3)[0], lifted]
    )
    assert flattened < mapped[1] < lifted
    uniform = np.full((1, 11), 1 / 11)  # no evidence, every area alike: left as it is
    np.testing.assert_allclose(top.apply(uniform, np.zeros(1)), uniform)
    assert top.confidence(np.array([1 / 11]), np.zeros(1), 11)[0] == pytest.approx(1 / 11)


def test_the_top_label_fit_recovers_a_known_map():
    """Confidence that runs high where sure and low where unsure, the shape seen on real
    abstracts: the fit finds the map that makes it honest."""
    rng = np.random.default_rng(1)
    n, k, slope, offset = 20000, 5, 0.6, 0.4
    probabilities = rng.dirichlet(np.full(k, 0.4), size=n)
    evidence = rng.uniform(50, 150, size=n)
    known = TopLabelMap(slope, offset, float(np.quantile(evidence, 0.05)))
    honest = known.confidence(probabilities.max(axis=1), known.strength(evidence), k)
    right = rng.uniform(size=n) < honest
    top = probabilities.argmax(axis=1)
    other = (top + rng.integers(1, k, size=n)) % k
    truth = np.where(right, top, other)
    fitted = fit_top_label(probabilities, truth, evidence)
    assert fitted.evidence == pytest.approx(known.evidence)
    grid = np.linspace(0.25, 0.99, 50)  # (slope and offset trade off: compare the maps)
    found, truly = (m.confidence(grid, np.ones(50), k) for m in (fitted, known))
    assert np.abs(found - truly).max() < 0.02
    assert np.abs(TopLabelMap().confidence(grid, np.ones(50), k) - truly).max() > 0.1  # far from no map


def test_the_shrink_factor_is_one_without_an_evidence_scale():
    table = Scores(np.zeros((2, 3)), np.zeros((2, 3)), np.array([0.0, 5.0]))
    np.testing.assert_allclose(shrink_factor(table, 0.0), 1.0)
    np.testing.assert_allclose(shrink_factor(table, 5.0), [0.0, 0.5])


@given(
    st.lists(st.lists(st.floats(0.001, 1), min_size=2, max_size=6), min_size=1, max_size=8).filter(
        lambda rows: len({len(row) for row in rows}) == 1
    ),
    st.floats(0.2, 1.0),
)
@example([[0.5, 0.9999999999999999, 1.0]], 0.25)  # two areas tied to the last bit
def test_the_ceiling_caps_the_top_keeps_the_ranking_and_leaves_the_rest(rows, ceiling):
    from tagger.calibration import capped

    probabilities = np.array(rows) / np.array(rows).sum(axis=1, keepdims=True)
    k = probabilities.shape[1]
    ceiling = max(ceiling, 1 / k + 1e-6)
    result = capped(probabilities, ceiling)
    np.testing.assert_allclose(result.sum(axis=1), 1.0)
    assert (result.max(axis=1) <= ceiling + 1e-12).all()
    # The area on top stays on top (two areas tied to the last bit may swap by rounding).
    top = result[np.arange(len(result)), probabilities.argmax(axis=1)]
    np.testing.assert_allclose(top, result.max(axis=1), rtol=0, atol=1e-15)
    under = probabilities.max(axis=1) <= ceiling
    np.testing.assert_array_equal(result[under], probabilities[under])


def test_little_evidence_never_gives_a_confidence_near_one_and_says_its_figures_are_unsure(capsys, tmp_path):
    from conftest import SIX_LABELS, run

    from tagger.calibration import confidence_ceiling

    (tmp_path / "mine.csv").write_text("abstract,area\n" + "".join(f"{t},{a}\n" for t, a in SIX_LABELS))
    status, _, err = run(capsys, "train", "--data", tmp_path / "mine.csv", "--model", tmp_path / "m")
    assert status == 0 and "(too few labels to measure calibration: 6)" in err and "95% interval" in err
    prediction = predict("Robots walk.", model=tmp_path / "m")
    assert prediction.area == "bots" and prediction.confidence <= confidence_ceiling(6, 2) == 0.875


def test_twenty_areas_of_two_labels_each_are_too_few_to_measure_calibration(tmp_path):
    from tagger.evaluate import format_report
    from tagger.labels import labelled_set
    from tagger.training import train

    texts = [f"topic{a} word{a} thing{a} sample {i}" for a in range(20) for i in range(2)]
    areas = [f"area{a}" for a in range(20) for _ in range(2)]
    model = train(labelled_set(texts, areas, "mine.csv"))
    assert model.predict_proba(texts).max() <= (40 + 1) / (40 + 20) + 1e-9
    report = format_report(model.card.evaluation, model.card.review)
    assert "too few labels to measure calibration: 40" in report and "95% interval" in report


def _out_of_fold(n: int = 300, areas: int = 4, seed: int = 1):
    """Synthetic out-of-fold scores: the true area's score higher, by a noisy margin."""
    from tagger.training import OutOfFold

    rng = np.random.default_rng(seed)
    truth = rng.integers(0, areas, n)
    linear = rng.normal(0, 1, (n, areas))
    linear[np.arange(n), truth] += rng.normal(1.5, 1.0, n)
    evidence_of = rng.uniform(5, 80, n)
    probe_rows = np.repeat(np.arange(0, n, 3), 2)
    probes = Scores(linear[probe_rows] / 3, np.zeros((len(probe_rows), areas)), evidence_of[probe_rows] / 4)
    scores = Scores(linear, np.zeros((n, areas)), evidence_of)
    return OutOfFold("synthetic", scores, probes, probe_rows), truth


def test_a_figure_is_never_measured_on_the_scores_its_calibration_was_fitted_on():
    """The probabilities the figures are computed from, and whether a label is flagged, are
    cross-fitted: a part's are the same whatever its own labels say (its labels never
    entered its calibration or its review threshold), while the other parts' move."""
    from tagger.evaluate import review_threshold
    from tagger.training import _review, cross_fit_groups, cross_fitted, cross_fitted_flags

    out_of_fold, truth = _out_of_fold()
    groups = cross_fit_groups(truth)
    before = cross_fitted(out_of_fold, truth, groups, ceiling=0.999)
    changed = truth.copy()
    part = groups == 0
    changed[part] = np.random.default_rng(7).permutation(changed[part])  # part 0's labels shuffled
    changed[part] = (changed[part] + 1) % 4  # and every one of them wrong
    after = cross_fitted(out_of_fold, changed, groups, ceiling=0.999)
    np.testing.assert_array_equal(after[part], before[part])
    assert not np.allclose(after[~part], before[~part])

    confidence = before.max(axis=1)
    correct = before.argmax(axis=1) == truth
    flipped = correct.copy()
    flipped[part] = ~flipped[part]  # part 0's tags right where they were wrong, and wrong where right
    flags = [cross_fitted_flags(confidence, c, 0.9, groups) for c in (correct, flipped)]
    np.testing.assert_array_equal(flags[1][part], flags[0][part])
    assert review_threshold(confidence, correct, 0.9) != review_threshold(confidence, flipped, 0.9)
    review = _review(confidence, correct, 0.9, groups=groups)
    assert review.share_flagged == pytest.approx(flags[0].mean(), abs=1e-4)
    assert review.accuracy_unflagged == pytest.approx(correct[~flags[0]].mean(), abs=1e-4)
