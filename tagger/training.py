"""Fitting: TF-IDF features and a logistic-regression classifier (scikit-learn), calibrated
by temperature scaling on cross-validated scores, exported as a numpy :class:`Model`.

Every setting is in :class:`TrainingSettings`, in one place, and is written to the card.
With enough labelled abstracts, the settings are chosen by cross-validation from
:data:`SELECTION_GRID`, and the choice is written to the card too.
"""

from __future__ import annotations

import dataclasses
import datetime
import itertools
import platform
import warnings
from dataclasses import asdict, dataclass, field

import numpy as np

from . import __version__, evaluate
from .features import TextAnalyzer
from .labels import TrainingSet
from .model import FORMAT_VERSION, Model, softmax

# Cross-validation: leave-one-out up to this many labelled abstracts, stratified k-fold above.
LEAVE_ONE_OUT_MAX = 100
FOLDS = 5
RANDOM_STATE = 0
# From this many labelled abstracts on, settings are chosen by cross-validated macro-F1, on a
# stratified sample of at most SELECTION_SAMPLE of them (the choice is stable by then, and the
# search stays minutes, not hours, on large corpora).
SELECT_FROM = 200
SELECTION_SAMPLE = 5000
SELECTION_GRID = {
    "C": (0.3, 1.0, 3.0, 10.0, 30.0),
    "ngram_max": (1, 2),
    "sublinear_tf": (True, False),
    "balance_areas": (True, False),
}


@dataclass(frozen=True)
class TrainingSettings:
    """How features are made and the classifier is fitted.

    ``balance_areas``: every area's labelled abstracts together weigh the same, whatever
    its size, and the model has no intercept (no area is a priori more likely); otherwise
    every abstract weighs the same and an intercept learns how common each area is.
    ``abstract_weight`` weighs the labelled abstracts against the area descriptions: with
    balanced areas, each area's labelled abstracts together weigh ``abstract_weight * n / k``
    (n labelled abstracts, k areas with labels), so labels count for more as they grow;
    each description weighs ``description_weight``. ``review_accuracy``: predictions at or
    above the review threshold were right this often in cross-validation.
    """

    analyzer: TextAnalyzer = field(default_factory=TextAnalyzer)
    sublinear_tf: bool = True
    min_df: int = 1
    C: float = 10.0
    balance_areas: bool = True
    abstract_weight: float = 0.1
    description_weight: float = 1.0
    review_accuracy: float = 0.9
    max_iter: int = 5000

    def features_card(self) -> dict:
        return {
            "analyzer": self.analyzer.settings(),
            "sublinear_tf": self.sublinear_tf,
            "min_df": self.min_df,
        }

    def classifier_card(self) -> dict:
        settings = {k: v for k, v in asdict(self).items() if k not in self.features_card()}
        return {"type": "LogisticRegression", "fit_intercept": not self.balance_areas, **settings}

    @classmethod
    def from_card(cls, card: dict) -> TrainingSettings:
        """The settings a model was trained with, read back from its card."""
        features, classifier = card["features"], card["classifier"]
        names = [
            f.name for f in dataclasses.fields(cls) if f.name not in ("analyzer", "sublinear_tf", "min_df")
        ]
        return cls(
            analyzer=TextAnalyzer.from_settings(features["analyzer"]),
            sublinear_tf=features["sublinear_tf"],
            min_df=features["min_df"],
            **{name: classifier[name] for name in names},
        )

    def with_grid_point(
        self, C: float, ngram_max: int, sublinear_tf: bool, balance_areas: bool
    ) -> TrainingSettings:
        analyzer = dataclasses.replace(self.analyzer, ngram_max=ngram_max)
        return dataclasses.replace(
            self, C=C, analyzer=analyzer, sublinear_tf=sublinear_tf, balance_areas=balance_areas
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
    # Only the ratio of weights matters to the fit, so without descriptions every abstract
    # weighs 1 on average and C keeps its usual meaning.
    scale = settings.abstract_weight if training_set.use_descriptions else 1.0
    weights = [scale * n / (k * counts[area]) if settings.balance_areas else scale for area in areas]
    if training_set.use_descriptions:
        texts += [area.document() for area in training_set.areas]
        areas += list(training_set.slugs)
        weights += [settings.description_weight] * len(training_set.areas)
    return texts, areas, np.asarray(weights)


def _vectorizer(settings: TrainingSettings):
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(
        analyzer=settings.analyzer,
        sublinear_tf=settings.sublinear_tf,
        min_df=settings.min_df,
        dtype=np.float64,
    )


def _classifier(settings: TrainingSettings):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(
        C=settings.C, fit_intercept=not settings.balance_areas, max_iter=settings.max_iter
    )


def _one_blas_thread():
    """BLAS threads fight over small matrices: on two cores, one thread fits ~10x faster."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def fit_pipeline(texts: list[str], areas: list[str], weights: np.ndarray, settings: TrainingSettings):
    """The scikit-learn pipeline the saved model reproduces: TfidfVectorizer + LogisticRegression."""
    from sklearn.pipeline import Pipeline

    pipeline = Pipeline([("tfidf", _vectorizer(settings)), ("classifier", _classifier(settings))])
    with _one_blas_thread(), warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        pipeline.fit(texts, areas, classifier__sample_weight=weights)
    return pipeline


def _by_area(scores: np.ndarray, classes: list[str], slugs: list[str]) -> np.ndarray:
    """Decision scores in the order of ``slugs``; an area the classifier never saw scores -inf."""
    if len(classes) == 2:  # binary: one score column, for classes[1]
        scores = np.column_stack([-scores, scores]) / 2
    block = np.full((len(scores), len(slugs)), -np.inf)
    block[:, [slugs.index(c) for c in classes]] = scores
    return block


def folds(training_set: TrainingSet) -> tuple[list[tuple[np.ndarray, np.ndarray]], str]:
    """The cross-validation splits of the labelled abstracts, and the scheme's name."""
    from sklearn.model_selection import LeaveOneOut, StratifiedKFold

    n = len(training_set.labels)
    if n <= LEAVE_ONE_OUT_MAX:
        splitter, scheme = LeaveOneOut(), "leave-one-out"
    else:
        splitter = StratifiedKFold(FOLDS, shuffle=True, random_state=RANDOM_STATE)
        scheme = f"stratified {FOLDS}-fold"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)  # an area with fewer labels than folds
        return list(splitter.split(np.zeros(n), training_set.labels)), scheme


def cross_validate(
    training_set: TrainingSet, candidates: list[TrainingSettings]
) -> tuple[list[np.ndarray], str]:
    """Out-of-fold decision scores of each candidate setting (one row per labelled abstract,
    one column per area), and the scheme. Area descriptions stay in every training fold.
    Candidates with the same feature settings share one TF-IDF fit per fold; k folds run on
    all cores (leave-one-out's many tiny fits run in this process)."""
    from joblib import Parallel, delayed

    splits, scheme = folds(training_set)
    groups: dict[str, list[int]] = {}
    for i, settings in enumerate(candidates):
        groups.setdefault(repr(settings.features_card()), []).append(i)
    jobs = 1 if len(training_set.labels) <= LEAVE_ONE_OUT_MAX else -1
    with _one_blas_thread():
        results = Parallel(n_jobs=jobs)(
            delayed(_fold_scores)(training_set, candidates, list(groups.values()), train_index, test_index)
            for train_index, test_index in splits
        )
    n, slugs = len(training_set.labels), list(training_set.slugs)
    scores = [np.full((n, len(slugs)), np.nan) for _ in candidates]
    for (_, test_index), fold_scores in zip(splits, results):
        for i, block in enumerate(fold_scores):
            scores[i][test_index] = block
    return scores, scheme


def _fold_scores(
    training_set: TrainingSet,
    candidates: list[TrainingSettings],
    groups: list[list[int]],
    train_index: np.ndarray,
    test_index: np.ndarray,
) -> list[np.ndarray]:
    """Each candidate's scores for the held-out abstracts of one fold."""
    fold = dataclasses.replace(
        training_set,
        texts=tuple(training_set.texts[i] for i in train_index),
        labels=tuple(training_set.labels[i] for i in train_index),
        ids=tuple(training_set.ids[i] for i in train_index),
    )
    held_out = [training_set.texts[i] for i in test_index]
    scores: list[np.ndarray] = [np.empty(0)] * len(candidates)
    for members in groups:
        vectorizer = _vectorizer(candidates[members[0]])
        texts, areas, _ = documents(fold, candidates[members[0]])
        train_matrix, test_matrix = vectorizer.fit_transform(texts), vectorizer.transform(held_out)
        warm: dict[bool, object] = {}  # along increasing C, each fit starts from the last one
        for i in sorted(members, key=lambda i: (candidates[i].balance_areas, candidates[i].C)):
            classifier = warm.setdefault(candidates[i].balance_areas, _classifier(candidates[i]))
            classifier.set_params(C=candidates[i].C, warm_start=True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", category=UserWarning)
                classifier.fit(train_matrix, areas, sample_weight=documents(fold, candidates[i])[2])
            scores[i] = _by_area(
                classifier.decision_function(test_matrix), list(classifier.classes_), list(training_set.slugs)
            )
    return scores


def fit_temperature(scores: np.ndarray, labels: list[str], slugs: list[str]) -> float:
    """The temperature T that makes softmax(scores / T) best match the labels (least log loss)."""
    from scipy.optimize import minimize_scalar

    truth = np.asarray([slugs.index(label) for label in labels])
    result = minimize_scalar(
        lambda log_t: _log_loss(scores, truth, np.exp(log_t)),
        bounds=(np.log(0.01), np.log(100.0)),
        method="bounded",
    )
    return float(np.exp(result.x))


def _log_loss(scores: np.ndarray, truth: np.ndarray, temperature: float) -> float:
    """Mean negative log probability of the true areas under softmax(scores / temperature)."""
    probabilities = softmax(scores / temperature)
    return float(-np.log(np.clip(probabilities[np.arange(len(truth)), truth], 1e-12, None)).mean())


@dataclass(frozen=True)
class CrossValidation:
    """Calibrated out-of-fold predictions and the figures computed from them."""

    scheme: str
    temperature: float
    probabilities: np.ndarray
    correct: np.ndarray
    report: dict

    @property
    def confidence(self) -> np.ndarray:
        return self.probabilities.max(axis=1)


# Macro-F1 differences smaller than this are noise; among settings that close to the best,
# the one whose calibrated probabilities fit the labels best (least log loss) is chosen.
SELECTION_TOLERANCE = 0.01


def _macro_f1(scores: np.ndarray, labels: tuple[str, ...], slugs: list[str]) -> float:
    from sklearn.metrics import f1_score

    predicted = [slugs[k] for k in scores.argmax(axis=1)]
    return float(f1_score(labels, predicted, labels=sorted(set(labels)), average="macro", zero_division=0))


def _calibrated_log_loss(scores: np.ndarray, labels: tuple[str, ...], slugs: list[str]) -> float:
    truth = np.asarray([slugs.index(label) for label in labels])
    return _log_loss(scores, truth, fit_temperature(scores, list(labels), slugs))


def select_settings(
    training_set: TrainingSet, base: TrainingSettings
) -> tuple[TrainingSettings, np.ndarray, str, list]:
    """The grid point with the best cross-validated macro-F1 (within
    :data:`SELECTION_TOLERANCE`, the one with the least calibrated log loss), its
    out-of-fold scores, the scheme, and every point's figures."""
    grid = [dict(zip(SELECTION_GRID, values)) for values in itertools.product(*SELECTION_GRID.values())]
    candidates = [base.with_grid_point(**point) for point in grid]
    scores, scheme = cross_validate(training_set, candidates)
    slugs = list(training_set.slugs)
    f1 = [_macro_f1(s, training_set.labels, slugs) for s in scores]
    log_loss = [_calibrated_log_loss(s, training_set.labels, slugs) for s in scores]
    near_best = [i for i in range(len(grid)) if f1[i] >= max(f1) - SELECTION_TOLERANCE]
    best = min(near_best, key=lambda i: log_loss[i])
    table = [
        {**point, "macro_f1": round(f, 4), "log_loss": round(loss, 4)}
        for point, f, loss in zip(grid, f1, log_loss)
    ]
    return candidates[best], scores[best], scheme, table


def cross_validation(
    training_set: TrainingSet, settings: TrainingSettings, scores: np.ndarray | None = None, scheme: str = ""
) -> CrossValidation:
    """Cross-validate ``settings`` (or take its out-of-fold ``scores``), calibrate the
    scores, and compute the figures: accuracy, macro-F1, ECE, per-area table, confusion
    matrix, the review threshold, and the labels that look wrong."""
    if scores is None:
        [scores], scheme = cross_validate(training_set, [settings])
    slugs = list(training_set.slugs)
    labels = list(training_set.labels)
    temperature = fit_temperature(scores, labels, slugs)
    probabilities = softmax(scores / temperature)
    confidence = probabilities.max(axis=1)
    correct = probabilities.argmax(axis=1) == np.asarray([slugs.index(label) for label in labels])
    threshold = evaluate.review_threshold(confidence, correct, settings.review_accuracy)
    unflagged = confidence >= threshold
    report = {
        "scheme": scheme,
        **evaluate.summary(labels, probabilities, slugs),
        "review": {
            "threshold": round(threshold, 4),
            "target_accuracy": settings.review_accuracy,
            "share_flagged": round(float(1 - unflagged.mean()), 4),
            "accuracy_unflagged": round(float(correct[unflagged].mean()) if unflagged.any() else 0.0, 4),
        },
        "possible_label_errors": evaluate.possible_label_errors(
            training_set.ids, training_set.texts, labels, probabilities, slugs, threshold
        ),
    }
    return CrossValidation(scheme, temperature, probabilities, correct, report)


def validate(
    training_set: TrainingSet, settings: TrainingSettings | None = None
) -> tuple[TrainingSettings, CrossValidation, list[dict]]:
    """The settings to train with (``settings``; else the defaults, or the best of
    :data:`SELECTION_GRID` by cross-validation from :data:`SELECT_FROM` labelled abstracts
    on), their cross-validation, and the selection table (empty without selection)."""
    if settings is None and len(training_set.labels) >= SELECT_FROM:
        sample = _sample(training_set, SELECTION_SAMPLE)
        settings, scores, scheme, table = select_settings(sample, TrainingSettings())
        if sample is not training_set:  # figures and calibration come from all the labels
            return settings, cross_validation(training_set, settings), table
        return settings, cross_validation(training_set, settings, scores, scheme), table
    settings = settings or TrainingSettings()
    return settings, cross_validation(training_set, settings), []


def _sample(training_set: TrainingSet, size: int) -> TrainingSet:
    """A stratified random sample of ``size`` labelled abstracts (all of them when fewer)."""
    if len(training_set.labels) <= size:
        return training_set
    from sklearn.model_selection import train_test_split

    keep, _ = train_test_split(
        np.arange(len(training_set.labels)),
        train_size=size,
        random_state=RANDOM_STATE,
        stratify=training_set.labels,
    )
    keep = np.sort(keep)
    return dataclasses.replace(
        training_set,
        texts=tuple(training_set.texts[i] for i in keep),
        labels=tuple(training_set.labels[i] for i in keep),
        ids=tuple(training_set.ids[i] for i in keep),
    )


def train(training_set: TrainingSet, settings: TrainingSettings | None = None) -> Model:
    """Fit a model on ``training_set``, calibrate it by cross-validation, and write its card.
    Without ``settings``, they are the defaults, or chosen by cross-validation when there
    are at least :data:`SELECT_FROM` labelled abstracts."""
    settings, validation, selection = validate(training_set, settings)
    pipeline = fit_pipeline(*documents(training_set, settings), settings)
    report = validation.report
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
        "settings_selection": {
            "scheme": validation.scheme,
            "criterion": f"macro_f1 (within {SELECTION_TOLERANCE}: least calibrated log loss)",
            "grid": selection,
        }
        if selection
        else None,
        "calibration": {
            "method": "temperature scaling on cross-validated scores",
            "temperature": validation.temperature,
        },
        "review": report["review"],
        "evaluation": {k: v for k, v in report.items() if k != "review"},
        "versions": _versions(),
    }
    return export(pipeline, card)


def export(pipeline, card: dict) -> Model:
    """The numpy :class:`Model` that computes what ``pipeline`` computes (with the card's
    areas in the card's order)."""
    vectorizer, classifier = pipeline.named_steps["tfidf"], pipeline.named_steps["classifier"]
    classes = list(classifier.classes_)
    coef, intercept = classifier.coef_, np.broadcast_to(classifier.intercept_, (len(classifier.coef_),))
    if len(classes) == 2:  # binary: one row, for classes[1]
        coef, intercept = np.vstack([-coef[0], coef[0]]) / 2, np.array([-intercept[0], intercept[0]]) / 2
    order = [classes.index(area["slug"]) for area in card["areas"]]
    vocabulary = sorted(vectorizer.vocabulary_, key=vectorizer.vocabulary_.get)
    card = {**card, "features": {**card["features"], "n_features": len(vocabulary)}}
    return Model(card, vocabulary, vectorizer.idf_, coef[order], intercept[order])


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
