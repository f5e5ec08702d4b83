"""The file formats tagger knows, by extension: one table for reading abstracts, writing tags
(and reading them back for the report) and writing labels.

A name is split into its format and its compression (``papers.csv.gz`` is a gzip-compressed
``csv``); each use asks the table what it may do with the format.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Format:
    """A format by its extension (without the dot), with what tagger does with it: ``reads``
    abstracts from it, writes ``tags`` to it (``tagger predict``; the report reads them back),
    writes ``answers`` to it (the label store), or knows it only by ``title`` to say what
    a file's name claims."""

    name: str
    title: str = ""
    reads: bool = True
    tags: bool = False
    answers: bool = False
    compresses_itself: bool = False

    @property
    def binary(self) -> bool:
        """Whether it is written as bytes (the formats that compress themselves: Parquet, Excel)."""
        return self.compresses_itself

    @property
    def said(self) -> str:
        """The format as a note names it."""
        return self.title or self.name


_TABLE = (
    Format("txt"),
    Format("csv", tags=True, answers=True),
    Format("tsv", answers=True),
    Format("jsonl", tags=True, answers=True),
    Format("json"),
    Format("parquet", "Parquet", tags=True, compresses_itself=True),
    Format("bib", "BibTeX"),
    Format("ris", "RIS"),
    Format("xlsx", "Excel", tags=True, compresses_itself=True),
    Format("atom"),
    Format("xml", "XML"),
    Format("xls", "Excel 97", reads=False),
    Format("nbib", "PubMed", reads=False),
)
BY_NAME = {form.name: form for form in _TABLE}

READ = tuple(form.name for form in _TABLE if form.reads)  # abstracts are read from these
TAGS = tuple(form.name for form in _TABLE if form.tags)  # tags are written to (and read back from) these
ANSWERS = tuple(form.name for form in _TABLE if form.answers)  # the label store writes these

# Compressed files are read through these modules (the format is the extension before theirs);
# tags are written compressed by the first.
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".xz": "lzma", ".zst": "zstandard"}
GZIP = ".gz"


def compression_of(name: str) -> str | None:
    """The compression suffix a file name ends in (``.gz``...), if any."""
    return next((suffix for suffix in COMPRESSIONS if name.lower().endswith(suffix)), None)


def split_name(path: str | os.PathLike) -> tuple[Format | None, str | None]:
    """The format a file's name says and its compression suffix: ``papers.csv.gz`` is
    (csv, ``.gz``); a name of no known format gives None for it."""
    name = Path(str(path)).name.lower()
    compression = compression_of(name)
    suffix = Path(name[: -len(compression)] if compression else name).suffix.lstrip(".")
    return BY_NAME.get(suffix), compression


def format_of(path: str | os.PathLike) -> str | None:
    """The format a file's name says, if tagger reads abstracts from it."""
    form, _ = split_name(path)
    return form.name if form and form.reads else None


def list_of(names: tuple[str, ...]) -> str:
    """``.csv, .jsonl or .parquet``."""
    dotted = [f".{name}" for name in names]
    return ", ".join(dotted[:-1]) + f" or {dotted[-1]}" if len(dotted) > 1 else dotted[0]
