"""BibTeX (``.bib``: Zotero, Mendeley, JabRef), an entry at a time through bibtexparser, its
LaTeX decoded to text field by field."""

from __future__ import annotations

import contextlib
import itertools
import logging
import re
from collections.abc import Iterator
from typing import Any

from ...errors import InputError
from ...text import MAX_ABSTRACT_CHARS
from ..records import Record, field_names, first_line, first_reference, reference_record
from ..source import Source


def read_bib_records(source: Source) -> Iterator[Record | InputError]:
    """A BibTeX file's entries in file order. Every block is an entry, a bad record at its line,
    or not a record (``@string``, ``@preamble``, ``@comment``, text between entries: noted when
    it looks like an entry that is not one). A field's value is its parts joined (``{...}``,
    ``"..."``, numbers, ``@string`` names and the months), its LaTeX (``M{\\"u}ller``, ``\\&``)
    decoded to text, and kept as written, with a note, where it cannot be decoded. The file is
    parsed an entry at a time (see :func:`_bib_pieces`): memory does not grow with it."""
    columns = source.options.columns
    strings = dict(_MONTHS)
    latex = _Latex()
    first = True
    block: Any
    for offset, block in _bib_blocks(source):
        line = offset + (block.start_line or 0)
        where = f"{source.name}:{line}"
        last = line + (block.raw or "").count("\n")
        kind = type(block).__name__
        if kind == "String":
            value = _bib_value(block.value, strings, where, f"@string {block.key}")
            if isinstance(value, InputError):
                yield value
            else:
                strings[block.key.lower()] = value
            continue
        if kind == "ExplicitComment" and not _COMMENT.match(block.raw or ""):  # (@comment2{...)
            yield _odd_type((block.raw or "").lstrip().split("\n")[0], where)
            continue
        if kind in ("Preamble", "ExplicitComment"):
            continue
        if kind == "ImplicitComment":
            yield from _between_entries(block.comment, line, source)
            continue
        entry = getattr(block, "ignore_error_block", None) if kind != "Entry" else block
        if entry is None or type(entry).__name__ != "Entry":
            error = getattr(block, "error", None) or f"a {kind}"
            yield source.check_text(line, last, where) or InputError(
                f"not a readable BibTeX entry ({first_line(error)})",
                where=where,
                fix="Fix the entry (a brace or quote not closed?), or leave it out with --skip-bad.",
            )
            continue
        fields = _entry_fields(entry, strings, where, latex, source)
        if isinstance(fields, InputError):
            yield fields
            continue
        if first and (problem := first_reference(fields, source, where, "field")):
            yield problem
            return
        first = False
        yield source.check_text(line, last, where) or reference_record(fields, line, where, columns)
    latex.note(source)


def _bib_blocks(source: Source) -> Iterator[tuple[int, Any]]:
    """bibtexparser's blocks of a BibTeX file, each with the number of the line its piece of
    the file starts on (see :func:`_bib_pieces`)."""
    import bibtexparser

    def parsed(text: str) -> list:
        with _quiet("bibtexparser"):  # it logs each failed block; each is a bad record here instead
            return list(bibtexparser.parse_string(text, parse_stack=[]).blocks)

    for offset, text in _bib_pieces(source):
        blocks = parsed(text)
        starts = [m.start() for m in _ENTRY_START.finditer(text, 1)]
        if starts and any(getattr(block, "error", None) for block in blocks):
            # A brace left open swallowed the entries after it: each is parsed on its own, so
            # that each is read or a bad record of its own.
            bounds = [0, *starts, len(text)]
            for begin, end in itertools.pairwise(bounds):
                for block in parsed(text[begin:end]):
                    yield offset + text.count("\n", 0, begin), block
            continue
        for block in blocks:
            yield offset, block


def _bib_pieces(source: Source) -> Iterator[tuple[int, str]]:
    """A BibTeX file cut before each line that starts with ``@`` outside braces (an entry, a
    ``@string``, a comment block): (its first line's number, its text). Braces that do not
    close only make a piece longer: a piece is parsed as the whole file would be."""
    lines: list[str] = []
    start, depth = 1, 0
    for number, line in enumerate(source.lines(), start=1):
        if depth == 0 and lines and line.lstrip().startswith("@"):
            yield start, "".join(lines)
            lines, start = [], number
        lines.append(line)
        depth = max(0, depth + _braces(line))
    if lines:
        yield start, "".join(lines)


def _braces(line: str) -> int:
    """How many more braces ``line`` opens than it closes (escaped ones are text)."""
    return line.count("{") - line.count("\\{") - line.count("}") + line.count("\\}")


_MONTHS = {
    month[:3].lower(): month
    for month in (
        "January February March April May June July August September October November December".split()
    )
}


def _entry_fields(
    entry, strings: dict[str, str], where: str, latex: _Latex, source: Source
) -> dict[str, str] | InputError:
    """An entry's fields as text (its key the ``ID`` where it has no ``id`` field). A field
    given twice with different values: a bad record if it is the abstract, title or id, else
    the first value kept, with a note."""
    fields: dict[str, str] = {}
    for field in entry.fields:
        value = _bib_value(field.value, strings, where, f"field {field.key!r}")
        if isinstance(value, InputError):
            return value
        value = latex.decode(value, where, field.key)
        if field.key in fields and fields[field.key] != value:
            if field_names([field.key], source.options.columns):
                return InputError(
                    f"the field {field.key!r} is given twice, with different values",
                    where=where,
                    fix="Keep one of them, or leave the entry out with --skip-bad.",
                )
            source.report.notes.append(f"{where}: the field {field.key!r} is given twice: the first kept")
            continue
        fields[field.key] = value
    if not any(name.lower() == "id" for name in fields):
        fields["ID"] = entry.key
    return fields


def _bib_value(raw: str, strings: dict[str, str], where: str, what: str) -> str | InputError:
    """A BibTeX value as written (``{...}``, ``"..."``, a number, an ``@string`` name, or
    parts joined by ``#``) as its text, LaTeX still in it."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, char in enumerate(raw):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        elif char == '"' and depth == 0:
            quoted = not quoted
        elif char == "#" and depth == 0 and not quoted:
            parts.append(raw[start:i])
            start = i + 1
    parts.append(raw[start:])
    text, size = [], 0
    for part in (p.strip() for p in parts):
        if len(part) >= 2 and (part[0], part[-1]) in (("{", "}"), ('"', '"')):
            text.append(part[1:-1])
        elif part.isdigit() or not part:
            text.append(part)
        elif part.lower() in strings:
            text.append(strings[part.lower()])
        else:
            return InputError(
                f"{what} uses {part!r}, which no @string of the file defines",
                where=where,
                fix=f"Put it in braces ({{{part}}}) or define it by @string; or leave it out (--skip-bad).",
            )
        size += len(text[-1])
        if size > MAX_ABSTRACT_CHARS:  # (@strings that double each other grow past any memory)
            return InputError(
                f"{what} expands to more than {MAX_ABSTRACT_CHARS:,} characters (its @strings joined)",
                where=where,
                fix="Shorten the @strings it joins, or leave it out with --skip-bad.",
            )
    return "".join(text)


_ENTRY_START = re.compile(r"^[ \t]*@[ \t]*[A-Za-z]\w*[ \t]*[{(]", re.MULTILINE)  # a line that starts an entry
_ENTRY_LIKE = re.compile(r"\s*@?\s*[A-Za-z]+\s*[{(]\s*[^\s,{}()]*\s*,")


def _between_entries(text: str, line: int, source: Source) -> Iterator[InputError]:
    """Text between entries is a comment, except where a line of it looks like an entry that
    is not one (``article{key,`` without its ``@``, ``@ article{``), an entry of a type that
    BibTeX does not read (``@article-x{``: every line that starts with ``@`` starts an entry),
    or a field outside any entry (``abstract = {...``, the entry's ``@type{key,`` line
    missing): a bad record there, never an entry dropped in silence."""
    depth, inside = 0, False  # within an entry that is not read, so that each is said once
    for k, row in enumerate(text.split("\n")):
        where = f"{source.name}:{line + k}"
        if not inside and (found := _ENTRY_LIKE.match(row)):
            yield InputError(
                f"looks like an entry but is not one ({found.group().strip()!r}: "
                "no '@', or a space after it?)",
                where=where,
                fix="Write it as @type{key, ..., or leave it out with --skip-bad.",
            )
            inside, depth = True, 0
        elif not inside and _AT_LINE.match(row):
            yield _odd_type(row.strip(), where)
            inside, depth = True, 0
        elif not inside and _FIELD_LIKE.match(row):
            yield InputError(
                f"a field outside any entry ({row.strip()[:60]!r}: its @type{{key, line missing?)",
                where=where,
                fix="Add the entry's @type{key, line, or leave it out with --skip-bad.",
            )
            inside, depth = True, 1  # (as if its missing line had opened it)
        depth += _braces(row)
        if inside and depth <= 0:
            inside, depth = False, 0


def _odd_type(written: str, where: str) -> InputError:
    return InputError(
        f"an entry of a type BibTeX does not read ({written[:60]!r}): not read",
        where=where,
        fix="Write its type in letters only (@article{key, ...), or leave it out with --skip-bad.",
    )


_AT_LINE = re.compile(r"\s*@")  # a line that starts an entry, as BibTeX reads one
_FIELD_LIKE = re.compile(r"\s*[A-Za-z][\w:.+-]*\s*=\s*[{\"0-9]")
_COMMENT = re.compile(r"\s*@\s*comment\s*(?:[{(]|$)", re.IGNORECASE)


_LATEX_SPECIALS = re.compile(r"(?<!\\)([%&#])")  # text in a BibTeX value, special in LaTeX

MAX_DECODED = 100_000  # characters: a longer value is kept as written (decoding is slow on it)


class _Latex:
    """LaTeX decoding of BibTeX values by pylatexenc, counting the values it could not
    decode (kept as written) for one note."""

    def __init__(self) -> None:
        self.kept: list[str] = []
        self._text: Any = None

    def decode(self, value: str, where: str, name: str) -> str:
        if "\\" not in value and "{" not in value and "$" not in value and "~" not in value:
            return value
        if len(value) > MAX_DECODED:
            self.kept.append(f"{where} {name}")
            return value
        if self._text is None:
            self._text = _latex_to_text()
        try:
            with _quiet("pylatexenc"):
                return self._text(_LATEX_SPECIALS.sub(r"\\\1", value))
        except (Exception, RecursionError):  # pylatexenc fails in many ways on odd LaTeX
            self.kept.append(f"{where} {name}")
            return value

    def note(self, source: Source) -> None:
        if self.kept:
            source.report.notes.append(
                f"{source.name}: {len(self.kept)} field(s) kept as written, their LaTeX not decoded "
                f"(the first: {self.kept[0]})"
            )


def _latex_to_text():
    """pylatexenc's LaTeX-to-text, knowing ``\\href{url}{text}`` (its parser takes no arguments)."""
    from pylatexenc import latexwalker, macrospec
    from pylatexenc.latex2text import LatexNodes2Text

    context = latexwalker.get_default_latex_context_db()
    context.add_context_category("links", macros=[macrospec.MacroSpec("href", "{{")], prepend=True)
    converter = LatexNodes2Text()

    def to_text(value: str) -> str:
        return converter.latex_to_text(value, latex_context=context)

    return to_text


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
