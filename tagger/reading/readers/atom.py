"""Atom feeds (``.atom``, ``.xml``: the arXiv API's answer), an entry at a time through
defusedxml: no entity expanded or fetched."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ...errors import InputError
from ...text import MAX_ABSTRACT_CHARS
from ..records import Record, first_line, reference_record
from ..source import Source, Tally

_ATOM = "{http://www.w3.org/2005/Atom}"

_ARXIV = "{http://arxiv.org/schemas/atom}"

_ARXIV_ID = re.compile(r"https?://arxiv\.org/abs/(\S+)")  # an arXiv entry's <id>: its page

MAX_ENTRY_CHARS = 2 * MAX_ABSTRACT_CHARS  # the text of an entry's fields held, at most

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
    tags = Tally(_ENTRY_TAG)  # (how many entries a syntax error leaves unread)
    try:
        while chunk := raw.read(2**16):
            source.report.bytes_read += len(chunk)
            source.size += len(chunk)
            tags.feed([chunk])
            parser.feed(chunk)
            yield from _atom_records(entries, source, columns)
        parser.close()
    except DefusedXmlException as error:
        yield InputError(
            f"XML with a DTD or entities, not read: they could expand or fetch anything ({error})",
            where=source.name,
            fix="Save the feed without its DOCTYPE.",
        )
        return
    except (ParseError, LookupError, ValueError) as error:  # (Lookup, Value: its declared encoding)
        yield from _atom_records(entries, source, columns)
        if isinstance(error, ParseError):
            line, fix = error.position[0], "Fetch or save the feed again (cut short?)."
            total = tags.feed(iter(lambda: raw.read(2**16), b"")).count
            unread = total - entries.ended
            rest = (
                f"; the rest of the feed is not read: {unread} of its {total} entries" if unread > 0 else ""
            )
            what = f"not well-formed XML ({first_line(error)}){rest}"
            yield InputError(what, where=f"{source.name}:{line}", fix=fix)
            return
        what, line = "an XML encoding the parser cannot read", 1
        fix = 'Save the feed as UTF-8 (<?xml version="1.0" encoding="utf-8"?>).'
        yield InputError(f"{what} ({first_line(error)})", where=f"{source.name}:{line}", fix=fix)
        return
    yield from _atom_records(entries, source, columns)
    if entries.root == "feed":
        yield InputError(
            "a <feed> without the Atom namespace: not read as an Atom feed",
            where=source.name,
            fix='Give the feed as its source wrote it (<feed xmlns="http://www.w3.org/2005/Atom">).',
        )
    elif entries.root not in (None, f"{_ATOM}feed"):
        yield InputError(
            f"an XML file that is not an Atom feed (its root is <{entries.root.split('}')[-1]}>)",
            where=source.name,
            fix="Give an Atom feed (the arXiv API's answer), or convert the file to CSV or JSON lines.",
        )


_ENTRY_TAG = re.compile(rb"<(?:[\w.-]+:)?entry[\s/>]")  # (any prefix: a count, not a parse)


def _atom_records(entries: _AtomEntries, source: Source, columns) -> Iterator[Record | InputError]:
    while entries.done:
        line, fields, problem = entries.done.pop(0)
        where = f"{source.name}:{line}"
        if problem:
            yield InputError(problem, where=where, fix="Fix the entry, or leave it out with --skip-bad.")
        else:
            yield reference_record(fields, line, where, columns)


class _AtomEntries:
    """A target of the XML parser that keeps the entries of an Atom feed, one at a time, as
    fields (nothing else of the feed is held). A field's text is all the text inside it, its
    child elements' too (``<br/>`` in a summary, a ``type="xhtml"`` summary's ``<div>``); an
    entry with a field twice (two summaries) or an entry inside it is a problem, said at its
    line (which of two is meant cannot be told)."""

    def __init__(self) -> None:
        self.parser: Any = None
        self.root: str | None = None
        self.done: list[tuple[int, dict[str, str], str]] = []
        self._entry: dict[str, list[str]] | None = None
        self._problem = ""
        self._line = 0
        self._texts: list[list[str]] = []  # per open element, the text inside it so far
        self.ended = 0  # entries read whole
        self._held, self._over = 0, False  # the text held of the entry; past the bound, none
        self._path: list[str] = []

    def start(self, tag: str, attributes: dict[str, str]) -> None:
        if self.root is None:
            self.root = tag
        self._path.append(tag)
        self.data(" ")  # (an element within a field parts its words: "models<br/>for")
        self._texts.append([])
        if tag == f"{_ATOM}entry" and self._entry is not None:
            inner = self.parser.CurrentLineNumber
            self._problem = self._problem or f"an <entry> inside this entry (line {inner})"
        elif tag == f"{_ATOM}entry" and len(self._path) == 2:
            self._entry, self._line, self._problem = {}, self.parser.CurrentLineNumber, ""
            self._held, self._over = 0, False
        elif self._entry is not None and tag == f"{_ATOM}category" and "term" in attributes:
            self._entry.setdefault("categories", []).append(attributes["term"])
        elif self._entry is not None and tag == f"{_ARXIV}primary_category" and "term" in attributes:
            self._entry["primary_category"] = [attributes["term"]]

    def data(self, text: str) -> None:
        if self._entry is None or self._over:  # (text outside the entries is never used: never held)
            return
        self._held += len(text)
        if self._held > MAX_ENTRY_CHARS:  # (refused as it arrives: a feed of a gigabyte in one entry)
            self._problem = (
                f"an entry of over {MAX_ENTRY_CHARS:,} characters "
                f"(an abstract is at most {MAX_ABSTRACT_CHARS:,})"
            )
            self._over = True
            for inside in self._texts:
                inside.clear()
            return
        for inside in self._texts[2:]:  # (the fields of the entry, and what is inside them)
            inside.append(text)

    def end(self, tag: str) -> None:
        self._path.pop()
        text = " ".join("".join(self._texts.pop()).split())
        self.data(" ")
        entry = self._entry
        if entry is None:
            return
        if tag == f"{_ATOM}entry" and len(self._path) == 1:
            fields = {name: "; ".join(values) for name, values in entry.items()}
            self.done.append((self._line, fields, self._problem))
            self.ended += 1
            self._entry = None
            return
        name = tag.removeprefix(_ATOM)
        if len(self._path) == 2 and name in _ATOM_FIELDS:
            if _ATOM_FIELDS[name] in entry:
                self._problem = self._problem or f"two <{name}> elements in one entry, not told apart"
            entry[_ATOM_FIELDS[name]] = [text]
            if name == "id" and (arxiv := _ARXIV_ID.fullmatch(text)):  # the arXiv id; its page for --keep url
                entry["id"], entry["url"] = [arxiv.group(1)], [text]
        elif name == "name" and self._path[-1:] == [f"{_ATOM}author"]:
            entry.setdefault("authors", []).append(text)

    def close(self) -> None:
        return None
