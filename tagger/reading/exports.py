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
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..text import MAX_ABSTRACT_CHARS
from .files import display_name
from .records import Record, field_names, header_problem, kept_fields, note_export_names
from .source import ReadOptions, Source

# -- BibTeX ---------------------------------------------------------------------------------------


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
        if kind in ("Preamble", "ExplicitComment"):
            continue
        if kind == "ImplicitComment":
            yield from _between_entries(block.comment, line, source)
            continue
        entry = getattr(block, "ignore_error_block", None) if kind != "Entry" else block
        if entry is None or type(entry).__name__ != "Entry":
            error = getattr(block, "error", None) or f"a {kind}"
            yield source.check_text(line, last, where) or InputError(
                f"not a readable BibTeX entry ({_first_line(error)})",
                where=where,
                fix="Fix the entry (a brace or quote not closed?), or leave it out with --skip-bad.",
            )
            continue
        fields = _entry_fields(entry, strings, where, latex, source)
        if isinstance(fields, InputError):
            yield fields
            continue
        if first and (problem := _first_reference(fields, source, where, "field")):
            yield problem
            return
        first = False
        yield source.check_text(line, last, where) or _record(fields, line, where, columns)
    latex.note(source)


def _bib_blocks(source: Source) -> Iterator[tuple[int, Any]]:
    """bibtexparser's blocks of a BibTeX file, each with the number of the line its piece of
    the file starts on (see :func:`_bib_pieces`)."""
    import bibtexparser

    for offset, text in _bib_pieces(source):
        with _quiet("bibtexparser"):  # it logs each failed block; each is a bad record here instead
            library = bibtexparser.parse_string(text, parse_stack=[])
        for block in library.blocks:
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
        depth = max(0, depth + line.count("{") - line.count("\\{") - line.count("}") + line.count("\\}"))
    if lines:
        yield start, "".join(lines)


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
    text = []
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
    return "".join(text)


_ENTRY_LIKE = re.compile(r"^\s*@?\s*[A-Za-z]+\s*[{(]\s*[^\s,{}()]*\s*,", re.MULTILINE)


def _between_entries(text: str, line: int, source: Source) -> Iterator[InputError]:
    """Text between entries is a comment, except where a line of it looks like an entry that
    is not one (``article{key,`` without its ``@``, ``@ article{``): a bad record there."""
    for found in _ENTRY_LIKE.finditer(text):
        written = found.group()
        number = line + text.count("\n", 0, found.start() + len(written) - len(written.lstrip()))
        yield InputError(
            f"looks like an entry but is not one ({written.strip()!r}: no '@', or a space after it?)",
            where=f"{source.name}:{number}",
            fix="Write it as @type{key, ..., or leave it out with --skip-bad.",
        )


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


def _first_line(error: object) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1].rstrip(".") if lines else "unreadable"


# -- RIS ------------------------------------------------------------------------------------------

_RIS_TAG = re.compile(r"^([A-Z][A-Z0-9])  -(?: |$)")


def read_ris_records(source: Source) -> Iterator[Record | InputError]:
    """A RIS file's records (``TY`` to ``ER``), each parsed by rispy (see :func:`_tagged_records`
    for what is said of the rest)."""
    import rispy

    columns = source.options.columns
    first = True
    for found in _tagged_records(source, _ris_tag, _RIS):
        if isinstance(found, InputError):
            yield found
            continue
        start, _, lines = found
        where = f"{source.name}:{start}"
        parsed = rispy.loads("".join(line + "\n" for line in [*_joined(lines), "ER  - "]))
        if not parsed:
            yield InputError("not a readable RIS record", where=where, fix="Fix it.")
            continue
        fields = {name: _ris_value(value) for name, value in parsed[0].items()}
        if first and (problem := _first_reference(fields, source, where, "tag")):
            yield problem
            return
        first = False
        yield _record(fields, start, where, columns)


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
    start = size = outside = first_outside = 0
    for number, line in enumerate(source.lines(), start=1):
        line = line.lstrip("\ufeff").rstrip("\r\n")  # (CRLF or LF)
        tag = tag_of(line)
        if tag == kind.start:
            if record is not None:
                yield _unended(kind, source.name, start)
            record, start, size = [line], number, len(line)
        elif record is None:
            if line.strip() and tag not in kind.framing:
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
    if outside:
        source.report.notes.append(
            f"{source.name}: {outside} line(s) outside any record ({kind.start} to {kind.end}) left out, "
            f"the first at line {first_outside}"
        )


def _unended(kind: _Tagged, name: str, line: int, what: str = "") -> InputError:
    what = what or f"no {kind.end} line before the next record or the file's end"
    return InputError(
        f"a {kind.name} record without its end ({what})",
        where=f"{name}:{line}",
        fix=f"Add the {kind.end} line, or leave the record out with --skip-bad.",
    )


def _joined(lines: list[str]) -> list[str]:
    """A RIS record's lines with a tag of one value given on several lines (``AB`` twice, as
    EndNote splits a long abstract) joined into its first line: rispy keeps only one."""
    import rispy

    joined: list[str] = []
    first: dict[str, int] = {}
    for line in lines:
        name = _ris_tag(line)
        if name is None or name in rispy.LIST_TYPE_TAGS or name not in first:
            if name is not None:
                first.setdefault(name, len(joined))
            joined.append(line)
            continue
        value = line[6:].strip()  # (after 'AB  - ')
        at = first[name]
        joined[at] = f"{joined[at].rstrip()} {value}" if value else joined[at]
    return joined


def _ris_value(value: object) -> object:
    """A RIS field's value: a tag given several times (rispy's list) as its lines joined."""
    return "\n".join(str(v) for v in value) if isinstance(value, list) else value


# -- Web of Science -------------------------------------------------------------------------------

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
        fields: dict[str, list[str]] = {}
        tag = ""
        for line in lines:
            if (this := _wos_tag(line)) is not None:
                tag = this
                fields.setdefault(tag, []).append(line[3:].strip())
            elif line.startswith("   ") and tag:
                fields[tag].append(line.strip())
        values = {name: ("; " if name in _WOS_LISTS else " ").join(parts) for name, parts in fields.items()}
        yield _record(values, start, f"{source.name}:{start}", columns)


def _wos_tag(line: str) -> str | None:
    tag = _WOS_TAG.match(line)
    return tag.group(1) if tag else None


# -- Atom (the arXiv API's answer) ---------------------------------------------------------------

_ATOM = "{http://www.w3.org/2005/Atom}"
_ARXIV = "{http://arxiv.org/schemas/atom}"
_ATOM_FIELDS = {
    "id": "id",
    "title": "title",
    "summary": "abstract",
    "published": "published",
    "updated": "updated",
}


def read_atom_records(source: Source) -> Iterator[Record | InputError]:
    """An Atom feed's entries (the arXiv API's answer to a query), streamed: ``id``, ``title``
    and ``summary`` (the abstract), and for ``--keep`` ``published``, ``updated``, ``authors``,
    ``categories`` and ``primary_category``. Parsed by defusedxml: no DTD, entity or external
    reference is ever expanded or fetched; such a file is refused."""
    from xml.etree.ElementTree import ParseError

    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import DefusedXMLParser

    entries = _AtomEntries()
    parser = DefusedXMLParser(target=entries, forbid_dtd=True)
    entries.parser = parser.parser  # (expat: the line each entry starts on)
    columns = source.options.columns
    raw = source.stream
    try:
        while chunk := raw.read(2**16):
            source.report.bytes_read += len(chunk)
            source.size += len(chunk)
            parser.feed(chunk)
            yield from _atom_records(entries, source, columns)
        parser.close()
    except ParseError as error:
        yield from _atom_records(entries, source, columns)
        yield InputError(
            f"not well-formed XML ({_first_line(error)})",
            where=f"{source.name}:{error.position[0]}",
            fix="Fetch or save the feed again (cut short?).",
        )
        return
    except DefusedXmlException as error:
        yield InputError(
            f"XML with a DTD or entities, not read: they could expand or fetch anything ({error})",
            where=source.name,
            fix="Save the feed without its DOCTYPE.",
        )
        return
    yield from _atom_records(entries, source, columns)
    if entries.root not in (None, f"{_ATOM}feed"):
        yield InputError(
            f"an XML file that is not an Atom feed (its root is <{entries.root.split('}')[-1]}>)",
            where=source.name,
            fix="Give an Atom feed (the arXiv API's answer), or convert the file to CSV or JSON lines.",
        )


def _atom_records(entries: _AtomEntries, source: Source, columns) -> Iterator[Record]:
    while entries.done:
        line, fields = entries.done.pop(0)
        yield _record(fields, line, f"{source.name}:{line}", columns)


class _AtomEntries:
    """A target of the XML parser that keeps the entries of an Atom feed, one at a time, as
    fields (nothing else of the feed is held)."""

    def __init__(self) -> None:
        self.parser: Any = None
        self.root: str | None = None
        self.done: list[tuple[int, dict[str, str]]] = []
        self._entry: dict[str, list[str]] | None = None
        self._line = 0
        self._text: list[str] = []
        self._path: list[str] = []

    def start(self, tag: str, attributes: dict[str, str]) -> None:
        if self.root is None:
            self.root = tag
        self._path.append(tag)
        if tag == f"{_ATOM}entry" and len(self._path) == 2:
            self._entry, self._line = {}, self.parser.CurrentLineNumber
        elif self._entry is not None and tag == f"{_ATOM}category" and "term" in attributes:
            self._entry.setdefault("categories", []).append(attributes["term"])
        elif self._entry is not None and tag == f"{_ARXIV}primary_category" and "term" in attributes:
            self._entry["primary_category"] = [attributes["term"]]
        self._text = []

    def data(self, text: str) -> None:
        self._text.append(text)

    def end(self, tag: str) -> None:
        self._path.pop()
        entry = self._entry
        if entry is None:
            return
        if tag == f"{_ATOM}entry" and not self._path[1:]:
            fields = {name: "; ".join(values) for name, values in entry.items()}
            self.done.append((self._line, fields))
            self._entry = None
            return
        name = tag.removeprefix(_ATOM)
        if len(self._path) == 2 and name in _ATOM_FIELDS:
            entry[_ATOM_FIELDS[name]] = ["".join(self._text).strip()]
        elif name == "name" and self._path[-1:] == [f"{_ATOM}author"]:
            entry.setdefault("authors", []).append("".join(self._text).strip())
        self._text = []

    def close(self) -> None:
        return None


# -- Excel ----------------------------------------------------------------------------------------


def read_xlsx_records(path: Path, options: ReadOptions, rows: list[int]) -> Iterator[Record | InputError]:
    """The first sheet of an Excel workbook, a row at a time (openpyxl's read-only mode: a
    workbook of any size in little memory), its first row the header (as in a CSV file); a
    workbook of several sheets is noted. ``where`` is the sheet's row number, as Excel shows it."""
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
    sheets = workbook.sheetnames
    if len(sheets) > 1:
        others = ", ".join(repr(s) for s in sheets[1:])
        options.report.notes.append(f"{name}: read its first sheet {sheets[0]!r} only (not {others})")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cells = workbook[sheets[0]].iter_rows(values_only=True)
        first = next(cells, ())
    header = ["" if cell is None else _text(cell) for cell in first]
    while header and not header[-1]:
        header.pop()  # (empty cells at the header's end)
    columns = options.columns
    if problem := header_problem(header, columns, f"{name}:1"):
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
        yield _record(row, number, where, columns, found)


def _unreadable_workbook(error: Exception, name: str) -> InputError:
    if isinstance(error, MemoryError):
        return InputError(
            "out of memory reading the workbook",
            where=name,
            fix="Save it from Excel as CSV, which is read a row at a time.",
        )
    return InputError(
        f"not a readable Excel workbook ({_first_line(error)})",
        where=name,
        fix="Save it again from Excel as .xlsx, or as CSV.",
    )


# -- shared ---------------------------------------------------------------------------------------


def _first_reference(fields: dict, source: Source, where: str, what: str) -> InputError | None:
    """A reference file's first record stands for its header: what stops the whole file
    (:func:`~tagger.reading.records.header_problem`), or else a note of the export names its
    parts were found by."""
    columns = source.options.columns
    problem = header_problem(list(fields), columns, where, what, optional_abstract=True)
    if problem is None:
        note_export_names(field_names(list(fields), columns), source.options, source.name)
    return problem


def _record(fields: dict, line: int, where: str, columns, found: dict[str, str] | None = None) -> Record:
    """A record of a reference or a spreadsheet row: its roles found by their names (``found``
    where a header gave them once), values as text (an id of 12 in a spreadsheet is ``12``); a
    record without an abstract has an empty one (left out and counted by the driver)."""
    found = found if found is not None else field_names(list(fields), columns)
    record = {role: _text(fields[name]) for role, name in found.items()}
    record.setdefault("abstract", "")
    return Record(record, line, where, kept_fields(fields.items(), columns.keep))


def _text(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
