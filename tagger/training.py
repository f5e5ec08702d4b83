"""Fitting: TF-IDF features and a logistic-regression classifier (scikit-learn), calibrated
on cross-validated scores (see :mod:`tagger.calibration`), exported as a numpy :class:`Model`.

Training is a short pipeline::

    settings (given, or chosen by cross-validation as the plan says, tagger.plan: the label
              weight always, the rest from Plan.select_from labelled abstracts on:
              choose_settings)
      -> out-of-fold scores of the labelled abstracts      (out_of_fold_scores)
      -> temperature, figures, review threshold            (calibrate)
      -> one fit on everything                             (fit)
      -> arrays and card                                   (export, model_card)

:func:`cross_validate` runs the first three steps (``tagger evaluate`` stops there);
:func:`train` runs them all.
"""

from __future__ import annotations

import datetime
import difflib
import itertools
import logging
import platform
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from . import evaluate
from ._version import __version__
from .calibration import (
    PROBE_WORDS,
    Scores,
    TopLabelMap,
    calibrated,
    confidence_ceiling,
    fit_calibration,
    fit_top_label,
)
from .card import (
    FORMAT_VERSION,
    AreaEntry,
    Calibration,
    Evaluation,
    ModelCard,
    NewLabels,
    Review,
    SettingsSelection,
    TrainingData,
    Unlabelled,
)
from .corpus import Corpus
from .errors import LabelError, TaggerWarning
from .features import TextAnalyzer
from .fitting import (
    Fitted,
    documents,
    fit,
    make_classifier,
    matrix,
    one_blas_thread,
    tfidf,
    words_to_learn_from,
)
from .labels import NO_AREA_MIN, Area, TrainingSet
from .labelstore import NONE
from .model import Model
from .plan import PLAN, Plan, SelfTrainingPlan
from .prediction import right
from .settings import TrainingSettings, default_settings
from .workers import default_jobs, run_all

# What training is doing, a stage at a time (the command line shows it on a terminal).
log = logging.getLogger("tagger.training")

# With a pile, cross-validation chooses the pseudo-labels again in each fold from the fold's
# hand labels alone: chosen with every hand label, they would carry each held-out label back.
PER_FOLD_PSEUDO_LABELS = "pseudo-labels chosen inside each fold"
CALIBRATION_METHOD = (
    "temperature scaling with evidence shrinkage, on cross-validated scores of whole and cut-short "
    "abstracts, then top-label Platt scaling of the top area's probability, on the whole abstracts"
)


def linear_weights(classifier, slugs: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """A fitted classifier's coefficients (one row per area of ``slugs``) and intercepts. A
    binary classifier's single row becomes two opposite halves (the same probabilities); an
    area the classifier never saw gets zero weights and intercept -inf (probability 0)."""
    classes = list(classifier.classes_)
    coef = classifier.coef_
    intercept = np.broadcast_to(classifier.intercept_, (len(coef),))
    if len(classes) == 2:  # binary: one row, for classes[1]
        coef, intercept = np.vstack([-coef[0], coef[0]]) / 2, np.array([-intercept[0], intercept[0]]) / 2
    by_area = np.zeros((len(slugs), coef.shape[1]))
    intercept_by_area = np.full(len(slugs), -np.inf)
    at = [slugs.index(c) for c in classes]
    by_area[at], intercept_by_area[at] = coef, intercept
    return by_area, intercept_by_area


# -- cross-validation --------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """How one training runs, beside what it learns from (labels, settings, a pile): ``plan``
    chooses the settings and the folds (:class:`tagger.plan.Plan`); ``corpus`` is where each
    text is analysed once, kept between retrains (the labelling page's); ``previous`` is the
    card of the model this one replaces, whose settings are kept when it answers with the same
    areas (:func:`choose_settings`); ``since`` is the card to say how the new model does on
    the labels new since then (:class:`NewLabels` in the card's evaluation)."""

    plan: Plan = PLAN
    corpus: Corpus = field(default_factory=Corpus)
    previous: ModelCard | None = None
    since: ModelCard | None = None


@dataclass(frozen=True)
class OutOfFold:
    """Scores of the labelled abstracts, each from a model that did not see it (one row per
    labelled abstract), how the folds were made, and the scores of some of the same abstracts
    cut short to their first few words (``probes``, of the abstracts ``probe_rows``)."""

    scheme: str
    scores: Scores
    probes: Scores
    probe_rows: np.ndarray


def folds(training_set: TrainingSet, plan: Plan = PLAN) -> tuple[str, list[tuple[np.ndarray, np.ndarray]]]:
    """The cross-validation scheme's name and its splits of the labelled abstracts."""
    from sklearn.model_selection import KFold, LeaveOneOut, StratifiedKFold

    n = len(training_set.labels)
    if n <= plan.leave_one_out_max and not training_set.pile:
        splitter, scheme = LeaveOneOut(), "leave-one-out"
    else:  # (with a pile, each fold self-trains: k folds, not n)
        k = min(plan.folds, n)
        if max(Counter(training_set.labels).values()) >= k:
            splitter, scheme = (
                StratifiedKFold(k, shuffle=True, random_state=plan.random_state),
                f"stratified {k}-fold",
            )
        else:  # too few of every area to stratify (a handful of labels)
            splitter, scheme = KFold(k, shuffle=True, random_state=plan.random_state), f"{k}-fold"
    if training_set.pile:
        scheme += f" ({PER_FOLD_PSEUDO_LABELS})"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)  # an area with fewer labels than folds
        return scheme, list(splitter.split(np.zeros(n), training_set.labels))


def out_of_fold_scores(
    training_set: TrainingSet,
    candidates: list[TrainingSettings],
    plan: Plan = PLAN,
    corpus: Corpus | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> list[OutOfFold]:
    """Each candidate setting's out-of-fold scores. Area descriptions stay in every training fold.
    Each text is analysed once (``corpus``); candidates that differ only in C are fitted
    one after the other, each from the last one's solution, on one TF-IDF matrix per fold;
    the folds' fits run on all cores (leave-one-out's many tiny fits run in this process),
    while this process does ``meanwhile``."""
    scheme, splits = folds(training_set, plan)
    chains = _chains(candidates)
    jobs = 1 if scheme == "leave-one-out" else default_jobs()
    tasks = [(candidates, chain, train, test, plan.probes_max) for train, test in splits for chain in chains]
    log.info(
        "cross-validating %s on %s labelled abstracts of %s areas (%s): %s fold(s) on %s process(es)",
        "settings" if len(candidates) == 1 else f"{len(candidates)} candidate settings",
        f"{len(training_set.labels):,}", f"{len(training_set.slugs):,}", scheme, len(splits),
        min(jobs, len(tasks)),
    )  # fmt: skip
    parts = _run_folds(training_set, tasks, jobs, plan, corpus, meanwhile)  # (each on one BLAS thread)
    per_fold = len(chains)
    results = [
        {i: both for part in parts[k : k + per_fold] for i, both in part.items()}
        for k in range(0, len(parts), per_fold)
    ]
    n = len(training_set.labels)
    result = []
    for i in range(len(candidates)):
        held_out = Scores.stack([fold[i][0] for fold in results])
        order = np.argsort(np.concatenate([test_index for _, test_index in splits]), kind="stable")
        probes = Scores.stack([fold[i][1] for fold in results])
        probe_rows = np.concatenate([_probed(test_index, n, plan.probes_max) for _, test_index in splits])
        probe_rows = np.repeat(probe_rows, len(PROBE_WORDS))
        result.append(OutOfFold(scheme, held_out.take(order), probes, probe_rows))
    return result


def _probed(test_index: np.ndarray, n: int, most: int) -> np.ndarray:
    """The held-out abstracts that are also scored cut short (every one up to ``most``
    labelled abstracts, an even spread above)."""
    step = -(-n // most)
    return test_index[test_index % step == 0]


def _cut_short(text: str) -> list[str]:
    """The first few words of a text, at each length of PROBE_WORDS."""
    words = text.split()
    return [" ".join(words[:k]) for k in PROBE_WORDS]


def _chains(candidates: list[TrainingSettings]) -> list[list[int]]:
    """The candidates' indices grouped by every setting but C (one TF-IDF matrix and naive
    Bayes each, the regression fitted along increasing C), the costliest first (word pairs,
    longer chains): the cores stay busy to the end."""
    chains: dict[TrainingSettings, list[int]] = {}
    for i, candidate in enumerate(candidates):
        chains.setdefault(replace(candidate, C=1.0), []).append(i)
    return sorted(chains.values(), key=lambda chain: (-candidates[chain[0]].ngram_max, -len(chain)))


class _Folds(NamedTuple):
    """What the workers of cross-validation hold: the labelled abstracts, their texts (with the
    area descriptions, cut-short copies and the pile) analysed once, and how each fold learns
    from the pile."""

    training_set: TrainingSet
    corpus: Corpus
    self_training: SelfTrainingPlan


def _run_folds(
    training_set: TrainingSet,
    tasks: list[tuple],
    jobs: int,
    plan: Plan,
    corpus: Corpus | None,
    meanwhile: Callable[[], object] | None = None,
) -> list[dict[int, tuple[Scores, Scores]]]:
    """:func:`_fold_scores` of each task, on ``jobs`` processes, every text the folds fit or
    score analysed here first (forked workers share the analyses), while this process does
    ``meanwhile``."""
    corpus = analyse(training_set, plan, corpus if corpus is not None else Corpus())
    folds = _Folds(training_set, corpus, plan.self_training)
    return run_all(_fold_task, folds, tasks, jobs, meanwhile=meanwhile)


def analyse(training_set: TrainingSet, plan: Plan, corpus: Corpus) -> Corpus:
    """``corpus`` with every text cross-validation fits or scores analysed (the labelled
    abstracts, the area descriptions, the cut-short copies and the pile), so that forked
    workers share the analyses (and a page's retrain finds them done)."""
    n = len(training_set.labels)
    corpus.rows(training_set.texts)
    corpus.rows([area.document() for area in training_set.areas])
    probed = _probed(np.arange(n), n, plan.probes_max)  # (of every fold's held-out abstracts)
    corpus.rows([short for i in probed for short in _cut_short(training_set.texts[i])])
    if training_set.pile:
        from .selftraining import pile_texts

        corpus.rows(pile_texts(training_set, list(training_set.pile), plan.self_training))
    corpus.ranks()  # (sorted once here, not in each worker)
    return corpus


def _fold_task(folds: _Folds, task: tuple) -> dict[int, tuple[Scores, Scores]]:
    """A worker's work (see :func:`tagger.workers.run_all`): :func:`_fold_scores` of one
    fold, ``task`` being (candidates, chain, train index, test index, most probes)."""
    with one_blas_thread():
        return _fold_scores(folds, *task)


def _fold_scores(
    folds: _Folds,
    candidates: list[TrainingSettings],
    chain: list[int],
    train_index: np.ndarray,
    test_index: np.ndarray,
    probes_max: int,
) -> dict[int, tuple[Scores, Scores]]:
    """The scores of the candidates of ``chain`` (by index: they differ in C alone) for the
    held-out abstracts of one fold, whole and cut short."""
    training_set, corpus, self_training = folds
    first = candidates[chain[0]]
    fold = training_set.subset(train_index)
    if training_set.pile:  # pseudo-labels chosen without the held-out labels
        from .selftraining import self_train

        fold, _ = self_train(fold, list(training_set.pile), first, corpus, self_training)
    held_out = [training_set.texts[i] for i in test_index]
    probes = [
        short
        for i in _probed(test_index, len(training_set.labels), probes_max)
        for short in _cut_short(training_set.texts[i])
    ]
    texts, areas, weights = documents(fold, first)
    with words_to_learn_from(training_set):
        vocabulary, train_matrix = tfidf(corpus, texts, first, len(training_set.slugs))
    test_matrix, probe_matrix = (matrix(corpus, vocabulary, held_out), matrix(corpus, vocabulary, probes))
    known = (
        corpus.evidence(vocabulary, corpus.rows(held_out)),
        corpus.evidence(vocabulary, corpus.rows(probes)),
    )
    # Along increasing C, each fit starts from the last one's solution.
    classifier = make_classifier(first)
    scores: dict[int, tuple[Scores, Scores]] = {}
    for i in sorted(chain, key=lambda i: candidates[i].C):
        classifier.set_params(C=candidates[i].C, warm_start=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=UserWarning)
            classifier.fit(train_matrix, areas, sample_weight=weights)
        coef, intercept = linear_weights(classifier, training_set.slugs)
        whole, short = (_scores(m, e, coef, intercept) for m, e in zip((test_matrix, probe_matrix), known))
        scores[i] = (whole, short)
    return scores


def _macro_f1(scores: Scores, truth: np.ndarray) -> float:
    from sklearn.metrics import f1_score

    return float(
        f1_score(truth, scores.raw.argmax(axis=1), labels=np.unique(truth), average="macro", zero_division=0)
    )


def select_settings(
    training_set: TrainingSet,
    base: TrainingSettings | None = None,
    plan: Plan = PLAN,
    corpus: Corpus | None = None,
) -> tuple[TrainingSettings, SettingsSelection, OutOfFold]:
    """A plain grid search: every point of the plan's grid (applied to ``base``, by default
    the defaults) cross-validated in full, and the one with the best macro-F1 chosen, unless
    ``base`` is within the plan's ``selection_tolerance`` of it (then the settings we start
    from stay: a difference that small is noise). Returns the settings, how they were chosen
    (every candidate's macro-F1), and their out-of-fold scores."""
    grid_values = dict(plan.grid)
    base = base or default_settings(training_set.use_descriptions)
    grid = [dict(zip(grid_values, values)) for values in itertools.product(*grid_values.values())]
    candidates = [replace(base, **point) for point in grid]
    results = out_of_fold_scores(training_set, candidates, plan, corpus)
    truth = training_set.label_indices()
    f1 = [_macro_f1(result.scores, truth) for result in results]
    best = int(np.argmax(f1))
    if base in candidates and f1[candidates.index(base)] >= f1[best] - plan.selection_tolerance:
        best = candidates.index(base)
    selection = SettingsSelection(
        scheme=results[best].scheme,
        criterion=f"macro_f1 (the defaults unless another is better by more than {plan.selection_tolerance})",
        grid=tuple({**point, "macro_f1": round(f1[i], 4)} for i, point in enumerate(grid)),
    )
    return candidates[best], selection, results[best]


@dataclass(frozen=True)
class CrossValidation:
    """The settings to train with, how they were chosen, and their calibrated out-of-fold
    predictions with the figures computed from them."""

    settings: TrainingSettings
    selection: SettingsSelection | None
    calibration: Calibration
    probabilities: np.ndarray
    correct: np.ndarray
    evaluation: Evaluation
    review: Review
    rows: np.ndarray | None = None  # the labelled abstracts measured (indices)
    fitted: Fitted | None = None  # the final fit on every labelled abstract, when one was made

    @property
    def confidence(self) -> np.ndarray:
        return self.probabilities.max(axis=1)


def calibrate(
    training_set: TrainingSet,
    settings: TrainingSettings,
    out_of_fold: OutOfFold,
    selection: SettingsSelection | None = None,
) -> CrossValidation:
    """Calibrate out-of-fold scores and compute the figures: accuracy, macro-F1, ECE,
    per-area table, confusion matrix, the review threshold, and the labels that look wrong.

    The calibration the model keeps is fitted on every out-of-fold score; the figures are
    cross-fitted (:func:`cross_fitted`): each abstract's probabilities come from a calibration
    fitted on the other abstracts' scores, and whether it is flagged from a review threshold
    set on the others, so that no figure is measured on the scores it was fitted on."""
    slugs, labels, truth = training_set.slugs, training_set.labels, training_set.label_indices()
    ceiling = confidence_ceiling(len(labels), len(slugs))
    temperature, evidence_scale, top_label = fit_calibrations(out_of_fold, truth)
    calibration = Calibration(
        CALIBRATION_METHOD,
        temperature,
        evidence_scale,
        top_label.slope,
        top_label.offset,
        top_label.evidence,
        fitted_on=(
            f"{out_of_fold.scheme} predictions of the {len(labels)} labelled abstracts of "
            f"{training_set.described()} ({len(out_of_fold.probe_rows)} cut-short copies for the temperature "
            f"and evidence scale); its figures cross-fitted ({CROSS_FIT} parts, each calibrated on the "
            "others)"
        ),
        ceiling=round(ceiling, 6),
    )
    groups = cross_fit_groups(truth)
    probabilities = cross_fitted(out_of_fold, truth, groups, ceiling)
    confidence = probabilities.max(axis=1)
    correct = right(probabilities, truth)
    review = _review(confidence, correct, settings.review_accuracy, groups=groups)
    evaluation = Evaluation(
        scheme=out_of_fold.scheme,
        **evaluate.summary(labels, probabilities, slugs),
        possible_label_errors=tuple(
            evaluate.possible_label_errors(training_set.ids, training_set.texts, labels, probabilities, slugs)
        ),
    )
    return CrossValidation(settings, selection, calibration, probabilities, correct, evaluation, review)


# The figures of a calibration are cross-fitted in this many parts (see cross_fitted).
CROSS_FIT = 5


def fit_calibrations(
    out_of_fold: OutOfFold, truth: np.ndarray, rows: np.ndarray | None = None
) -> tuple[float, float, TopLabelMap]:
    """Temperature, evidence scale and top-label map fitted on the out-of-fold scores of the
    labelled abstracts ``rows`` (default: all) and their cut-short copies."""
    scores = out_of_fold.scores
    probes, probe_truth = out_of_fold.probes, truth[out_of_fold.probe_rows]
    if rows is not None:
        kept = np.isin(out_of_fold.probe_rows, rows)
        scores, truth = scores.take(rows), truth[rows]
        probes, probe_truth = probes.take(np.flatnonzero(kept)), probe_truth[kept]
    temperature, evidence_scale = fit_calibration(scores, truth, probes, probe_truth)
    top_label = fit_top_label(calibrated(scores, temperature, evidence_scale), truth, scores.evidence)
    return temperature, evidence_scale, top_label


def cross_fit_groups(truth: np.ndarray, parts: int = CROSS_FIT) -> np.ndarray:
    """Each labelled abstract's part (0 to ``parts - 1``), stratified by area, seed 0; one part
    when there are too few to split (fewer than two abstracts a part)."""
    if len(truth) < 2 * parts:
        return np.zeros(len(truth), dtype=int)
    order = np.random.default_rng(0).permutation(len(truth))
    order = order[np.argsort(truth[order], kind="stable")]  # by area, shuffled within
    groups = np.empty(len(truth), dtype=int)
    groups[order] = np.arange(len(truth)) % parts
    return groups


def _parts(groups: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Each part of ``groups`` (a mask) with the rest (a mask): what is fitted for the part; a
    lone part is its own rest (a handful of labels, whose figures say they are too few)."""
    for part in np.unique(groups):
        inside = groups == part
        yield inside, (~inside if (~inside).any() else inside)


def cross_fitted(out_of_fold: OutOfFold, truth: np.ndarray, groups: np.ndarray, ceiling: float) -> np.ndarray:
    """The out-of-fold scores calibrated part by part (``groups``), each part by a calibration
    fitted on the other parts alone: probabilities as a user sees them on abstracts the
    calibration never saw. With one part, there is nothing else to fit on: it is calibrated on
    itself (a handful of labels, whose figures say they are too few)."""
    probabilities = np.zeros(out_of_fold.scores.raw.shape)
    for inside, others in _parts(groups):
        temperature, evidence_scale, top_label = fit_calibrations(out_of_fold, truth, np.flatnonzero(others))
        probabilities[inside] = calibrated(
            out_of_fold.scores.take(np.flatnonzero(inside)), temperature, evidence_scale, top_label, ceiling
        )
    return probabilities


def _review(
    confidence: np.ndarray,
    correct: np.ndarray,
    target: float,
    no_area: int | None = None,
    groups: np.ndarray | None = None,
) -> Review:
    """The review threshold of predictions with ``confidence`` (``correct``: whether each was
    right) that aims at ``target`` accuracy above it, and its figures, cross-fitted: each part
    of ``groups`` flagged by the threshold set on the other parts (one part: on itself)."""
    threshold = evaluate.review_threshold(confidence, correct, target)
    groups = groups if groups is not None else cross_fit_groups(correct.astype(int))
    flagged = cross_fitted_flags(confidence, correct, target, groups)
    share_flagged, accuracy_unflagged = evaluate.figures_of_flags(flagged, correct)
    return Review(round(threshold, 4), target, share_flagged, accuracy_unflagged, no_area)


def cross_fitted_flags(
    confidence: np.ndarray, correct: np.ndarray, target: float, groups: np.ndarray
) -> np.ndarray:
    """Whether each prediction is flagged for review by the threshold set on the other parts of
    ``groups`` (one part: on itself)."""
    flagged = np.zeros(len(confidence), dtype=bool)
    for inside, others in _parts(groups):
        flagged[inside] = confidence[inside] < evaluate.review_threshold(
            confidence[others], correct[others], target
        )
    return flagged


def reviewed_with_no_area(validation: CrossValidation, fitted: Fitted, training_set: TrainingSet) -> Review:
    """The review threshold set with the abstracts labelled as fitting no area among the
    predictions it judges, each one's tag wrong whatever it is, as the final fit (never
    trained on them) calibrated tags them: so that the tags left unflagged are right as often
    as aimed at in a pile that holds such abstracts."""
    texts = list(training_set.no_area_texts)
    coef, intercept = linear_weights(fitted.classifier, training_set.slugs)
    evidence = fitted.corpus.evidence(fitted.vocabulary, fitted.corpus.rows(texts))
    scores = _scores(fitted.matrix(texts), evidence, coef, intercept)
    chosen = validation.calibration
    probabilities = calibrated(
        scores, chosen.temperature, chosen.evidence_scale, chosen.top_label, chosen.ceiling
    )
    confidence = np.concatenate([validation.confidence, probabilities.max(axis=1)])
    correct = np.concatenate([validation.correct, np.zeros(len(texts), dtype=bool)])
    return _review(confidence, correct, validation.review.target_accuracy, len(texts))


def _scores(matrix, evidence: np.ndarray, coef: np.ndarray, intercept: np.ndarray) -> Scores:
    """A linear model's scores of the rows of ``matrix`` (see :class:`Scores`)."""
    return Scores(np.asarray(matrix @ coef.T), np.tile(intercept, (matrix.shape[0], 1)), evidence)


def choose_settings(
    training_set: TrainingSet,
    settings: TrainingSettings | None = None,
    previous: ModelCard | None = None,
    plan: Plan = PLAN,
    corpus: Corpus | None = None,
) -> tuple[TrainingSettings, SettingsSelection | None]:
    """The settings to train with: ``settings``; without them, a retrain keeps those of the
    ``previous`` model (when it answers with the same areas, and learnt from area descriptions
    as this training does), a first training has the defaults, and with the plan's ``search``
    (``tagger train --search``) they are the best of its grid (:func:`select_settings`) from
    its ``select_from`` labelled abstracts on (the labels' weight from ``weight_from`` on, with
    descriptions), with how they were chosen. The search's own out-of-fold scores are not the
    figures: its fits start from one another (warm starts), and the figures are those of the
    chosen settings cross-validated afresh, as ``tagger evaluate`` computes them."""
    if settings is not None:
        return settings, None
    base = default_settings(training_set.use_descriptions)
    if not plan.search:
        if (
            previous is None
            or previous.slugs != training_set.slugs
            or previous.training_data.uses_area_descriptions != training_set.use_descriptions
        ):
            return base, None
        kept = previous.settings_selection
        return previous.settings, replace(kept, reused="kept from the model it replaces") if kept else None
    sample = _stratified_sample(training_set, plan.selection_sample, plan.random_state)
    grid: dict[str, tuple] = {}
    if len(training_set.labels) >= plan.select_from:
        grid.update(plan.grid)
    if training_set.use_descriptions and len(training_set.labels) >= plan.weight_from:
        grid.update(plan.weight_grid)
    if not grid:
        return base, None
    chosen, selection, _ = select_settings(sample, base, plan.with_grid(grid), corpus)
    return chosen, selection


def measurable(training_set: TrainingSet) -> tuple[np.ndarray, tuple[str, ...]]:
    """The labelled abstracts cross-validation measures (their indices), and the areas it
    leaves out: without area descriptions, an area with one labelled abstract is trained on
    but not measured (the fold that holds out its one abstract would not know the area); a
    :class:`~tagger.errors.TaggerWarning` says so. With descriptions, every label counts."""
    if not training_set.labels:
        raise LabelError(
            "no hand labels yet",
            where=training_set.origin,
            fix="Label some abstracts first (tagger label papers/ --n 20); until then the shipped model "
            "tags.",
        )
    everything = np.arange(len(training_set.labels))
    if training_set.use_descriptions and len(everything) < 2:
        raise LabelError(
            "one hand label: too few to cross-validate (a model is measured on labels it did not see)",
            where=training_set.origin,
            fix="Label at least one more abstract (tagger label papers/ --n 20), then train.",
        )
    if training_set.use_descriptions:
        return everything, ()
    analyzer = TextAnalyzer(ngram_max=1)
    if not any(analyzer(text) for text in training_set.texts):
        raise LabelError(
            "no labelled text has a word to learn from (only stop words, numbers or symbols)",
            where=training_set.origin,
            fix="Label abstracts with words in them: check the --column that holds them.",
        )
    counts = training_set.counts()
    single = tuple(slug for slug, n in counts.items() if n == 1)
    measured = [slug for slug, n in counts.items() if n >= 2]
    if len(measured) < 2:
        raise LabelError(
            f"fewer than two areas have two labelled abstracts or more ({', '.join(measured) or 'none'})",
            where=training_set.origin,
            fix="Cross-validation needs two of each of at least two areas: label more.",
        )
    if not single:
        return everything, ()
    close = [
        f" (did you mean {match[0]!r}?)" if (match := difflib.get_close_matches(slug, measured, n=1)) else ""
        for slug in single
    ]
    named = ", ".join(f"{slug!r}{hint}" for slug, hint in zip(single, close))
    warnings.warn(
        f"only one labelled abstract of {named}: trained on, but left "
        "out of the cross-validated figures (label another to measure it)",
        TaggerWarning,
        stacklevel=3,
    )
    return np.array(
        [i for i, label in enumerate(training_set.labels) if label not in single], dtype=int
    ), single


def cross_validate(
    training_set: TrainingSet,
    settings: TrainingSettings | None = None,
    *,
    run: Run | None = None,
    rows: tuple[np.ndarray, tuple[str, ...]] | None = None,
    selection: SettingsSelection | None = None,
    meanwhile: Callable[[TrainingSet, TrainingSettings], object] | None = None,
) -> CrossValidation:
    """Cross-validate ``settings`` (see :func:`choose_settings`; ``selection``: how given
    ``settings`` were chosen), calibrated, on the labelled abstracts :func:`measurable` keeps
    (or on ``rows``: the rows, and the areas left out). ``meanwhile(training_set,
    settings)`` runs in this process while the folds run in the workers (the final fit)."""
    run = run if run is not None else Run()
    measured_rows, left_out = rows if rows is not None else measurable(training_set)
    measured = training_set.subset(measured_rows) if left_out else training_set
    settings, chosen = choose_settings(measured, settings, run.previous, run.plan, run.corpus)
    selection = chosen or selection
    final = (lambda: meanwhile(training_set, settings)) if meanwhile is not None else None
    [out_of_fold] = out_of_fold_scores(
        measured, [settings], plan=run.plan, corpus=run.corpus, meanwhile=final
    )
    validation = calibrate(measured, settings, out_of_fold, selection)
    if left_out:
        validation = replace(validation, evaluation=replace(validation.evaluation, left_out=left_out))
    return replace(validation, rows=measured_rows)


def _stratified_sample(training_set: TrainingSet, size: int, random_state: int) -> TrainingSet:
    """A stratified random sample of ``size`` labelled abstracts (all of them when fewer, or
    when there are too many areas for a sample of that size to hold each)."""
    areas = len(set(training_set.labels))
    if len(training_set.labels) <= size or min(size, len(training_set.labels) - size) < areas:
        return training_set
    from sklearn.model_selection import train_test_split

    keep, _ = train_test_split(
        np.arange(len(training_set.labels)),
        train_size=size,
        random_state=random_state,
        stratify=training_set.labels,
    )
    return training_set.subset(np.sort(keep))


# -- the model ---------------------------------------------------------------------------


def answering_no_area(training_set: TrainingSet) -> TrainingSet:
    """The training set whose abstracts labelled as fitting no area are an answer the model
    learns (:meth:`TrainingSet.answering_no_area`); with too few of them to learn from, a
    :class:`~tagger.errors.TaggerWarning` says so (they then set the review threshold)."""
    if 0 < training_set.no_area < NO_AREA_MIN:
        warnings.warn(
            f"{training_set.no_area} abstract(s) labelled {NONE}: too few to learn the answer {NONE} from "
            f"({NO_AREA_MIN} needed); until then the model tags them with an area, and they set the "
            "review threshold (label more that fit no area)",
            TaggerWarning,
            stacklevel=3,
        )
    return training_set.answering_no_area()


def trained_said(card: ModelCard, not_learnt: int) -> str:
    """What a training says it learnt from and how well, cross-validated: every labelled
    abstract (``none`` among them when learnt as an answer, then also the figures of those
    with an area and the share answered ``none``), or the ``not_learnt`` that fit no area
    and were too few to learn from."""
    figures, labelled = card.evaluation, card.training_data.labelled_abstracts
    n = figures.labelled_abstracts
    said = f"trained on {labelled} labelled abstracts" + (f" ({n} cross-validated)" if n != labelled else "")
    if learnt := card.labelled_per_area.get(NONE):
        said += f", {learnt} of them fitting no area (the answer {NONE})"
    elif not_learnt:
        said += f" and {not_learnt} that fit no area (not trained on)"
    said += (
        f"; {figures.scheme}: accuracy {evaluate.accuracy_text(figures.accuracy, n)}, "
        f"macro-F1 {figures.macro_f1:.3f}, ECE {evaluate.ece_text(figures.ece, n)}"
    )
    if (inside := figures.with_area) is not None:
        said += (
            f"; on the {inside['labelled_abstracts']} with an area: accuracy {inside['accuracy']:.3f}, "
            f"ECE {inside['ece']:.3f}; answered {NONE}: {figures.answered_none:.0%}; "
            f"sure (unflagged at {card.review.target_accuracy:.2f}): {1 - card.review.share_flagged:.0%}"
        )
    return said


def new_since(training_set: TrainingSet, card: ModelCard | None) -> list[int]:
    """The labelled abstracts (indices) that ``card``'s model was not trained on with their
    label: new since, or given another area (none without a card)."""
    if card is None:
        return []
    before = card.training_data.labels
    return [
        i
        for i, (digest, label) in enumerate(zip(training_set.ids, training_set.labels))
        if before.get(digest) != label
    ]


def validate(
    training_set: TrainingSet,
    settings: TrainingSettings | None = None,
    unlabelled: list[str] | None = None,
    run: Run | None = None,
    fit_final: bool = False,
) -> tuple[TrainingSet, CrossValidation, Unlabelled | None]:
    """What :func:`train` measures, and nothing else (``tagger evaluate`` reports it): the
    recipe cross-validated, with the arguments of :func:`train`. Returns the training set
    (with its pseudo-labels when self-trained), the cross-validation and the self-training's
    record. The final fit on every labelled abstract is made while the folds run when
    ``fit_final`` asks for it (it is then the validation's ``fitted``), and when abstracts
    labelled as fitting no area set the review threshold (:func:`reviewed_with_no_area`)."""
    run = run if run is not None else Run()
    training_set = answering_no_area(training_set)
    rows = measurable(training_set)
    record, selection = None, None
    if unlabelled:
        from .selftraining import self_train

        measured = training_set.subset(rows[0])
        settings, selection = choose_settings(measured, settings, run.previous, run.plan, run.corpus)
        training_set, record = self_train(
            training_set, unlabelled, settings, run.corpus, run.plan.self_training
        )
    made: dict[str, Fitted] = {}

    def final(learnt: TrainingSet, chosen: TrainingSettings) -> None:
        log.info(
            "fitting the model on %s labelled abstracts of %s areas",
            f"{len(learnt.texts):,}",
            f"{len(learnt.slugs):,}",
        )
        made["fitted"] = fit(learnt, chosen, run.corpus)

    wanted = fit_final or bool(training_set.no_area_texts)
    validation = cross_validate(
        training_set, settings, run=run, rows=rows, selection=selection, meanwhile=final if wanted else None
    )
    if made:
        validation = replace(validation, fitted=made["fitted"])
    if training_set.no_area_texts:
        review = reviewed_with_no_area(validation, made["fitted"], training_set)
        validation = replace(validation, review=review)
    return training_set, validation, record


def train(
    training_set: TrainingSet,
    settings: TrainingSettings | None = None,
    unlabelled: list[str] | None = None,
    run: Run | None = None,
) -> Model:
    """Fit a model on ``training_set``, calibrated by cross-validation, with its card.
    Without ``settings``, they are the defaults, or chosen by cross-validation when there
    are enough labelled abstracts (``run.plan``: how, :class:`tagger.plan.Plan`). With
    ``unlabelled`` abstracts (the pile to tag), the model learns from them too, by self-training
    (:mod:`tagger.selftraining`); the pseudo-labelled abstracts are in every training fold.
    ``run``: the plan, the corpus, and the model this one replaces (:class:`Run`)."""
    run = run if run is not None else Run()
    # The final fit is made here while the workers cross-validate.
    training_set, validation, record = validate(training_set, settings, unlabelled, run, fit_final=True)
    assert validation.rows is not None  # (validate says which rows it measured)
    position = {row: k for k, row in enumerate(validation.rows)}
    if new := [position[i] for i in new_since(training_set, run.since) if i in position]:
        figures = NewLabels(len(new), round(float(validation.correct[new].mean()), 4))
        validation = replace(validation, evaluation=replace(validation.evaluation, new_labels=figures))
    fitted = validation.fitted
    assert fitted is not None  # (asked for)
    return export(fitted, model_card(training_set, validation, len(fitted.vocabulary.terms), record))


def descriptions_model(areas: tuple[Area, ...]) -> Model:
    """A first model of a taxonomy that has no hand labels yet, learnt from the areas'
    descriptions and keywords alone: what orders a first labelling queue and makes its
    guesses, until the first labels train a real one. Not calibrated (nothing to calibrate
    on: its confidence is the plain softmax, capped where one example an area, its
    description, can back it: :func:`~tagger.calibration.confidence_ceiling` of k examples
    of k areas) and every guess needs review; its card says so, and it is never saved."""
    training_set = TrainingSet(
        areas=areas, texts=(), labels=(), ids=(), use_descriptions=True, origin="the areas' descriptions"
    )
    settings = default_settings(use_descriptions=True)
    fitted = fit(training_set, settings)
    none = Evaluation(
        scheme="none: no hand labels yet", labelled_abstracts=0, accuracy=0.0, macro_f1=0.0, ece=0.0,
        per_area={}, confusion={"areas": [a.slug for a in areas], "counts": []}, possible_label_errors=(),
    )  # fmt: skip
    validation = CrossValidation(
        settings,
        None,
        Calibration(
            CALIBRATION_METHOD,
            1.0,
            fitted_on="nothing: no hand labels yet",
            ceiling=round(confidence_ceiling(len(areas), len(areas)), 6),
        ),
        np.zeros((0, len(areas))),
        np.zeros(0, dtype=bool),
        none,
        Review(
            threshold=1.0, target_accuracy=settings.review_accuracy, share_flagged=1.0, accuracy_unflagged=0.0
        ),
    )
    return export(fitted, model_card(training_set, validation, len(fitted.vocabulary.terms)))


def model_card(
    training_set: TrainingSet,
    validation: CrossValidation,
    n_features: int,
    unlabelled: Unlabelled | None = None,
) -> ModelCard:
    return ModelCard(
        format_version=FORMAT_VERSION,
        created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        areas=tuple(AreaEntry(area.slug, area.name) for area in training_set.areas),
        labelled_per_area=training_set.counts(),
        training_data=TrainingData(
            origin=training_set.origin,
            sha256=training_set.fingerprint(),
            labelled_abstracts=len(training_set.labels),
            uses_area_descriptions=training_set.use_descriptions,
            labels=training_set.by_id(),
        ),
        settings=validation.settings,
        n_features=n_features,
        settings_selection=validation.selection,
        calibration=validation.calibration,
        review=validation.review,
        evaluation=validation.evaluation,
        versions=_versions(),
        unlabelled=unlabelled,
    )


def export(fitted: Fitted, card: ModelCard) -> Model:
    """The numpy :class:`Model` of a fitted vocabulary and classifier (what scikit-learn's
    pipeline of the same fit computes), with the card's areas in the card's order."""
    coef, intercept = linear_weights(fitted.classifier, card.slugs)
    vocabulary = fitted.terms()
    if card.n_features != len(vocabulary):
        raise ValueError(f"the card says {card.n_features} features, the fit has {len(vocabulary)}")
    return Model(card, vocabulary, fitted.vocabulary.idf, coef, intercept)


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
