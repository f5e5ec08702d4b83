"""From calibrated probabilities to results: one vectorised step, :func:`prediction_columns`,
that every consumer uses (:class:`Prediction` objects, the command line's rows, the Dask
helpers).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .schema import PREDICTION_COLUMNS as COLUMNS  # (the tagged row: tagger.schema)

# Tags without options (--top-k, --min-confidence): the top area, and the runner-up when it is
# at least this likely (a paper between two areas). On hand-labelled abstracts of 2022-24 held
# out by year, they hold the reader's area 0.89 of the time (the top area alone: 0.80), with
# 1.27 tags an abstract (tests/benchmarks/bench_tags.py MODERN.jsonl MODERN-TRAIN.jsonl).
RUNNER_UP_TAG = 0.15
# The area of an abstract the model cannot place: its two likeliest areas are equally likely
# (an abstract with no word the model knows gives every area the same probability). A tie is
# no answer: it is flagged for review, counted apart in summaries, and never counted right.
NO_AREA = ""
# The answer that an abstract fits none of the areas: a reader's label, and an answer of the
# model when it learnt it from such labels (tagger.labels.NO_AREA_MIN).
NONE = "none"
# The probability of every area for a text that is no abstract (empty, or only whitespace):
# never guessed, never an error in a batch, it keeps its place with no area, no confidence,
# and needs review, as an empty cell does in tagger.tag_dataframe (a file's record without an
# abstract is left out of the output, counted and listed: its position keeps its place).
UNSCORED = float("nan")
TIE = 1e-12  # two probabilities closer than this are equal (real ties differ by rounding only)


@dataclass(frozen=True)
class Prediction:
    """The area of one abstract and how sure the model is.

    ``confidence`` is the calibrated probability of ``area``; ``scores`` holds every area's
    probability (summing to 1); ``runner_up`` is the second most likely area;
    ``needs_review`` is true when the confidence is below the review threshold.
    ``top_terms`` (filled when asked for with ``explain=True``) lists the terms that pushed
    the abstract toward ``area``, strongest first, with their push.
    """

    area: str
    confidence: float
    runner_up: str
    runner_up_confidence: float
    needs_review: bool
    scores: dict[str, float]
    top_terms: tuple[tuple[str, float], ...] = ()

    @property
    def tags(self) -> list[tuple[str, float]]:
        """The area, and the runner-up too when it is close (:data:`RUNNER_UP_TAG`), with
        their probabilities: the ``tags`` column of ``tagger predict``."""
        names = list(self.scores)
        [tags] = default_tags(np.array([list(self.scores.values())]), names)
        return tags

    def top(self, k: int | None = 3, min_confidence: float = 0.0) -> list[tuple[str, float]]:
        """The ``k`` most likely areas (all with ``k=None``) whose probability is at least
        ``min_confidence``, most likely first: for papers that sit between areas."""
        from .checks import number

        k = None if k is None else number(k, "k", "top_k")
        min_confidence = number(min_confidence, "min_confidence")
        names = list(self.scores)
        [tags] = top_areas(np.array([list(self.scores.values())]), names, k, min_confidence)
        return tags


def prediction_columns(
    probabilities: np.ndarray, areas: Sequence[str], review_threshold: float
) -> dict[str, np.ndarray]:
    """Per row of calibrated probabilities (one column per area, in ``areas`` order): the
    best area and its probability, the runner-up and its probability, and whether the row
    needs review (confidence below ``review_threshold``), as arrays keyed by
    :data:`COLUMNS`. Of equal probabilities, the earlier area ranks first. A row of NaN (a
    text with no abstract, :data:`UNSCORED`) has no area, no runner-up and needs review."""
    names = np.asarray(areas, dtype=object)
    rows = np.arange(len(probabilities))
    best, second = two_best(probabilities)
    confidence = probabilities[rows, best]
    tied = ~(confidence - probabilities[rows, second] > TIE)  # (a row of NaN: no abstract, no answer)
    return {
        "area": np.where(tied, NO_AREA, names[best]),
        "confidence": confidence,
        "runner_up": np.where(np.isnan(confidence), NO_AREA, names[second]),
        "runner_up_confidence": probabilities[rows, second],
        "needs_review": (confidence < review_threshold) | tied,
    }


def decided(probabilities: np.ndarray) -> np.ndarray:
    """Each row's most likely area (an index), or -1 where the two likeliest are tied (no
    answer). What every figure counts as the model's answer."""
    best, second = two_best(probabilities)
    rows = np.arange(len(probabilities))
    tied = probabilities[rows, best] - probabilities[rows, second] <= TIE
    return np.where(tied, -1, best)


def right(probabilities: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Whether each row's answer is the area ``truth`` holds (indices); a tie is never right."""
    return decided(probabilities) == np.asarray(truth)


def two_best(probabilities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's most likely area and runner-up (indices; of equal probabilities, the
    earlier area first), without sorting every area."""
    best = probabilities.argmax(axis=1)
    others = probabilities.copy()
    others[np.arange(len(probabilities)), best] = -np.inf
    return best, others.argmax(axis=1)


def top_areas(
    probabilities: np.ndarray, areas: Sequence[str], k: int | None, min_confidence: float = 0.0
) -> list[list[tuple[str, float]]]:
    """Per row: the ``k`` most likely areas (every one with ``k=None``) whose probability is
    at least ``min_confidence``, most likely first (of equal probabilities, the earlier area)."""
    order = np.argsort(-probabilities, axis=1, kind="stable")[:, : k if k is not None else len(areas)]
    chosen = np.take_along_axis(probabilities, order, axis=1)
    return [
        [(areas[i], p) for i, p in zip(row_order.tolist(), row_p.tolist()) if p >= min_confidence]
        for row_order, row_p in zip(order, chosen)
    ]


def default_tags(probabilities: np.ndarray, areas: Sequence[str]) -> list[list[tuple[str, float]]]:
    """Per row: the top area, and the runner-up when it is close (:data:`RUNNER_UP_TAG`):
    from the two best of each row alone (a batch of millions makes no list of every area).
    A tie (no answer) has no tag."""
    names = np.asarray(areas, dtype=object)
    rows = np.arange(len(probabilities))
    best, second = two_best(probabilities)
    top, close = probabilities[rows, best], probabilities[rows, second]
    both = close >= RUNNER_UP_TAG
    tied = ~(top - close > TIE)  # (or a row of NaN: no abstract)
    return [
        [] if tie else [(first, p), (then, q)] if two else [(first, p)]
        for first, p, then, q, two, tie in zip(
            names[best].tolist(),
            top.tolist(),
            names[second].tolist(),
            close.tolist(),
            both.tolist(),
            tied.tolist(),
        )
    ]


def predictions(probabilities: np.ndarray, areas: Sequence[str], review_threshold: float) -> list[Prediction]:
    """One :class:`Prediction` per row of calibrated probabilities."""
    columns = {name: values.tolist() for name, values in prediction_columns(
        probabilities, areas, review_threshold
    ).items()}  # fmt: skip
    return [
        Prediction(**dict(zip(COLUMNS, values)), scores=dict(zip(areas, row)))
        for row, *values in zip(probabilities.tolist(), *(columns[name] for name in COLUMNS))
    ]
