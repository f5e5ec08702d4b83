"""RIS (``.ris``: EndNote, Zotero, Scopus) and Web of Science's plain text (a ``.txt`` export),
through one bounded reader of tagged lines and one reader of a record's tagged values."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ...errors import InputError
from ...text import MAX_ABSTRACT_CHARS
from ..records import Record, first_reference, reference_record
from ..source import Source

_RIS_TAG = re.compile(r"^([A-Z][A-Z0-9])  -(?: |$)")


def read_ris_records(source: Source) -> Iterator[Record | InputError]:
    """A RIS file's records (``TY`` to ``ER``: see :func:`_tagged_records` for what is said of
    the rest): each tag named as rispy names it (``AB`` abstract, ``T1`` primary_title, an
    unknown tag by itself), a tag given on several lines (``AB`` twice, as EndNote splits a long
    abstract) one value, a tag of one value a line (authors, keywords) its lines joined."""
    from rispy.config import LIST_TYPE_TAGS, TAG_KEY_MAPPING

    columns = source.options.columns
    first = True
    for found in _tagged_records(source, _ris_tag, _RIS):
        if isinstance(found, InputError):
            yield found
            continue
        start, _, lines = found
        where = f"{source.name}:{start}"
        fields = _fields(lines, _ris_tag, 6, set(LIST_TYPE_TAGS), "\n")
        fields = {TAG_KEY_MAPPING.get(tag, tag): value for tag, value in fields.items()}
        if first and (problem := first_reference(fields, source, where, "tag")):
            yield problem
            return
        first = False
        yield reference_record(fields, start, where, columns)


def _fields(
    lines: list[str], tag_of: Callable[[str], str | None], value_at: int, lists: set[str], between: str
) -> dict[str, str]:
    """A record's values by tag: a line's value starts at ``value_at``; a line without a tag
    goes on the value before; a tag given on several lines is one value, its lines joined by
    ``between`` for the ``lists`` tags (a value a line), by a space otherwise."""
    parts: dict[str, list[str]] = {}
    tag = ""
    for line in lines:
        if (this := tag_of(line)) is not None:
            tag = this
            parts.setdefault(tag, []).append(line[value_at:].strip())
        elif tag and line.strip():
            parts[tag].append(line.strip())
    return {
        name: (between if name in lists else " ").join(p for p in value if p) for name, value in parts.items()
    }


def _ris_tag(line: str) -> str | None:
    tag = _RIS_TAG.match(line)
    return tag.group(1) if tag else None


@dataclass(frozen=True)
class _Tagged:
    """A format of records of tagged lines: its name, the tags that start and end a record,
    and those that frame the file (outside records, not text)."""

    name: str
    start: str
    end: str
    framing: tuple[str, ...] = ()


_RIS = _Tagged("RIS", "TY", "ER")

_WOS = _Tagged("Web of Science", "PT", "ER", ("FN", "VR", "EF"))

MAX_RECORD_CHARS = 2 * MAX_ABSTRACT_CHARS  # a longer record is missing its end


def _tagged_records(
    source: Source, tag_of: Callable[[str], str | None], kind: _Tagged
) -> Iterator[tuple[int, int, list[str]] | InputError]:
    """The records of a file of tagged lines (RIS, Web of Science), each as (its first line's
    number, its last's, its lines without their ends), the end line left out. A record that
    does not end before the next starts (or the file ends), or runs past
    :data:`MAX_RECORD_CHARS`, is a bad record at its first line, and text outside records is
    noted, not dropped silently: nothing held grows with the file."""
    record: list[str] | None = None
    start = size = outside = first_outside = headless = 0  # headless: where tagged lines began outside
    for number, line in enumerate(source.lines(), start=1):
        line = line.lstrip("\ufeff").rstrip("\r\n")  # (CRLF or LF)
        tag = tag_of(line)
        if tag == kind.start:
            if record is not None:
                yield _unended(kind, source.name, start)
            if headless:
                yield _headless(kind, source.name, headless)
                headless = 0
            record, start, size = [line], number, len(line)
        elif record is None:
            if tag == kind.end and headless:  # a record whose first line is damaged or missing
                yield _headless(kind, source.name, headless)
                headless = 0
            elif tag is not None and tag not in kind.framing and tag != kind.end:
                headless = headless or number
            elif line.strip() and tag not in kind.framing:
                outside += 1
                first_outside = first_outside or number
        elif tag == kind.end:
            yield source.check_text(start, number, f"{source.name}:{start}") or (start, number, record)
            record = None
        elif (size := size + len(line)) > MAX_RECORD_CHARS:
            yield _unended(kind, source.name, start, f"over {MAX_RECORD_CHARS:,} characters")
            record, outside, first_outside = None, outside + 1, first_outside or number
        else:
            record.append(line)
    if record is not None:
        yield _unended(kind, source.name, start)
    if headless:
        yield _headless(kind, source.name, headless)
    if outside:
        source.report.notes.append(
            f"{source.name}: {outside} line(s) outside any record ({kind.start} to {kind.end}) left out, "
            f"the first at line {first_outside}"
        )


def _headless(kind: _Tagged, name: str, line: int) -> InputError:
    return InputError(
        f"a {kind.name} record without its {kind.start} line (tagged lines outside any record)",
        where=f"{name}:{line}",
        fix=f"Mend or add its {kind.start} line, or leave the record out with --skip-bad.",
    )


def _unended(kind: _Tagged, name: str, line: int, what: str = "") -> InputError:
    what = what or f"no {kind.end} line before the next record or the file's end"
    return InputError(
        f"a {kind.name} record without its end ({what})",
        where=f"{name}:{line}",
        fix=f"Add the {kind.end} line, or leave the record out with --skip-bad.",
    )


_WOS_TAG = re.compile(r"^([A-Z][A-Z0-9])(?: (.*))?$")

_WOS_LISTS = {"AU", "AF", "BA", "BF", "CA", "GP", "BE", "CR", "C1", "C3", "EM", "RI", "OI"}  # a value a line


def is_wos_text(source: Source) -> bool:
    """Whether a .txt file is Web of Science's plain-text export (``savedrecs.txt``): its first
    line ``FN ...`` (the file's header) or ``PT ...`` (the first record's type). Noted when so."""
    if not re.match(r"(FN|PT) \S", source.head(4096)):
        return False
    source.report.notes.append(
        f"{source.name}: read as a Web of Science plain-text export (field tags, each record ending ER)"
    )
    return True


def read_wos_records(source: Source) -> Iterator[Record | InputError]:
    """Web of Science's plain-text records: a two-letter field tag, its value, the value's
    further lines indented; ``PT`` starts a record and ``ER`` ends it (``FN``, ``VR`` and
    ``EF`` frame the file). The title is ``TI``, the abstract ``AB``, the id ``UT``; a field of
    one value a line (authors, references) is kept with its lines joined by ``; ``."""
    columns = source.options.columns
    for found in _tagged_records(source, _wos_tag, _WOS):
        if isinstance(found, InputError):
            yield found
            continue
        start, _, lines = found
        values = _fields(lines, _wos_tag, 3, _WOS_LISTS, "; ")
        yield reference_record(values, start, f"{source.name}:{start}", columns)


def _wos_tag(line: str) -> str | None:
    tag = _WOS_TAG.match(line)
    return tag.group(1) if tag else None
