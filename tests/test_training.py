import dataclasses

import numpy as np
import pytest
from conftest import SEEDS
from hypothesis import given
from hypothesis import strategies as st

from tagger import train
from tagger.corpus import read_abstracts
from tagger.labels import Area, TrainingSet
from tagger.model import softmax
from tagger.training import TrainingSettings, documents, export, fit_pipeline

SEED_TEXTS = [a.text for a in read_abstracts([SEEDS])]


def test_the_shipped_model_is_current_with_labels_and_settings(shipped, training_set):
    """Fails when labels/ or seeds/ changed (or the default settings did) without retraining:
    run `tagger train` and commit models/."""
    assert shipped.card["training_data"]["sha256"] == training_set.fingerprint()
    assert TrainingSettings.from_card(shipped.card) == TrainingSettings()


def test_retraining_reproduces_the_shipped_model(shipped, retrained):
    assert retrained.vocabulary == shipped.vocabulary
    np.testing.assert_allclose(retrained.coef, shipped.coef, atol=1e-6)
    np.testing.assert_allclose(retrained.predict_proba(SEED_TEXTS), shipped.predict_proba(SEED_TEXTS), atol=1e-5)
    assert retrained.card["evaluation"] == shipped.card["evaluation"]


def test_leave_one_out_accuracy_of_the_shipped_recipe(retrained):
    figures = retrained.card["evaluation"]
    assert figures["scheme"] == "leave-one-out" and figures["labelled_abstracts"] == 38
    assert figures["accuracy"] >= 0.65
    assert 0.0 < figures["macro_f1"] <= 1.0


def test_the_card_describes_the_training(retrained):
    card = retrained.card
    assert [a["slug"] for a in card["areas"]] == list(retrained.areas)
    assert sum(card["labelled_per_area"].values()) == 38
    assert card["features"]["n_features"] == len(retrained.vocabulary)
    assert {"numpy", "scikit-learn", "python", "tagger"} <= card["versions"].keys()
    assert card["calibration"]["temperature"] > 0


@pytest.fixture(scope="module")
def pipeline_and_model(training_set):
    settings = TrainingSettings()
    pipeline = fit_pipeline(*documents(training_set, settings), settings)
    card = {
        "areas": [{"slug": s} for s in training_set.slugs],
        "features": settings.features_card(),
        "calibration": {"temperature": 1.0},
    }
    model = export(pipeline, card)
    columns = [list(pipeline.classes_).index(area) for area in model.areas]  # scikit-learn sorts areas
    return pipeline, model, columns


def test_numpy_prediction_equals_the_scikit_learn_pipeline(pipeline_and_model):
    pipeline, model, columns = pipeline_and_model
    texts = [*SEED_TEXTS, "", "graph neural networks for molecules", "ÜNÏCÖDÉ naïve café"]
    expected = pipeline.decision_function(texts)[:, columns]
    assert np.abs(expected).max() > 0.1
    np.testing.assert_allclose(model.decision_function(texts), expected, atol=1e-12)
    np.testing.assert_allclose(model.predict_proba(texts), pipeline.predict_proba(texts)[:, columns], atol=1e-12)


# Text made of words the model knows, mixed with arbitrary Unicode.
known_words = st.sampled_from(" ".join(SEED_TEXTS[:5]).split())
mixed_text = st.lists(known_words | st.text(max_size=20), max_size=60).map(" ".join)


@given(st.lists(mixed_text, min_size=1, max_size=4))
def test_numpy_equals_scikit_learn_on_any_text(pipeline_and_model, texts):
    pipeline, model, columns = pipeline_and_model
    expected = pipeline.decision_function(texts)[:, columns]
    np.testing.assert_allclose(model.decision_function(texts), expected, atol=1e-12)


def tiny_set(labels=("a", "b", "a", "b")):
    texts = ("robots grasp cups", "proteins fold fast", "robot arms move", "protein design")
    return TrainingSet(
        areas=(Area("a", "A", "robots and arms", ("grasp",)), Area("b", "B", "proteins", ("fold",))),
        texts=texts[: len(labels)],
        labels=tuple(labels),
        use_descriptions=True,
        origin="test",
    )


def test_training_is_deterministic():
    first, second = train_tiny(), train_tiny()
    np.testing.assert_array_equal(first.coef, second.coef)
    assert first.card["calibration"] == second.card["calibration"]


def train_tiny(**settings):
    from tagger.training import train as fit

    return fit(tiny_set(), TrainingSettings(**settings))


def test_two_areas_work_like_many():
    model = train_tiny()
    assert model.coef.shape[0] == 2
    assert model.predict("a robot grasps a cup").area == "a"
    assert model.predict("protein folding").area == "b"
    scores = model.decision_function(["robot"])
    np.testing.assert_allclose(model.predict_proba(["robot"]), softmax(scores / model.temperature))


def test_labelled_abstracts_count_more_with_more_weight():
    light, heavy = train_tiny(abstract_weight=0.01), train_tiny(abstract_weight=10.0)
    # "cups" appears only in a labelled abstract, never in a description.
    cups = light.vocabulary.index("cups")
    assert abs(heavy.coef[0, heavy.vocabulary.index("cups")]) > abs(light.coef[0, cups])


def test_settings_round_trip_through_the_card(retrained):
    settings = dataclasses.replace(TrainingSettings(), C=3.0, abstract_weight=0.5)
    card = {"features": settings.features_card(), "classifier": settings.classifier_card()}
    assert TrainingSettings.from_card(card) == settings
    assert TrainingSettings.from_card(retrained.card) == TrainingSettings()


def test_train_api_reads_a_users_labelled_file(tmp_path):
    path = tmp_path / "mine.jsonl"
    rows = [("robots grasp cups", "robots"), ("proteins fold", "bio"), ("arms move", "robots"), ("genes", "bio")]
    path.write_text("".join(f'{{"abstract": "{t}", "area": "{a}"}}\n' for t, a in rows), encoding="utf-8")
    model = train(path)
    assert model.areas == ("bio", "robots")
    assert model.card["training_data"]["uses_area_descriptions"] is False
    assert model.predict("robots grasp").area == "robots"
