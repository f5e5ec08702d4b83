"""Excel workbooks (``.xlsx``), a row at a time through openpyxl."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

from ...errors import InputError
from ..files import display_name
from ..records import (
    Record,
    as_text,
    field_names,
    first_line,
    header_problem,
    note_export_names,
    reference_record,
)
from ..source import ReadOptions


def read_xlsx_records(path: Path, options: ReadOptions, rows: list[int]) -> Iterator[Record | InputError]:
    """One sheet of an Excel workbook (the one ``--sheet`` names, else the first), a row at a
    time (openpyxl's read-only mode: a workbook of any size in little memory), its first row
    the header (as in a CSV file); the other sheets of a workbook are noted, and named in an
    error about the header. ``where`` is the sheet's row number, as Excel shows it."""
    name = display_name(path)
    try:
        from openpyxl import load_workbook
    except ImportError as error:
        yield InputError(f"reading .xlsx needs openpyxl ({error})", where=name, fix="pip install openpyxl")
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # openpyxl's own (styles, validation): nothing of the cells
            workbook = load_workbook(path, read_only=True, data_only=True)
    except Exception as error:  # openpyxl raises many kinds for a damaged workbook
        yield _unreadable_workbook(error, name)
        return
    try:
        yield from _sheet_records(workbook, name, options, rows)
    except Exception as error:  # (damaged further in)
        yield _unreadable_workbook(error, name)
    finally:
        workbook.close()


def _sheet_records(
    workbook, name: str, options: ReadOptions, rows: list[int]
) -> Iterator[Record | InputError]:
    sheets, wanted = workbook.sheetnames, options.columns.sheet
    listed = ", ".join(map(repr, sheets))
    if wanted is not None and wanted not in sheets:
        yield InputError(
            f"no sheet {wanted!r} (its sheets: {listed})", where=name, fix="Name one of them with --sheet."
        )
        return
    sheet = sheets[0] if wanted is None else wanted
    if len(sheets) > 1:
        others = ", ".join(repr(s) for s in sheets if s != sheet)
        options.report.notes.append(
            f"{name}: read its sheet {sheet!r} only (not {others}; --sheet names another)"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cells = workbook[sheet].iter_rows(values_only=True)
        first = next(cells, ())
    header = ["" if cell is None else as_text(cell) for cell in first]
    while header and not header[-1]:
        header.pop()  # (empty cells at the header's end)
    columns = options.columns
    if problem := header_problem(header, columns, f"{name}:1"):
        if len(sheets) > 1:  # (the data may be on another sheet)
            problem = InputError(
                f"{problem.what}, on its sheet {sheet!r} (its sheets: {listed})",
                where=problem.where,
                fix=f"{problem.fix} Or name the sheet to read with --sheet.",
            )
        yield problem
        return
    found = field_names(header, columns)  # once for the sheet, not in every row
    note_export_names(found, options, name)
    for number, values in enumerate(cells, start=2):
        rows[0] += 1
        where = f"{name}:{number}"
        if any(value not in (None, "") for value in values[len(header) :]):
            yield InputError(
                f"row has cells beyond the header's {len(header)} columns",
                where=where,
                fix="Give those columns a name in the first row, or leave the row out with --skip-bad.",
            )
            continue
        row = dict.fromkeys(header, "") | {c: v for c, v in zip(header, values) if v is not None}
        if not any(str(cell).strip() for cell in row.values()):
            continue  # a blank row
        yield reference_record(row, number, where, columns, found)


def _unreadable_workbook(error: Exception, name: str) -> InputError:
    if isinstance(error, MemoryError):
        return InputError(
            "out of memory reading the workbook",
            where=name,
            fix="Save it from Excel as CSV, which is read a row at a time.",
        )
    return InputError(
        f"not a readable Excel workbook ({first_line(error)})",
        where=name,
        fix="Save it again from Excel as .xlsx, or as CSV.",
    )
