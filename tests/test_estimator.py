"""TaggerClassifier: the tagger recipe inside scikit-learn's tools, and scikit-learn's own checks."""

import warnings
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from conftest import run
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.utils.estimator_checks import check_estimator

import tagger
from tagger.errors import TaggerError
from tagger.estimator import TaggerClassifier


@pytest.fixture(scope="module")
def seeds(seed_set):
    """The seed abstracts of the areas with three or more of them (cross-validation needs two
    of each area in every training fold)."""
    training_set = seed_set
    counts = Counter(training_set.labels)
    keep = [i for i, label in enumerate(training_set.labels) if counts[label] >= 3]
    return [training_set.texts[i] for i in keep], [training_set.labels[i] for i in keep]


def test_it_fits_predicts_and_becomes_a_tagger_model(seeds, tmp_path):
    X, y = seeds
    clf = tagger.TaggerClassifier(C=3.0).fit(X, y)
    assert list(clf.classes_) == sorted(set(y)) and list(clf.model_.areas) == list(clf.classes_)
    probabilities = clf.predict_proba(X)
    assert probabilities.shape == (len(X), len(set(y))) and np.allclose(probabilities.sum(axis=1), 1)
    assert list(clf.predict(X)) == [clf.classes_[i] for i in probabilities.argmax(axis=1)]
    assert clf.model_.card.settings.C == 3.0
    clf.model_.save(tmp_path / "model")
    assert tagger.predict(X[:3], model=tagger.load_model(tmp_path / "model")) == clf.model_.predict(X[:3])


def test_log_probabilities_and_decision_function_as_scikit_learn_classifiers_give_them(seeds):
    """predict_log_proba (the log of predict_proba) and decision_function (the linear scores
    before calibration, one column per class), each ranking the classes as predict does."""
    X, y = seeds
    clf = tagger.TaggerClassifier().fit(X, y)
    log_probabilities, scores = clf.predict_log_proba(X), clf.decision_function(X)
    assert log_probabilities.shape == scores.shape == (len(X), len(clf.classes_))
    assert np.allclose(np.exp(log_probabilities), clf.predict_proba(X))
    assert list(clf.classes_[scores.argmax(axis=1)]) == list(clf.predict(X))
    from sklearn.metrics import top_k_accuracy_score

    assert 0 < top_k_accuracy_score(y, scores, k=2, labels=clf.classes_) <= 1


def test_labels_of_any_type_come_back_as_given(seeds):
    X, y = seeds
    numbers = {area: i for i, area in enumerate(sorted(set(y)))}
    clf = tagger.TaggerClassifier().fit(pd.Series(X), np.array([numbers[a] for a in y]))
    assert clf.classes_.dtype.kind == "i" and set(clf.predict(X)) <= set(numbers.values())
    assert (clf.predict(pd.DataFrame({"text": X})) == clf.predict(X)).all()


@pytest.mark.slow  # trains end to end
def test_it_works_in_pipelines_cross_validation_and_grid_search(seeds):
    X, y = seeds
    scores = cross_val_score(tagger.TaggerClassifier(), X, y, cv=3)
    assert len(scores) == 3 and all(0 <= s <= 1 for s in scores)
    search = GridSearchCV(Pipeline([("tagger", tagger.TaggerClassifier())]), {"tagger__C": [1.0, 10.0]}, cv=3)
    search.fit(X, y)
    assert search.best_params_["tagger__C"] in (1.0, 10.0)
    assert clone(tagger.TaggerClassifier(ngram_max=1)).get_params()["ngram_max"] == 1


@pytest.mark.slow  # trains end to end
def test_cross_val_score_gives_numbers_when_the_rarest_area_has_one_example(seed_set):
    X, y = list(seed_set.texts), list(seed_set.labels)
    assert min(Counter(y).values()) == 1  # the seeds' rarest area has one abstract
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # scikit-learn's and tagger's: the rare area
        scores = cross_val_score(tagger.TaggerClassifier(), X, y, cv=3, error_score="raise")
    assert len(scores) == 3 and all(0 < s <= 1 for s in scores)


def test_an_area_with_one_example_fits_with_a_warning(seeds):
    X, y = seeds
    with pytest.warns(tagger.TaggerWarning, match="only one labelled abstract of 'lonely'"):
        clf = tagger.TaggerClassifier().fit([*X, "A lonely abstract about lighthouses."], [*y, "lonely"])
    assert "lonely" in clf.classes_ and clf.model_.card.evaluation.left_out == ("lonely",)
    assert clf.predict(["A lonely abstract about lighthouses."])[0] in clf.classes_


@pytest.mark.parametrize("X", ["one string", [1, 2, 3], np.zeros((3, 2)), None])
def test_what_is_not_text_is_refused(seeds, X):
    with pytest.raises(TaggerError, match="text"):
        tagger.TaggerClassifier().fit(X, ["a", "b", "c"])


# scikit-learn's own checks: TaggerClassifier declares that it takes text (input_tags.string,
# not two_d_array), so check_estimator runs the checks that apply to a text classifier, and
# every one of them must pass. The checks scikit-learn yields for a classifier of numeric
# matrices make their data as such matrices; each is skipped for the reason given, and where
# it tests a promise that holds for texts, a test below makes the same check on texts.
NUMERIC = "makes numeric matrices as X; a text classifier refuses them"
SKIPPED = {
    **dict.fromkeys(
        [
            "check_array_api_input",
            "check_classifier_data_not_an_array",
            "check_complex_data",
            "check_dtype_object",
            "check_estimator_sparse_array",
            "check_estimator_sparse_matrix",
            "check_estimator_sparse_tag",
            "check_estimators_dtypes",
            "check_estimators_nan_inf",
            "check_f_contiguous_array_estimator",
            "check_fit2d_1feature",
            "check_fit2d_predict1d",
            "check_fit_score_takes_y",
            "check_n_features_in",
            "check_non_transformer_estimators_n_iter",
            "check_positive_only_tag_during_fit",
            "check_readonly_memmap_input",
            "check_sample_weight_equivalence_on_dense_data",
            "check_requires_y_none",
        ],
        NUMERIC,
    ),
    **dict.fromkeys(
        [
            "check_classifiers_classes",
            "check_classifiers_one_label",
            "check_classifiers_one_label_sample_weights",
            "check_classifiers_regression_target",
            "check_classifiers_train",
            "check_decision_proba_consistency",
            "check_dict_unchanged",
            "check_dont_overwrite_parameters",
            "check_estimators_empty_data_messages",
            "check_estimators_fit_returns_self",
            "check_estimators_overwrite_params",
            "check_estimators_pickle",
            "check_fit2d_1sample",
            "check_fit_check_is_fitted",
            "check_fit_idempotent",
            "check_methods_sample_order_invariance",
            "check_methods_subset_invariance",
            "check_pipeline_consistency",
            "check_sample_weights_list",
            "check_sample_weights_not_an_array",
            "check_sample_weights_not_overwritten",
            "check_sample_weights_pandas_series",
            "check_sample_weights_shape",
            "check_all_zero_sample_weights_error",
            "check_supervised_y_2d",
        ],
        NUMERIC + " (made on texts below: test_scikit_learns_promises_hold_on_texts)",
    ),
}
DATA_FREE = [  # the checks that need no data, or none that is numeric: run as they are
    "check_estimator_cloneable",
    "check_estimator_repr",
    "check_estimator_tags_renamed",
    "check_estimators_partial_fit_n_features",
    "check_estimators_unfitted",
    "check_do_not_raise_errors_in_init_or_set_params",
    "check_fit1d",
    "check_get_params_invariance",
    "check_mixin_order",
    "check_n_features_in_after_fitting",
    "check_no_attributes_set_in_init",
    "check_parameters_default_constructible",
    "check_set_params",
    "check_supervised_y_no_nan",
    "check_valid_tag_types",
]


def test_scikit_learns_checks_that_apply_to_a_text_classifier_pass():
    from sklearn.utils import estimator_checks

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(tagger.TaggerClassifier(), on_fail=None, on_skip=None)
        assert results and all(r["status"] == "passed" for r in results), results
        for name in DATA_FREE:
            getattr(estimator_checks, name)("TaggerClassifier", tagger.TaggerClassifier())

    class OfMatrices(tagger.TaggerClassifier):  # what scikit-learn would check if it took them
        def __sklearn_tags__(self):
            tags = super().__sklearn_tags__()
            tags.input_tags.two_d_array = True
            return tags

    yielded = {
        getattr(c, "func", c).__name__ for c in estimator_checks._yield_all_checks(OfMatrices(), legacy=True)
    }
    yielded.add("check_estimator_cloneable")
    assert yielded == set(SKIPPED) | set(DATA_FREE), yielded ^ (set(SKIPPED) | set(DATA_FREE))


TEXTS = [f"Robots grasp cups number {i} with tactile skins." for i in range(6)] + [
    f"We prove a regret bound {i} for linear contextual bandits." for i in range(6)
]
AREAS = ["robotics"] * 6 + ["theory"] * 6


def test_scikit_learns_promises_hold_on_texts():
    import pickle

    from sklearn.exceptions import DataConversionWarning, NotFittedError

    clf = tagger.TaggerClassifier(C=3.0)
    params = clf.get_params()
    with pytest.raises(NotFittedError):
        clf.predict(TEXTS)
    assert clf.fit(TEXTS, AREAS) is clf and clf.get_params() == params  # returns self, params kept
    probabilities, scores = clf.predict_proba(TEXTS), clf.decision_function(TEXTS)
    assert (probabilities.argmax(axis=1) == scores.argmax(axis=1)).all()  # decision and proba agree
    assert (pickle.loads(pickle.dumps(clf)).predict_proba(TEXTS) == probabilities).all()
    again = tagger.TaggerClassifier(C=3.0).fit(TEXTS, AREAS).fit(TEXTS, AREAS)  # idempotent
    assert np.allclose(again.predict_proba(TEXTS), probabilities)
    order = np.random.default_rng(0).permutation(len(TEXTS))  # sample order and subset invariance
    assert np.allclose(clf.predict_proba([TEXTS[i] for i in order]), probabilities[order])
    assert np.allclose(clf.predict_proba(TEXTS[:3]), probabilities[:3])
    numbers = [0 if a == "robotics" else 1 for a in AREAS]  # classes of any kind, in sorted order
    assert list(tagger.TaggerClassifier().fit(TEXTS, numbers).classes_) == [0, 1]
    with pytest.warns(DataConversionWarning):  # y as a column: raveled, with scikit-learn's warning
        column = tagger.TaggerClassifier(C=3.0).fit(TEXTS, np.array(AREAS).reshape(-1, 1))
    assert np.allclose(column.predict_proba(TEXTS), probabilities)
    ones = [1.0] * len(TEXTS)  # sample_weight: as a list, an array, a Series; ones change nothing
    for weights in (ones, np.array(ones), pd.Series(ones)):
        weighted = tagger.TaggerClassifier(C=3.0).fit(TEXTS, AREAS, sample_weight=weights)
        assert np.allclose(weighted.decision_function(TEXTS), scores)
    heavier = np.array(ones)
    heavier[0] = 5.0
    given = heavier.copy()
    moved = tagger.TaggerClassifier(C=3.0).fit(TEXTS, AREAS, sample_weight=heavier).decision_function(TEXTS)
    assert (heavier == given).all() and not np.allclose(moved, scores)  # used, and not overwritten


@pytest.mark.parametrize(
    ("y", "weights", "message"),
    [
        ([0.5, 1.5] * 6, None, "Unknown label type: continuous"),
        (["robotics"] * 12, None, "fewer than two areas|1 distinct area"),
        (AREAS, [1.0] * 11, r"sample_weight has shape \(11,\), expected \(12,\)"),
        (AREAS, [0.0] * 12, "sample_weight is zero for every text"),
        (AREAS, [-1.0] + [1.0] * 11, "sample_weight must be finite numbers of at least 0"),
        (AREAS, [float("nan")] + [1.0] * 11, "sample_weight must be finite numbers of at least 0"),
    ],
)
def test_a_target_or_weights_a_classifier_cannot_take_is_a_value_error(y, weights, message):
    with pytest.raises(ValueError, match=message):
        tagger.TaggerClassifier().fit(TEXTS, y, sample_weight=weights)


@pytest.mark.parametrize(
    ("X", "y", "message"),
    [
        (["robots", "cells", "robots", "cells"], ["a", np.nan, "a", "b"], r"y\[1\] is missing"),
        (["robots", "cells", "robots", "cells"], ["a", None, "a", "b"], r"y\[1\] is missing"),
        (
            ["robots", "cells", "robots", "cells"],
            pd.Series(["a", pd.NA, "a", "b"], dtype="string"),
            r"y\[1\] is missing",
        ),
        (["robots", None, "robots", "cells"], ["a", "b", "a", "b"], r"X\[1\] is None, not text"),
        (["", " ", "", ""], ["a", "b", "a", "b"], r"every text of X is empty"),
    ],
)
def test_missing_labels_and_texts_are_clear_value_errors(X, y, message):
    with pytest.raises(ValueError, match=message):
        tagger.TaggerClassifier().fit(X, y)


@pytest.mark.parametrize("bad", [float("nan"), None, "", "  ", "robotics;vision", "a:b"])
def test_a_label_no_one_gave_or_that_breaks_the_tags_column_is_refused_naming_its_row(bad):
    import pandas as pd

    texts = ["Robots grasp cups.", "We prove a regret bound.", "Robots walk on stairs.", "A bound on regret."]
    areas = ["robotics", "theory", bad, "theory"]
    frame = pd.DataFrame({"abstract": texts, "area": areas})
    for call, where in (
        (lambda: tagger.train(pd.Series(texts), pd.Series(areas, dtype=object)), "lists, row 3"),
        (lambda: tagger.train(frame), "dataframe, row 2"),
        (lambda: TaggerClassifier().fit(texts, areas), "y[2]" if bad is None or bad != bad else "fit, row 3"),
    ):
        with pytest.raises(TaggerError) as error:
            call()
        said = str(error.value)
        assert where in said and ("no area" in said or "';' or ':'" in said or "missing" in said), said


def test_a_labelled_file_with_an_empty_or_bad_area_is_one_clear_error(capsys, tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text("abstract,area\nRobots grasp cups.,bots\nProteins fold.,bio:chem\nCells divide.,bio\n")
    status, out, err = run(capsys, "train", "--data", path, "--model", tmp_path / "m")
    assert (status, out) == (2, "") and err.startswith(
        f"tagger: {path}:3: the area 'bio:chem' holds ';' or ':'"
    )


def test_parameters_are_validated_as_scikit_learn_validates_its_own():
    """A bad value is refused by fit before any work, a ValueError naming the parameter (as any
    scikit-learn estimator refuses it), by the one table of the recipe's limits; every good one
    is accepted (checked by TrainingSettings, not by scikit-learn's private validation)."""
    from tagger.checks import RANGES
    from tagger.settings import NUMBERS, TrainingSettings

    for name, bad in (("C", -1.0), ("ngram_max", 3), ("max_iter", 0.5), ("balance_areas", "yes")):
        with pytest.raises(ValueError, match=f"^training setting {name} .* is not valid"):
            tagger.TaggerClassifier(**{name: bad}).fit(TEXTS, AREAS)
    for name in set(tagger.TaggerClassifier().get_params()) & set(NUMBERS):
        low, high, _, _ = RANGES[name]
        for good in (low, high):
            TrainingSettings(**{name: good})
