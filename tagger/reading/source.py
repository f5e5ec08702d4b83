"""A file's text, decoded a piece at a time in bounded memory, with the bytes that are not
text remembered by line; the options and report of a read."""

from __future__ import annotations

import codecs
import csv
import io
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ..errors import InputError
from .abstracts import Columns

# No line of a record is longer (a JSON line of a longest abstract, every character escaped as
# \uXXXX, is 30 MB): a longer one is a bad record, left out without being held in memory.
MAX_LINE_BYTES = 32 * 2**20


PIECE_BYTES = 2**20  # text is decoded, and a one-line JSON array read, this much at a time


class Tally:
    """How often a pattern (a match of under ``reach`` characters) occurs in text or bytes
    fed a chunk at a time, in bounded memory: what says how many records were not read when
    a syntax error ends a file's reading (a JSON array, an Atom feed)."""

    def __init__(self, pattern: re.Pattern, reach: int = 256) -> None:
        self.pattern, self.reach = pattern, reach
        self._count, self._carry = 0, None

    def feed(self, chunks: Iterable) -> Tally:
        for chunk in chunks:
            text = chunk if self._carry is None else self._carry + chunk
            cut = max(len(text) - self.reach, 0)  # (a match starting later is counted with the next)
            self._count += sum(1 for match in self.pattern.finditer(text) if match.start() < cut)
            self._carry = text[cut:]
        return self

    @property
    def count(self) -> int:
        return self._count + (
            0 if self._carry is None else sum(1 for _ in self.pattern.finditer(self._carry))
        )


csv.field_size_limit(MAX_LINE_BYTES)  # a quoted field over many lines is bounded too (set once)


NOT_FOR_FILES = ("idna", "punycode")  # text codecs for domain names, not for files


ENCODING_FIX = "Convert it to UTF-8, or name its encoding with --encoding (for example --encoding latin-1)."


@dataclass
class ReadReport:
    """Everything a read saw besides the abstracts it returned; filled in while reading."""

    read: int = 0
    files: int = 0
    bytes_read: int = 0
    headings: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Records with nothing in the abstract (a reference export's editorial, a row with a
    # title alone): nothing to tag, so left out, each where (file:line) and its id if it has one.
    without_abstract: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ReadOptions:
    input_format: str | None
    encoding: str
    skip_bad: bool
    columns: Columns
    report: ReadReport

    def bad(self, error: InputError) -> None:
        bad_record(error, self.skip_bad, self.report)


def bad_record(error: InputError, skip_bad: bool, report: ReadReport) -> None:
    """Stop on a bad record, or note it and go on."""
    if not skip_bad:
        raise error
    report.skipped.append(str(error))


class Source:
    """A file's lines, decoded one at a time, remembering which lines held bytes that are not
    text in the encoding (they are decoded with replacement characters and reported)."""

    def __init__(
        self,
        name: str,
        stream: IO,
        options: ReadOptions,
        is_stdin: bool = False,
        *,
        path: Path | None = None,
    ) -> None:
        self.name = name
        self.options = options
        self.report = options.report
        self.stream = stream
        self.encoding = options.encoding
        self.is_stdin = is_stdin
        self.bad_bytes: dict[int, int] = {}  # line number -> byte offset of its first bad byte
        # Where the reading stands: lines read and bytes read (the size, once all is read).
        self.lines_read = 0
        self.size = 0
        self.path = path  # the file, where the stream is its bytes as they stand (not decompressed)

    def lines(self, pieces: bool = False) -> Iterator[str]:
        """The text's lines, cut at line feeds, line ends kept, in bounded memory: a line of
        over :data:`MAX_LINE_BYTES` is a bad record (reported, its place kept by a blank
        line) unless ``pieces``, when long lines come in pieces of at most :data:`PIECE_BYTES`
        (a JSON array on one line). Bytes that are not text in the encoding are replaced, and
        their lines remembered for :meth:`check_text`."""
        if isinstance(self.stream, io.TextIOBase):  # already text (a caller's stdin)
            yield from self._bounded(iter(lambda: self.stream.readline(MAX_LINE_BYTES), ""), pieces)
            return
        if pieces or not self.can_cut():
            yield from self._bounded(self._decoded_chunks(), pieces)
            return
        for number, start, raw in self.raw_lines():
            if raw is None:
                self._line_too_long(number)
                yield "\n"
                continue
            try:
                text = raw.decode(self.encoding)
            except UnicodeDecodeError as error:
                self.bad_bytes[number] = start + error.start
                text = raw.decode(self.encoding, errors="replace")
            yield text

    def is_empty_file(self) -> bool:
        """Whether it was a file with nothing in it (standard input is never said empty)."""
        return self.size == 0 and not self.is_stdin

    def can_cut(self) -> bool:
        """Whether the text's lines can be cut apart as bytes (see :meth:`raw_lines`): a binary
        stream in an encoding where a line feed is one byte of its own (not UTF-16 or 32)."""
        return not isinstance(self.stream, io.TextIOBase) and not codecs.lookup(
            self.encoding
        ).name.startswith(("utf-16", "utf-32"))

    def raw_lines(self) -> Iterator[tuple[int, int, bytes | None]]:
        """(number, byte offset, bytes) of each line from where the reading stands, a line of
        over :data:`MAX_LINE_BYTES` as None (the rest of it skipped, unread), a UTF-8 file's
        byte-order mark taken off."""
        codec = codecs.lookup(self.encoding).name
        while raw := self.stream.readline(MAX_LINE_BYTES):
            if self.size == 0 and codec == "utf-8" and raw.startswith(codecs.BOM_UTF8):
                raw, self.size = raw[3:], 3
            self.lines_read += 1
            start = self.size
            self.size += len(raw)
            self.report.bytes_read += len(raw)
            if len(raw) == MAX_LINE_BYTES and not raw.endswith(b"\n"):
                self.size += self._skip_rest_of_line()
                yield self.lines_read, start, None
                continue
            yield self.lines_read, start, raw

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

    def head(self, size: int = 65536) -> str:
        """The text of the stream's first ``size`` bytes, without a byte-order mark, read
        without taking them from the stream (what format sniffing looks at); empty where the
        stream cannot be peeked."""
        peek = getattr(self.stream, "peek", None)
        data = peek(size)[:size] if peek else b""
        return data.decode(self.encoding, errors="replace").lstrip("\ufeff")

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
