import hashlib
import json

import numpy as np
import pytest
from conftest import SEEDS
from hypothesis import given
from hypothesis import strategies as st
from prose import stdlib_docstrings

from tagger import predict
from tagger.calibration import Scores, calibrated, fit_calibration
from tagger.card import prediction_digest
from tagger.features import evidence
from tagger.model import CARD_FILE, Model
from tagger.reading import read_abstracts

SEED_TEXTS = [a.text for a in read_abstracts([SEEDS])]
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
    for text in ("hello world", "images", "We thank the reviewers."):
        prediction = predict(text)
        assert prediction.confidence < 0.3 and prediction.needs_review, text
    prose = predict(stdlib_docstrings())
    assert np.mean([p.confidence for p in prose]) < 0.3
    assert all(p.needs_review for p in prose)


def test_a_short_clear_sentence_gets_its_area():
    assert predict("We propose a new GAN for anime faces.").area == "generative"
    assert predict("We prove a regret bound for contextual bandits.").area == "theory"


def test_a_version_1_model_still_loads_without_evidence_shrinkage(shipped, tmp_path):
    """Models trained before the evidence scale existed keep predicting as they did."""
    shipped.save(tmp_path)
    card = json.loads((tmp_path / CARD_FILE).read_text())
    card["format_version"] = 1
    del card["calibration"]["evidence_scale"]
    weights = tmp_path / card["weights_file"]
    with np.load(weights) as arrays:
        saved = {name: arrays[name] for name in arrays.files}
    saved["card_sha256"] = np.frombuffer(prediction_digest(card).encode("ascii"), dtype=np.uint8)
    np.savez(weights, **saved)

    card["weights_sha256"] = hashlib.sha256(weights.read_bytes()).hexdigest()
    (tmp_path / CARD_FILE).write_text(json.dumps(card))
    old = Model.load(tmp_path)
    assert old.card.calibration.evidence_scale == 0.0
    scores = old.decision_function(["hello world"])
    expected = np.exp(scores / old.temperature) / np.exp(scores / old.temperature).sum()
    np.testing.assert_allclose(old.predict_proba(["hello world"]), expected)
