"""CSV and TSV files: the one CSV parse (:func:`csv_rows`, also the label store's) and the
records of a file whose header names the abstract column."""

from __future__ import annotations

import csv
import itertools
from collections.abc import Collection, Iterator
from typing import NamedTuple

from ...errors import InputError
from ...formulas import unguarded
from ..abstracts import Columns
from ..records import Record, field_names, header_problem, keeper_of, note_export_names
from ..source import Source

DELIMITERS = (",", ";", "\t", "|")  # a CSV file's delimiter is the one its header splits on


def header_delimiter(line: str, columns: Columns, require: bool = False) -> str | None:
    """The delimiter a CSV header line splits on: the one that yields the abstract column (by
    its name or an export's, :func:`field_names`), else (unless ``require``) the one that
    yields the most columns."""
    best, most = None, 1
    for delimiter in DELIMITERS:
        try:
            cells = next(csv.reader([line.rstrip("\r\n")], delimiter=delimiter))
        except (csv.Error, StopIteration):
            continue
        if "abstract" in field_names(cells, columns):
            return delimiter
        if len(cells) > most:
            best, most = delimiter, len(cells)
    return None if require else best


HEADER_CELL_CHARS = 40  # a header's cells are names, not sentences


def looks_like_header(line: str, next_line: str) -> bool:
    """Whether ``line`` is a CSV header whatever its names: split by a delimiter into two or
    more short cells, none empty and none a sentence, with a next line (if any) of as many
    cells. (``Key,Title,Abstract Note`` is one; a sentence with commas is not.)"""
    for delimiter in DELIMITERS:
        try:
            cells = next(csv.reader([line.rstrip("\r")], delimiter=delimiter))
            following = next(csv.reader([next_line.rstrip("\r")], delimiter=delimiter)) if next_line else None
        except (csv.Error, StopIteration):
            continue
        names = [cell.strip() for cell in cells]
        if (
            len(names) >= 2
            and all(0 < len(n) <= HEADER_CELL_CHARS and len(n.split()) <= 4 for n in names)
            and not any(n.endswith((".", "!", "?")) for n in names)
            and (following is None or len(following) >= len(names))
        ):
            return True
    return False


def read_tsv_records(source: Source) -> Iterator[Record | InputError]:
    return read_csv_records(source, delimiter="\t")


class CsvRow(NamedTuple):
    """A row of a CSV file as it stands there: the line it starts on, its text (line ends
    included: a quoted cell may span lines) and its cells (``None`` for a blank line)."""

    line: int
    raw: str
    cells: list[str] | None


def csv_rows(
    source: Source, delimiter: str | None = None, optional: Collection[str] = ()
) -> Iterator[CsvRow | InputError]:
    """The rows of a CSV text, its header first (the delimiter, unless given, the one the
    header splits on), each checked by the one set of rules for every CSV file tagger reads,
    abstracts or labels: a row of bytes that are not text, a malformed row and a row of
    another number of cells than the header are problems (where: file:line), except a row
    short of trailing ``optional`` columns only (a label added by hand without the columns
    the label store adds). Nothing comes after a header that cannot be read."""
    lines = source.lines()
    first = next(lines, None)
    if first is None:
        return
    delimiter = delimiter or header_delimiter(first, source.options.columns) or ","
    consumed: list[str] = []

    def feed() -> Iterator[str]:
        for line in itertools.chain([first], lines):
            consumed.append(line)
            yield line

    reader = csv.reader(feed(), delimiter=delimiter, strict=True)
    header: list[str] | None = None
    while True:
        start = reader.line_num + 1
        where = f"{source.name}:{start}"
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            consumed.clear()
            if header is None:
                yield InputError(f"unreadable CSV header ({error})", where=where)
                return
            problem_text = (
                "a quoted field runs to the end of the file" if "end of data" in str(error) else str(error)
            )
            yield InputError(f"malformed CSV row ({problem_text})", where=where, fix="Fix its quoting.")
            continue
        raw = "".join(consumed)
        consumed.clear()
        problem = source.check_text(start, reader.line_num, where)
        if header is None:
            if problem:
                yield problem
                return
            header = row
            yield CsvRow(start, raw, row)
            continue
        if not any(cell.strip() for cell in row):
            yield CsvRow(start, raw, None)  # a blank line
            continue
        if len(row) == len(header) + 1 and not row[-1]:
            row.pop()  # a delimiter ending the row (Web of Science's tab-delimited export)
        missing = {cell.strip().lower() for cell in header[len(row) :]}  # (a short row's columns)
        short_of_optional = len(row) < len(header) and missing <= {name.lower() for name in optional}
        if problem is None and len(row) != len(header) and not short_of_optional:
            problem = InputError(
                f"row has {len(row)} cells, the header has {len(header)}",
                where=where,
                fix="Quote cells that contain the delimiter or line breaks.",
            )
        yield problem or CsvRow(start, raw, row)


def read_csv_records(source: Source, delimiter: str | None = None) -> Iterator[Record | InputError]:
    """CSV with a header naming the abstract column; the delimiter (unless given) is the one
    the header splits on."""
    columns = source.options.columns
    rows = csv_rows(source, delimiter)
    first = next(rows, None)
    if first is None or isinstance(first, InputError):
        if first is not None:
            yield first
        return
    header = _unguarded(first.cells or [])
    where = f"{source.name}:1"
    index_of = {name: i for i, name in reversed(list(enumerate(header)))}
    fields = field_names(header, columns)
    if problem := header_problem(header, columns, where):  # the whole file is left out
        yield problem
        return
    note_export_names(fields, source.options, source.name)
    index = {role: index_of[name] for role, name in fields.items()}
    keeper = keeper_of(header, columns.keep)
    guards = 0
    for row in rows:
        if isinstance(row, InputError):
            yield row
        elif row.cells is not None:
            where = f"{source.name}:{row.line}"
            cells = row.cells
            if any(cell[:1] == "'" for cell in cells):  # (rare: a quick look first)
                cells = _unguarded(cells)
                guards += sum(map(str.__ne__, cells, row.cells))
            yield Record({role: cells[i] for role, i in index.items()}, row.line, where, keeper(cells))
    if guards:
        source.report.notes.append(
            f"{source.name}: {guards} cell(s) began with ' before = + - @ (a guard against spreadsheet "
            "formulas, as tagger writes CSV): read without that '"
        )


def _unguarded(cells: list[str]) -> list[str]:
    return [unguarded(cell) for cell in cells]
