"""The readers of each format: a source's text (or a Parquet file's batches) as records to
make abstracts of, or problems (bad records) for the driver to apply ``--skip-bad`` to."""

from __future__ import annotations

import csv
import difflib
import functools
import itertools
import json
import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from .._version import install_hint
from ..errors import InputError
from ..text import MAX_ABSTRACT_CHARS, abstract_problem, join_broken_words, too_long
from .abstracts import KEEP_ALL, Abstract, Columns, clean_text, digest_of_clean, normalise_whitespace
from .files import display_name
from .source import MAX_LINE_BYTES, ReadOptions, Source


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


DELIMITERS = (",", ";", "\t", "|")  # a CSV file's delimiter is the one its header splits on


HEADING_MAX_WORDS = 12


def _make(
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


def _paragraphs(lines: Iterable[str]) -> Iterator[tuple[int, int, list[str], int]]:
    """(first line, last line, lines, characters) of each blank-line-separated paragraph; the
    lines of one longer than :data:`MAX_ABSTRACT_CHARS` are not kept (it is too long anyway)."""
    paragraph: list[str] = []
    start = size = number = 0
    for number, line in enumerate(lines, start=1):
        if line.strip():
            if not size:
                start = number
            size += len(line)
            if size <= MAX_ABSTRACT_CHARS:
                paragraph.append(line)
            else:
                paragraph.clear()
        elif size:
            yield start, number - 1, paragraph, size
            paragraph, size = [], 0
    if size:
        yield start, number, paragraph, size


def _is_heading(lines: list[str]) -> bool:
    text = lines[0].strip()
    return len(lines) == 1 and len(text.split()) <= HEADING_MAX_WORDS and text[-1] not in ".!?"


def read_txt_records(source: Source) -> Iterator[Record | InputError]:
    report = source.report
    for index, (first, last, lines, size) in enumerate(_paragraphs(source.lines())):
        where = f"{source.name}:{first}"
        error = source.check_text(first, last, where) or too_long(size, where)
        if error:
            yield error
            continue
        # A short title-like first paragraph is a heading; on stdin a single short line is
        # a (short) abstract typed or piped in on its own.
        if index == 0 and _is_heading(lines) and not source.is_stdin:
            report.headings.append(where)
            continue
        if why := _one_record_a_line(lines):
            report.notes.append(f"{where}: read one abstract per line ({len(lines)} lines: {why})")
            for offset, line in enumerate(lines):
                if line.strip():
                    yield Record({"abstract": line}, first + offset, f"{source.name}:{first + offset}")
            continue
        text = "".join(lines)
        if not join_broken_words(text).strip():
            continue  # only soft hyphens: blank
        yield Record({"abstract": text}, first, where)


def _one_record_a_line(lines: list[str]) -> str | None:
    """Why the lines of a paragraph (no blank line between them) are one record a line, or
    ``None`` when they are one wrapped text (the default). Wrapped text has lines that end
    near one width and sentences that go on across them; records a line end their sentence
    (or are titles) where the line ends, start with a capital, and differ in length."""
    rows = [line.strip() for line in lines]
    if len(rows) < 2:
        return None
    if all(len(row) >= ONE_PER_LINE_CHARS for row in rows):
        return f"each of {ONE_PER_LINE_CHARS} characters or more"
    if len(rows) < 3:  # two short lines: too little to tell; one text, as a blank line would say
        return None
    pairs = list(itertools.pairwise(rows))
    going_on = sum(_sentence_goes_on(line, after) for line, after in pairs)
    if going_on > len(pairs) // 10:
        return None
    if not all(row[:1].isupper() or row[:1].isdigit() or row[:1] in "\"'([" for row in rows):
        return None
    lengths = sorted(len(row) for row in rows[:-1])
    if len(rows) >= 3 and lengths[-1] - lengths[0] <= max(8, lengths[-1] // 10):
        return None  # every line ends near one width: wrapped, whatever its punctuation
    if not any(row.endswith((".", "!", "?")) for row in rows):
        return "each starting with a capital, none ending a sentence or going on to the next (titles?)"
    if not all(row.endswith((".", "!", "?", '"', "'", ")")) for row in rows):
        return None
    several = sum(bool(_SENTENCE_INSIDE.search(row)) for row in rows)
    if several * 2 >= len(rows):
        return "most of several sentences, each line ending where its last sentence ends"
    if len(rows) > SENTENCES_A_LINE_MAX:  # one sentence a line is how some write an abstract, not so many
        return f"more than {SENTENCES_A_LINE_MAX} lines of one sentence each"
    return None


_SENTENCE_INSIDE = re.compile(r"[a-z0-9)][.!?] +[A-Z]")  # a sentence ends and another starts
SENTENCES_A_LINE_MAX = 20  # an abstract written one sentence a line has fewer lines than this


def _sentence_goes_on(line: str, after: str) -> bool:
    """Whether a sentence runs from ``line`` on to the line ``after`` it."""
    if line.endswith(("-", ",", ";", ":", "(")):
        return True
    return not line.endswith((".", "!", "?", '"', "'", ")")) and after[:1].islower()


# A paragraph of a .txt file whose lines are all at least this long (an abstract is a
# thousand characters; a line of wrapped text under a hundred) holds one abstract per line.
ONE_PER_LINE_CHARS = 200


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


@functools.lru_cache(maxsize=64)
def _fields_of_keys(keys: tuple[str, ...], columns: Columns) -> tuple[dict[str, str], str | None]:
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
    for name in columns.roles().values():
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
    close = difflib.get_close_matches(name.lower(), [n.lower() for n in names], n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(repr(n) for n in names if n.lower() in close)}?" if close else ""
    listed = ", ".join(repr(n) for n in names[:20]) + (", ..." if len(names) > 20 else "")
    option = "--label-column" if role == "area" else f"--{role}-column"
    return InputError(
        f"no {what} {name!r} for the {ROLE_NAMES[role]} ({what}s: {listed}){hint}",
        where=where,
        fix=f"Name one the file has with {option}, or leave the option out.",
    )


ROLE_NAMES = {"title": "titles", "id": "ids", "area": "areas"}


def _no_abstract(available: Sequence[str], columns: Columns, what: str) -> str:
    """'no 'abstract' column (columns: ...); did you mean ...?'"""
    names = [str(name) for name in available]
    close = difflib.get_close_matches(columns.abstract.lower(), [n.lower() for n in names], n=3, cutoff=0.5)
    known = [name for name in names if name.lower() in close] or [
        name for name in names if name.strip().lower() in ("summary", "text", "abstract_text", "body")
    ]
    hint = f"; did you mean {' or '.join(repr(name) for name in known)}?" if known else ""
    listed = ", ".join(repr(name) for name in names[:20]) + (", ..." if len(names) > 20 else "")
    return f"no {columns.abstract!r} {what} ({what}s: {listed}){hint}"


COLUMN_FIX = "Name the {what} that holds the abstracts with --column (and --title-column, --id-column)."


def _missing_kept(
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
    close = difflib.get_close_matches(missing[0].lower(), [n.lower() for n in names], n=3, cutoff=0.6)
    if typos_only and not close:
        return None
    hint = f"; did you mean {' or '.join(repr(n) for n in names if n.lower() in close)}?" if close else ""
    listed = ", ".join(repr(name) for name in names[:20]) + (", ..." if len(names) > 20 else "")
    return InputError(
        f"no {what} {missing[0]!r} to keep ({what}s: {listed}){hint}",
        where=where,
        fix=f"Name in --keep {what}s the file has (or --keep all).",
    )


class KeptInJson:
    """``--keep`` for JSON records, which have no header: a name the first record lacks while
    it has a close one is a typo, and the file is refused as a CSV file would be; a name no
    record had is noted at the end (a column of nothing)."""

    def __init__(self, source: Source, first: bool = True) -> None:
        self.source = source
        self.keep = source.options.columns.keep
        self.active = bool(self.keep) and self.keep != KEEP_ALL
        self.first = first  # (False: a piece of a file, whose first record was read before)
        self.unseen = {name.lower(): name for name in self.keep} if self.active else {}

    def check(self, value, where: str) -> InputError | None:
        """The typo in the first record's kept fields, if any, or a field named by an option
        (``--title-column``) that it lacks; notes which names were seen."""
        if not isinstance(value, dict):
            return None
        if self.active:
            for key in value:
                if isinstance(key, str):
                    self.unseen.pop(key.strip().lower(), None)
        if self.first:
            self.first = False
            keys = [key for key in value if isinstance(key, str)]
            columns = self.source.options.columns
            note_export_names(field_names(keys, columns), self.source.options, self.source.name)
            return missing_named(keys, columns, where, what="field") or (
                _missing_kept(keys, self.keep, where, what="field", typos_only=True) if self.active else None
            )
        return None

    def finish(self) -> None:
        if self.unseen and not self.first:
            names = ", ".join(repr(name) for name in self.unseen.values())
            self.source.report.notes.append(f"{self.source.name}: no record has a field {names} (kept empty)")


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
    header = first.cells or []
    where = f"{source.name}:1"
    index_of = {name: i for i, name in reversed(list(enumerate(header)))}
    fields = field_names(header, columns)
    if problem := header_problem(header, columns, where):  # the whole file is left out
        yield problem
        return
    note_export_names(fields, source.options, source.name)
    index = {role: index_of[name] for role, name in fields.items()}
    keeper = _keeper(header, columns.keep)
    for row in rows:
        if isinstance(row, InputError):
            yield row
        elif row.cells is not None:
            where = f"{source.name}:{row.line}"
            yield Record(
                {role: row.cells[i] for role, i in index.items()}, row.line, where, keeper(row.cells)
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
        return InputError(_no_abstract(names, columns, what), where=where, fix=COLUMN_FIX.format(what=what))
    return missing_named(names, columns, where, what) or _missing_kept(
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


def _keeper(header: list[str], keep: tuple[str, ...]):
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


_scan_json = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # (made in __init__)


def _json_line(line: str):
    """``json.loads(line)``, a third faster for a line that is one JSON value (then
    whitespace): the decoder's scanner without its wrapper's regular expressions. Anything
    else goes to ``json.loads``, which reads it or raises its own error."""
    try:
        value, end = _scan_json(line, 0)
    except (StopIteration, ValueError):
        return json.loads(line)
    if end != len(line) and line[end:].strip(JSON_WHITESPACE):  # (str.isspace takes \x1c-\x1f too)
        return json.loads(line)  # raises "Extra data"
    return value


JSON_WHITESPACE = " \t\n\r"  # what JSON allows between values


def _object_problem(value, where: str, columns: Columns) -> tuple[dict, InputError | None]:
    """A JSON value as a record (role -> value), or why it cannot be one."""
    if not isinstance(value, dict):
        return {}, InputError(
            f"a JSON {type(value).__name__}, not an object", where=where, fix=shape_fix(columns)
        )
    fields, twice = _fields_of_keys(tuple(value), columns)
    if twice:
        return {}, InputError(twice.replace("columns", "fields"), where=where, fix="Rename all but one.")
    record = {role: value[name] for role, name in fields.items()}
    if "abstract" not in record and "title" in record:
        record["abstract"] = ""  # a reference without its abstract (CSL JSON leaves the field out)
    if "abstract" not in record:
        return {}, InputError(
            _no_abstract(list(value), columns, "field"),
            where=where,
            fix=COLUMN_FIX.format(what="field"),
        )
    if not isinstance(record["abstract"], str) and record["abstract"] is not None:
        kind = type(record["abstract"]).__name__
        return {}, InputError(
            f"{fields['abstract']!r} is a {kind}, not a string", where=where, fix=shape_fix(columns)
        )
    return record, None  # (the driver checks the abstract itself)


def shape_fix(columns: Columns) -> str:
    return f'Write each record as {{"{columns.abstract}": "..."}}.'


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def surrogate_problem(text: str, value, where: str) -> InputError | None:
    """The problem with a JSON value whose text escapes a lone surrogate (half of a
    character: it cannot be written as UTF-8, or tagged). Pairs that make a character are
    fine; only text with such an escape is looked at."""
    if not _SURROGATE_ESCAPE.search(text):
        return None
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as error:
        half = error.object[error.start]
        return InputError(
            f"holds a lone surrogate (\\u{ord(half):04x}, half of a character), which is not text",
            where=where,
            fix="Fix the escape (a character past U+FFFF is a pair: \\ud83d\\ude00), or remove it.",
        )
    return None


def _json_error(error: Exception) -> str:
    if isinstance(error, json.JSONDecodeError):  # "... starting at" goes on with the column
        return f"{error.msg} column {error.colno}" if error.msg.endswith(" at") else error.msg
    if isinstance(error, RecursionError):
        return "nested too deeply"
    return str(error).split(";")[0]  # e.g. a number past Python's digit limit


def _json_record(value, text: str, line: int, where: str, columns: Columns) -> Record | InputError:
    """A JSON value (parsed from ``text``) as a record, or why it cannot be one."""
    record, problem = _object_problem(value, where, columns)
    problem = problem or surrogate_problem(text, value, where)
    return problem or Record(record, line, where, kept_fields(value.items(), columns.keep))


def records_of_json_values(
    source: Source,
    values: Iterator[tuple[object, str, int, str] | InputError],
    kept: KeptInJson | None = None,
) -> Iterator[Record | InputError]:
    """The records of a JSON file's values (value, its text, line, where) or errors, with
    ``--keep`` checked (see :class:`KeptInJson`; one given is the file's, kept across
    the parts it is read in, and finished by its caller)."""
    finish = kept is None
    kept = kept or KeptInJson(source)
    for item in values:
        if isinstance(item, InputError):
            yield item
            continue
        value, text, line, where = item
        typo = kept.check(value, where)
        if typo:  # the whole file is left out
            yield typo
            return
        yield _json_record(value, text, line, where, source.options.columns)
    if finish:
        kept.finish()


def read_jsonl_records(source: Source) -> Iterator[Record | InputError]:
    return records_of_json_values(source, jsonl_values(source))


BLANK = object()  # the value of a blank line, for a reader that keeps them (see jsonl_values)


def jsonl_values(
    source: Source, blank_lines: bool = False
) -> Iterator[tuple[object, str, int, str] | InputError]:
    """(value, its line's text, line number, where) of each line of a JSON-lines text, or the
    problem with it (bytes that are not text, JSON that does not parse); a blank line is left
    out, or with ``blank_lines`` comes as :data:`BLANK` (to be written back as it was)."""
    for number, line in enumerate(source.lines(), start=source.first_line):
        if not line or line.isspace():
            if blank_lines and line:
                yield BLANK, line, number, f"{source.name}:{number}"
            continue
        where = f"{source.name}:{number}"
        problem = source.check_text(number, number, where)
        if problem:
            yield problem
            continue
        try:
            value = _json_line(line)
        except (ValueError, RecursionError) as error:
            yield InputError(
                f"not valid JSON ({_json_error(error)})", where=where, fix="Fix or remove this line."
            )
            continue
        yield value, line, number, where


def read_json_records(source: Source) -> Iterator[Record | InputError]:
    """A JSON array of objects, read one element at a time: the file is never held whole
    (unless it is all on one line), and each character is scanned a bounded number of times."""
    return records_of_json_values(source, _json_values(source))


def _json_values(source: Source) -> Iterator[tuple[object, str, int, str] | InputError]:
    decoder = json.JSONDecoder()
    pieces = source.lines(pieces=True)  # lines, and a long line in pieces
    buffer, at, at_line = "", 0, 1  # text read and not yet parsed: buffer[at:], from line at_line
    opened = False

    def more(at_least: int = 1) -> bool:
        """Read on, at least ``at_least`` characters (doubling what an unfinished element
        has, so each character is parsed a bounded number of times); False at the end."""
        nonlocal buffer, at
        read, size = [], 0
        while size < at_least and (piece := next(pieces, None)) is not None:
            read.append(piece)
            size += len(piece)
        if not read:
            return False
        buffer, at = buffer[at:] + "".join(read), 0
        return True

    def advance(to: int) -> None:
        nonlocal at, at_line
        at_line += buffer.count("\n", at, to)
        at = to

    while True:
        while at < len(buffer) and buffer[at] in " \t\r\n\ufeff":
            advance(at + 1)
        if at == len(buffer):
            if more():
                continue
            if opened:
                yield (InputError("the JSON array is not closed", where=f"{source.name}:{at_line}"))
            return
        char = buffer[at]
        if not opened:
            if char != "[":
                fix = "Write the records as a JSON array, or one object a line in a .jsonl file."
                yield (InputError("not a JSON array", where=f"{source.name}:1", fix=fix))
                return
            opened = True
            advance(at + 1)
            continue
        if char == "]":
            return
        if char == ",":
            advance(at + 1)
            continue
        where = f"{source.name}:{at_line}"
        try:
            value, end = decoder.raw_decode(buffer, at)
        except json.JSONDecodeError as error:
            unparsed = len(buffer) - at
            # The text read so far ends inside the element (a string runs on, or the error
            # is at its end): read on, unless the element is already over the limit.
            goes_on = error.msg.startswith("Unterminated string") or error.pos >= len(buffer.rstrip()) - 1
            if goes_on and unparsed > MAX_LINE_BYTES:
                yield (
                    InputError(
                        f"a JSON element of over {MAX_LINE_BYTES:,} characters (no abstract is that long)",
                        where=where,
                        fix="Leave it out of the array.",
                    )
                )
                return
            if goes_on and more(unparsed):
                continue
            line = at_line + buffer.count("\n", at, error.pos)
            yield (
                InputError(
                    f"not valid JSON ({error.msg})", where=f"{source.name}:{line}", fix="Fix this record."
                )
            )
            return
        except (ValueError, RecursionError) as error:
            yield (InputError(f"not valid JSON ({_json_error(error)})", where=where))
            return
        start, text = at_line, buffer[at:end]
        advance(end)
        yield source.check_text(start, at_line, where) or (value, text, start, where)


def read_parquet_records(path: Path, options: ReadOptions, rows: list[int]) -> Iterator[Record | InputError]:
    """A Parquet file's rows, a batch at a time; ``rows[0]`` counts the rows seen."""
    try:
        import pyarrow.parquet as parquet
    except ImportError:
        yield InputError("reading .parquet needs pyarrow", where=str(path), fix=install_hint("parquet"))
        return
    name = display_name(path)
    try:
        table = parquet.ParquetFile(path)
    except (OSError, ValueError) as error:
        yield InputError(f"not a readable Parquet file ({error})", where=name, fix="Leave it out.")
        return
    names = table.schema_arrow.names
    fields = field_names(names, options.columns)
    if problem := header_problem(names, options.columns, name):
        yield problem
        return
    note_export_names(fields, options, name)
    keep = options.columns.keep
    kept_names = (
        []
        if not keep
        else names
        if keep == KEEP_ALL
        else [n for n in names if n.lower() in {k.lower() for k in keep}]
    )
    read = list(dict.fromkeys([*fields.values(), *kept_names]))
    if same := next(
        (n for n in read if names.count(n) > 1), None
    ):  # (pyarrow reads such a column by index only)
        yield InputError(f"{names.count(same)} columns named {same!r}", where=name, fix="Rename all but one.")
        return
    for batch in _batches(table, read):
        if isinstance(batch, InputError):
            yield InputError(batch.what, where=name, fix=batch.fix)
            return
        options.report.bytes_read += batch.nbytes
        decoded = {column: _parquet_values(batch.column(column)) for column in read}
        values_of = {column: values for column, (values, _) in decoded.items()}
        for i in range(batch.num_rows):
            rows[0] += 1
            record = {role: values_of[column][i] for role, column in fields.items()}
            where = f"{name}:row {rows[0]}"
            if bad := next(((column, bad[i]) for column, (_, bad) in decoded.items() if i in bad), None):
                yield InputError(
                    f"not valid UTF-8 text in column {bad[0]!r} (byte {bad[1]})",
                    where=where,
                    fix="Parquet text is UTF-8: fix the value, or leave the row out with --skip-bad.",
                )
                continue
            if not isinstance(record["abstract"], str) and record["abstract"] is not None:
                yield InputError(f"{fields['abstract']!r} is not text", where=where, fix="Fill it in.")
                continue
            kept = kept_fields(((column, values_of[column][i]) for column in kept_names), keep)
            yield Record(record, rows[0], where, kept)


def _parquet_values(array) -> tuple[list, dict[int, int]]:
    """A Parquet column's values as Python objects, and the rows whose text is not valid
    UTF-8 (row -> offset of the first bad byte; their value None): a string column may hold
    any bytes, and one bad value must not cost the others."""
    try:
        return array.to_pylist(), {}
    except UnicodeDecodeError:
        import pyarrow

        binary = pyarrow.large_binary() if pyarrow.types.is_large_string(array.type) else pyarrow.binary()
        values: list = []
        bad: dict[int, int] = {}
        for row, raw in enumerate(array.view(binary).to_pylist()):
            try:
                values.append(None if raw is None else raw.decode("utf-8"))
            except UnicodeDecodeError as error:
                values.append(None)
                bad[row] = error.start
        return values, bad


def _batches(table, columns: list[str]):
    """The record batches of a Parquet file; damaged data ends them with an error (its
    message's first line, printable)."""
    import pyarrow

    batches = table.iter_batches(columns=columns)
    while True:
        try:
            batch = next(batches, None)
        except (OSError, ValueError, pyarrow.ArrowException) as error:
            first = str(error).strip().split("\n")[0]
            reason = "".join(c if c.isprintable() else " " for c in first)[:200]
            yield InputError(f"damaged Parquet data ({reason})", fix="Leave it out.")
            return
        if batch is None:
            return
        yield batch
