"""A file of records read whole, each record with its text as it stands in the file: what the
label store rewrites an answer into, keeping every other record byte for byte. Read by the same
readers, under the same rules, as abstracts are (:func:`tagger.reading.readers.csv.csv_rows`, the
JSON-lines reader): a record one command refuses is refused by every command.
"""

from __future__ import annotations

import codecs
import io
import os
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError, LabelError
from .abstracts import Columns
from .readers.csv import csv_rows, header_delimiter
from .readers.json import BLANK, jsonl_values, shape_fix, surrogate_problem
from .records import Record
from .source import ENCODING_FIX, ReadOptions, ReadReport, Source


@dataclass
class Table:
    """A CSV, TSV or JSON-lines file as its records, with what writing it back in its own
    dialect needs: its byte-order mark, header line and names, delimiter and line end."""

    path: Path
    kind: str
    records: list[Record] = field(default_factory=list)
    header: list[str] = field(default_factory=list)
    head: str = ""  # the header's text (CSV and TSV)
    bom: str = ""
    delimiter: str = ","
    newline: str = "\n"


def read_table(path: str | os.PathLike, kind: str, columns: Columns, optional: Collection[str] = ()) -> Table:
    """The records of ``path`` (UTF-8; a missing file has none). A record that cannot be
    read (malformed CSV, a row of another length than the header, unless it lacks trailing
    ``optional`` columns only, a line that is not a JSON object, text that is not UTF-8, a
    lone surrogate) is a :class:`LabelError` naming its line: a label file is read whole or
    not at all."""
    path = Path(path)
    table = Table(path, kind, delimiter="\t" if kind == "tsv" else ",")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return table
    except IsADirectoryError:
        raise LabelError("a folder, not a file", where=str(path), fix="Name a file.") from None
    if data.startswith(codecs.BOM_UTF8):
        table.bom = "\ufeff"
    options = ReadOptions(kind, "utf-8", False, columns, ReadReport())
    source = Source(str(path), io.BufferedReader(io.BytesIO(data)), options)
    try:
        if kind == "jsonl":
            _jsonl_records(table, source)
        else:
            first_line = data.split(b"\n", 1)[0].decode("utf-8", errors="replace").lstrip("\ufeff")
            _csv_records(table, source, first_line, optional)
    except InputError as error:  # (raised by the readers' one set of rules)
        fix = "Save it as UTF-8." if error.fix == ENCODING_FIX else error.fix  # (no --encoding here)
        raise LabelError(error.what, where=error.where, fix=fix) from None
    ended = next((r.raw for r in table.records if r.raw.endswith("\n")), table.head)
    table.newline = "\r\n" if ended.endswith("\r\n") else "\n"
    return table


def _csv_records(table: Table, source: Source, first_line: str, optional: Collection[str] = ()) -> None:
    if table.kind == "csv":
        table.delimiter = header_delimiter(first_line, source.options.columns) or ","
    for row in csv_rows(source, table.delimiter, optional):
        if isinstance(row, InputError):
            raise row
        if not table.head:
            table.head, table.header = row.raw, [cell.strip() for cell in row.cells or []]
            continue
        fields = None if row.cells is None else dict(zip(table.header, row.cells))
        table.records.append(Record(fields, row.line, raw=row.raw))


def _jsonl_records(table: Table, source: Source) -> None:
    for item in jsonl_values(source, blank_lines=True):
        if isinstance(item, InputError):
            raise item
        value, line, number, where = item
        if value is BLANK:
            table.records.append(Record(None, number, raw=line))
            continue
        if not isinstance(value, dict):
            raise InputError(
                f"a JSON {type(value).__name__}, not an object",
                where=where,
                fix=shape_fix(source.options.columns),
            )
        if problem := surrogate_problem(line, value, where):
            raise problem
        table.records.append(Record(value, number, raw=line))
