"""The files reference managers and bibliographic databases export: BibTeX (``.bib``: Zotero,
Mendeley, JabRef), RIS (``.ris``: EndNote, Zotero, Scopus, Web of Science) and Excel workbooks
(``.xlsx``). Each parsed by a well-kept library (bibtexparser, rispy, openpyxl through pandas),
each record's fields then matched to the abstract, title and id by the one rule of every format
(:func:`tagger.reading.records.field_names`: a BibTeX entry's key is its id, RIS's ``N2`` an
abstract where ``AB`` is missing). A record that cannot be parsed is a bad record at its line.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import InputError
from .files import display_name
from .records import Record, _kept, _note_export_names, field_names, header_problem
from .source import _Options, _Source

# -- BibTeX ---------------------------------------------------------------------------------------


def _read_bib(source: _Source) -> Iterator[Record | InputError]:
    """A BibTeX file's entries in file order (``@string``, ``@preamble`` and comments are not
    records); LaTeX in a field (``M{\\"u}ller``, ``\\&``) is decoded to text."""
    import bibtexparser
    from bibtexparser.middlewares import LatexDecodingMiddleware

    text = "".join(source.lines())
    middleware = [LatexDecodingMiddleware()]
    with _quiet("bibtexparser"):  # it logs each failed block; each is a bad record here instead
        library = bibtexparser.parse_string(text, append_middleware=middleware)
    columns = source.options.columns
    first = True
    block: Any
    for block in library.blocks:
        line = (block.start_line or 0) + 1
        where = f"{source.name}:{line}"
        last = line + (block.raw or "").count("\n")
        kind = type(block).__name__
        if kind == "DuplicateBlockKeyBlock":  # a real entry whose key came before: read it too
            with _quiet("bibtexparser"):
                again = bibtexparser.parse_string(block.raw, append_middleware=middleware).entries
            block = again[0] if again else block
            kind = type(block).__name__
        if kind == "ParsingFailedBlock":
            yield source.check_text(line, last, where) or InputError(
                f"not a readable BibTeX entry ({_first_line(block.error)})",
                where=where,
                fix="Fix the entry (a brace or quote not closed?), or leave it out with --skip-bad.",
            )
            continue
        if kind != "Entry":
            continue
        fields = {name: field.value for name, field in block.fields_dict.items()}
        if not any(name.lower() == "id" for name in fields):
            fields["ID"] = block.key
        if first and (problem := _first_reference(fields, source, where, "field")):
            yield problem
            return
        first = False
        yield source.check_text(line, last, where) or _record(fields, line, where, columns)


@contextlib.contextmanager
def _quiet(name: str) -> Iterator[None]:
    """A library's log messages held back while it runs (its problems are reported here)."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _first_line(error: object) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1].rstrip(".") if lines else "unreadable"


# -- RIS ------------------------------------------------------------------------------------------

_RIS_TAG = re.compile(r"^([A-Z][A-Z0-9])  -(?: |$)")


def _read_ris(source: _Source) -> Iterator[Record | InputError]:
    """A RIS file's records (``TY`` to ``ER``), each parsed by rispy; a record that does not
    end before the next starts (or the file ends) is a bad record at its ``TY`` line, and text
    outside records is noted, not dropped silently."""
    import rispy

    columns = source.options.columns
    record: list[str] = []
    start = 0
    outside: list[int] = []
    first = True
    for number, line in enumerate(source.lines(), start=1):
        tag = _RIS_TAG.match(line.lstrip("\ufeff"))
        if tag and tag.group(1) == "TY":
            if record:
                yield _unended(source.name, start)
            record, start = [line.lstrip("\ufeff")], number
        elif not record:
            if line.strip():
                outside.append(number)
        elif tag and tag.group(1) == "ER":
            where = f"{source.name}:{start}"
            problem = source.check_text(start, number, where)
            parsed = [] if problem else rispy.loads("".join([*record, "ER  - \n"]))
            record = []
            if problem or not parsed:
                yield problem or InputError("not a readable RIS record", where=where, fix="Fix it.")
                continue
            fields = {name: _ris_value(value) for name, value in parsed[0].items()}
            if first and (problem := _first_reference(fields, source, where, "tag")):
                yield problem
                return
            first = False
            yield _record(fields, start, where, columns)
        else:
            record.append(line)
    if record:
        yield _unended(source.name, start)
    if outside:
        source.report.notes.append(
            f"{source.name}: {len(outside)} line(s) outside any record (TY to ER) left out, "
            f"the first at line {outside[0]}"
        )


def _ris_value(value: object) -> object:
    """A RIS field's value: a tag given several times (rispy's list) as its lines joined."""
    return "\n".join(str(v) for v in value) if isinstance(value, list) else value


def _unended(name: str, line: int) -> InputError:
    return InputError(
        "a RIS record without its end (no 'ER  -' line before the next record or the file's end)",
        where=f"{name}:{line}",
        fix="Add the ER line, or leave the record out with --skip-bad.",
    )


# -- Excel ----------------------------------------------------------------------------------------


def _read_xlsx(path: Path, options: _Options, rows: list[int]) -> Iterator[Record | InputError]:
    """The first sheet of an Excel workbook, its first row the header (as in a CSV file); a
    workbook of several sheets is noted. ``where`` is the sheet's row number, as Excel shows it."""
    name = display_name(path)
    try:
        import pandas as pd

        workbook = pd.ExcelFile(path, engine="openpyxl")
        sheet = workbook.sheet_names[0]
        table = pd.read_excel(workbook, sheet, dtype=object, keep_default_na=False, na_filter=False)
    except ImportError as error:
        yield InputError(f"reading .xlsx needs openpyxl ({error})", where=name, fix="pip install openpyxl")
        return
    except Exception as error:  # openpyxl raises many kinds for a damaged workbook
        yield InputError(
            f"not a readable Excel workbook ({_first_line(error)})",
            where=name,
            fix="Save it again from Excel as .xlsx, or as CSV.",
        )
        return
    if len(workbook.sheet_names) > 1:
        others = ", ".join(repr(s) for s in workbook.sheet_names[1:])
        options.report.notes.append(f"{name}: read its first sheet {sheet!r} only (not {others})")
    header = [str(column) for column in table.columns]
    columns = options.columns
    if problem := header_problem(header, columns, f"{name}:1"):
        yield problem
        return
    found = field_names(header, columns)  # once for the sheet, not in every row
    _note_export_names(found, options, name)
    for number, values in enumerate(table.itertuples(index=False, name=None), start=2):
        rows[0] += 1
        cells = {column: "" if value is None else value for column, value in zip(header, values)}
        if not any(str(cell).strip() for cell in cells.values()):
            continue  # a blank row
        yield _record(cells, number, f"{name}:{number}", columns, found)


# -- shared ---------------------------------------------------------------------------------------


def _first_reference(fields: dict, source: _Source, where: str, what: str) -> InputError | None:
    """A reference file's first record stands for its header: what stops the whole file
    (:func:`~tagger.reading.records.header_problem`), or else a note of the export names its
    parts were found by."""
    columns = source.options.columns
    problem = header_problem(list(fields), columns, where, what, optional_abstract=True)
    if problem is None:
        _note_export_names(field_names(list(fields), columns), source.options, source.name)
    return problem


def _record(fields: dict, line: int, where: str, columns, found: dict[str, str] | None = None) -> Record:
    """A record of a reference or a spreadsheet row: its roles found by their names (``found``
    where a header gave them once), values as text (an id of 12 in a spreadsheet is ``12``); a
    record without an abstract has an empty one (left out and counted by the driver)."""
    found = found if found is not None else field_names(list(fields), columns)
    record = {role: _text(fields[name]) for role, name in found.items()}
    record.setdefault("abstract", "")
    return Record(record, line, where, _kept(fields.items(), columns.keep))


def _text(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
