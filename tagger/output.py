"""Output rows: one per abstract, in input order, as CSV or JSON lines."""

from __future__ import annotations

import contextlib
import csv
import errno
import json
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

import numpy as np

from .atomic import atomic_write
from .corpus import Abstract, format_of
from .errors import OutputError
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
def open_output(path: str | Path | None, inputs: Iterable[str | Path] = ()) -> Iterator[IO[str]]:
    """Where output goes: stdout (``None`` or ``-``); a regular file (new, or replaced; a
    symlink's target) written atomically, complete or not at all; or a device, FIFO or other
    special file (``/dev/null``, ``/proc/self/fd/1``) written through as it is. Refused with
    a clear error before anything is read: an empty name, a folder, a missing folder, and an
    input file (``inputs``: its abstracts would be replaced by the tags). A write that fails
    (disk full, ...) names ``path``, never the hidden temporary file."""
    if path is None or str(path) == "-":
        if sys.stdout is None:
            raise OutputError("standard output is closed", fix="Give --output FILE, or redirect stdout.")
        yield sys.stdout
        return
    if not str(path).strip():
        raise OutputError("the output file name is empty", fix="Give --output a file name, or - for stdout.")
    target = _checked_target(Path(path), inputs)
    body_error: BaseException | None = None
    try:
        if target.exists() and not target.is_file():  # a device, FIFO, socket: write through
            opened = open(target, "w", encoding="utf-8", newline="")  # noqa: SIM115 (the with below)
        else:
            opened = atomic_write(target)
        with opened as stream:
            try:
                yield _NamedStream(stream, str(path))
            except BaseException as error:
                body_error = error
                raise
    except OSError as error:
        if error is body_error:
            raise
        raise _write_error(error, str(path)) from None


class _NamedStream:
    """A text stream whose write errors name the output path."""

    def __init__(self, stream: IO[str], name: str) -> None:
        self._stream, self._name = stream, name

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as error:
            raise _write_error(error, self._name) from None

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _write_error(error: OSError, where: str) -> OutputError:
    fixes = {
        errno.ENOSPC: "Free some space, or choose another --output.",
        errno.EDQUOT: "Free some space, or choose another --output.",
        errno.EACCES: "Check its permissions, or choose another --output.",
        errno.EPERM: "Check its permissions, or choose another --output.",
    }
    return OutputError(
        f"cannot write the output ({error.strerror or error})",
        where=where,
        fix=fixes.get(error.errno, "Choose another --output."),
    )


def _checked_target(path: Path, inputs: Iterable[str | Path]) -> Path:
    """The file to write for ``--output path`` (a symlink's target), checked."""
    shown = str(path)
    if path.is_dir():
        raise OutputError("is a folder", where=shown, fix="Give --output a file name inside it.")
    target = path if path.exists() and not path.is_file() else Path(os.path.realpath(path))
    if not target.parent.is_dir():
        raise OutputError(
            f"the folder {target.parent} does not exist",
            where=shown,
            fix="Create it, or choose another --output.",
        )
    if target.is_file():
        for given in inputs:
            given = Path(given)
            inside = given.is_dir() and target.is_relative_to(os.path.realpath(given)) and format_of(target)
            if inside or (given.is_file() and os.path.samefile(given, target)):
                raise OutputError(
                    f"is an input ({given}): writing the tags there would replace the abstracts",
                    where=shown,
                    fix="Choose another --output.",
                )
    return target
