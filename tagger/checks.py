"""One check for the numbers users give, from the command line or from Python."""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

from .errors import UsageError


class Range(NamedTuple):
    """What a number may be: from ``low`` to ``high``, a whole number if ``integer``, or one
    of ``also``."""

    low: float
    high: float = math.inf
    integer: bool = False
    also: tuple = ()


# Every number a user gives, from the command line or from Python, by the name of what it is:
# one table (the command line's options and Python's arguments of the same name share their
# row), one check (:func:`number`). The training settings' rows are also the estimator's
# parameter constraints; C past 10,000 or a million iterations fit nothing better, only slower.
RANGES: dict[str, Range] = {
    "review_below": Range(0.0, 1.0),
    "min_confidence": Range(0.0, 1.0),
    "top_k": Range(1, integer=True),
    "jobs": Range(1, integer=True, also=(-1,)),
    "terms": Range(1, integer=True),
    "n": Range(1, integer=True),
    "port": Range(0, 65535, integer=True),
    # training settings (tagger.settings.TrainingSettings)
    "ngram_max": Range(1, 2, integer=True),
    "min_df": Range(1, 1000, integer=True),
    "pair_min_df": Range(1, 1000, integer=True),
    "C": Range(1e-4, 1e4),
    "abstract_weight": Range(1e-4, 1e4),
    "description_weight": Range(1e-4, 1e4),
    "pseudo_label_weight": Range(1e-4, 1.0),
    "bayes_weight": Range(0.0, 100.0),
    "bayes_smoothing": Range(1e-6, 10.0),
    "no_area_weight": Range(1e-4, 100.0),
    "review_accuracy": Range(0.01, 1.0),
    "max_iter": Range(1, 100_000, integer=True),
}


def number(value, name: str, what: str | None = None, *, from_text: bool = False):
    """``value`` (a number; with ``from_text``, text from the command line) as the number
    :data:`RANGES` says ``what`` (by default ``name``) may be; otherwise a
    :class:`~tagger.errors.UsageError` naming ``name`` (as the user wrote it) and what it
    takes."""
    low, high, integer, also = RANGES[what or name]
    parsed = value
    if from_text and isinstance(value, str):
        try:
            parsed = int(value) if integer else float(value)
        except ValueError:
            parsed = None
    kind = numbers.Integral if integer else numbers.Real
    valid = isinstance(parsed, kind) and not isinstance(parsed, bool)
    if valid and (parsed in also or low <= parsed <= high):  # NaN is never within
        return int(parsed) if integer else float(parsed)
    what = "a whole number" if integer else "a number"
    span = f"from {low:g} to {high:g}" if high != math.inf else f"of at least {low:g}"
    extra = "".join(f" or {v}" for v in also)
    raise UsageError(f"{name} {value!r} is not valid", fix=f"Use {what} {span}{extra}.")


def a_kind(value) -> str:
    """What ``value`` is, in words: ``None``, ``an int``, ``a float``."""
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[0].lower() in 'aeiou' else 'a'} {name}"
