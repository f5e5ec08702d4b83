"""Reading abstracts from files of every supported format, one at a time, in input order.

Formats, chosen by file extension (or ``input_format`` for stdin and odd names):

* ``.txt``: UTF-8 paragraphs separated by blank lines; a short first line standing alone
  before the abstracts (such as ``NeurIPS 2026 Papers``) is a heading, not an abstract.
* ``.csv``: a header row with an ``abstract`` column; optional ``id``, ``title``, ``area``.
* ``.jsonl``: one JSON object a line with an ``abstract`` string; optional ``id``, ``title``,
  ``area``.

Every abstract gets an id: the file's own ``id`` when it has one, otherwise a hash of the
whitespace-normalised text, so the same abstract has the same id wherever it is stored.
"""

from __future__ import annotations

import csv
import hashlib
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from .errors import InputError

FORMATS = ("txt", "csv", "jsonl")
STDIN = "-"
STDIN_NAME = "<stdin>"
HEADING_MAX_WORDS = 12
# Columns (csv) or fields (jsonl) read besides "abstract"; "area" is a hand label.
OPTIONAL_FIELDS = ("id", "title", "area")


@dataclass(frozen=True)
class Abstract:
    """One abstract and where it came from (``position`` counts abstracts in ``source`` from 1)."""

    id: str
    text: str
    source: str
    position: int
    line: int
    title: str = ""
    area: str = ""

    @property
    def document(self) -> str:
        """What the classifier reads: the title (when the file has one) and the abstract."""
        return f"{self.title}. {self.text}" if self.title else self.text


@dataclass
class ReadReport:
    """What a read saw besides abstracts; filled in while reading."""

    read: int = 0
    headings: list[str] = field(default_factory=list)
    ignored_files: list[str] = field(default_factory=list)


def normalise_whitespace(text: str) -> str:
    return " ".join(text.split())


def abstract_id(text: str) -> str:
    """A stable id for an abstract: the first 16 hex digits of the SHA-256 of its
    whitespace-normalised text."""
    return hashlib.sha256(normalise_whitespace(text).encode("utf-8")).hexdigest()[:16]


def format_of(path: Path) -> str | None:
    suffix = path.suffix.lower().lstrip(".")
    return suffix if suffix in FORMATS else None


def find_files(paths: Iterable[str | Path], report: ReadReport | None = None) -> Iterator[Path]:
    """Expand directories (recursively, sorted) into the abstract files they hold."""
    for raw in paths:
        if str(raw) == STDIN:
            yield Path(STDIN)
            continue
        path = Path(raw)
        if path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file()):
                if any(part.startswith(".") for part in child.relative_to(path).parts):
                    continue
                if format_of(child):
                    yield child
                elif report is not None:
                    report.ignored_files.append(str(child))
        elif path.exists():
            yield path
        else:
            raise InputError(
                "no such file or directory", where=str(path), fix="Check the path and try again."
            )


def read_abstracts(
    paths: Iterable[str | Path],
    *,
    input_format: str | None = None,
    encoding: str = "utf-8",
    report: ReadReport | None = None,
    stdin: TextIO | None = None,
) -> Iterator[Abstract]:
    """Every abstract in ``paths`` (files, directories, or ``-`` for stdin), in input order.
    Missing paths are reported at once, before any abstract is read."""
    report = report if report is not None else ReadReport()
    files = list(find_files(paths, report))
    return _read_files(files, input_format, encoding, report, stdin)


def _read_files(
    files: list[Path], input_format: str | None, encoding: str, report: ReadReport, stdin: TextIO | None
) -> Iterator[Abstract]:
    for path in files:
        if str(path) == STDIN:
            stream = stdin if stdin is not None else sys.stdin
            yield from _read_stream(stream, STDIN_NAME, input_format or "txt", report)
            continue
        fmt = input_format or format_of(path)
        if fmt is None:
            raise InputError(
                f"unknown file type {path.suffix or '(no extension)'!r}",
                where=str(path),
                fix=f"Use one of .{', .'.join(FORMATS)}, or say which with --input-format.",
            )
        with open(path, encoding=_python_encoding(encoding), newline="") as stream:
            yield from _read_stream(stream, str(path), fmt, report)


def _python_encoding(encoding: str) -> str:
    # A UTF-8 byte-order mark is not part of the first abstract.
    return "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding


def _read_stream(stream: TextIO, source: str, fmt: str, report: ReadReport) -> Iterator[Abstract]:
    if fmt not in FORMATS:
        raise InputError(f"unknown input format {fmt!r}", fix=f"Use one of {', '.join(FORMATS)}.")
    reader = {"txt": _read_txt, "csv": _read_csv, "jsonl": _read_jsonl}[fmt]
    try:
        for abstract in reader(stream, source, report):
            report.read += 1
            yield abstract
    except UnicodeDecodeError as error:
        raise InputError(
            f"not valid {error.encoding} text ({error.reason})",
            where=source,
            fix="Convert the file to UTF-8, or name its encoding with --encoding.",
        ) from None


def _make(
    text: str, source: str, position: int, line: int, *, id_: str = "", title: str = "", area: str = ""
) -> Abstract:
    text = normalise_whitespace(text)
    return Abstract(
        id=id_ or abstract_id(text),
        text=text,
        source=source,
        position=position,
        line=line,
        title=normalise_whitespace(title),
        area=area.strip(),
    )


def _paragraphs(stream: TextIO) -> Iterator[tuple[int, list[str]]]:
    """(first line number, lines) of each blank-line-separated paragraph."""
    lines: list[str] = []
    start = 0
    for number, line in enumerate(stream, start=1):
        if line.strip():
            if not lines:
                start = number
            lines.append(line)
        elif lines:
            yield start, lines
            lines = []
    if lines:
        yield start, lines


def _is_heading(lines: list[str]) -> bool:
    text = lines[0].strip()
    return len(lines) == 1 and len(text.split()) <= HEADING_MAX_WORDS and text[-1] not in ".!?"


def _read_txt(stream: TextIO, source: str, report: ReadReport) -> Iterator[Abstract]:
    paragraphs = _paragraphs(stream)
    first = next(paragraphs, None)
    if first is None:
        return
    second = next(paragraphs, None)
    position = 0
    # A short first paragraph is a heading only when abstracts follow it: a single short
    # line piped in on its own is a (short) abstract to tag.
    if second is not None and _is_heading(first[1]):
        report.headings.append(f"{source}:{first[0]}")
        pending = [second]
    else:
        pending = [first] if second is None else [first, second]
    for line, lines in _chain(pending, paragraphs):
        position += 1
        yield _make("".join(lines), source, position, line)


def _chain(first: list, rest: Iterator) -> Iterator:
    yield from first
    yield from rest


def _read_csv(stream: TextIO, source: str, report: ReadReport) -> Iterator[Abstract]:
    csv.field_size_limit(2**31 - 1)
    reader = csv.reader(stream)
    header = next(reader, None)
    if header is None:
        return
    columns = [name.strip().lower() for name in header]
    if "abstract" not in columns:
        raise InputError(
            f"no 'abstract' column (columns: {', '.join(repr(c) for c in header)})",
            where=f"{source}:1",
            fix="Name the column that holds the abstracts 'abstract'.",
        )
    index = {name: columns.index(name) for name in ("abstract", *OPTIONAL_FIELDS) if name in columns}
    line = reader.line_num + 1
    for position, row in enumerate(reader, start=1):
        cells = {name: row[i] if i < len(row) else "" for name, i in index.items()}
        yield _make(
            cells["abstract"],
            source,
            position,
            line,
            id_=cells.get("id", "").strip(),
            title=cells.get("title", ""),
            area=cells.get("area", ""),
        )
        line = reader.line_num + 1


def _read_jsonl(stream: TextIO, source: str, report: ReadReport) -> Iterator[Abstract]:
    position = 0
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(
                f"not valid JSON ({error.msg})", where=where, fix="Fix or remove this line."
            ) from None
        if not isinstance(record, dict) or not isinstance(record.get("abstract"), str):
            raise InputError(
                "expected a JSON object with an 'abstract' string",
                where=where,
                fix='Write each line as {"abstract": "..."}.',
            )
        position += 1
        optional = {name: record.get(name) for name in OPTIONAL_FIELDS}
        yield _make(
            record["abstract"],
            source,
            position,
            number,
            id_="" if optional["id"] is None else str(optional["id"]),
            title=optional["title"] if isinstance(optional["title"], str) else "",
            area=optional["area"] if isinstance(optional["area"], str) else "",
        )
