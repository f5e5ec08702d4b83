"""An abstract as tagger reads it: its text, title and where it came from, and its id (the
digest of its whitespace-normalised text unless the file gives one)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import NamedTuple

from ..text import join_broken_words


@dataclass(frozen=True)
class Columns:
    """Which column (CSV, Parquet) or field (JSON) holds each part of a record, matched
    without regard to case: the abstract, and optionally the title, the id and the area."""

    abstract: str = "abstract"
    title: str = "title"
    id: str = "id"
    area: str = "area"
    keep: tuple[str, ...] = ()  # other columns carried into each Abstract's ``extra``; KEEP_ALL: every one
    named: frozenset[str] = frozenset()  # roles besides the abstract that the user named: they must be there
    sheet: str | None = None  # the sheet of an Excel workbook to read (None: its first)

    def roles(self) -> dict[str, str]:
        return {"abstract": self.abstract, "title": self.title, "id": self.id, "area": self.area}

    def candidates(self, role: str) -> tuple[str, ...]:
        """The names a role's column may have, first match wins: the one given, then (for a
        role left at its default name) the names reference managers and bibliographic
        databases export it under (:data:`EXPORT_NAMES`)."""
        name = self.roles()[role]
        if role in self.named or name != DEFAULT_NAMES.get(role):
            return (name,)
        return (name, *EXPORT_NAMES.get(role, ()))

    @classmethod
    def given(
        cls,
        abstract: str = "abstract",
        title: str | None = None,
        id: str | None = None,
        area: str = "area",
        keep: tuple[str, ...] = (),
        sheet: str | None = None,
    ) -> Columns:
        """The columns a user named (``None``: the default name, where a file has it): a
        title or id column named must be there; ``sheet``: a workbook's sheet to read."""
        named = frozenset(role for role, value in (("title", title), ("id", id)) if value is not None)
        return cls(abstract, title or "title", id or "id", area, keep, named, sheet)


KEEP_ALL = ("*",)


DEFAULT_NAMES = {"abstract": "abstract", "title": "title", "id": "id"}


# What exports name the abstract, the title and the id, tried in this order when a file has no
# column of the default name: Zotero's CSV (Abstract Note, Key), Scopus's (EID), Web of
# Science's tab-delimited (AB, TI, UT) and full-name exports (Article Title, UT (Unique WOS ID)),
# IEEE Xplore's (Document Title), RIS tags as rispy names them (N2 notes_abstract, T1
# primary_title), an arXiv id (a feed's export of JSON lines), and a DOI where nothing else names
# the record. Matched without regard to case, in every format alike.
EXPORT_NAMES = {
    "abstract": ("abstract note", "ab", "notes_abstract"),
    "title": ("article title", "document title", "ti", "primary_title", "t1"),
    "id": ("key", "eid", "ut", "ut (unique wos id)", "accession number", "arxiv_id", "doi", "do"),
}


class Abstract(NamedTuple):
    """One abstract and where it came from (``position`` counts abstracts in ``source`` from 1;
    ``line`` is the line where it starts). A named tuple: millions are made per run."""

    id: str
    text: str
    source: str
    position: int
    line: int
    title: str = ""
    area: str = ""
    extra: dict | None = None  # input columns kept (see Columns.keep), by name

    @property
    def document(self) -> str:
        """What the classifier reads: the title (when the file has one) and the abstract."""
        return _with_title(self.title, self.text)

    @property
    def digest(self) -> str:
        """The abstract's digest (:func:`abstract_id` of its text), whatever id its file gave
        it: what labels, the label store and the card name it by."""
        return abstract_id(self.text)


def document(text: str, title: str = "") -> str:
    """What the classifier reads for an abstract and its title from anywhere (a dataframe, a
    list): the same as :attr:`Abstract.document` for the same text read from a file."""
    return _with_title(normalise_whitespace(title) if title else "", clean_text(text))


def _with_title(title: str, text: str) -> str:
    return f"{title}. {text}" if title else text


def clean_text(text: str) -> str:
    """An abstract's text as tagger keeps it: words broken at line ends joined, whitespace
    normalised."""
    return normalise_whitespace(join_broken_words(text))


# Every ASCII character str.split() splits on, made a space (bytes.translate is fast).
_ASCII_WHITESPACE = b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"


_ASCII_WHITESPACE_TO_SPACE = bytes.maketrans(_ASCII_WHITESPACE, b" " * len(_ASCII_WHITESPACE))


def normalise_whitespace(text: str) -> str:
    """``text`` with every run of whitespace one space, none at either end: the same as
    ``" ".join(text.split())``, without making a string of every word.

    Most text is already normal, and that is found without a copy: in ASCII text by looking
    for each whitespace character but the space; in other text with ``str.isprintable``, as
    every character ``str.split`` splits on except the space is a separator or control
    character (checked over every code point in the tests)."""
    if text.isascii():
        if (  # one `in` per character of _ASCII_WHITESPACE: three times faster than any()
            "\n" in text
            or "\t" in text
            or "\r" in text
            or "\x0b" in text
            or "\x0c" in text
            or "\x1c" in text
            or "\x1d" in text
            or "\x1e" in text
            or "\x1f" in text
        ):
            text = text.encode("ascii").translate(_ASCII_WHITESPACE_TO_SPACE).decode("ascii")
    elif not text.isprintable():
        return " ".join(text.split())
    while "  " in text:  # now the space is the only whitespace
        text = text.replace("  ", " ")
    return text.strip(" ")


def abstract_id(text: str) -> str:
    """An abstract's id, the one digest of tagger: the first 16 hex digits of the SHA-256 of
    its text cleaned as the readers clean it (words broken at line ends joined, whitespace
    normalised), whether it was read from a file, passed from Python or named in a label."""
    return digest_of_clean(clean_text(text))


def digest_of_clean(text: str) -> str:
    """:func:`abstract_id` of a text already cleaned (a reader's, which cleans it anyway)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
