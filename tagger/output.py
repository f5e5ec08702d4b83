"""Output rows: one per abstract, in input order, as CSV or JSON lines."""

from __future__ import annotations

import contextlib
import csv
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import numpy as np

from .atomic import atomic_write
from .corpus import Abstract
from .model import Model
from .prediction import COLUMNS as PREDICTION_COLUMNS
from .prediction import prediction_columns

FORMATS = ("csv", "jsonl")
ABSTRACT_COLUMNS = ("source", "position", "id")
COLUMNS = ABSTRACT_COLUMNS + PREDICTION_COLUMNS
DIGITS = 4  # probabilities are written rounded to this many decimals
_PROBABILITY_COLUMNS = ("confidence", "runner_up_confidence")


def prediction_table(probabilities: np.ndarray, model: Model, review_below: float | None) -> dict[str, list]:
    """The prediction columns of output (see :func:`tagger.prediction.prediction_columns`),
    probabilities rounded to :data:`DIGITS` decimals, as lists of plain values."""
    columns = prediction_columns(probabilities, model.areas, model.threshold(review_below))
    for name in _PROBABILITY_COLUMNS:
        columns[name] = np.round(columns[name], DIGITS)
    return {name: columns[name].tolist() for name in PREDICTION_COLUMNS}


def rows(
    chunk: list[Abstract], probabilities: np.ndarray, model: Model, review_below: float | None
) -> Iterator[dict]:
    """The output rows of a chunk of abstracts, from their calibrated probabilities: dicts
    keyed by :data:`COLUMNS`."""
    table = prediction_table(probabilities, model, review_below)
    for abstract, *values in zip(chunk, *table.values()):
        yield {
            "source": abstract.source,
            "position": abstract.position,
            "id": abstract.id,
            **dict(zip(table, values)),
        }


class RowWriter:
    """Writes rows (dicts keyed by :data:`COLUMNS`) to a text stream in one of :data:`FORMATS`."""

    def __init__(self, stream: IO[str], output_format: str = "csv") -> None:
        self.stream = stream
        self.output_format = output_format
        if output_format == "csv":
            self._csv = csv.writer(stream, lineterminator="\n")
            self._csv.writerow(COLUMNS)

    def write(self, row: dict) -> None:
        if self.output_format == "csv":
            self._csv.writerow([row[name] for name in COLUMNS])
        else:
            self.stream.write(json.dumps({name: row[name] for name in COLUMNS}, ensure_ascii=False) + "\n")


@contextlib.contextmanager
def open_output(path: str | Path | None) -> Iterator[IO[str]]:
    """stdout, or ``path`` written atomically (complete or not at all)."""
    if path is None or str(path) == "-":
        yield sys.stdout
    else:
        with atomic_write(path) as stream:
            yield stream
