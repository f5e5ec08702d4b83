"""Output rows: one per abstract, in input order, as CSV, JSON lines, Parquet or Excel. A CSV cell
that a spreadsheet would run as a formula is written behind a quote (:mod:`tagger.formulas`).

A row holds :data:`COLUMNS`, a ``tags`` column (the top area, and the runner-up when it is
close; or every area that qualifies by ``--top-k`` and ``--min-confidence``:
``area:probability;...`` in CSV, a list in JSON lines and Parquet) and input columns carried
through (``--keep``).
"""

from __future__ import annotations

import contextlib
import csv
import errno
import json
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

import numpy as np

from .atomic import atomic_write, inside
from .errors import OutputError
from .formats import BY_NAME, GZIP, TAGS, list_of, split_name
from .formulas import guarded, guarded_column
from .model import Model
from .prediction import default_tags, prediction_columns, top_areas
from .reading import KEEP_ALL, Abstract, format_of
from .schema import COLUMNS, PREDICTION_COLUMNS, field, probability_columns

FORMATS = TAGS  # (the table of formats: tagger.formats)
DIGITS = 4  # probabilities are written rounded to this many decimals
COLUMNS_FROM = 100  # with --keep all, a table's columns are the kept fields of its first rows
_PROBABILITY_COLUMNS = ("confidence", "runner_up_confidence")
Protected = Iterable[tuple[str | os.PathLike, str]]  # folders no output goes into, with what they hold


def prediction_table(
    probabilities: np.ndarray, model: Model, review_below: float | None, digits: int | None = DIGITS
) -> dict[str, list]:
    """The prediction columns of output (see :func:`tagger.prediction.prediction_columns`),
    probabilities rounded to ``digits`` decimals (None: in full), as lists of plain values."""
    columns = prediction_columns(probabilities, model.areas, model.threshold(review_below))
    for name in _PROBABILITY_COLUMNS:
        if digits is not None:
            columns[name] = np.round(columns[name], digits)
    return {name: columns[name].tolist() for name in PREDICTION_COLUMNS}


@dataclass(frozen=True)
class Layout:
    """What rows hold besides :data:`COLUMNS`: the ``tags`` column (with ``top_k`` or
    ``min_confidence``, the ``top_k`` most likely areas, all if not given, of probability at
    least ``min_confidence``; without, :func:`tagger.prediction.default_tags`); ``keep``:
    input columns carried through (by name; the readers' ``KEEP_ALL`` for every one);
    ``every_area``: the model's areas, each one's probability a column after ``tags``
    (``--all-probabilities``; none by default)."""

    top_k: int | None = None
    min_confidence: float | None = None
    keep: tuple[str, ...] = ()
    every_area: tuple[str, ...] = ()

    def tags(self, probabilities: np.ndarray, areas) -> list[list[tuple[str, float]]]:
        """Each row's tags."""
        if self.top_k is None and self.min_confidence is None:
            return default_tags(probabilities, areas)
        return top_areas(probabilities, areas, self.top_k, self.min_confidence or 0.0)


class ChunkRows:
    """The output rows of a chunk of abstracts, from their calibrated probabilities, held by
    column (``table``: :data:`COLUMNS` in order); iterating gives each row as a dict keyed
    by :data:`COLUMNS`, then ``tags`` and the kept columns if ``layout`` asks."""

    def __init__(
        self,
        chunk: list[Abstract],
        probabilities: np.ndarray,
        model: Model,
        review_below: float | None,
        layout: Layout = Layout(),
    ) -> None:
        self.table: dict[str, list] = {
            "source": [a.source for a in chunk],
            "position": [a.position for a in chunk],
            "id": [a.id for a in chunk],
            "title": [a.title for a in chunk],
            **prediction_table(probabilities, model, review_below),
        }
        self.tags = layout.tags(probabilities, model.areas)
        self.scores: dict[str, list] = {}  # every area's probability, by column (--all-probabilities)
        if layout.every_area:
            rounded = np.round(probabilities, DIGITS)
            self.scores = {
                name: rounded[:, i].tolist() for i, name in enumerate(probability_columns(model.areas))
            }
        self.kept = [a.extra or {} for a in chunk] if layout.keep else None

    def __len__(self) -> int:
        return len(self.table["id"])

    def __iter__(self) -> Iterator[dict]:
        for i, values in enumerate(zip(*self.table.values())):
            row = dict(zip(self.table, values))
            row["tags"] = [{"area": area, "confidence": round(p, DIGITS)} for area, p in self.tags[i]]
            for name, scores in self.scores.items():
                row[name] = scores[i]
            if self.kept is not None:
                for name, value in self.kept[i].items():
                    row[kept_name(name)] = value
            yield row

    @property
    def plain(self) -> bool:
        """Whether the rows hold :data:`COLUMNS` and ``tags`` only."""
        return self.kept is None and not self.scores

    def tag_cells(self) -> list[str]:
        """The ``tags`` column as CSV cells."""
        return [";".join(f"{area}:{round(p, DIGITS)}" for area, p in tags) for tags in self.tags]

    def cells(self, columns: tuple[str, ...]) -> Iterator[list]:
        """Each row as the CSV cells of ``columns`` (:data:`COLUMNS`, then ``tags``, every
        area's probability and kept columns), without a dict per row: a row may keep thousands
        of columns."""
        extra = columns[len(COLUMNS) :]
        kept = [_input_name(name) for name in extra if name != "tags" and name not in self.scores]
        tags = self.tag_cells() if "tags" in extra else None
        scores = [self.scores[name] for name in extra if name in self.scores]
        for i, own in enumerate(zip(*self.table.values())):
            row = list(own)
            if tags is not None:
                row.append(tags[i])
            row += [column[i] for column in scores]
            if kept:
                held = self.kept[i] if self.kept else {}
                # (a row keeping every column in this order: its values as they are)
                values = list(held.values()) if list(held) == kept else list(map(held.get, kept))
                if not _PLAIN_CELLS.issuperset(map(type, values)):
                    values = [_cell("", value) for value in values]
                row += values
            yield row

    def names_outside(self, columns: set[str]) -> set[str]:
        """The output names of kept columns that ``columns`` does not hold."""
        if not self.kept:
            return set()
        inputs = set().union(*(row.keys() for row in self.kept))
        return {name for name in map(kept_name, inputs) if name not in columns}


def rows(
    chunk: list[Abstract],
    probabilities: np.ndarray,
    model: Model,
    review_below: float | None,
    layout: Layout = Layout(),
) -> Iterator[dict]:
    """The output rows of a chunk of abstracts as dicts (see :class:`ChunkRows`)."""
    return iter(ChunkRows(chunk, probabilities, model, review_below, layout))


def kept_name(name: str) -> str:
    """The output name of a kept input column: never one of tagger's own."""
    return f"input_{name}" if _ours(name) else name


def _ours(name: str) -> bool:
    return field(name) is not None  # (tagger's own columns, the probability columns too)


def _input_name(name: str) -> str:
    """The input column an output column keeps (the inverse of :func:`kept_name`)."""
    return name[len("input_") :] if name.startswith("input_") and _ours(name[len("input_") :]) else name


_PLAIN_CELLS = {str, int, float, bool, type(None)}  # written to CSV as they are
_TEXT = {name: field(name).kind == "text" for name in COLUMNS}  # type: ignore[union-attr]


@dataclass(frozen=True)
class Target:
    """How output is written: its format (one of :data:`FORMATS`) and whether it is
    gzip-compressed."""

    format: str
    gzip: bool = False

    @property
    def binary(self) -> bool:
        return BY_NAME[self.format].binary


def format_for(path: str | os.PathLike | None, given: str | None, default: str = "csv") -> Target:
    """The output's format: ``given`` (``--format``), else the one ``path``'s extension names
    (``.csv``, ``.jsonl``, ``.parquet``, each but Parquet also ``.gz``), else ``default`` on
    stdout and into special files.
    An extension that names no format we write is refused, never written as CSV under its
    name."""
    if path in (None, "-") or (Path(str(path)).exists() and not Path(str(path)).is_file()):
        return Target(given or default)  # stdout, a device, a FIFO (a folder: refused when opened)
    form, compression = split_name(path)
    compressed = compression == GZIP
    if given:
        return Target(given, compressed and not BY_NAME[given].compresses_itself)
    if form and form.tags and compression in (None, GZIP) and not (compressed and form.compresses_itself):
        return Target(form.name, compressed)
    raise OutputError(
        f"cannot tell which format to write from the name {Path(str(path)).name!r}"
        + (f" ({form.said} compresses itself)" if form and compressed and form.compresses_itself else ""),
        where=str(path),
        fix=f"End it in {list_of(FORMATS)} (.csv.gz or .jsonl.gz for gzip), or give --format.",
    )


class RowWriter:
    """Writes rows (see :func:`rows`) to a stream in one of :data:`FORMATS` (Parquet: a binary
    stream, written a chunk at a time through pyarrow). The columns are fixed by the first
    rows: :data:`COLUMNS`, ``tags`` if the layout asks, then the kept columns (with ``--keep
    all``, those of the first :data:`COLUMNS_FROM` rows, however many chunks they come in, so
    that the columns never depend on the chunking; a later column is written in JSON lines and
    noted otherwise); or ``columns`` as given (a table that is not tags: ``sheet`` names it)."""

    def __init__(
        self,
        stream: IO,
        output_format: str = "csv",
        layout: Layout = Layout(),
        columns: tuple[str, ...] | None = None,
        sheet: str = "tags",
    ) -> None:
        self.stream = stream
        self.output_format = output_format
        self.layout = layout
        self.columns: tuple[str, ...] | None = None
        self._given = columns
        self.unwritten: set[str] = set()  # kept columns that came after the columns were fixed
        self._csv = csv.writer(stream, lineterminator="\n") if output_format == "csv" else None
        self._sheet = Sheet(stream, sheet) if output_format == "xlsx" else None
        self._parquet: Any = None  # a pyarrow ParquetWriter, once the first rows come
        self._written: set[str] = set()  # the columns, as a set (rows may hold thousands)
        self._waiting: list[list[dict] | ChunkRows] = []  # first rows, until the columns are fixed

    def _fix_columns(self, first: list[list[dict] | ChunkRows]) -> tuple[str, ...]:
        """The output's columns (given, or those of tags: :meth:`_tag_columns`); the CSV
        header written."""
        columns = self._given if self._given is not None else self._tag_columns(first)
        self.columns, self._written = columns, set(columns)
        if self._csv is not None:
            self._csv.writerow(guarded_column(list(columns)))
        if self._sheet is not None:
            self._sheet.append(columns)
        return columns

    def _tag_columns(self, first: list[list[dict] | ChunkRows]) -> tuple[str, ...]:
        """The columns of tags, from the first rows (with ``--keep all``, the kept fields of
        the first :data:`COLUMNS_FROM` rows, however they came in chunks) and the layout."""
        if self.layout.keep == KEEP_ALL:
            kept: list[str] = []
            left = COLUMNS_FROM
            for rows in first:
                if isinstance(rows, ChunkRows):
                    kept += [kept_name(name) for row in (rows.kept or [])[:left] for name in row]
                else:
                    kept += [name for row in rows[:left] for name in row if field(name) is None]
                left -= len(rows)
                if left <= 0:
                    break
        else:
            kept = [kept_name(name) for name in self.layout.keep]
        return (*COLUMNS, "tags", *probability_columns(self.layout.every_area), *dict.fromkeys(kept))

    def write_rows(self, rows: ChunkRows | list[dict]) -> None:
        if (
            self.columns is None
            and self._given is None
            and self.layout.keep == KEEP_ALL
            and self.output_format != "jsonl"
        ):
            self._waiting.append(rows if isinstance(rows, ChunkRows) else list(rows))
            if sum(map(len, self._waiting)) >= COLUMNS_FROM:
                self._write_waiting()
            return
        if self.columns is None:
            self._fix_columns([rows] if isinstance(rows, ChunkRows) else [list(rows)])
        self._write(rows)

    def _write_waiting(self) -> None:
        """The rows held until the columns could be fixed, written."""
        waiting, self._waiting = self._waiting, []
        self._fix_columns(waiting)
        for rows in waiting:
            self._write(rows)

    def _write(self, rows: ChunkRows | list[dict]) -> None:
        columns = self.columns or COLUMNS
        if isinstance(rows, ChunkRows) and self._csv is not None and rows.plain:
            table = [guarded_column(v) if _TEXT[name] else v for name, v in rows.table.items()]
            self._csv.writerows(zip(*table, rows.tag_cells()))  # by column, no dict per row
            return
        if isinstance(rows, ChunkRows) and self._csv is not None:
            self.unwritten.update(rows.names_outside(self._written))
            self._csv.writerows(map(guarded_column, rows.cells(columns)))
            return
        rows = list(rows)
        if self.output_format == "jsonl":
            for row in rows:
                self.stream.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
            return
        self.unwritten.update(name for row in rows for name in row if name not in self._written)
        if self._csv is not None:
            self._csv.writerows([[guarded(_cell(name, row.get(name))) for name in columns] for row in rows])
        elif self._sheet is not None:
            for row in rows:
                self._sheet.append([_cell(name, row.get(name)) for name in columns])
        else:
            self._write_parquet(rows, columns)

    def _write_parquet(self, rows: list[dict], columns: tuple[str, ...]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as parquet

        schema = _parquet_schema(columns)
        kept = [name for name in columns if field(name) is None]
        values = [{name: row.get(name) for name in columns} for row in rows]
        for row in values:
            for name in kept:
                row[name] = _as_text(row[name])
        table = pa.Table.from_pylist(values, schema=schema)
        if self._parquet is None:
            self._parquet = parquet.ParquetWriter(self.stream, schema)
        try:
            self._parquet.write_table(table)
        except BaseException:
            self._parquet.close()  # now, not in its finaliser (which would print a traceback)
            raise

    def __enter__(self) -> RowWriter:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        """Closed: the rows finished when all went well, else what was begun let go (the
        output itself is discarded by :func:`open_output`)."""
        if kind is None:
            self.close()
        elif self._sheet is not None:
            self._sheet.discard()

    def close(self) -> None:
        if self._waiting:
            self._write_waiting()
        if self.columns is None and (self._csv or self._sheet) is not None:  # no rows: the header alone
            self._fix_columns([])
        if self._sheet is not None:
            self._sheet.close()
        if self._parquet is not None:
            self._parquet.close()
        elif self.output_format == "parquet":  # no rows: an empty file with the columns
            import pyarrow.parquet as parquet

            schema = _parquet_schema(self.columns or COLUMNS)
            parquet.write_table(schema.empty_table(), self.stream)


def write_table(rows: list[dict], path: str | os.PathLike | None, target: Target, protected: Protected = ()):
    """Rows of one set of keys (the first row's, in order) written to ``path`` (stdout:
    None or ``-``) as ``target`` says (see :func:`format_for`), by :func:`open_output`'s
    rules and the :class:`RowWriter`'s: CSV with a header, JSON lines, an Excel sheet
    ``labels``, or Parquet with every column that is not tagger's as text."""
    columns = tuple(rows[0]) if rows else ()
    with (
        open_output(path, binary=target.binary, compress=target.gzip, protected=protected) as out,
        RowWriter(out, target.format, columns=columns, sheet="labels") as writer,
    ):
        writer.write_rows(rows)


class Sheet:
    """An Excel workbook of one sheet, written a row at a time (openpyxl's write-only mode:
    memory does not grow with the rows). Text is always text, never a formula (a cell
    ``=HYPERLINK(...)`` is shown as written); what a sheet cannot hold (more than
    :data:`ROWS` rows, a cell over :data:`CHARS` characters or holding a control character)
    is an error, never cut."""

    ROWS = 1_048_576  # Excel's limit, the header's row included
    CHARS = 32_767  # in a cell

    def __init__(self, stream: IO, title: str = "tags") -> None:
        from openpyxl import Workbook

        self.stream, self.book = stream, Workbook(write_only=True)
        self.sheet = self.book.create_sheet(title)
        self.rows = 0

    def append(self, cells: Iterable) -> None:
        if self.rows == self.ROWS:
            raise OutputError(
                f"an Excel sheet holds {self.ROWS:,} rows at most", fix="Write .csv or .parquet instead."
            )
        self.rows += 1
        self.sheet.append([self._cell(value, column) for column, value in enumerate(cells, start=1)])

    def _cell(self, value, column: int):
        from openpyxl.cell import WriteOnlyCell
        from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

        if value is None or isinstance(value, (bool, int, float)):
            return value
        text = value if isinstance(value, str) else str(value)
        where = f"row {self.rows} of the sheet, column {column}"
        if len(text) > self.CHARS:
            raise OutputError(
                f"{where} holds {len(text):,} characters, over the {self.CHARS:,} an Excel cell holds",
                fix="Write .csv or .parquet instead (or keep fewer columns).",
            )
        if found := ILLEGAL_CHARACTERS_RE.search(text):
            raise OutputError(
                f"{where} holds a control character ({found.group()!r}) an Excel cell cannot hold",
                fix="Write .csv or .parquet instead.",
            )
        cell = WriteOnlyCell(self.sheet, text)
        cell.data_type = "s"  # (text: never run as a formula)
        return cell

    def close(self) -> None:
        self.book.save(self.stream)

    def discard(self) -> None:
        """The rows begun let go (openpyxl's temporary file closed and removed)."""
        with contextlib.suppress(Exception):
            self.sheet.close()
            self.sheet._writer.cleanup()


def _parquet_schema(columns: tuple[str, ...]):
    """The Parquet types of the output's columns: tagger's own typed; a kept input column is
    text (see :func:`_as_text`), so that it holds one type whatever its rows hold."""
    import pyarrow as pa

    return pa.schema([(name, ours.arrow() if (ours := field(name)) else pa.string()) for name in columns])


def _as_text(value) -> str | None:
    """A kept value as Parquet text: a string as it is, anything else as JSON (numbers,
    lists, objects; bytes as their repr), nothing as nothing."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _cell(name: str, value):
    """A CSV cell: tags as ``area:probability;...``, nested values as JSON."""
    if name == "tags":
        return ";".join(f"{tag['area']}:{tag['confidence']}" for tag in value or [])
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, default=str)  # (bytes in them as their repr)
    return "" if value is None else value


@contextlib.contextmanager
def open_output(
    path: str | os.PathLike | None,
    inputs: Iterable[str | os.PathLike] = (),
    binary: bool = False,
    compress: bool = False,
    protected: Protected = (),
) -> Iterator[IO]:
    """Where output goes: stdout (``None`` or ``-``); a regular file (new, or replaced; a
    symlink's target) written atomically, complete or not at all; or a device, FIFO or other
    special file (``/dev/null``, ``/proc/self/fd/1``) written through as it is. Refused with
    a clear error before anything is read: an empty name, a folder, a missing folder, an
    input file (``inputs``: its abstracts would be replaced by the tags), and anything inside
    a folder of the project (``protected``: each folder with what it holds, see
    :meth:`tagger.project.Project.own_folders`). A write that fails
    (disk full, ...) names ``path``, never the hidden temporary file. With ``compress``, what
    is written is gzip-compressed."""
    if compress:
        with _gzipped(path, inputs, binary, protected) as stream:
            yield stream
        return
    if path is None or str(path) == "-":
        if sys.stdout is None:
            raise OutputError("standard output is closed", fix="Give --output FILE, or redirect stdout.")
        yield sys.stdout.buffer if binary else sys.stdout
        return
    if not str(path).strip():
        raise OutputError("the output file name is empty", fix="Give --output a file name, or - for stdout.")
    target = _checked_target(Path(path), inputs, protected)
    body_error: BaseException | None = None
    try:
        opened: contextlib.AbstractContextManager[Any]
        if target.exists() and not target.is_file():  # a device, FIFO, socket: write through
            opened = (
                open(target, "wb")  # noqa: SIM115 (the with below)
                if binary
                else open(target, "w", encoding="utf-8", newline="")  # noqa: SIM115
            )
        else:
            opened = atomic_write(target, "wb" if binary else "w")
        with opened as stream:
            try:
                yield cast(IO, _NamedStream(stream, str(path)))
            except BaseException as error:
                body_error = error
                raise
    except OSError as error:
        if error is body_error:
            raise
        raise _write_error(error, str(path)) from None


def check_output(
    path: str | os.PathLike | None, inputs: Iterable[str | os.PathLike] = (), protected: Protected = ()
) -> None:
    """Refuse an output :func:`open_output` would refuse, before anything else is checked."""
    if path is not None and str(path).strip() and str(path) != "-":
        _checked_target(Path(path), inputs, protected)


@contextlib.contextmanager
def _gzipped(path, inputs, binary: bool, protected: Protected) -> Iterator[IO]:
    """:func:`open_output`, gzip-compressed (text as UTF-8)."""
    import gzip
    import io

    with (
        open_output(path, inputs, binary=True, protected=protected) as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as zipped,
    ):
        if binary:
            yield cast(IO, zipped)
            return
        text = io.TextIOWrapper(zipped, encoding="utf-8", newline="")
        try:
            yield text
            text.flush()
        finally:
            text.detach()


class _NamedStream:
    """A text stream whose write errors name the output path."""

    def __init__(self, stream: IO, name: str) -> None:
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
        fix=fixes.get(error.errno or 0, "Choose another --output."),
    )


def _checked_target(path: Path, inputs: Iterable[str | os.PathLike], protected: Protected = ()) -> Path:
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
    for given in map(Path, inputs):
        within = given.is_dir() and target.is_relative_to(os.path.realpath(given)) and format_of(target)
        if within and not target.is_file():
            raise OutputError(
                f"is inside an input folder ({given}): the tags would be read as abstracts next time",
                where=shown,
                fix="Choose an --output outside it.",
            )
        if target.is_file() and (within or (given.is_file() and os.path.samefile(given, target))):
            raise OutputError(
                f"is an input ({given}): writing the tags there would replace the abstracts",
                where=shown,
                fix="Choose another --output.",
            )
    if found := inside(target, protected):
        raise OutputError(
            f"is inside this project's {found[0].name}/ ({found[1]}): an output there may replace them",
            where=shown,
            fix=f"Choose another --output, outside {found[0].name}/.",
        )
    return target
