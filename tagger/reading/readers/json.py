"""JSON lines (``.jsonl``, one object a line; also the label store's) and JSON arrays (``.json``,
read an element at a time by Python's own decoder: docs/design.md says why not by ijson)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from itertools import chain

from ...errors import InputError
from ..abstracts import KEEP_ALL, Columns
from ..records import (
    COLUMN_FIX,
    Record,
    field_names,
    fields_of_keys,
    kept_fields,
    missing_kept,
    missing_named,
    no_abstract,
    note_export_names,
)
from ..source import MAX_LINE_BYTES, Source, Tally


class KeptInJson:
    """``--keep`` for JSON records, which have no header: a name the first record lacks while
    it has a close one is a typo, and the file is refused as a CSV file would be; a name no
    record had is noted at the end (a column of nothing)."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.keep = source.options.columns.keep
        self.active = bool(self.keep) and self.keep != KEEP_ALL
        self.first = True  # (until the first record is checked)
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
                missing_kept(keys, self.keep, where, what="field", typos_only=True) if self.active else None
            )
        return None

    def finish(self) -> None:
        if self.unseen and not self.first:
            names = ", ".join(repr(name) for name in self.unseen.values())
            self.source.report.notes.append(f"{self.source.name}: no record has a field {names} (kept empty)")


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


def _keys_read(value, text: str, columns: Columns) -> tuple:
    """The keys of a JSON object as ``text`` writes them, a key written twice twice (parsing
    keeps its last value only): looked for only when a role's name is written twice in it."""
    if not isinstance(value, dict):
        return ()
    lowered = text.lower()
    if all(lowered.count(f'"{name.lower()}"') < 2 for name in columns.roles().values()):
        return tuple(value)
    return tuple(json.loads(text, object_pairs_hook=_Pairs).keys_read)


class _Pairs(list):
    """A JSON object as its (key, value) pairs, in the order written, keys repeated."""

    @property
    def keys_read(self) -> list:
        return [key for key, _ in self]


def _object_problem(value, where: str, columns: Columns, keys: tuple = ()) -> tuple[dict, InputError | None]:
    """A JSON value as a record (role -> value), or why it cannot be one (``keys``: its keys
    as written, a key twice when written twice)."""
    if not isinstance(value, dict):
        return {}, InputError(
            f"a JSON {type(value).__name__}, not an object", where=where, fix=shape_fix(columns)
        )
    fields, twice = fields_of_keys(keys or tuple(value), columns)
    if twice:
        return {}, InputError(twice.replace("columns", "fields"), where=where, fix="Rename all but one.")
    record = {role: value[name] for role, name in fields.items()}
    if "abstract" not in record and "title" in record:
        record["abstract"] = ""  # a reference without its abstract (CSL JSON leaves the field out)
    if "abstract" not in record:
        return {}, InputError(
            no_abstract(list(value), columns, "field"),
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
    record, problem = _object_problem(value, where, columns, _keys_read(value, text, columns))
    problem = problem or surrogate_problem(text, value, where)
    return problem or Record(record, line, where, kept_fields(value.items(), columns.keep))


def records_of_json_values(
    source: Source, values: Iterator[tuple[object, str, int, str] | InputError]
) -> Iterator[Record | InputError]:
    """The records of a JSON file's values (value, its text, line, where) or errors, with
    ``--keep`` checked (see :class:`KeptInJson`)."""
    kept = KeptInJson(source)
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
    for number, line in enumerate(source.lines(), start=1):
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


def _key_pattern(columns: Columns) -> re.Pattern:
    """A key that names a record's abstract (any name it may have, without regard to case)."""
    names = "|".join(re.escape(name) for name in columns.candidates("abstract"))
    return re.compile(f'"(?:{names})"\\s*:', re.IGNORECASE)


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
            unread = Tally(_key_pattern(source.options.columns)).feed(chain([buffer[at:]], pieces)).count
            rest = (
                f"; the rest of the array is not read: {unread} record(s) from here on, "
                "by their abstract's key"
            )
            yield (
                InputError(
                    f"not valid JSON ({error.msg}){rest if unread else ''}",
                    where=f"{source.name}:{line}",
                    fix="Fix this record.",
                )
            )
            return
        except (ValueError, RecursionError) as error:
            yield (InputError(f"not valid JSON ({_json_error(error)})", where=where))
            return
        start, text = at_line, buffer[at:end]
        advance(end)
        yield source.check_text(start, at_line, where) or (value, text, start, where)
