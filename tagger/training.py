"""Fitting: TF-IDF features and a logistic-regression classifier (scikit-learn), calibrated
by temperature scaling on cross-validated scores, exported as a numpy :class:`Model`.

Every setting is in :class:`TrainingSettings`, in one place, and is written to the card.
"""

from __future__ import annotations

import datetime
import platform
import warnings
from dataclasses import asdict, dataclass, field

import numpy as np

from . import __version__
from .features import TextAnalyzer
from .labels import TrainingSet
from .model import FORMAT_VERSION, Model, softmax

# Cross-validation: leave-one-out up to this many labelled abstracts, stratified k-fold above.
LEAVE_ONE_OUT_MAX = 100
FOLDS = 5
RANDOM_STATE = 0


@dataclass(frozen=True)
class TrainingSettings:
    """How features are made and the classifier is fitted.

    ``abstract_weight`` weighs the labelled abstracts against the area descriptions: each
    area's labelled abstracts together weigh ``abstract_weight * n / k`` (n labelled
    abstracts in all, k areas with labels), so every labelled area counts the same whatever
    its size, and labels count for more as they grow; each description weighs
    ``description_weight``. No intercept: the model assumes no area is a priori more likely.
    """

    analyzer: TextAnalyzer = field(default_factory=TextAnalyzer)
    sublinear_tf: bool = True
    min_df: int = 1
    C: float = 10.0
    abstract_weight: float = 0.1
    description_weight: float = 1.0
    max_iter: int = 5000

    def features_card(self) -> dict:
        return {
            "analyzer": self.analyzer.settings(),
            "sublinear_tf": self.sublinear_tf,
            "min_df": self.min_df,
        }

    def classifier_card(self) -> dict:
        settings = {k: v for k, v in asdict(self).items() if k not in self.features_card()}
        return {"type": "LogisticRegression", "fit_intercept": False, **settings}

    @classmethod
    def from_card(cls, card: dict) -> TrainingSettings:
        """The settings a model was trained with, read back from its card."""
        features, classifier = card["features"], card["classifier"]
        return cls(
            analyzer=TextAnalyzer.from_settings(features["analyzer"]),
            **{k: features[k] for k in ("sublinear_tf", "min_df")},
            **{k: classifier[k] for k in ("C", "abstract_weight", "description_weight", "max_iter")},
        )


def documents(
    training_set: TrainingSet, settings: TrainingSettings
) -> tuple[list[str], list[str], np.ndarray]:
    """Training documents, their areas and sample weights: the labelled abstracts, then
    (when the training set uses them) one document per area description."""
    counts = {slug: n for slug, n in training_set.counts().items() if n}
    n, k = len(training_set.labels), len(counts)
    texts = list(training_set.texts)
    areas = list(training_set.labels)
    weights = [settings.abstract_weight * n / (k * counts[area]) for area in areas]
    if training_set.use_descriptions:
        texts += [area.document() for area in training_set.areas]
        areas += list(training_set.slugs)
        weights += [settings.description_weight] * len(training_set.areas)
    return texts, areas, np.asarray(weights)


def fit_pipeline(texts: list[str], areas: list[str], weights: np.ndarray, settings: TrainingSettings):
    """The scikit-learn pipeline the saved model reproduces: TfidfVectorizer + LogisticRegression."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    pipeline = Pipeline(
        [
            (
                "tfidf",
                TfidfVectorizer(
                    analyzer=settings.analyzer,
                    sublinear_tf=settings.sublinear_tf,
                    min_df=settings.min_df,
                    dtype=np.float64,
                ),
            ),
            ("classifier", LogisticRegression(C=settings.C, fit_intercept=False, max_iter=settings.max_iter)),
        ]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        pipeline.fit(texts, areas, classifier__sample_weight=weights)
    return pipeline


def cross_validate(training_set: TrainingSet, settings: TrainingSettings) -> tuple[np.ndarray, str]:
    """Out-of-fold scores (one row per labelled abstract, one column per area) and the
    scheme used. Area descriptions stay in every training fold."""
    from sklearn.model_selection import LeaveOneOut, StratifiedKFold

    n = len(training_set.labels)
    labels = np.asarray(training_set.labels)
    if n <= LEAVE_ONE_OUT_MAX:
        splitter, scheme = LeaveOneOut(), "leave-one-out"
    else:
        splitter = StratifiedKFold(FOLDS, shuffle=True, random_state=RANDOM_STATE)
        scheme = f"stratified {FOLDS}-fold"
    slugs = list(training_set.slugs)
    scores = np.full((n, len(slugs)), np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)  # folds missing a rare area
        folds = list(splitter.split(np.zeros(n), labels))
    for train_index, test_index in folds:
        fold = TrainingSet(
            areas=training_set.areas,
            texts=tuple(training_set.texts[i] for i in train_index),
            labels=tuple(labels[train_index]),
            use_descriptions=training_set.use_descriptions,
            origin=training_set.origin,
        )
        pipeline = fit_pipeline(*documents(fold, settings), settings)
        fold_scores = pipeline.decision_function([training_set.texts[i] for i in test_index])
        classes = list(pipeline.classes_)
        if len(classes) == 2:  # binary: one score column for classes_[1]
            fold_scores = np.column_stack([-fold_scores, fold_scores]) / 2
        columns = [slugs.index(c) for c in classes]
        block = np.full((len(test_index), len(slugs)), -np.inf)
        block[:, columns] = fold_scores
        scores[test_index] = block
    return scores, scheme


def fit_temperature(scores: np.ndarray, labels: list[str], slugs: list[str]) -> float:
    """The temperature T that makes softmax(scores / T) best match the labels (least log loss)."""
    from scipy.optimize import minimize_scalar

    truth = np.asarray([slugs.index(label) for label in labels])

    def log_loss(log_t: float) -> float:
        probabilities = softmax(scores / np.exp(log_t))
        return -np.log(np.clip(probabilities[np.arange(len(truth)), truth], 1e-12, None)).mean()

    result = minimize_scalar(log_loss, bounds=(np.log(0.01), np.log(100.0)), method="bounded")
    return float(np.exp(result.x))


def calibrate(training_set: TrainingSet, settings: TrainingSettings) -> tuple[float, dict]:
    """Cross-validate: the temperature that calibrates the out-of-fold scores, and the
    figures of merit of the calibrated out-of-fold predictions."""
    from . import evaluate

    slugs = list(training_set.slugs)
    scores, scheme = cross_validate(training_set, settings)
    temperature = fit_temperature(scores, list(training_set.labels), slugs)
    probabilities = softmax(scores / temperature)
    return temperature, {
        "scheme": scheme,
        **evaluate.summary(list(training_set.labels), probabilities, slugs),
    }


def train(training_set: TrainingSet, settings: TrainingSettings | None = None) -> Model:
    """Fit a model on ``training_set``, calibrate it by cross-validation, and write its card."""
    settings = settings or TrainingSettings()
    temperature, evaluation = calibrate(training_set, settings)
    pipeline = fit_pipeline(*documents(training_set, settings), settings)
    card = {
        "format_version": FORMAT_VERSION,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "areas": [{"slug": area.slug, "name": area.name} for area in training_set.areas],
        "labelled_per_area": training_set.counts(),
        "training_data": {
            "origin": training_set.origin,
            "sha256": training_set.fingerprint(),
            "labelled_abstracts": len(training_set.labels),
            "uses_area_descriptions": training_set.use_descriptions,
        },
        "features": settings.features_card(),
        "classifier": settings.classifier_card(),
        "calibration": {
            "method": "temperature scaling on cross-validated scores",
            "temperature": temperature,
        },
        "evaluation": evaluation,
        "versions": _versions(),
    }
    return export(pipeline, card)


def export(pipeline, card: dict) -> Model:
    """The numpy :class:`Model` that computes what ``pipeline`` computes (with the card's
    areas in the card's order)."""
    vectorizer, classifier = pipeline.named_steps["tfidf"], pipeline.named_steps["classifier"]
    classes = list(classifier.classes_)
    coef = classifier.coef_
    if len(classes) == 2:  # binary: one row, for classes[1]
        coef = np.vstack([-coef[0], coef[0]]) / 2
    order = [classes.index(area["slug"]) for area in card["areas"]]
    vocabulary = sorted(vectorizer.vocabulary_, key=vectorizer.vocabulary_.get)
    card = {**card, "features": {**card["features"], "n_features": len(vocabulary)}}
    return Model(card, vocabulary, vectorizer.idf_, coef[order], np.zeros(len(order)))


def _versions() -> dict:
    import scipy
    import sklearn

    return {
        "tagger": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
    }
