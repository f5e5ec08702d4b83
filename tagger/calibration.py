"""From linear scores to probabilities that mean what they say.

A text's calibrated probabilities are ``softmax((g * scores + intercept) / T)``: ``T`` is one
temperature, and ``g = e / (e + s)`` shrinks the scores of a text with little evidence
toward uniform, where ``e`` is the text's evidence (its words that are features of the model,
discounted by the share of its words that are not: :func:`tagger.features.evidence`) and
``s`` is the evidence scale. A text with no known word gets every area alike; a long abstract gets
``g`` close to 1. Both ``T`` and ``s`` are fitted (least log loss) on cross-validated scores:
those of the held-out labelled abstracts and of the same abstracts cut short (their first
few words), so that the model learns from real abstracts how confidence should fall as
evidence thins.

Applying a calibration needs numpy only; fitting it needs scipy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Held-out abstracts are also scored cut to their first this many words.
PROBE_WORDS = (3, 6, 12, 25, 50)
# What fitting may choose; a model card outside these ranges is refused when loaded.
TEMPERATURE_RANGE = (0.001, 100.0)
EVIDENCE_SCALE_RANGE = (float(np.exp(-5.0)), float(np.exp(7.0)))


def softmax(scores: np.ndarray) -> np.ndarray:
    shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class Scores:
    """What a linear model says about texts before calibration: ``linear`` (texts x areas,
    the feature part of the scores), ``intercept`` (texts x areas; -inf for an area the
    model never saw) and ``evidence`` (per text, see :func:`tagger.features.evidence`)."""

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


def calibrated(scores: Scores, temperature: float, evidence_scale: float) -> np.ndarray:
    """Calibrated probabilities, one row per text, summing to 1."""
    shrink = scores.evidence / (scores.evidence + evidence_scale) if evidence_scale > 0 else 1.0
    return softmax((np.reshape(shrink, (-1, 1)) * scores.linear + scores.intercept) / temperature)


def log_loss(probabilities: np.ndarray, truth: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Mean (weighted) negative log probability of the true areas (indices)."""
    p = np.clip(probabilities[np.arange(len(truth)), truth], 1e-12, None)
    return float(np.average(-np.log(p), weights=weights))


def fit_temperature(scores: Scores, truth: np.ndarray) -> float:
    """The temperature alone (no evidence shrinkage) with the least log loss."""
    from scipy.optimize import minimize_scalar

    result = minimize_scalar(
        lambda log_t: log_loss(calibrated(scores, np.exp(log_t), 0.0), truth),
        bounds=tuple(np.log(TEMPERATURE_RANGE)),
        method="bounded",
    )
    return float(np.exp(result.x))


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
