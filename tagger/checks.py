"""One check for the numbers users give, from the command line or from Python."""

from __future__ import annotations

import math
import numbers

from .errors import UsageError


def number(
    value,
    name: str,
    *,
    low: float,
    high: float = math.inf,
    integer: bool = False,
    also: tuple = (),
    from_text: bool = False,
):
    """``value`` (a number; with ``from_text``, text from the command line) as a number
    from ``low`` to ``high`` (a whole number if ``integer``), or one of ``also``; otherwise
    a :class:`~tagger.errors.UsageError` naming ``name`` and what it takes."""
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
