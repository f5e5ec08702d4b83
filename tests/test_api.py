"""The Python API behaves like the command line (see the README's Python section)."""

import inspect

import pytest
from conftest import ROOT

import tagger


def test_predict_takes_a_model_folder_as_a_path(shipped):
    by_path = tagger.predict("Robots grasp cups.", model=ROOT / "models")
    assert by_path == tagger.predict("Robots grasp cups.", model=shipped)
    assert tagger.predict(["Robots grasp cups."], model=str(ROOT / "models")) == [by_path]


def test_a_model_that_is_not_one_is_a_clear_error():
    with pytest.raises(tagger.TaggerError, match="model must be a Model or the path of a model folder"):
        tagger.predict("x", model=3)


def test_every_public_name_is_listed():
    names = dir(tagger)
    for name in (
        "TaggerClassifier",
        "tag_dataframe",
        "load_model",
        "Model",
        "Prediction",
        "predict",
        "train",
    ):
        assert name in names and name in tagger.__all__
    assert "os" not in tagger.__all__
    members = dict(inspect.getmembers(tagger))
    assert members["tag_dataframe"] is tagger.tag_dataframe


def test_a_model_says_what_it_is(shipped):
    text = repr(shipped)
    assert text.startswith("<tagger Model: 11 areas (llm, vision, generative,")
    assert "trained on 363 labelled abstracts of labels;" in text and shipped.card.created in text


def test_a_model_scores_labelled_abstracts_as_scikit_learn_does(shipped):
    texts = ["Robots grasp cups with a gripper.", "We prove a regret bound for bandits."]
    predicted = [p.area for p in shipped.predict(texts)]
    assert shipped.score(texts, predicted) == 1.0
    assert shipped.score(texts, [predicted[0], "nonsense"]) == 0.5
    with pytest.raises(tagger.TaggerError, match="2 abstracts and 1 areas"):
        shipped.score(texts, ["robotics"])
