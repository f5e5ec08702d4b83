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

FORMATS = ("csv", "jsonl")
COLUMNS = (
    "source",
    "position",
    "id",
    "area",
    "confidence",
    "runner_up",
    "runner_up_confidence",
    "needs_review",
)
DIGITS = 4


def rows(
    chunk: list[Abstract], probabilities: np.ndarray, model: Model, review_below: float | None
) -> Iterator[dict]:
    """The output rows of a chunk of abstracts, from their calibrated probabilities."""
    best, confidence, second, second_confidence, needs_review = model.summarise(
        probabilities, review_below=review_below
    )
    areas = model.areas
    for abstract, k, p, j, q, flag in zip(
        chunk,
        best.tolist(),
        np.round(confidence, DIGITS).tolist(),
        second.tolist(),
        np.round(second_confidence, DIGITS).tolist(),
        needs_review.tolist(),
    ):
        yield {
            "source": abstract.source,
            "position": abstract.position,
            "id": abstract.id,
            "area": areas[k],
            "confidence": p,
            "runner_up": areas[j],
            "runner_up_confidence": q,
            "needs_review": flag,
        }


class RowWriter:
    """Writes rows to a text stream in one of :data:`FORMATS`."""

    def __init__(self, stream: IO[str], output_format: str = "csv") -> None:
        self.stream = stream
        self.output_format = output_format
        if output_format == "csv":
            self._csv = csv.writer(stream, lineterminator="\n")
            self._csv.writerow(COLUMNS)

    def write(self, row: dict) -> None:
        if self.output_format == "csv":
            self._csv.writerow(row.values())  # the columns' order
        else:
            self.stream.write(json.dumps(row, ensure_ascii=False) + "\n")


@contextlib.contextmanager
def open_output(path: str | Path | None) -> Iterator[IO[str]]:
    """stdout, or ``path`` written atomically (complete or not at all)."""
    if path is None or str(path) == "-":
        yield sys.stdout
    else:
        with atomic_write(path) as stream:
            yield stream
