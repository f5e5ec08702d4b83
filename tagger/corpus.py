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

import bz2
import codecs
import csv
import difflib
import errno
import functools
import gzip
import hashlib
import io
import itertools
import json
import lzma
import os
import re
import stat
import sys
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, NamedTuple

from .errors import InputError
from .text import join_broken_words

FORMATS = ("txt", "csv", "tsv", "jsonl", "json", "parquet")
# Compressed files are read through these (the format is the extension before theirs).
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".xz": "lzma", ".zst": "zstandard"}
DELIMITERS = (",", ";", "\t", "|")  # a CSV file's delimiter is the one its header splits on
STDIN = "-"
STDIN_NAME = "<stdin>"
HEADING_MAX_WORDS = 12
# An abstract longer than this many characters (a thousand long abstracts) is a bad record:
# tagging it would take memory in proportion (about 25 bytes a character).
MAX_ABSTRACT_CHARS = 5_000_000
# No line of a record is longer (a JSON line of a longest abstract, every character escaped as
# \uXXXX, is 30 MB): a longer one is a bad record, left out without being held in memory.
MAX_LINE_BYTES = 32 * 2**20
PIECE_BYTES = 2**20  # text is decoded, and a one-line JSON array read, this much at a time
csv.field_size_limit(MAX_LINE_BYTES)  # a quoted field over many lines is bounded too (set once)
NOT_FOR_FILES = ("idna", "punycode")  # text codecs for domain names, not for files
FORMAT_LIST = f".{', .'.join(FORMATS)} (compressed too)"
ENCODING_FIX = "Convert it to UTF-8, or name its encoding with --encoding (for example --encoding latin-1)."


@dataclass(frozen=True)
class Columns:
    """Which column (CSV, Parquet) or field (JSON) holds each part of a record, matched
    without regard to case: the abstract, and optionally the title, the id and the area."""

    abstract: str = "abstract"
    title: str = "title"
    id: str = "id"
    area: str = "area"
    keep: tuple[str, ...] = ()  # other columns carried into each Abstract's ``extra``; KEEP_ALL: every one

    def roles(self) -> dict[str, str]:
        return {"abstract": self.abstract, "title": self.title, "id": self.id, "area": self.area}


KEEP_ALL = ("*",)


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


def document(text: str, title: str = "") -> str:
    """What the classifier reads for an abstract and its title from anywhere (a dataframe, a
    list): the same as :attr:`Abstract.document` for the same text read from a file."""
    return _with_title(normalise_whitespace(title) if title else "", _clean(text))


def _with_title(title: str, text: str) -> str:
    return f"{title}. {text}" if title else text


def _clean(text: str) -> str:
    """An abstract's text as tagger keeps it: words broken at line ends joined, whitespace
    normalised."""
    return normalise_whitespace(join_broken_words(text))


@dataclass
class ReadReport:
    """Everything a read saw besides the abstracts it returned; filled in while reading."""

    read: int = 0
    files: int = 0
    bytes_read: int = 0
    headings: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


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
    """A stable id for an abstract: the first 16 hex digits of the SHA-256 of its
    whitespace-normalised text."""
    return _id_of_normalised(normalise_whitespace(text))


def content_id(text: str) -> str:
    """The id an abstract of this raw text gets when read from a file (its text cleaned as
    the readers clean it): what a label names it by."""
    return _id_of_normalised(_clean(text))


def _id_of_normalised(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def format_of(path: Path) -> str | None:
    """The format a file name says (``papers.csv.gz`` is a compressed ``csv``)."""
    name = path.name.lower()
    name = name[: -len(compression)] if (compression := _compression_of(name)) else name
    suffix = Path(name).suffix.lstrip(".")
    return suffix if suffix in FORMATS else None


def _compression_of(name: str) -> str | None:
    return next((suffix for suffix in COMPRESSIONS if name.lower().endswith(suffix)), None)


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
                report.notes.append(f"{child}: ignored, not one of {FORMAT_LIST}")

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
    columns: Columns | None = None,
) -> Iterator[Abstract]:
    """Every abstract in ``paths`` (files, directories, or ``-`` for stdin), in input order.
    Missing paths and unknown encodings are reported at once, before anything is read.
    ``columns`` names the columns or fields to read (default: ``abstract``, ``title``, ``id``,
    ``area``)."""
    report = report if report is not None else ReadReport()
    try:
        codec = codecs.lookup(encoding)
    except LookupError:
        raise InputError(
            f"unknown encoding {encoding!r}",
            fix="Use a Python codec name such as utf-8 or latin-1.",
        ) from None
    if not codec._is_text_encoding or codec.name in NOT_FOR_FILES:
        raise InputError(
            f"{encoding!r} is not an encoding of text files",
            fix="Use one such as utf-8, latin-1 or utf-16.",
        )
    if input_format is not None and input_format not in FORMATS:
        raise InputError(f"unknown input format {input_format!r}", fix=f"Use one of {', '.join(FORMATS)}.")
    files = find_files(paths, report, skip_bad)
    options = _Options(input_format, encoding, skip_bad, columns or Columns(), report)
    return _read_files(files, options, stdin)


@dataclass(frozen=True)
class _Options:
    input_format: str | None
    encoding: str
    skip_bad: bool
    columns: Columns
    report: ReadReport

    def bad(self, error: InputError) -> None:
        _bad(error, self.skip_bad, self.report)


def display_name(path: str | Path) -> str:
    """A path as text that can be written anywhere: bytes of a file name that are not UTF-8
    escaped as ``\\xe9`` (``os.fsdecode`` keeps them as surrogates, which UTF-8 cannot hold)."""
    name = str(path)
    if name.isascii():
        return name
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _read_files(files: list[Path], options: _Options, stdin: IO | None) -> Iterator[Abstract]:
    for path in files:
        if str(path) == STDIN:
            stream = stdin if stdin is not None else getattr(sys.stdin, "buffer", sys.stdin)
            source = _Source(STDIN_NAME, stream, options, is_stdin=True)
            yield from _read_file(source, options.input_format or _sniff_stdin(source))
            continue
        fmt = options.input_format or format_of(path)
        if fmt is None:
            unknown = InputError(
                f"unknown file type {path.suffix or '(no extension)'!r}",
                where=str(path),
                fix=f"Use one of {FORMAT_LIST}, or say which with --input-format.",
            )
            options.bad(unknown)
            continue
        if fmt == "parquet":
            yield from _read_parquet(path, options)
            continue
        try:
            stream = _open(path)
        except OSError as error:
            options.bad(InputError(f"cannot read ({error.strerror or error})", where=str(path)))
            continue
        except ImportError as error:
            options.bad(InputError(str(error), where=str(path), fix="pip install 'tagger[zstd]'"))
            continue
        with stream:
            try:
                yield from _read_file(_Source(display_name(path), stream, options), fmt)
            except (
                OSError,
                EOFError,
                zlib.error,
                lzma.LZMAError,
            ) as error:  # a damaged compressed file
                kind = COMPRESSIONS.get(_compression_of(path.name) or "", "file")
                options.bad(
                    InputError(f"damaged {kind} data ({error})", where=str(path), fix="Leave it out.")
                )


def _open(path: Path) -> IO[bytes]:
    """A file opened for reading bytes, through its decompressor (streaming)."""
    compression = _compression_of(path.name)
    if compression is None:
        return open(path, "rb")
    if compression == ".gz":
        return gzip.open(path, "rb")
    if compression == ".bz2":
        return bz2.open(path, "rb")
    if compression == ".xz":
        return lzma.open(path, "rb")
    try:
        import zstandard
    except ImportError:
        raise ImportError("reading .zst files needs the zstandard package") from None
    compressed = open(path, "rb")  # noqa: SIM115 (closed with the reader)
    reader = zstandard.ZstdDecompressor().stream_reader(compressed, closefd=True, read_across_frames=True)
    return io.BufferedReader(_FramesChecked(reader, path))


class _FramesChecked(io.RawIOBase):
    """A zstandard stream whose frames are checked to be whole before its first byte is
    read: the decompressor itself ends quietly where a file was cut short (gzip, bzip2 and xz
    say so)."""

    def __init__(self, reader, path: Path) -> None:
        self.reader, self.path, self.checked = reader, path, False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if not self.checked:
            self.checked = True
            with open(self.path, "rb") as stream:
                _check_zstd_frames(stream)
        return self.reader.readinto(buffer)

    def close(self) -> None:
        self.reader.close()
        super().close()


ZSTD_MAGIC = 0xFD2FB528
ZSTD_SKIPPABLE = range(0x184D2A50, 0x184D2A60)


def _check_zstd_frames(stream: IO[bytes]) -> None:
    """Walk the frames of a zstandard file by their headers (seeking past block contents),
    and raise ``EOFError`` where it ends inside one (RFC 8878, section 3.1)."""
    cut = EOFError("compressed file ended before the end-of-stream marker was reached")

    def take(n: int) -> bytes:
        data = stream.read(n)
        if len(data) != n:
            raise cut
        return data

    def skip(n: int) -> None:
        if stream.tell() + n > size:
            raise cut
        stream.seek(n, io.SEEK_CUR)

    size = stream.seek(0, io.SEEK_END)
    stream.seek(0)
    while stream.tell() < size:
        magic = int.from_bytes(take(4), "little")
        if magic in ZSTD_SKIPPABLE:
            skip(int.from_bytes(take(4), "little"))
            continue
        if magic != ZSTD_MAGIC:
            raise zlib.error("not zstandard data (no frame starts here)")
        descriptor = take(1)[0]
        single_segment = descriptor >> 5 & 1
        content_size = (0, 2, 4, 8)[descriptor >> 6] or single_segment
        dictionary = (0, 1, 2, 4)[descriptor & 3]
        skip((0 if single_segment else 1) + dictionary + content_size)
        while True:
            header = int.from_bytes(take(3), "little")
            kind, length = header >> 1 & 3, header >> 3
            skip(1 if kind == 1 else length)
            if header & 1:
                break
        if descriptor >> 2 & 1:
            skip(4)  # the content checksum


def _sniff_stdin(source: _Source) -> str:
    """The format of standard input from its first bytes: JSON lines when it starts with
    ``{``, a JSON array with ``[``, CSV when its first line is a header naming the abstract
    column, otherwise text. Any format but text is noted in the report."""
    peek = getattr(source.stream, "peek", None)
    head = peek(65536)[:65536] if peek else b""
    text = head.decode(source.encoding, errors="replace").lstrip("\ufeff")
    first_line = text.lstrip().split("\n", 1)[0]
    fmt = "txt"
    if first_line.startswith("{"):
        fmt = "jsonl"
    elif first_line.startswith("["):
        fmt = "json"
    elif header_delimiter(first_line, source.options.columns, require=True):
        fmt = "csv"
    if fmt != "txt":
        source.options.report.notes.append(
            f"{STDIN_NAME}: read as {fmt} (from its first line; --input-format says otherwise)"
        )
    return fmt


def _bad(error: InputError, skip_bad: bool, report: ReadReport) -> None:
    """Stop on a bad record, or note it and go on."""
    if not skip_bad:
        raise error
    report.skipped.append(str(error))


class _Source:
    """A file's lines, decoded one at a time, remembering which lines held bytes that are not
    text in the encoding (they are decoded with replacement characters and reported)."""

    def __init__(self, name: str, stream: IO, options: _Options, is_stdin: bool = False) -> None:
        self.name = name
        self.options = options
        self.report = options.report
        self.stream = stream
        self.encoding = options.encoding
        self.is_stdin = is_stdin
        self.bad_bytes: dict[int, int] = {}  # line number -> byte offset of its first bad byte
        self.size = 0

    def lines(self, pieces: bool = False) -> Iterator[str]:
        """The text's lines, cut at line feeds, line ends kept, in bounded memory: a line of
        over :data:`MAX_LINE_BYTES` is a bad record (reported, its place kept by a blank
        line) unless ``pieces``, when long lines come in pieces of at most :data:`PIECE_BYTES`
        (a JSON array on one line). Bytes that are not text in the encoding are replaced, and
        their lines remembered for :meth:`check_text`."""
        if isinstance(self.stream, io.TextIOBase):  # already text (a caller's stdin)
            yield from self._bounded(iter(lambda: self.stream.readline(MAX_LINE_BYTES), ""), pieces)
            return
        codec = codecs.lookup(self.encoding).name
        if pieces or codec.startswith(("utf-16", "utf-32")):  # lines not byte-separable
            yield from self._bounded(self._decoded_chunks(), pieces)
            return
        number, offset = 0, 0
        while raw := self.stream.readline(MAX_LINE_BYTES):
            if number == 0 and codec == "utf-8" and raw.startswith(codecs.BOM_UTF8):
                raw, offset = raw[3:], 3
            number += 1
            start = offset
            offset += len(raw)
            self.report.bytes_read += len(raw)
            self.size = offset
            if len(raw) == MAX_LINE_BYTES and not raw.endswith(b"\n"):
                offset += self._skip_rest_of_line()
                self.size = offset
                self._line_too_long(number)
                yield "\n"
                continue
            try:
                text = raw.decode(self.encoding)
            except UnicodeDecodeError as error:
                self.bad_bytes[number] = start + error.start
                text = raw.decode(self.encoding, errors="replace")
            yield text

    def _skip_rest_of_line(self) -> int:
        skipped = 0
        while raw := self.stream.readline(MAX_LINE_BYTES):
            skipped += len(raw)
            self.report.bytes_read += len(raw)
            if raw.endswith(b"\n"):
                break
        return skipped

    def _line_too_long(self, number: int) -> None:
        self.options.bad(
            InputError(
                f"a line of over {MAX_LINE_BYTES:,} bytes (no abstract is that long)",
                where=f"{self.name}:{number}",
                fix="Split the file into records of one abstract each, or leave it out with --skip-bad.",
            )
        )

    def _decoded_chunks(self) -> Iterator[str]:
        """The text decoded a chunk at a time (an incremental decoder: a character split
        between chunks is decoded whole); the first bad byte's offset is remembered against
        the line it is on."""
        decoder = codecs.getincrementaldecoder(self.encoding)()
        lines_before, offset = 1, 0
        while True:
            chunk = self.stream.read(PIECE_BYTES)
            final = not chunk
            self.report.bytes_read += len(chunk)
            self.size += len(chunk)
            try:
                text = decoder.decode(chunk, final)
            except UnicodeDecodeError as error:
                good = codecs.getincrementaldecoder(self.encoding)(errors="replace")
                line = lines_before + good.decode(chunk[: error.start]).count("\n")
                self.bad_bytes.setdefault(line, offset + error.start)
                decoder = codecs.getincrementaldecoder(self.encoding)(errors="replace")
                text = decoder.decode(chunk, final)
            if offset == 0 and text.startswith("\ufeff") and codecs.lookup(self.encoding).name == "utf-8":
                text = text[1:]  # (the UTF-16 and UTF-32 decoders take their own BOM off)
            offset += len(chunk)
            lines_before += text.count("\n")
            if text:
                yield text
            if final:
                return

    def _bounded(self, chunks: Iterable[str], pieces: bool) -> Iterator[str]:
        """The lines of text chunks (cut at line feeds only), a line of over
        :data:`MAX_LINE_BYTES` characters a bad record; with ``pieces``, the chunks as they
        are (a JSON array's reader cuts them itself)."""
        if pieces:
            yield from chunks
            return
        parts: list[str] = []  # of the line being read
        size, number = 0, 0
        for chunk in chunks:
            start = 0
            while start < len(chunk):
                end = chunk.find("\n", start)
                part = chunk[start:] if end < 0 else chunk[start : end + 1]
                start += len(part)
                size += len(part)
                if size <= MAX_LINE_BYTES:
                    parts.append(part)
                else:
                    parts.clear()  # too long: nothing of it is kept
                if end >= 0:
                    number += 1
                    yield self._line(parts, size, number)
                    parts, size = [], 0
        if size:
            yield self._line(parts, size, number + 1)

    def _line(self, parts: list[str], size: int, number: int) -> str:
        if size > MAX_LINE_BYTES:
            self._line_too_long(number)
            return "\n"
        return "".join(parts)

    def check_text(self, first: int, last: int, where: str) -> InputError | None:
        """An error when lines ``first`` to ``last`` held bytes that are not text."""
        if not self.bad_bytes:
            return None
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


def _read_file(source: _Source, fmt: str) -> Iterator[Abstract]:
    report = source.report
    report.files += 1
    problem = source.binary_problem()
    if problem:
        source.options.bad(problem)
        return
    reader = {
        "txt": _read_txt,
        "csv": _read_csv,
        "tsv": _read_tsv,
        "jsonl": _read_jsonl,
        "json": _read_json,
    }
    found = 0
    headings = len(report.headings)
    skipped = len(report.skipped)
    for abstract in reader[fmt](source):
        found += 1
        report.read += 1
        yield abstract
    _note_if_empty(
        source.name,
        found,
        report,
        headings,
        skipped,
        empty=source.size == 0 and not source.is_stdin,
    )


def _note_if_empty(
    name: str, found: int, report: ReadReport, headings: int, skipped: int, empty: bool
) -> None:
    if found == 0 and len(report.skipped) == skipped:
        if len(report.headings) > headings:
            report.notes.append(f"{name}: only a heading, no abstracts")
        elif empty:
            report.notes.append(f"{name}: empty file")
        else:
            report.notes.append(f"{name}: no abstracts")


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
    text = _clean(text)
    title = normalise_whitespace(title) if title else ""
    return Abstract(id_ or _id_of_normalised(text), text, source, position, line, title, area.strip(), extra)


def _too_long(size: int, where: str) -> InputError | None:
    """The error for an abstract of ``size`` characters, if it is over the limit."""
    if size <= MAX_ABSTRACT_CHARS:
        return None
    return InputError(
        f"an abstract of {size:,} characters, over the limit of {MAX_ABSTRACT_CHARS:,}",
        where=where,
        fix="Split it (in .txt files, a blank line separates abstracts), or leave it out with --skip-bad.",
    )


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


def _read_txt(source: _Source) -> Iterator[Abstract]:
    report = source.report
    position = 0
    for index, (first, last, lines, size) in enumerate(_paragraphs(source.lines())):
        where = f"{source.name}:{first}"
        error = source.check_text(first, last, where) or _too_long(size, where)
        if error:
            source.options.bad(error)
            continue
        # A short title-like first paragraph is a heading; on stdin a single short line is
        # a (short) abstract typed or piped in on its own.
        if index == 0 and _is_heading(lines) and not source.is_stdin:
            report.headings.append(where)
            continue
        text = "".join(lines)
        if not join_broken_words(text).strip():
            continue  # only soft hyphens: blank
        position += 1
        yield _make(text, source.name, position, first)


def header_delimiter(line: str, columns: Columns, require: bool = False) -> str | None:
    """The delimiter a CSV header line splits on: the one that yields the abstract column,
    else (unless ``require``) the one that yields the most columns."""
    best, most = None, 1
    for delimiter in DELIMITERS:
        try:
            cells = next(csv.reader([line], delimiter=delimiter))
        except (csv.Error, StopIteration):
            continue
        if columns.abstract.lower() in (cell.strip().lower() for cell in cells):
            return delimiter
        if len(cells) > most:
            best, most = delimiter, len(cells)
    return None if require else best


@functools.lru_cache(maxsize=64)
def _fields_of_keys(keys: tuple[str, ...], columns: Columns) -> dict[str, str]:
    """:func:`field_names` of a JSON object's keys, remembered: the records of a file
    nearly always have the same keys. The dict returned is shared: read it, never change it."""
    return field_names(keys, columns)


def field_names(available: Sequence[str], columns: Columns) -> dict[str, str]:
    """Role (abstract, title, id, area) -> the name it has in ``available``, matched without
    regard to case; roles without a match are left out."""
    by_lower: dict[str, str] = {}
    for name in available:
        by_lower.setdefault(str(name).strip().lower(), name)
    return {
        role: by_lower[name.lower()] for role, name in columns.roles().items() if name.lower() in by_lower
    }


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


def _read_tsv(source: _Source) -> Iterator[Abstract]:
    return _read_csv(source, delimiter="\t")


def _read_csv(source: _Source, delimiter: str | None = None) -> Iterator[Abstract]:
    """CSV with a header; the delimiter (unless given) is the one the header splits on."""
    columns = source.options.columns
    lines = source.lines()
    first = next(lines, None)
    if first is None:
        return
    delimiter = delimiter or header_delimiter(first, columns) or ","
    reader = csv.reader(itertools.chain([first], lines), delimiter=delimiter, strict=True)
    try:
        header = next(reader, None)
    except csv.Error as error:
        source.options.bad(InputError(f"unreadable CSV header ({error})", where=f"{source.name}:1"))
        return
    if header is None:
        return
    problem = source.check_text(1, reader.line_num, f"{source.name}:1")
    index_of = {name: i for i, name in reversed(list(enumerate(header)))}
    fields = field_names(header, columns)
    if problem is None and "abstract" not in fields:
        problem = InputError(
            _no_abstract(header, columns, "column"),
            where=f"{source.name}:1",
            fix=COLUMN_FIX.format(what="column"),
        )
    if problem:  # the whole file is left out
        source.options.bad(problem)
        return
    index = {role: index_of[name] for role, name in fields.items()}
    keeper = _keeper(header, columns.keep)
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
            source.options.bad(
                InputError(f"malformed CSV row ({problem_text})", where=where, fix="Fix its quoting.")
            )
            continue
        if not any(cell.strip() for cell in row):
            continue  # a blank line
        problem = source.check_text(start, reader.line_num, where)
        if problem is None and len(row) != len(header):
            problem = InputError(
                f"row has {len(row)} cells, the header has {len(header)}",
                where=where,
                fix="Quote cells that contain the delimiter or line breaks.",
            )
        record = {role: row[i] for role, i in index.items()} if problem is None else {}
        problem = problem or _record_problem(record, where, "Fill it in or delete the row.")
        if problem:
            source.options.bad(problem)
            continue
        position += 1
        yield _from_record(record, source.name, position, start, extra=keeper(row))


def _record_problem(record: dict, where: str, fix: str) -> InputError | None:
    """The problem with a record's abstract (role -> value), if it has one."""
    text = record.get("abstract")
    if not isinstance(text, str):
        return None  # the caller names what is wrong with the record's shape
    if not text or text.isspace():
        return InputError("empty abstract", where=where, fix=fix)
    return _too_long(len(text), where)


def _kept(fields: Iterable[tuple[str, object]], keep: tuple[str, ...]) -> dict | None:
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
    :func:`_kept`), with the columns looked up once for the file, not in every row."""
    if not keep:
        return lambda row: None
    if keep == KEEP_ALL:
        return lambda row: dict(zip(header, row))
    at: dict[str, int] = {}
    for i, name in enumerate(header):
        at.setdefault(name.lower(), i)
    where = [(name, at.get(name.lower())) for name in keep]
    return lambda row: {name: None if i is None else row[i] for name, i in where}


def _from_record(
    record: dict,
    source: str,
    position: int,
    line: int,
    fields: Iterable[tuple[str, object]] = (),
    keep: tuple[str, ...] = (),
    *,
    extra: dict | None = None,
) -> Abstract:
    """An abstract from a record's roles (role -> value; an id may be any JSON scalar), with
    the columns ``keep`` names of all its ``fields`` (name, value pairs) in ``extra`` (or
    ``extra`` as given)."""
    identifier, title, area = record.get("id"), record.get("title"), record.get("area")
    return _make(
        record["abstract"],
        source,
        position,
        line,
        id_="" if identifier is None else str(identifier).strip(),
        title=title if isinstance(title, str) else "",
        area=area if isinstance(area, str) else "",
        extra=_kept(fields, keep) if extra is None else extra,
    )


_scan_json = json.JSONDecoder().scan_once


def _json_line(line: str):
    """``json.loads(line)``, a third faster for a line that is one JSON value (then
    whitespace): the decoder's scanner without its wrapper's regular expressions. Anything
    else goes to ``json.loads``, which reads it or raises its own error."""
    try:
        value, end = _scan_json(line, 0)
    except (StopIteration, ValueError):
        return json.loads(line)
    if end != len(line) and not line[end:].isspace():
        return json.loads(line)  # raises "Extra data"
    return value


def _object_problem(value, where: str, columns: Columns) -> tuple[dict, InputError | None]:
    """A JSON value as a record (role -> value), or why it cannot be one."""
    if not isinstance(value, dict):
        return {}, InputError(
            f"a JSON {type(value).__name__}, not an object", where=where, fix=_shape_fix(columns)
        )
    fields = _fields_of_keys(tuple(value), columns)
    record = {role: value[name] for role, name in fields.items()}
    if "abstract" not in record:
        return {}, InputError(
            _no_abstract(list(value), columns, "field"),
            where=where,
            fix=COLUMN_FIX.format(what="field"),
        )
    if not isinstance(record["abstract"], str):
        kind = type(record["abstract"]).__name__
        return {}, InputError(
            f"{fields['abstract']!r} is a {kind}, not a string", where=where, fix=_shape_fix(columns)
        )
    return record, _record_problem(record, where, "Fill it in or remove this record.")


def _shape_fix(columns: Columns) -> str:
    return f'Write each record as {{"{columns.abstract}": "..."}}.'


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _surrogate_problem(text: str, value, where: str) -> InputError | None:
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


def _read_jsonl(source: _Source) -> Iterator[Abstract]:
    position = 0
    for number, line in enumerate(source.lines(), start=1):
        if not line or line.isspace():
            continue
        where = f"{source.name}:{number}"
        problem = source.check_text(number, number, where)
        record: dict = {}
        if problem is None:
            try:
                value = _json_line(line)
            except (ValueError, RecursionError) as error:
                problem = InputError(
                    f"not valid JSON ({_json_error(error)})",
                    where=where,
                    fix="Fix or remove this line.",
                )
            else:
                record, problem = _object_problem(value, where, source.options.columns)
                problem = problem or _surrogate_problem(line, value, where)
        if problem:
            source.options.bad(problem)
            continue
        position += 1
        yield _from_record(record, source.name, position, number, value.items(), source.options.columns.keep)


def _read_json(source: _Source) -> Iterator[Abstract]:
    """A JSON array of objects, read one element at a time: the file is never held whole
    (unless it is all on one line), and each character is scanned a bounded number of times."""
    decoder = json.JSONDecoder()
    pieces = source.lines(pieces=True)  # lines, and a long line in pieces
    buffer, at, at_line = "", 0, 1  # text read and not yet parsed: buffer[at:], from line at_line
    opened, position = False, 0

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
                source.options.bad(
                    InputError("the JSON array is not closed", where=f"{source.name}:{at_line}")
                )
            return
        char = buffer[at]
        if not opened:
            if char != "[":
                fix = "Write the records as a JSON array, or one object a line in a .jsonl file."
                source.options.bad(InputError("not a JSON array", where=f"{source.name}:1", fix=fix))
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
                source.options.bad(
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
            source.options.bad(
                InputError(
                    f"not valid JSON ({error.msg})", where=f"{source.name}:{line}", fix="Fix this record."
                )
            )
            return
        except (ValueError, RecursionError) as error:
            source.options.bad(InputError(f"not valid JSON ({_json_error(error)})", where=where))
            return
        start, text = at_line, buffer[at:end]
        advance(end)
        problem = source.check_text(start, at_line, where)
        record: dict = {}
        if problem is None:
            record, problem = _object_problem(value, where, source.options.columns)
            problem = problem or _surrogate_problem(text, value, where)
        if problem:
            source.options.bad(problem)
            continue
        position += 1
        yield _from_record(record, source.name, position, start, value.items(), source.options.columns.keep)


def _read_parquet(path: Path, options: _Options) -> Iterator[Abstract]:
    """A Parquet file's rows, a batch at a time (needs pyarrow: ``pip install 'tagger[parquet]'``)."""
    report = options.report
    try:
        import pyarrow.parquet as parquet
    except ImportError:
        options.bad(
            InputError(
                "reading .parquet needs pyarrow",
                where=str(path),
                fix="pip install 'tagger[parquet]'",
            )
        )
        return
    try:
        table = parquet.ParquetFile(path)
    except (OSError, ValueError) as error:
        options.bad(
            InputError(f"not a readable Parquet file ({error})", where=str(path), fix="Leave it out.")
        )
        return
    report.files += 1
    name = display_name(path)
    names = table.schema_arrow.names
    fields = field_names(names, options.columns)
    twice = next((n for n in fields.values() if names.count(n) > 1), None)
    if twice is not None:
        options.bad(
            InputError(f"{names.count(twice)} columns named {twice!r}", where=name, fix="Rename all but one.")
        )
        return
    if "abstract" not in fields:
        options.bad(
            InputError(
                _no_abstract(names, options.columns, "column"),
                where=str(path),
                fix=COLUMN_FIX.format(what="column"),
            )
        )
        return
    position = row_number = found = 0
    skipped = len(report.skipped)
    keep = options.columns.keep
    kept_names = (
        []
        if not keep
        else names
        if keep == KEEP_ALL
        else [n for n in names if n.lower() in {k.lower() for k in keep}]
    )
    read = list(dict.fromkeys([*fields.values(), *kept_names]))
    for batch in _batches(table, read, name, options):
        report.bytes_read += batch.nbytes
        values_of = {name: batch.column(name).to_pylist() for name in read}
        for i in range(batch.num_rows):
            row_number += 1
            record = {role: values_of[name][i] for role, name in fields.items()}
            where = f"{name}:row {row_number}"
            problem = None
            if not isinstance(record["abstract"], str):
                problem = InputError(
                    f"{fields['abstract']!r} is empty or not text", where=where, fix="Fill it in."
                )
            problem = problem or _record_problem(record, where, "Fill it in or remove this row.")
            if problem:
                options.bad(problem)
                continue
            position += 1
            found += 1
            report.read += 1
            kept = ((name, values_of[name][i]) for name in kept_names)
            yield _from_record(record, name, position, row_number, kept, keep)
    _note_if_empty(name, found, report, len(report.headings), skipped, empty=row_number == 0)


def _batches(table, columns: list[str], name: str, options: _Options):
    """The record batches of a Parquet file; damaged data ends the file as one bad record
    (its message's first line, printable)."""
    import pyarrow

    batches = table.iter_batches(columns=columns)
    while True:
        try:
            batch = next(batches, None)
        except (OSError, ValueError, pyarrow.ArrowException) as error:
            first = str(error).strip().split("\n")[0]
            reason = "".join(c if c.isprintable() else " " for c in first)[:200]
            options.bad(InputError(f"damaged Parquet data ({reason})", where=name, fix="Leave it out."))
            return
        if batch is None:
            return
        yield batch
