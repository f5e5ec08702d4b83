"""What every reader shares: the record a reader finds (:class:`Record`), the rule that matches
a file's columns or fields to roles (abstract, title, id, area: :func:`field_names`), the checks
of a header or first record, ``--keep``, and the abstract made of a record."""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NamedTuple

from ..errors import InputError
from ..text import abstract_problem, empty
from .abstracts import KEEP_ALL, Abstract, Columns, clean_text, digest_of_clean, normalise_whitespace
from .source import ReadOptions, Source


class Record(NamedTuple):
    """A record a reader found: its fields (role -> value for an abstract: the abstract, and
    the title, id and area where it has them; name -> value in a table the label store
    rewrites; ``None`` for a blank line kept as it is), the line (or Parquet row) it starts
    on, where that is (for messages), its kept columns (``--keep``), and its text as it
    stands in the file, line end included (``raw``: read for a table, whose other records an
    answer leaves byte for byte)."""

    fields: dict | None
    line: int
    where: str = ""
    kept: dict | None = None
    raw: str = ""


def _make(  # noqa: PLR0913 (every part of an abstract)
    text: str,
    source: str,
    position: int,
    line: int,
    *,
    id_: str = "",
    title: str = "",
    area: str = "",
    extra: dict | None = None,
) -> Abstract:
    text = clean_text(text)
    title = normalise_whitespace(title) if title else ""
    return Abstract(id_ or digest_of_clean(text), text, source, position, line, title, area.strip(), extra)


@functools.lru_cache(maxsize=64)
def fields_of_keys(keys: tuple[str, ...], columns: Columns) -> tuple[dict[str, str], str | None]:
    """:func:`field_names` of a JSON object's keys and :func:`ambiguous_names`' problem,
    remembered: the records of a file nearly always have the same keys. The dict returned is
    shared: read it, never change it."""
    return field_names(keys, columns), ambiguous_names(keys, columns)


def field_names(available: Sequence[str], columns: Columns) -> dict[str, str]:
    """Role (abstract, title, id, area) -> the name it has in ``available``, matched without
    regard to case; roles without a match are left out. (A role that several names match is
    refused before: :func:`ambiguous_names`.)"""
    by_lower: dict[str, str] = {}
    for name in available:
        by_lower.setdefault(str(name).strip().lower(), name)
    if {"pt", "ut"} <= by_lower.keys() and "id" not in columns.named:  # Web of Science's field tags,
        by_lower.pop("id", None)  # where ID is Keywords Plus (the record's id is UT)
    found = {}
    for role in columns.roles():
        match = next((n for n in columns.candidates(role) if n.lower() in by_lower), None)
        if match is not None:
            found[role] = by_lower[match.lower()]
    return found


def note_export_names(fields: dict[str, str], options: ReadOptions, name: str) -> None:
    """Note the roles a file's columns were found for under an export's names (a Zotero CSV's
    ``Abstract Note``), not the ones asked for: the user reads where each part came from."""
    roles = options.columns.roles()
    found = [
        f"{ROLE_NAMES.get(role, 'abstracts')} from {column!r}"
        for role, column in fields.items()
        if str(column).strip().lower() != roles[role].lower()
    ]
    if found:
        options.report.notes.append(f"{name}: {', '.join(found)}")


def ambiguous_names(available: Sequence[str], columns: Columns) -> str | None:
    """The problem when more than one of ``available`` names a role's column, without regard
    to case (``Abstract`` and ``abstract``): which one is meant cannot be told, whatever their
    order. The same rule for CSV headers, Parquet columns and JSON fields."""
    return named_twice(available, columns.roles().values())


def named_twice(available: Sequence[str], names: Iterable[str]) -> str | None:
    """The problem when more than one of ``available`` is one of ``names``, without regard
    to case or spaces at either end (see :func:`ambiguous_names`)."""
    for name in names:
        same = [str(n) for n in available if str(n).strip().lower() == name.lower()]
        if len(same) > 1:
            listed = ", ".join(repr(n) for n in same)
            return f"{len(same)} columns named {name!r} ({listed}), not told apart"
    return None


def missing_named(
    available: Sequence[str], columns: Columns, where: str, what: str = "column"
) -> InputError | None:
    """An error for a column the user named (``--title-column``, ``--id-column``,
    ``--label-column``) that ``available`` lacks, with the close matches: an option given is
    never ignored."""
    fields = field_names(available, columns)
    missing = [role for role in sorted(columns.named) if role != "abstract" and role not in fields]
    if not missing:
        return None
    role = missing[0]
    name = columns.roles()[role]
    names = [str(n) for n in available]
    option = "--label-column" if role == "area" else f"--{role}-column"
    hint = _hint(close(name, names, 0.5))
    return InputError(
        f"no {what} {name!r} for the {ROLE_NAMES[role]} ({what}s: {_listed(names)}){hint}",
        where=where,
        fix=f"Name one the file has with {option}, or leave the option out.",
    )


ROLE_NAMES = {"title": "titles", "id": "ids", "area": "areas"}


def no_abstract(available: Sequence[str], columns: Columns, what: str) -> str:
    """'no 'abstract' column (columns: ...); did you mean ...?'"""
    names = [str(name) for name in available]
    known = close(columns.abstract, names, 0.5) or [
        name for name in names if name.strip().lower() in ("summary", "text", "abstract_text", "body")
    ]
    return f"no {columns.abstract!r} {what} ({what}s: {_listed(names)}){_hint(known)}"


def close(name: str, names: Sequence[str], cutoff: float) -> list[str]:
    """The names (of columns, fields) that ``name`` may be a typo of, whatever their case."""
    found = difflib.get_close_matches(name.lower(), [n.lower() for n in names], n=3, cutoff=cutoff)
    return [n for n in names if n.lower() in found]


def _hint(names: Sequence[str]) -> str:
    return f"; did you mean {' or '.join(repr(n) for n in names)}?" if names else ""


def _listed(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names[:20]) + (", ..." if len(names) > 20 else "")


COLUMN_FIX = "Name the {what} that holds the abstracts with --column (and --title-column, --id-column)."


def missing_kept(
    available: Sequence[str],
    keep: tuple[str, ...],
    where: str,
    what: str = "column",
    typos_only: bool = False,
) -> InputError | None:
    """An error for a ``--keep`` column that a file with a header does not have (with the
    close matches), rather than a column of nothing in every row. ``typos_only``: only
    when a close match is there (a JSON record may lack a field others have)."""
    if not keep or keep == KEEP_ALL:
        return None
    names = [str(name) for name in available]
    lower = {name.strip().lower() for name in names}
    missing = [name for name in keep if name.lower() not in lower]
    if not missing:
        return None
    typos = close(missing[0], names, 0.6)
    if typos_only and not typos:
        return None
    return InputError(
        f"no {what} {missing[0]!r} to keep ({what}s: {_listed(names)}){_hint(typos)}",
        where=where,
        fix=f"Name in --keep {what}s the file has (or --keep all).",
    )


def header_problem(
    names: Sequence[str], columns: Columns, where: str, what: str = "column", optional_abstract: bool = False
) -> InputError | None:
    """What stops a whole file from being read, judged on its header (CSV, Parquet, Excel) or
    first record (BibTeX, RIS): two names for one role, no abstract column, a column the user
    named that is missing, a ``--keep`` name that is not there. In reference files
    (``optional_abstract``) a record may lack the abstract field, and a kept name only a typo
    is refused: one record does not show every field."""
    if twice := ambiguous_names(names, columns):
        return InputError(twice, where=where, fix="Rename all but one.")
    if "abstract" not in field_names(names, columns) and not (
        optional_abstract and columns.abstract == "abstract"
    ):
        return InputError(no_abstract(names, columns, what), where=where, fix=COLUMN_FIX.format(what=what))
    return missing_named(names, columns, where, what) or missing_kept(
        names, columns.keep, where, what, typos_only=optional_abstract
    )


def record_problem(record: dict, where: str) -> InputError | None:
    """The problem with a record's abstract (role -> value), if it has one (see
    :func:`abstract_problem`)."""
    return abstract_problem(record["abstract"], where)


def kept_fields(fields: Iterable[tuple[str, object]], keep: tuple[str, ...]) -> dict | None:
    """The kept columns of a record's (name, value) pairs (as named in ``keep``, matched
    without regard to case; every one for :data:`KEEP_ALL`), or None when nothing is kept."""
    if not keep:
        return None
    if keep == KEEP_ALL:
        return dict(fields)
    by_lower = {str(name).lower(): value for name, value in reversed(list(fields))}
    return {name: by_lower.get(name.lower()) for name in keep}


def keeper_of(header: list[str], keep: tuple[str, ...]):
    """A function from a CSV row (cells in ``header``'s order) to its kept columns (see
    :func:`kept_fields`), with the columns looked up once for the file, not in every row."""
    if not keep:
        return lambda row: None
    if keep == KEEP_ALL:
        return lambda row: dict(zip(header, row))
    at: dict[str, int] = {}
    for i, name in enumerate(header):
        at.setdefault(name.lower(), i)
    where = [(name, at.get(name.lower())) for name in keep]
    return lambda row: {name: None if i is None else row[i] for name, i in where}


def abstract_from_record(record: dict, source: str, position: int, line: int, kept: dict | None) -> Abstract:
    """An abstract from a record's roles (role -> value; an id may be any JSON scalar) and
    its kept columns."""
    identifier, title, area = record.get("id"), record.get("title"), record.get("area")
    return _make(
        record["abstract"],
        source,
        position,
        line,
        id_="" if identifier is None else str(identifier).strip(),
        title=title if isinstance(title, str) else "",
        area=area if isinstance(area, str) else "",
        extra=kept,
    )


def first_reference(fields: dict, source: Source, where: str, what: str) -> InputError | None:
    """A reference file's first record stands for its header: what stops the whole file
    (:func:`~tagger.reading.records.header_problem`), or else a note of the export names its
    parts were found by."""
    columns = source.options.columns
    problem = header_problem(list(fields), columns, where, what, optional_abstract=True)
    if problem is None:
        note_export_names(field_names(list(fields), columns), source.options, source.name)
    return problem


def reference_record(
    fields: dict, line: int, where: str, columns, found: dict[str, str] | None = None
) -> Record:
    """A record of a reference or a spreadsheet row: its roles found by their names (``found``
    where a header gave them once), values as text (an id of 12 in a spreadsheet is ``12``); a
    record without an abstract has an empty one (left out and counted by the driver)."""
    found = found if found is not None else field_names(list(fields), columns)
    record = {role: as_text(fields[name]) for role, name in found.items()}
    record.setdefault("abstract", "")
    return Record(record, line, where, kept_fields(fields.items(), columns.keep))


def as_text(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def first_line(error: object) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1].rstrip(".") if lines else "unreadable"


class _Count:
    """Records of a file seen so far (its positions) and abstracts found."""

    __slots__ = ("found", "position")

    def __init__(self) -> None:
        self.position = self.found = 0


def _abstracts_of(
    name: str, records: Iterable[Record | InputError], options: ReadOptions, count: _Count
) -> Iterator[Abstract]:
    """The one place where a reader's records become abstracts: a bad record goes to
    ``--skip-bad`` (or stops the read), the abstract's limits are applied, positions are
    counted (a record skipped keeps its number: positions are the input's, for joining back)."""
    report = options.report
    for record in records:
        count.position += 1
        if isinstance(record, InputError):
            options.bad(record)
            continue
        fields = record.fields or {}  # (None: a blank line of a table, which no reader of abstracts gives)
        if _without_abstract(fields):
            identifier = fields.get("id")
            named = f" ({identifier})" if identifier not in (None, "") else ""
            report.without_abstract.append(f"{record.where}{named}")
            continue
        if problem := record_problem(fields, record.where):
            options.bad(problem)
            continue
        count.found += 1
        report.read += 1
        yield abstract_from_record(fields, name, count.position, record.line, record.kept)


def abstracts_of_records(
    name: str, records: Iterable[Record | InputError], options: ReadOptions, empty: Callable[[], bool]
) -> Iterator[Abstract]:
    """The abstracts of a file's records, and its report kept: what was read, and a note when
    the file held none."""
    ending = _FileEnding(name, options)
    yield from _abstracts_of(name, records, options, ending.count)
    ending.note_if_empty(empty())


class _FileEnding:
    """What is said once a file is read: a note when it held no abstracts."""

    def __init__(self, name: str, options: ReadOptions) -> None:
        self.name, self.report = name, options.report
        self.report.files += 1
        self.headings = len(self.report.headings)
        self.skipped = len(self.report.skipped) + len(self.report.without_abstract)
        self.count = _Count()

    def note_if_empty(self, empty: bool) -> None:
        report = self.report
        if self.count.found or len(report.skipped) + len(report.without_abstract) != self.skipped:
            return
        if len(report.headings) > self.headings:
            report.notes.append(f"{self.name}: only a heading, no abstracts")
        elif empty:
            report.notes.append(f"{self.name}: empty file")
        else:
            report.notes.append(f"{self.name}: no abstracts")


def _without_abstract(fields: dict) -> bool:
    """Whether a record (its fields) has nothing in its abstract: it is left out and counted
    (a reference export always has some such records), not a bad record that stops the run."""
    text = fields.get("abstract")
    return text is None or (isinstance(text, str) and (empty(text) or text in NO_ABSTRACT))


NO_ABSTRACT = {"[No abstract available]"}  # what Scopus writes in a record's empty abstract
