"""tagger as a scikit-learn estimator: ``TaggerClassifier`` fits the tagger recipe (TF-IDF,
a linear classifier, calibration by cross-validation) on texts and labels, and works inside
``Pipeline``, ``cross_val_score`` and ``GridSearchCV``. Its fitted ``model_`` is a tagger
model: ``clf.model_.save("models")`` and ``tagger predict --model models`` tag with it.

It takes text: ``X`` is a sequence of strings (a list, a pandas Series, a 1-D array, or a
2-D array or dataframe with one column of them), and says so in its tags (``input_tags.string``,
not ``two_d_array``): scikit-learn's ``check_estimator`` runs the checks that apply to a text
classifier (``tests/test_estimator.py`` lists the others, made on numeric matrices, and makes
those that test a promise on texts). ``fit`` takes ``sample_weight``.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .checks import a_kind
from .errors import ArgumentError
from .labels import labelled
from .reading import document
from .settings import TrainingSettings, default_settings

_DEFAULTS = default_settings(use_descriptions=False)  # the one set of defaults: the estimator's are these


class TaggerClassifier(ClassifierMixin, BaseEstimator):
    """The tagger recipe as a classifier of texts; the parameters are those of
    :class:`tagger.settings.TrainingSettings` that apply without area descriptions, with its
    defaults."""

    def __init__(  # noqa: PLR0913 (scikit-learn: every hyperparameter an argument)
        self,
        ngram_max: int = _DEFAULTS.ngram_max,
        sublinear_tf: bool = _DEFAULTS.sublinear_tf,
        min_df: int = _DEFAULTS.min_df,
        pair_min_df: int = _DEFAULTS.pair_min_df,
        C: float = _DEFAULTS.C,
        balance_areas: bool = _DEFAULTS.balance_areas,
        bayes_weight: float = _DEFAULTS.bayes_weight,
        bayes_smoothing: float = _DEFAULTS.bayes_smoothing,
        no_area_weight: float = _DEFAULTS.no_area_weight,
        review_accuracy: float = _DEFAULTS.review_accuracy,
        max_iter: int = _DEFAULTS.max_iter,
    ) -> None:
        self.ngram_max = ngram_max
        self.sublinear_tf = sublinear_tf
        self.min_df = min_df
        self.pair_min_df = pair_min_df
        self.C = C
        self.balance_areas = balance_areas
        self.bayes_weight = bayes_weight
        self.bayes_smoothing = bayes_smoothing
        self.no_area_weight = no_area_weight
        self.review_accuracy = review_accuracy
        self.max_iter = max_iter

    def fit(self, X, y, sample_weight=None):
        """Fit on texts ``X`` and their labels ``y`` (any hashable values; a column vector
        is taken as a vector, with scikit-learn's warning), each label weighing its
        ``sample_weight`` (non-negative numbers; default 1 each)."""
        from dataclasses import replace

        from sklearn.utils import column_or_1d
        from sklearn.utils.multiclass import check_classification_targets

        from .training import train

        settings = TrainingSettings(**self.get_params())  # (each number checked, as training checks it)
        texts = _texts(X)
        given = np.asarray(y, dtype=object)  # as given: numpy would make NaN among strings 'nan'
        if given.ndim == 2 and given.shape[1] == 1:
            given = column_or_1d(given, warn=True)
        if given.ndim != 1 or len(given) != len(texts):
            raise ArgumentError(
                f"y has shape {given.shape}, expected ({len(texts)},)", fix="Give one label per text."
            )
        missing = next((i for i, label in enumerate(given) if _is_missing(label)), None)
        if missing is not None:
            raise ArgumentError(f"y[{missing}] is missing, not a label", fix="Give every text a label.")
        y = np.asarray(given.tolist())  # (the labels' own type again: numbers as numbers)
        try:
            check_classification_targets(y)  # (a continuous target: refused)
        except ValueError as error:
            raise ArgumentError(str(error).split(".")[0], fix="Give y as class labels (areas).") from None
        weights = _weights(sample_weight, len(texts))
        if not any(text.strip() for text in texts):
            raise ArgumentError("every text of X is empty", fix="Pass the texts to learn from.")
        self.classes_ = np.unique(y)
        slugs = [str(c) for c in self.classes_]
        if len(set(slugs)) != len(slugs):
            raise ArgumentError("two labels read the same as text", fix="Use labels that differ as strings.")
        training_set = labelled(texts, [str(v) for v in y], order=slugs, origin="TaggerClassifier.fit")
        if weights is not None:
            training_set = replace(training_set, weights=weights)
        self.model_ = train(training_set, settings)
        # the classes are the model's answers (none among them when learnt; a none too rare to
        # learn from is no class), each column of the model's in the classes' sorted order
        answers = list(self.model_.areas)
        self.classes_ = self.classes_[[str(c) in answers for c in self.classes_]]
        self._columns = np.array([answers.index(str(c)) for c in self.classes_])
        self.n_features_in_ = 1
        return self

    def predict_proba(self, X) -> np.ndarray:
        """Calibrated probabilities, one column per class of ``classes_``."""
        check_is_fitted(self, "model_")
        return self.model_.predict_proba(_texts(X))[:, self._columns]

    def predict_log_proba(self, X) -> np.ndarray:
        """The log of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):  # (a probability of 0 is -inf, as scikit-learn gives it)
            return np.log(self.predict_proba(X))

    def decision_function(self, X) -> np.ndarray:
        """The linear scores before calibration, one column per class of ``classes_``: larger
        means likelier; the largest is the predicted class."""
        check_is_fitted(self, "model_")
        return self.model_.decision_function(_texts(X))[:, self._columns]

    def predict(self, X) -> np.ndarray:
        probabilities = self.predict_proba(X)
        return self.classes_[probabilities.argmax(axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True  # it takes texts,
        tags.input_tags.two_d_array = False  # not a numeric matrix (scikit-learn's checks then skip those)
        return tags


def _texts(X) -> list[str]:
    """The documents of ``X``: a sequence of strings, or a table of one column of them."""
    if isinstance(X, str) or X is None:
        raise ArgumentError(
            f"X is {type(X).__name__}, not a sequence of texts", fix="Pass a list of strings."
        )
    if hasattr(X, "columns"):  # a dataframe: its one column
        if len(X.columns) != 1:
            raise ArgumentError(f"X has {len(X.columns)} columns", fix="Pass one column of texts.")
        X = X.iloc[:, 0]
    values = np.asarray(X, dtype=object)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim != 1:
        raise ArgumentError(
            f"X has shape {values.shape}, not a sequence of texts", fix="Pass a list of strings."
        )
    bad = next((i for i, v in enumerate(values) if not isinstance(v, str)), None)
    if bad is not None:
        raise ArgumentError(f"X[{bad}] is {a_kind(values[bad])}, not text", fix="Pass a list of strings.")
    return [document(text) for text in values]


def _weights(sample_weight, n: int) -> tuple[float, ...] | None:
    """``sample_weight`` checked: None, or ``n`` finite numbers of at least 0, not all 0."""
    if sample_weight is None:
        return None
    try:
        weights = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise ArgumentError(
            "sample_weight holds something that is not a number", fix="Pass numbers."
        ) from None
    if weights.ndim == 0:
        weights = np.full(n, float(weights))
    if weights.shape != (n,):
        raise ArgumentError(
            f"sample_weight has shape {weights.shape}, expected ({n},)", fix="Give one weight per text."
        )
    if not np.isfinite(weights).all() or (weights < 0).any():
        raise ArgumentError(
            "sample_weight must be finite numbers of at least 0", fix="Pass weights such as 1.0."
        )
    if not weights.any():
        raise ArgumentError("sample_weight is zero for every text", fix="Give some texts a weight above 0.")
    return tuple(weights.tolist())


def _is_missing(label) -> bool:
    """None, NaN, pandas' NA or NaT: no label."""
    try:
        return bool(label is None or label != label)
    except (TypeError, ValueError):  # pd.NA's comparison is neither true nor false
        return True
