"""Output rows: one per abstract, in input order, as CSV or JSON lines."""

from __future__ import annotations

import contextlib
import csv
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from .atomic import atomic_write
from .corpus import Abstract
from .model import Prediction

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


def row(abstract: Abstract, prediction: Prediction) -> dict:
    return {
        "source": abstract.source,
        "position": abstract.position,
        "id": abstract.id,
        "area": prediction.area,
        "confidence": round(prediction.confidence, DIGITS),
        "runner_up": prediction.runner_up,
        "runner_up_confidence": round(prediction.runner_up_confidence, DIGITS),
        "needs_review": prediction.needs_review,
    }


class RowWriter:
    """Writes rows to a text stream in one of :data:`FORMATS`."""

    def __init__(self, stream: IO[str], output_format: str = "csv") -> None:
        self.stream = stream
        self.output_format = output_format
        if output_format == "csv":
            self._csv = csv.DictWriter(stream, fieldnames=COLUMNS, lineterminator="\n")
            self._csv.writeheader()

    def write(self, row: dict) -> None:
        if self.output_format == "csv":
            self._csv.writerow(row)
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
