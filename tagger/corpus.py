"""Reading abstracts from files of every supported format, one at a time, in input order.

Formats, chosen by file extension (or ``input_format`` for stdin and odd names):

* ``.txt``: paragraphs separated by blank lines; a short first line standing alone before the
  abstracts (such as ``NeurIPS 2026 Papers``) is a heading, not an abstract.
* ``.csv``: a header row with an ``abstract`` column; optional ``id``, ``title``, ``area``.
* ``.jsonl``: one JSON object a line with an ``abstract`` string; optional ``id``, ``title``,
  ``area``.

Every abstract gets an id: the file's own ``id`` when it has one, otherwise a hash of the
whitespace-normalised text, so the same abstract has the same id wherever it is stored.

A bad record (a broken JSON line, an empty abstract, a ragged CSV row, bytes that are not
text in the file's encoding) stops the read with an :class:`InputError` naming the file and
line, or, with ``skip_bad``, is left out and listed in the :class:`ReadReport`. Nothing is
left out silently: headings, empty files and ignored files are listed there too.
"""

from __future__ import annotations

import codecs
import csv
import errno
import hashlib
import io
import json
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, NamedTuple

from .errors import InputError
from .text import join_broken_words

FORMATS = ("txt", "csv", "jsonl")
STDIN = "-"
STDIN_NAME = "<stdin>"
HEADING_MAX_WORDS = 12
# Columns (csv) or fields (jsonl) read besides "abstract"; "area" is a hand label.
OPTIONAL_FIELDS = ("id", "title", "area")
# An abstract longer than this many characters (a thousand long abstracts) is a bad record:
# tagging it would take memory in proportion (about 25 bytes a character).
MAX_ABSTRACT_CHARS = 5_000_000
NOT_FOR_FILES = ("idna", "punycode")  # text codecs for domain names, not for files
ENCODING_FIX = "Convert it to UTF-8, or name its encoding with --encoding (for example --encoding latin-1)."


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

    @property
    def document(self) -> str:
        """What the classifier reads: the title (when the file has one) and the abstract."""
        return f"{self.title}. {self.text}" if self.title else self.text


@dataclass
class ReadReport:
    """Everything a read saw besides the abstracts it returned; filled in while reading."""

    read: int = 0
    files: int = 0
    bytes_read: int = 0
    headings: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def normalise_whitespace(text: str) -> str:
    return " ".join(text.split())


def abstract_id(text: str) -> str:
    """A stable id for an abstract: the first 16 hex digits of the SHA-256 of its
    whitespace-normalised text."""
    return _id_of_normalised(normalise_whitespace(text))


def _id_of_normalised(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def format_of(path: Path) -> str | None:
    suffix = path.suffix.lower().lstrip(".")
    return suffix if suffix in FORMATS else None


def find_files(paths: Iterable[str | Path], report: ReadReport, skip_bad: bool = False) -> list[Path]:
    """Files to read: the paths given, with folders expanded (recursively, in name order,
    symlinked folders followed once each). Everything in a folder that is not read is noted
    in ``report``: hidden files and folders, files of other types, FIFOs, devices and
    sockets, broken symlinks, symlink loops and links to a folder already read."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if str(raw) == STDIN:
            files.append(path)
        elif not str(raw).strip():
            raise InputError("an empty path", fix="Give a file or a folder (an unset shell variable?).")
        elif path.is_dir():
            files.extend(_folder_files(path, report, skip_bad))
        elif path.exists():
            files.append(path)
        else:
            raise InputError(
                "no such file or directory", where=str(path), fix="Check the path and try again."
            )
    return files


def _folder_files(folder: Path, report: ReadReport, skip_bad: bool) -> list[Path]:
    found: list[Path] = []
    seen: set[tuple[int, int]] = set()

    def walk(directory: Path) -> None:
        status = directory.stat()
        if (status.st_dev, status.st_ino) in seen:
            report.notes.append(f"{directory}: left out, a link to a folder already read")
            return
        seen.add((status.st_dev, status.st_ino))
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError as error:
            _bad(
                InputError(f"cannot read the folder ({error.strerror})", where=str(directory)),
                skip_bad,
                report,
            )
            return
        for entry in entries:
            child = Path(entry.path)
            kind = _kind(child)
            if entry.name.startswith("."):
                report.notes.append(f"{child}: left out, hidden")
            elif kind == "folder":
                walk(child)
            elif kind != "file":
                report.notes.append(f"{child}: left out, {kind}")
            elif format_of(child):
                found.append(child)
            else:
                report.notes.append(f"{child}: ignored, not a .txt, .csv or .jsonl file")

    walk(folder)
    return found


def _kind(path: Path) -> str:
    """What a folder entry is, following symlinks: file, folder, or why it cannot be read."""
    try:
        mode = path.stat().st_mode
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "a symlink loop"
        return "a broken symlink" if path.is_symlink() else f"unreadable ({error.strerror})"
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISREG(mode):
        return "file"
    special = {
        stat.S_ISFIFO: "a FIFO",
        stat.S_ISSOCK: "a socket",
        stat.S_ISCHR: "a device",
        stat.S_ISBLK: "a device",
    }
    return next((name for test, name in special.items() if test(mode)), "not a regular file")


def read_abstracts(
    paths: Iterable[str | Path],
    *,
    input_format: str | None = None,
    encoding: str = "utf-8",
    skip_bad: bool = False,
    report: ReadReport | None = None,
    stdin: IO | None = None,
) -> Iterator[Abstract]:
    """Every abstract in ``paths`` (files, directories, or ``-`` for stdin), in input order.
    Missing paths and unknown encodings are reported at once, before anything is read."""
    report = report if report is not None else ReadReport()
    try:
        codec = codecs.lookup(encoding)
    except LookupError:
        raise InputError(
            f"unknown encoding {encoding!r}", fix="Use a Python codec name such as utf-8 or latin-1."
        ) from None
    if not codec._is_text_encoding or codec.name in NOT_FOR_FILES:
        raise InputError(
            f"{encoding!r} is not an encoding of text files", fix="Use one such as utf-8, latin-1 or utf-16."
        )
    if input_format is not None and input_format not in FORMATS:
        raise InputError(f"unknown input format {input_format!r}", fix=f"Use one of {', '.join(FORMATS)}.")
    files = find_files(paths, report, skip_bad)
    return _read_files(files, input_format, encoding, skip_bad, report, stdin)


def _read_files(
    files: list[Path],
    input_format: str | None,
    encoding: str,
    skip_bad: bool,
    report: ReadReport,
    stdin: IO | None,
) -> Iterator[Abstract]:
    for path in files:
        if str(path) == STDIN:
            stream = stdin if stdin is not None else getattr(sys.stdin, "buffer", sys.stdin)
            yield from _read_file(
                _Source(STDIN_NAME, stream, encoding, True, report), input_format or "txt", skip_bad, report
            )
            continue
        fmt = input_format or format_of(path)
        if fmt is None:
            unknown = InputError(
                f"unknown file type {path.suffix or '(no extension)'!r}",
                where=str(path),
                fix=f"Use one of .{', .'.join(FORMATS)}, or say which with --input-format.",
            )
            _bad(unknown, skip_bad, report)
            continue
        try:
            stream = open(path, "rb")  # noqa: SIM115 (closed below, after the generator is done)
        except OSError as error:
            _bad(InputError(f"cannot read ({error.strerror})", where=str(path)), skip_bad, report)
            continue
        with stream:
            yield from _read_file(_Source(str(path), stream, encoding, False, report), fmt, skip_bad, report)


def _bad(error: InputError, skip_bad: bool, report: ReadReport) -> None:
    """Stop on a bad record, or note it and go on."""
    if not skip_bad:
        raise error
    report.skipped.append(str(error))


class _Source:
    """A file's lines, decoded one at a time, remembering which lines held bytes that are not
    text in the encoding (they are decoded with replacement characters and reported)."""

    def __init__(self, name: str, stream: IO, encoding: str, is_stdin: bool, report: ReadReport) -> None:
        self.name = name
        self.report = report
        self.stream = stream
        self.encoding = encoding
        self.is_stdin = is_stdin
        self.bad_bytes: dict[int, int] = {}  # line number -> byte offset of its first bad byte
        self.size = 0

    def lines(self) -> Iterator[str]:
        if isinstance(self.stream, io.TextIOBase):  # already text (a caller's stdin)
            yield from self.stream
            return
        codec = codecs.lookup(self.encoding).name
        if codec.startswith(("utf-16", "utf-32")):  # lines are not byte-separable: decode whole
            yield from self._decode_whole()
            return
        offset = 0
        for number, raw in enumerate(self.stream, start=1):
            if number == 1 and codec == "utf-8" and raw.startswith(codecs.BOM_UTF8):
                raw, offset = raw[3:], 3
            try:
                text = raw.decode(self.encoding)
            except UnicodeDecodeError as error:
                self.bad_bytes[number] = offset + error.start
                text = raw.decode(self.encoding, errors="replace")
            offset += len(raw)
            self.size = offset
            self.report.bytes_read += len(raw)
            yield text

    def _decode_whole(self) -> Iterator[str]:
        data = self.stream.read()
        self.size = len(data)
        self.report.bytes_read += len(data)
        try:
            text = data.decode(self.encoding)
        except UnicodeDecodeError as error:
            self.bad_bytes[1] = error.start
            text = data.decode(self.encoding, errors="replace")
        yield from io.StringIO(text, newline="")

    def check_text(self, first: int, last: int, where: str) -> InputError | None:
        """An error when lines ``first`` to ``last`` held bytes that are not text."""
        for number in range(first, last + 1):
            if number in self.bad_bytes:
                return InputError(
                    f"not valid {self.encoding} text (byte {self.bad_bytes[number]}, line {number})",
                    where=where,
                    fix=ENCODING_FIX,
                )
        return None

    def binary_problem(self) -> InputError | None:
        """An error when the file holds NUL bytes: UTF-16 or UTF-32 text read as another
        encoding (named, with the option that reads it), or binary data."""
        if isinstance(self.stream, io.TextIOBase) or codecs.lookup(self.encoding).name.startswith(
            ("utf-16", "utf-32")
        ):
            return None
        peek = getattr(self.stream, "peek", None)
        head = peek(8192)[:8192] if peek else b""
        if b"\x00" not in head:
            return None
        wide = _wide_encoding(head)
        if wide:
            return InputError(
                f"{wide.upper()} text, not {self.encoding}",
                where=self.name,
                fix=f"Read it with --encoding {wide}.",
            )
        return InputError(
            "a binary file (it holds NUL bytes), not text", where=self.name, fix="Leave it out."
        )


def _wide_encoding(head: bytes) -> str | None:
    """``utf-16`` or ``utf-32`` when ``head`` starts with that encoding's byte-order mark, or
    is ASCII text in it without one (every second, or three of four, bytes NUL)."""
    if head.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "utf-32"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    even = head[: len(head) // 2 * 2]
    low, high = even[0::2], even[1::2]
    if len(even) >= 16 and high.count(0) > 0.9 * len(high) and 0 not in low:
        return "utf-16-le"
    if len(even) >= 16 and low.count(0) > 0.9 * len(low) and 0 not in high:
        return "utf-16-be"
    return None


def _read_file(source: _Source, fmt: str, skip_bad: bool, report: ReadReport) -> Iterator[Abstract]:
    report.files += 1
    problem = source.binary_problem()
    if problem:
        _bad(problem, skip_bad, report)
        return
    reader = {"txt": _read_txt, "csv": _read_csv, "jsonl": _read_jsonl}[fmt]
    found = 0
    headings = len(report.headings)
    skipped = len(report.skipped)
    for abstract in reader(source, skip_bad, report):
        found += 1
        report.read += 1
        yield abstract
    if found == 0 and len(report.skipped) == skipped:
        if len(report.headings) > headings:
            report.notes.append(f"{source.name}: only a heading, no abstracts")
        elif source.size == 0 and not source.is_stdin:
            report.notes.append(f"{source.name}: empty file")
        else:
            report.notes.append(f"{source.name}: no abstracts")


def _make(
    text: str, source: str, position: int, line: int, *, id_: str = "", title: str = "", area: str = ""
) -> Abstract:
    text = normalise_whitespace(join_broken_words(text))
    return Abstract(
        id=id_ or _id_of_normalised(text),
        text=text,
        source=source,
        position=position,
        line=line,
        title=normalise_whitespace(title) if title else "",
        area=area.strip(),
    )


def _too_long(text: str, where: str) -> InputError | None:
    if len(text) <= MAX_ABSTRACT_CHARS:
        return None
    return InputError(
        f"an abstract of {len(text):,} characters, over the limit of {MAX_ABSTRACT_CHARS:,}",
        where=where,
        fix="Split it (in .txt files, a blank line separates abstracts), or leave it out with --skip-bad.",
    )


def _paragraphs(lines: Iterable[str]) -> Iterator[tuple[int, int, list[str]]]:
    """(first line, last line, lines) of each blank-line-separated paragraph."""
    paragraph: list[str] = []
    start = 0
    number = 0
    for number, line in enumerate(lines, start=1):
        if line.strip():
            if not paragraph:
                start = number
            paragraph.append(line)
        elif paragraph:
            yield start, number - 1, paragraph
            paragraph = []
    if paragraph:
        yield start, number, paragraph


def _is_heading(lines: list[str]) -> bool:
    text = lines[0].strip()
    return len(lines) == 1 and len(text.split()) <= HEADING_MAX_WORDS and text[-1] not in ".!?"


def _read_txt(source: _Source, skip_bad: bool, report: ReadReport) -> Iterator[Abstract]:
    position = 0
    for index, (first, last, lines) in enumerate(_paragraphs(source.lines())):
        where = f"{source.name}:{first}"
        error = source.check_text(first, last, where)
        if error:
            _bad(error, skip_bad, report)
            continue
        # A short title-like first paragraph is a heading; on stdin a single short line is
        # a (short) abstract typed or piped in on its own.
        if index == 0 and _is_heading(lines) and not source.is_stdin:
            report.headings.append(where)
            continue
        text = "".join(lines)
        error = _too_long(text, where)
        if error:
            _bad(error, skip_bad, report)
            continue
        position += 1
        yield _make(text, source.name, position, first)


def _read_csv(source: _Source, skip_bad: bool, report: ReadReport) -> Iterator[Abstract]:
    csv.field_size_limit(2**31 - 1)
    reader = csv.reader(source.lines(), strict=True)
    try:
        header = next(reader, None)
    except csv.Error as error:
        _bad(InputError(f"unreadable CSV header ({error})", where=f"{source.name}:1"), skip_bad, report)
        return
    if header is None:
        return
    problem = source.check_text(1, reader.line_num, f"{source.name}:1")
    columns = [name.strip().lower() for name in header]
    if problem is None and "abstract" not in columns:
        problem = InputError(
            f"no 'abstract' column (columns: {', '.join(repr(c) for c in header)})",
            where=f"{source.name}:1",
            fix="Name the column that holds the abstracts 'abstract'.",
        )
    if problem:  # the whole file is left out
        _bad(problem, skip_bad, report)
        return
    index = {name: columns.index(name) for name in ("abstract", *OPTIONAL_FIELDS) if name in columns}
    position = 0
    while True:
        start = reader.line_num + 1
        where = f"{source.name}:{start}"
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            problem_text = (
                "a quoted field runs to the end of the file" if "end of data" in str(error) else str(error)
            )
            _bad(
                InputError(f"malformed CSV row ({problem_text})", where=where, fix="Fix its quoting."),
                skip_bad,
                report,
            )
            continue
        if not any(cell.strip() for cell in row):
            continue  # a blank line
        problem = source.check_text(start, reader.line_num, where)
        if problem is None and len(row) != len(header):
            problem = InputError(
                f"row has {len(row)} cells, the header has {len(header)}",
                where=where,
                fix="Quote cells that contain commas or line breaks.",
            )
        if problem is None and not row[index["abstract"]].strip():
            problem = InputError("empty abstract", where=where, fix="Fill it in or delete the row.")
        if problem is None:
            problem = _too_long(row[index["abstract"]], where)
        if problem:
            _bad(problem, skip_bad, report)
            continue
        position += 1
        cells = {name: row[i] for name, i in index.items()}
        yield _make(
            cells["abstract"],
            source.name,
            position,
            start,
            id_=cells.get("id", "").strip(),
            title=cells.get("title", ""),
            area=cells.get("area", ""),
        )


def _read_jsonl(source: _Source, skip_bad: bool, report: ReadReport) -> Iterator[Abstract]:
    position = 0
    for number, line in enumerate(source.lines(), start=1):
        if not line.strip():
            continue
        where = f"{source.name}:{number}"
        problem = source.check_text(number, number, where)
        record = None
        if problem is None:
            try:
                record = json.loads(line)
            except (ValueError, RecursionError) as error:  # ValueError: also numbers past Python's limit
                reason = (
                    error.msg
                    if isinstance(error, json.JSONDecodeError)
                    else "nested too deeply"
                    if isinstance(error, RecursionError)
                    else str(error).split(";")[0]
                )
                problem = InputError(
                    f"not valid JSON ({reason})", where=where, fix="Fix or remove this line."
                )
        if problem is None and not isinstance(record, dict):
            problem = InputError(
                f"a JSON {type(record).__name__}, not an object",
                where=where,
                fix='Write each line as {"abstract": "..."}.',
            )
        if problem is None and not isinstance(record.get("abstract"), str):
            has = (
                "no 'abstract'"
                if "abstract" not in record
                else f"'abstract' is a {type(record['abstract']).__name__}"
            )
            problem = InputError(
                f"{has}, not a string", where=where, fix='Write each line as {"abstract": "..."}.'
            )
        if problem is None and not record["abstract"].strip():
            problem = InputError("empty abstract", where=where, fix="Fill it in or remove this line.")
        if problem is None:
            problem = _too_long(record["abstract"], where)
        if problem:
            _bad(problem, skip_bad, report)
            continue
        position += 1
        optional = {name: record.get(name) for name in OPTIONAL_FIELDS}
        yield _make(
            record["abstract"],
            source.name,
            position,
            number,
            id_="" if optional["id"] is None else str(optional["id"]),
            title=optional["title"] if isinstance(optional["title"], str) else "",
            area=optional["area"] if isinstance(optional["area"], str) else "",
        )
