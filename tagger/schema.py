"""The tagged row: the one definition of what tagging adds to an abstract, column by column,
that every writer and reader of tags uses (``tagger predict``'s CSV, JSON lines and Parquet,
:func:`tagger.tag_dataframe`, ``tagger report`` reading a tags file back, and the labelling
page's report).

Each :class:`Field` has a name, a kind, and from its kind: its type in a data frame, its
value in a row without an abstract, its Parquet type, and how a cell of a tags file is read
back and checked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import InputError


@dataclass(frozen=True)
class Field:
    """One column of a tagged row. ``kind``: ``text``, ``position`` (a whole number from 1),
    ``probability`` (from 0 to 1), ``flag`` (true or false) or ``tags`` (a list of areas
    with their probabilities)."""

    name: str
    kind: str

    @property
    def dtype(self):
        """Its type in a data frame."""
        return {"probability": float, "flag": bool, "position": np.int64}.get(self.kind, object)

    @property
    def missing(self):
        """Its value in a data frame's row that has no abstract to tag: no area, no
        confidence, and flagged for review."""
        return {"probability": np.nan, "flag": True}.get(self.kind)

    def arrow(self):
        """Its Parquet type."""
        import pyarrow as pa

        return {
            "position": pa.int64(),
            "probability": pa.float64(),
            "flag": pa.bool_(),
            "tags": pa.list_(pa.struct([("area", pa.string()), ("confidence", pa.float64())])),
        }.get(self.kind, pa.string())

    def read(self, values, where) -> np.ndarray:
        """A column of a tags file (cells as ``tagger predict`` wrote them, in CSV, JSON lines
        or Parquet) as values of this field, each checked; ``where(i)`` names the row ``i``
        for the error about the first that is not one."""
        if self.kind == "flag":
            return _flags(list(values), self.name, where)
        if self.kind == "text":
            return np.array(["" if _absent(value) else str(value) for value in values], dtype=object)
        import pandas as pd

        numbers = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").astype(float).to_numpy()
        if self.kind == "position":
            bad = ~np.isfinite(numbers) | (numbers < 1) | (numbers != np.floor(numbers)) | (numbers > 2**53)
            what = "a whole number from 1"
        else:
            bad = ~np.isfinite(numbers) | (numbers < 0) | (numbers > 1)
            what = "a probability from 0 to 1"
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"{self.name} {list(values)[row]!r} is not {what}",
                where=where(row),
                fix="Give the output of tagger predict as it wrote it.",
            )
        return numbers.astype(np.int64) if self.kind == "position" else numbers


def _absent(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


_FLAGS = {"true": True, "false": False, "1": True, "0": False}


def _flags(values: list, name: str, where) -> np.ndarray:
    """Flags as ``tagger predict`` writes them (``True``/``False`` in CSV, booleans in JSON
    lines and Parquet); anything else is an error naming its row."""
    flags = np.empty(len(values), dtype=bool)
    for i, value in enumerate(values):
        flag = value if isinstance(value, (bool, np.bool_)) else _FLAGS.get(str(value).strip().lower())
        if flag is None:
            raise InputError(
                f"{name} {value!r} is not true or false",
                where=where(i),
                fix="Give the output of tagger predict as it wrote it.",
            )
        flags[i] = flag
    return flags


# Where the abstract is (its file, its place there), its id and its title (empty where the
# input has none), then the prediction.
ABSTRACT = (
    Field("source", "text"),
    Field("position", "position"),
    Field("id", "text"),
    Field("title", "text"),
)
PREDICTION = (
    Field("area", "text"),
    Field("confidence", "probability"),
    Field("runner_up", "text"),
    Field("runner_up_confidence", "probability"),
    Field("needs_review", "flag"),
)
TAGS = Field("tags", "tags")
TAGGED = (*ABSTRACT, *PREDICTION, TAGS)
BY_NAME = {field.name: field for field in TAGGED}


def located(abstract) -> dict:
    """The abstract's fields of a tagged row (its file, its place there, its id, its title), by name:
    how every record about an abstract (explain's, suggest's, the labelling page's) says
    which one it is."""
    return {field.name: getattr(abstract, field.name) for field in ABSTRACT}


# Every area's probability, a column each (predict --all-probabilities): probability_AREA.
PROBABILITY_PREFIX = "probability_"


def probability_columns(areas) -> tuple[str, ...]:
    """The columns of every area's probability, in the model's order of ``areas``."""
    return tuple(PROBABILITY_PREFIX + area for area in areas)


def field(name: str) -> Field | None:
    """The field of one of tagger's columns (a probability column too), or None for a column
    that is not tagger's (a kept input column)."""
    if name in BY_NAME:
        return BY_NAME[name]
    return Field(name, "probability") if name.startswith(PROBABILITY_PREFIX) else None


PREDICTION_COLUMNS = tuple(field.name for field in PREDICTION)
COLUMNS = tuple(field.name for field in (*ABSTRACT, *PREDICTION))  # before tags and kept columns
RESERVED = tuple(field.name for field in TAGGED)  # an input column of one of these is kept as input_NAME
# (and of a name starting with PROBABILITY_PREFIX)
