"""From linear scores to probabilities that mean what they say.

A text's calibrated probabilities are ``softmax((g * scores + intercept) / T)``: ``T`` is one
temperature, and ``g = e / (e + s)`` shrinks the scores of a text with little evidence
toward uniform, where ``e`` is the text's evidence (its words that are features of the model,
discounted by the share of its words that are not: :func:`tagger.features.evidence_from_counts`) and
``s`` is the evidence scale. A text with no known word gets every area alike; a long abstract gets
``g`` close to 1. Both ``T`` and ``s`` are fitted (least log loss) on cross-validated scores:
those of the held-out labelled abstracts and of the same abstracts cut short (their first
few words), so that the model learns from real abstracts how confidence should fall as
evidence thins.

The temperature is fitted to every area's probability; what users read, though, is the
confidence of the top area, and on real abstracts a temperature alone leaves it too low where
the model hesitates and too high where it is sure (the log loss of every area wants sharper
probabilities than the top area's accuracy does). So a last step maps the top area's
probability ``c`` (top-label calibration: Platt scaling of the top label, anchored at the
uniform)::

    logit(c') = u + a * (logit(c) - u) + b * h
    u = logit(1 / number of areas),   h = min(1, e / e_min)

``a`` and ``b`` are fitted (least log loss of "the top area is right", against Platt's
smoothed targets) on the same cross-validated abstracts; ``e_min`` is the evidence of the
least-evidenced of them (their 5th percentile). On real abstracts ``a < 1`` and ``b > 0``:
confidence is pulled toward the uniform, and lifted back by ``b`` where the model hesitates.
The lift holds for texts like those it was fitted on: a text with less evidence gets less of
it (``h < 1``), and so a text unlike any abstract (a docstring that repeats one word of an
area) cannot come out sure; a text with no evidence (every area alike) stays uniform. The
other areas share the rest in their proportions, and the top area stays the top area (a tie
at the top is left as it is).

Applying a calibration needs numpy only; fitting it needs scipy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .prediction import right as is_right

# Held-out abstracts are also scored cut to their first this many words.
PROBE_WORDS = (3, 6, 12, 25, 50)
# What fitting may choose; a model card outside these ranges is refused when loaded.
TEMPERATURE_RANGE = (0.001, 100.0)
EVIDENCE_SCALE_RANGE = (float(np.exp(-5.0)), float(np.exp(7.0)))
TOP_SLOPE_RANGE = (0.05, 20.0)
TOP_OFFSET_RANGE = (-20.0, 20.0)
# A top area this close to probability 1 keeps it (the others are too small to rescale).
REST_MIN = 1e-12
# The top-label map holds fully from this quantile of the fitted abstracts' evidence up.
TOP_EVIDENCE_QUANTILE = 0.05


def softmax(scores: np.ndarray) -> np.ndarray:
    shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class Scores:
    """What a linear model says about texts before calibration: ``linear`` (texts x areas,
    the feature part of the scores), ``intercept`` (texts x areas; -inf for an area the
    model never saw) and ``evidence`` (per text, see :func:`tagger.features.evidence_from_counts`)."""

    linear: np.ndarray
    intercept: np.ndarray
    evidence: np.ndarray

    @property
    def raw(self) -> np.ndarray:
        """The uncalibrated decision scores."""
        return self.linear + self.intercept

    def take(self, rows: np.ndarray) -> Scores:
        return Scores(self.linear[rows], self.intercept[rows], self.evidence[rows])

    @staticmethod
    def stack(parts: list[Scores]) -> Scores:
        return Scores(
            *(
                np.concatenate([getattr(p, name) for p in parts])
                for name in ("linear", "intercept", "evidence")
            )
        )


def shrink_factor(scores: Scores, evidence_scale: float) -> np.ndarray:
    """``g`` of each text: how much of its scores its evidence keeps (1 without shrinkage)."""
    if evidence_scale > 0:
        return scores.evidence / (scores.evidence + evidence_scale)
    return np.ones(len(scores.evidence))


@dataclass(frozen=True)
class TopLabelMap:
    """The top-label map: ``slope`` (a), ``offset`` (b) and ``evidence`` (e_min; 0: every
    text gets the whole map). The default changes nothing."""

    slope: float = 1.0
    offset: float = 0.0
    evidence: float = 0.0

    @property
    def is_identity(self) -> bool:
        return self.slope == 1.0 and self.offset == 0.0

    def strength(self, evidence: np.ndarray) -> np.ndarray:
        """``h`` of each text (see the module's docstring)."""
        if self.evidence <= 0:
            return np.ones(len(evidence))
        with np.errstate(over="ignore"):  # (a tiny e_min: every text gets the whole lift)
            return np.minimum(1.0, np.asarray(evidence, dtype=float) / self.evidence)

    def confidence(self, confidence: np.ndarray, strength: np.ndarray, areas: int) -> np.ndarray:
        """The top area's probability ``c`` mapped, at each text's strength ``h``."""
        uniform = _logit(np.asarray(1.0 / areas))
        z = uniform + self.slope * (_logit(confidence) - uniform) + self.offset * strength
        return 1.0 / (1.0 + np.exp(-z))

    def apply(self, probabilities: np.ndarray, evidence: np.ndarray) -> np.ndarray:
        """``probabilities`` with each row's top probability mapped and the others rescaled
        to fill the rest, in their proportions; the ranking of the areas is kept."""
        n, k = probabilities.shape
        if k < 2 or n == 0 or self.is_identity:
            return probabilities
        rows = np.arange(n)
        best = probabilities.argmax(axis=1)  # (the first of equal ones, as a stable sort)
        top = probabilities[rows, best]
        others = probabilities.copy()
        others[rows, best] = 0.0
        runner_up = others.max(axis=1)  # (probabilities are not negative)
        rest = others.sum(axis=1)
        mapped = self.confidence(top, self.strength(evidence), k)
        # the top stays above the runner-up after rescaling: c' > p2 (1 - c') / rest
        floor = runner_up / np.maximum(rest + runner_up, 1e-300) * (1 + 1e-9)
        mapped = np.minimum(np.maximum(mapped, floor), 1.0)
        result = others * ((1.0 - mapped) / np.maximum(rest, 1e-300))[:, None]
        result[rows, best] = mapped
        # a tie at the top is left as it is (no area is the top), and so is a row whose
        # others are too small to rescale
        kept = (top <= runner_up) | (rest < REST_MIN)
        result[kept] = probabilities[kept]
        return result


def calibrated(
    scores: Scores,
    temperature: float,
    evidence_scale: float,
    top_label: TopLabelMap | None = None,
    ceiling: float | None = None,
) -> np.ndarray:
    """Calibrated probabilities, one row per text, summing to 1, none above ``ceiling``."""
    shrink = shrink_factor(scores, evidence_scale)
    probabilities = softmax((shrink[:, None] * scores.linear + scores.intercept) / temperature)
    if top_label is not None:
        probabilities = top_label.apply(probabilities, scores.evidence)
    return capped(probabilities, ceiling) if ceiling is not None else probabilities


def confidence_ceiling(labels: int, areas: int) -> float:
    """The most confidence ``labels`` hand labels of ``areas`` areas can back: Laplace's rule
    of succession, (n + 1) / (n + k). A model of 6 labels and 2 areas says at most 0.875; of
    40 labels and 20 areas 0.68; of 1,500 labels and 11 areas 0.993."""
    return (labels + 1) / (labels + areas)


def capped(probabilities: np.ndarray, ceiling: float) -> np.ndarray:
    """Each row whose top probability is over ``ceiling`` mixed with the uniform distribution
    just enough to bring it down to ``ceiling``; the ranking of the areas is kept, the other
    rows are left as they are."""
    n, k = probabilities.shape
    if n == 0 or k < 2:
        return probabilities
    top = probabilities.max(axis=1)
    over = top > ceiling
    if not over.any():
        return probabilities
    uniform = 1.0 / k
    keep = np.ones(n)
    keep[over] = (ceiling - uniform) / (top[over] - uniform)
    return keep[:, None] * probabilities + (1 - keep[:, None]) * uniform


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return np.log(p) - np.log1p(-p)


def losses(probabilities: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Each row's negative log probability of its true area (indices)."""
    return -np.log(np.clip(probabilities[np.arange(len(truth)), truth], 1e-12, None))


def log_loss(probabilities: np.ndarray, truth: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Mean (weighted) negative log probability of the true areas (indices)."""
    return float(np.average(losses(probabilities, truth), weights=weights))


def fit_temperature(scores: Scores, truth: np.ndarray) -> float:
    """The temperature alone (no evidence shrinkage) with the least log loss."""
    from scipy.optimize import minimize_scalar

    result = minimize_scalar(
        lambda log_t: log_loss(calibrated(scores, np.exp(log_t), 0.0), truth),
        bounds=tuple(np.log(TEMPERATURE_RANGE)),
        method="bounded",
    )
    return float(np.exp(result.x))


def fit_top_label(probabilities: np.ndarray, truth: np.ndarray, evidence: np.ndarray) -> TopLabelMap:
    """The top-label map for these calibrated probabilities of labelled abstracts (with
    their evidence): ``e_min`` their evidence's 5th percentile, slope and offset with the
    least log loss of "the top area is right" against Platt's smoothed targets,
    (right + 1) / (right + 2) for a right top area and 1 / (wrong + 2) for a wrong one (so
    that a few labels, all right, do not make every confidence 1)."""
    from scipy.optimize import minimize

    areas = probabilities.shape[1]
    least = float(np.quantile(evidence, TOP_EVIDENCE_QUANTILE)) if len(evidence) else 0.0
    strength = TopLabelMap(evidence=least).strength(evidence)
    confidence = probabilities.max(axis=1)
    right = is_right(probabilities, truth)
    n_right, n_wrong = right.sum(), (~right).sum()
    target = np.where(right, (n_right + 1) / (n_right + 2), 1 / (n_wrong + 2))

    def loss(point: np.ndarray) -> float:
        mapped = TopLabelMap(point[0], point[1]).confidence(confidence, strength, areas)
        c = np.clip(mapped, 1e-12, 1 - 1e-12)
        return float(-np.mean(target * np.log(c) + (1 - target) * np.log1p(-c)))

    result = minimize(loss, [1.0, 0.0], method="L-BFGS-B", bounds=[TOP_SLOPE_RANGE, TOP_OFFSET_RANGE])
    return TopLabelMap(float(result.x[0]), float(result.x[1]), least)


def fit_calibration(
    held_out: Scores, truth: np.ndarray, probes: Scores, probe_truth: np.ndarray
) -> tuple[float, float]:
    """Temperature and evidence scale with the least log loss over the held-out abstracts
    and their cut-short probes (all probes together weigh as much as the abstracts)."""
    from scipy.optimize import minimize

    scores = Scores.stack([held_out, probes])
    truth_all = np.concatenate([truth, probe_truth])
    weights = np.concatenate(
        [np.ones(len(truth)), np.full(len(probe_truth), len(truth) / max(len(probe_truth), 1))]
    )
    start = np.log(fit_temperature(held_out, truth))

    def loss(point: np.ndarray) -> float:
        return log_loss(calibrated(scores, np.exp(point[0]), np.exp(point[1])), truth_all, weights)

    result = minimize(
        loss,
        [start, 0.0],
        method="L-BFGS-B",
        bounds=[tuple(np.log(TEMPERATURE_RANGE)), tuple(np.log(EVIDENCE_SCALE_RANGE))],
    )
    return float(np.exp(result.x[0])), float(np.exp(result.x[1]))
