"""One fit of the recipe: the documents a classifier learns from (labelled abstracts, area
descriptions, pseudo-labelled abstracts, each with its weight), the TF-IDF vectoriser and the
logistic regression (scikit-learn), equal to the scikit-learn pipeline the tests build.
Training (:mod:`tagger.training`) and self-training (:mod:`tagger.selftraining`) both fit through here.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from .calibration import softmax
from .corpus import Corpus, Vocabulary
from .errors import LabelError
from .labels import TrainingSet
from .labelstore import NONE
from .settings import TrainingSettings


class Documents(NamedTuple):
    """What the classifier is fitted on: texts, their areas, and each one's weight."""

    texts: list[str]
    areas: list[str]
    weights: np.ndarray


def documents(training_set: TrainingSet, settings: TrainingSettings) -> Documents:
    """The labelled abstracts, then (when the training set uses them) one document per area
    description, then the pseudo-labelled abstracts of a pile, with their weights (see
    :class:`TrainingSettings`)."""
    scale = settings.abstract_weight if training_set.use_descriptions else 1.0
    texts = list(training_set.texts)
    areas = list(training_set.labels)
    weights = _label_weights(training_set.labels, settings, scale)
    if training_set.weights:  # each label's own (sample_weight), times its area's balance
        weights = [w * given for w, given in zip(weights, training_set.weights)]
    if training_set.use_descriptions:
        texts += [area.document() for area in training_set.areas]
        areas += list(training_set.slugs)
        weights += [settings.description_weight] * len(training_set.areas)
    texts += training_set.pseudo_texts
    areas += training_set.pseudo_labels
    weights += _label_weights(training_set.pseudo_labels, settings, scale * settings.pseudo_label_weight)
    return Documents(texts, areas, np.asarray(weights))


def _label_weights(labels: tuple[str, ...], settings: TrainingSettings, scale: float) -> list[float]:
    """With balanced areas, each area's labels together weigh ``scale * n / k`` (n labels, k
    areas with labels); otherwise each label weighs ``scale``. Only the ratio of weights
    matters to the fit, so without descriptions every abstract weighs 1 on average and C keeps
    its usual meaning."""
    outside = {NONE: settings.no_area_weight}  # (the answer that an abstract fits no area)
    if not settings.balance_areas:
        return [scale * outside.get(label, 1.0) for label in labels]
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    n, k = len(labels), len(counts)
    return [scale * n / (k * counts[label]) * outside.get(label, 1.0) for label in labels]


# The classifier holds one weight per area and feature, and its fit (L-BFGS) some twenty-five
# copies of them: a taxonomy of many areas keeps at most COEFFICIENTS_MAX // areas features,
# the most frequent. 2,000 areas: 5,000 features; `tagger train --data` on 40,000 preprints
# in 2,000 areas then ends in about 7 minutes at 5.8 GB (a plain fit of their whole
# vocabulary of single words took 5.3 GB, and with word pairs the fit asked for 32 GB at 500
# areas; tests/benchmarks/bench_limits.py --cases 8). A taxonomy of up to a few hundred
# areas keeps its whole vocabulary.
COEFFICIENTS_MAX = 10_000_000


def features_max(areas: int) -> int:
    """The most features a classifier of ``areas`` areas is given (see COEFFICIENTS_MAX)."""
    return COEFFICIENTS_MAX // max(areas, 1)


def make_classifier(settings: TrainingSettings) -> BlendedClassifier:
    return BlendedClassifier(
        C=settings.C,
        fit_intercept=settings.fit_intercept,
        max_iter=settings.max_iter,
        bayes_weight=settings.bayes_weight,
        bayes_smoothing=settings.bayes_smoothing,
    )


class BlendedClassifier(ClassifierMixin, BaseEstimator):
    """A logistic regression plus ``bayes_weight`` times a complement naive Bayes fitted on the
    same weighted documents (scikit-learn's ``LogisticRegression`` and ``ComplementNB``). Both
    are linear in the features, so the blend is one linear classifier: its ``coef_`` is the
    regression's plus the weighted log-probabilities of naive Bayes, centred over the areas
    (naive Bayes adds no intercept). The regression learns what the labels say; naive Bayes,
    with little smoothing, keeps every word of an area's description and labels in play,
    which carries to abstracts of other years and sources (docs/evaluation.md). With
    ``bayes_weight`` 0 it is the regression alone. With ``warm_start``, each fit's regression
    starts from the last one's solution (training fits along increasing C)."""

    def __init__(  # (the defaults: TrainingSettings', the one place they are set)
        self,
        C: float = TrainingSettings.C,
        fit_intercept: bool = False,
        max_iter: int = TrainingSettings.max_iter,
        bayes_weight: float = TrainingSettings.bayes_weight,
        bayes_smoothing: float = TrainingSettings.bayes_smoothing,
        warm_start: bool = False,
    ):
        self.C, self.fit_intercept, self.max_iter = C, fit_intercept, max_iter
        self.bayes_weight, self.bayes_smoothing, self.warm_start = bayes_weight, bayes_smoothing, warm_start

    def fit(self, X, y, sample_weight=None) -> BlendedClassifier:
        from sklearn.linear_model import LogisticRegression

        regression = getattr(self, "regression_", None) if self.warm_start else None
        self.regression_ = (regression or LogisticRegression()).set_params(
            C=self.C, fit_intercept=self.fit_intercept, max_iter=self.max_iter, warm_start=self.warm_start
        )
        self.regression_.fit(X, y, sample_weight=sample_weight)
        self.classes_ = self.regression_.classes_
        self.intercept_ = self.regression_.intercept_
        self.coef_ = self.regression_.coef_
        if self.bayes_weight:
            self.coef_ = self.coef_ + self.bayes_weight * self._bayes(X, y, sample_weight)
        return self

    def _bayes(self, X, y, sample_weight) -> np.ndarray:
        """Naive Bayes's centred log-probabilities (as the regression's rows). With
        ``warm_start``, a fit on the very same documents (a search's fits along C) reuses
        the last ones: naive Bayes does not depend on C."""
        from sklearn.naive_bayes import ComplementNB

        given = (X, y, sample_weight)
        last = getattr(self, "_bayes_fitted", None)
        if (
            self.warm_start
            and last is not None
            and all(a is b for a, b in zip(last[0], given))
            and last[1] == self.bayes_smoothing
        ):
            return last[2]
        bayes = ComplementNB(alpha=self.bayes_smoothing).fit(X, y, sample_weight=sample_weight)
        log_probabilities = bayes.feature_log_prob_ - bayes.feature_log_prob_.mean(axis=0)
        if len(self.classes_) == 2:  # the regression's one row is the second class's side
            log_probabilities = log_probabilities[1:] - log_probabilities[:1]
        self._bayes_fitted = (given, self.bayes_smoothing, log_probabilities)
        return log_probabilities

    def decision_function(self, X) -> np.ndarray:
        return np.asarray(X @ self.coef_.T) + self.intercept_

    def predict(self, X) -> np.ndarray:
        return self.classes_[self.predict_proba(X).argmax(axis=1)]

    def predict_proba(self, X) -> np.ndarray:
        scores = self.decision_function(X)
        if len(self.classes_) == 2:  # one column, the second class's: two opposite halves
            scores = np.column_stack([-scores[:, 0], scores[:, 0]]) / 2
        return softmax(scores)


def one_blas_thread():
    """BLAS threads fight over small matrices: on two cores, one thread fits ~10x faster."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


@contextlib.contextmanager
def words_to_learn_from(training_set: TrainingSet):
    """scikit-learn's "empty vocabulary" (a fold whose labelled texts are all stop words) as
    a clear error."""
    try:
        yield
    except ValueError as error:
        if "empty vocabulary" not in str(error):
            raise
        raise LabelError(
            "too few labelled texts have a word to learn from (the rest are only stop words, numbers "
            "or symbols): a cross-validation fold has none",
            where=training_set.origin,
            fix="Label more abstracts with words in them: check the --column that holds them.",
        ) from None


def tfidf(corpus: Corpus, texts: list[str], settings: TrainingSettings, areas: int):
    """The vocabulary (:class:`tagger.corpus.Vocabulary`) of ``texts`` and their TF-IDF
    matrix, as scikit-learn's ``TfidfVectorizer`` of ``settings`` fits them (the tests hold the two equal)."""
    vocabulary, rows = corpus.fit(
        corpus.rows(texts),
        settings.ngram_max,
        settings.sublinear_tf,
        settings.min_df,
        features_max(areas),
        settings.pair_min_df,
    )
    return vocabulary, rows.csr()


def matrix(corpus: Corpus, vocabulary, texts: list[str]):
    """The TF-IDF matrix of ``texts`` in a fitted ``vocabulary`` (see :func:`tfidf`)."""
    return corpus.matrix(vocabulary, corpus.rows(texts)).csr()


class Fitted(NamedTuple):
    """A fitted vocabulary (of a :class:`~tagger.corpus.Corpus`) and classifier."""

    corpus: Corpus
    vocabulary: Vocabulary
    classifier: BlendedClassifier

    def matrix(self, texts: list[str]):
        """The TF-IDF matrix of ``texts``."""
        return matrix(self.corpus, self.vocabulary, texts)

    def terms(self) -> list[str]:
        """The features' terms, in column order."""
        return [self.corpus.names[t] for t in self.vocabulary.terms.tolist()]


def fit(training_set: TrainingSet, settings: TrainingSettings, corpus: Corpus | None = None) -> Fitted:
    """The vectoriser and classifier fitted on the training set's documents, their TF-IDF
    matrix made by ``corpus`` (which keeps each text's analysis for the next fit)."""
    corpus = corpus if corpus is not None else Corpus()
    texts, areas, weights = documents(training_set, settings)
    with one_blas_thread(), warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        with words_to_learn_from(training_set):
            vocabulary, features = tfidf(corpus, texts, settings, len(training_set.slugs))
        classifier = make_classifier(settings).fit(features, areas, sample_weight=weights)
    return Fitted(corpus, vocabulary, classifier)
