"""Where a reader's records become abstracts, counted by file: a file read whole in this
process, or a JSON-lines file read in pieces in any process and put back together here.

A large JSON-lines file is parsed where it is tagged: this process reads its first lines as
any file (its first record is checked here: a ``--keep`` typo, the export's field names), then
cuts the rest into :class:`Piece` s of raw lines, each with where it stands in the file (its
first line's number and byte offset). A piece is read anywhere (:func:`read_piece`: decoded,
parsed, cleaned, its ids made) by the same readers a whole file goes through, and its
:class:`PieceRead` is put back in this process, in input order (:meth:`FileInPieces.merge`):
positions counted on from the pieces before, the report's records added, the first bad record
raised as reading the file whole would raise it. The abstracts, their ids, the errors and the
notes are the same whichever way a file is read.
"""

from __future__ import annotations

import io
import os
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO

from ..errors import InputError
from ..text import empty
from .abstracts import Abstract, Columns
from .readers.json import KeptInJson, jsonl_values, records_of_json_values
from .records import Record, abstract_from_record, record_problem
from .source import Cutting, ReadOptions, ReadReport, Source


class _Count:
    """Records of a file seen so far (its positions) and abstracts found."""

    __slots__ = ("found", "position")

    def __init__(self) -> None:
        self.position = self.found = 0


def _abstracts_of(
    name: str, records: Iterable[Record | InputError], options: ReadOptions, count: _Count
) -> Iterator[Abstract]:
    """The one place where a reader's records become abstracts: a bad record goes to
    ``--skip-bad`` (or stops the read), the abstract's limits are applied, positions are
    counted (a record skipped keeps its number: positions are the input's, for joining back)."""
    report = options.report
    for record in records:
        count.position += 1
        if isinstance(record, InputError):
            options.bad(record)
            continue
        fields = record.fields or {}  # (None: a blank line of a table, which no reader of abstracts gives)
        if _without_abstract(fields):
            identifier = fields.get("id")
            named = f" ({identifier})" if identifier not in (None, "") else ""
            report.without_abstract.append(f"{record.where}{named}")
            continue
        if problem := record_problem(fields, record.where):
            options.bad(problem)
            continue
        count.found += 1
        report.read += 1
        yield abstract_from_record(fields, name, count.position, record.line, record.kept)


def abstracts_of_records(
    name: str, records: Iterable[Record | InputError], options: ReadOptions, empty: Callable[[], bool]
) -> Iterator[Abstract]:
    """The abstracts of a file's records, and its report kept: what was read, and a note when
    the file held none."""
    ending = _FileEnding(name, options)
    yield from _abstracts_of(name, records, options, ending.count)
    ending.note_if_empty(empty())


class _FileEnding:
    """What is said once a file is read: a note when it held no abstracts."""

    def __init__(self, name: str, options: ReadOptions) -> None:
        self.name, self.report = name, options.report
        self.report.files += 1
        self.headings = len(self.report.headings)
        self.skipped = len(self.report.skipped) + len(self.report.without_abstract)
        self.count = _Count()

    def note_if_empty(self, empty: bool) -> None:
        report = self.report
        if self.count.found or len(report.skipped) + len(report.without_abstract) != self.skipped:
            return
        if len(report.headings) > self.headings:
            report.notes.append(f"{self.name}: only a heading, no abstracts")
        elif empty:
            report.notes.append(f"{self.name}: empty file")
        else:
            report.notes.append(f"{self.name}: no abstracts")


def _without_abstract(fields: dict) -> bool:
    """Whether a record (its fields) has nothing in its abstract: it is left out and counted
    (a reference export always has some such records), not a bad record that stops the run."""
    text = fields.get("abstract")
    return text is None or (isinstance(text, str) and (empty(text) or text in NO_ABSTRACT))


NO_ABSTRACT = {"[No abstract available]"}  # what Scopus writes in a record's empty abstract


@dataclass(frozen=True)
class Piece:
    """Lines of a JSON-lines file and where they stand in it: what a worker reads. The lines
    are a range of bytes of the file the run opened (``opened``, ``first_byte``, ``size``: read
    there, by the process that reads the piece), or, where the file cannot be read again by offset (it is
    compressed, or standard input), its bytes (``data``)."""

    name: str  # the file's, as errors name it
    first_line: int
    first_byte: int
    size: int  # of the range (0 with data)
    encoding: str
    skip_bad: bool
    columns: Columns
    opened: OpenedFile | None = None  # the file the run opened (read there), or None:
    data: bytes = b""  # the bytes handed over
    too_long: frozenset[int] = frozenset()  # lines over MAX_LINE_BYTES (in data, a blank line each)

    def stream(self) -> IO[bytes]:
        """The piece's bytes: the data handed over, or the range of the file the run opened
        (never another file found under its name since)."""
        if self.opened is None:
            return io.BytesIO(self.data)
        file = self.opened.reopen(self.name)
        file.seek(self.first_byte)
        return io.BufferedReader(_Range(file, self.size))


@dataclass(frozen=True)
class OpenedFile:
    """A file as a run opened it, to be read again by offset in any process: its path, where
    the opening process's descriptor can be opened again (Linux's ``/proc/PID/fd/N``, which
    reaches the file the run opened even once its name is moved, replaced or deleted), and
    what identifies its contents (device, inode, size, time of last change, and the time of the
    last change of its status with its links: see :func:`_status_changed`)."""

    path: str
    descriptor: str | None
    identity: tuple[int, int, int, int]
    status: tuple[int, int]  # the time of its last status change, and its links

    @classmethod
    def of(cls, path: str | os.PathLike, stream: IO[bytes], owner: object) -> OpenedFile:
        """The file ``stream`` reads, its descriptor held open as long as ``owner`` lives."""
        held = os.dup(stream.fileno())
        weakref.finalize(owner, os.close, held)
        descriptor = f"/proc/{os.getpid()}/fd/{held}"
        status = os.fstat(held)
        return cls(
            os.path.abspath(path),
            descriptor if os.path.exists(descriptor) else None,
            _identity(status),
            (status.st_ctime_ns, status.st_nlink),
        )

    def reopen(self, name: str) -> IO[bytes]:
        """The file opened again, for reading bytes; one clear error when it changed since."""
        for where in (self.descriptor, self.path):
            if not where:
                continue
            try:
                file = open(where, "rb")  # noqa: SIM115 (closed with the reader)
            except OSError:
                continue
            status = os.fstat(file.fileno())
            if _identity(status) == self.identity and not _status_changed(self.path, self.status, status):
                return file
            file.close()
            if _identity(status) == self.identity:
                break  # (rewritten in place, its old time set back: the path names the same file)
        raise changed_while_read(name)

    def check(self, name: str) -> None:
        """One clear error when the file changed since it was opened."""
        self.reopen(name).close()


def _identity(status: os.stat_result) -> tuple[int, int, int, int]:
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)


def _status_changed(path: str, opened: tuple[int, int], status: os.stat_result) -> bool:
    """Whether a file was changed in place since it was opened though its size and modification
    time are as they were (rewritten with its old time set back: ``rsync --inplace -t``,
    ``touch -r``): the time of its last status change moved while its name still names it with
    as many links (a file replaced, deleted or moved changes that time too, and is read on)."""
    ctime, links = opened
    if status.st_ctime_ns == ctime or status.st_nlink != links:
        return False
    try:
        named = os.stat(path)
    except OSError:
        return False
    return (named.st_dev, named.st_ino) == (status.st_dev, status.st_ino)


def changed_while_read(name: str) -> InputError:
    return InputError(
        "changed while it was being read (written to, replaced or moved): its rows would mix two files",
        where=name,
        fix="Tag a copy that nothing writes to while it is read.",
    )


class _Range(io.RawIOBase):
    """The next ``size`` bytes of a file, and nothing after them."""

    def __init__(self, file: IO[bytes], size: int) -> None:
        self.file, self.left = file, size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.file.read(min(len(buffer), self.left))
        buffer[: len(data)] = data
        self.left -= len(data)
        return len(data)

    def close(self) -> None:
        self.file.close()
        super().close()


@dataclass
class PieceRead:
    """What reading a piece gave: its abstracts (positions counted from the piece's start),
    its records, its report, the first bad record (without ``--skip-bad``), and the
    ``--keep`` names none of its records had."""

    abstracts: list[Abstract]
    records: int
    report: ReadReport
    error: InputError | None = None
    unseen: frozenset[str] = frozenset()


def read_piece(piece: Piece) -> PieceRead:
    """A piece's abstracts, read as reading its whole file reads them (in any process)."""
    report = ReadReport()
    options = ReadOptions("jsonl", piece.encoding, piece.skip_bad, piece.columns, report)
    try:
        opened = piece.stream()
    except InputError as changed:
        return PieceRead([], 0, report, changed)
    with opened as stream:
        source = Source(
            piece.name,
            stream,
            options,
            first_line=piece.first_line,
            first_byte=piece.first_byte,
            too_long=piece.too_long,
        )
        kept = KeptInJson(source, first=False)
        count = _Count()
        abstracts: list[Abstract] = []
        error = None
        try:
            records = records_of_json_values(source, jsonl_values(source), kept)
            abstracts.extend(_abstracts_of(piece.name, records, options, count))
        except InputError as stop:
            error = stop
    return PieceRead(abstracts, count.position, report, error, frozenset(kept.unseen))


@dataclass(eq=False)
class PieceTask:
    """A piece to read (anywhere), and how its reading is put back in this process."""

    piece: Piece
    merge: Callable[[PieceRead], list[Abstract]]


@dataclass(eq=False)
class FileEnd:
    """The end of a file read in pieces: ``finish`` once every piece is put back."""

    finish: Callable[[], None]


@dataclass(eq=False)
class FileInPieces:
    """A JSON-lines file read in pieces: its first lines read here, the rest cut into pieces
    read anywhere and put back in order (see the module's docstring)."""

    source: Source
    cutting: Cutting
    kept: KeptInJson = field(init=False)
    ending: _FileEnding = field(init=False)
    opened: OpenedFile | None = field(init=False, default=None)  # where pieces are read by offset

    def __post_init__(self) -> None:
        self.kept = KeptInJson(self.source)
        self.ending = _FileEnding(self.source.name, self.source.options)

    def read(self) -> Iterator[Abstract | PieceTask | FileEnd]:
        source = self.source
        head_lines = self.cutting.head_lines
        source.pause_after = lambda lines: lines >= head_lines and not self.kept.first
        yield from _abstracts_of(
            source.name,
            records_of_json_values(source, jsonl_values(source), self.kept),
            source.options,
            self.ending.count,
        )
        source.pause_after = None
        for piece in self._pieces():
            yield PieceTask(piece, self.merge)
        yield FileEnd(self.finish)

    def _pieces(self) -> Iterator[Piece]:
        """The rest of the file in pieces of about ``cutting.piece_bytes``, cut at line ends."""
        source, options = self.source, self.source.options
        common = (options.encoding, options.skip_bad, options.columns)
        if source.path is not None and source.stream.seekable():  # read again where it is read
            at = source.stream.tell()
            if not source.stream.read(1):  # (nothing after the head: no piece, no descriptor held)
                return
            source.stream.seek(at)
            self.opened = opened = OpenedFile.of(source.path, source.stream, self)
            start, first_line = source.size, source.lines_read + 1
            while block := source.stream.read(self.cutting.piece_bytes):
                source.report.bytes_read += len(block)
                block_start, end = source.size, block.rfind(b"\n")
                source.size += len(block)
                source.lines_read += block.count(b"\n")
                if end >= 0:
                    cut = block_start + end + 1
                    yield Piece(source.name, first_line, start, cut - start, *common, opened)
                    start, first_line = cut, source.lines_read + 1
            if source.size > start:  # a last line without a line end
                yield Piece(source.name, first_line, start, source.size - start, *common, opened)
            return
        lines: list[bytes] = []  # else the bytes are handed over, a line at a time
        too_long: list[int] = []  # (not held: the reader of the piece says they are too long)
        first_line, first_byte = source.lines_read + 1, source.size

        def handed_over() -> Piece:
            data = b"".join(lines)
            return Piece(source.name, first_line, first_byte, 0, *common, None, data, frozenset(too_long))

        for number, _, raw in source.raw_lines():
            if raw is None:
                too_long.append(number)
            lines.append(raw or b"\n")
            if source.size - first_byte >= self.cutting.piece_bytes:
                yield handed_over()
                lines, too_long = [], []
                first_line, first_byte = source.lines_read + 1, source.size
        if lines:
            yield handed_over()

    def merge(self, read: PieceRead) -> list[Abstract]:
        """A piece's abstracts put back: positions counted on, the report's records added
        (its first bad record, ``read.error``, is for the caller to raise once the abstracts
        before it are out)."""
        report, theirs = self.source.report, read.report
        report.read += theirs.read
        report.skipped += theirs.skipped
        report.without_abstract += theirs.without_abstract
        report.notes += theirs.notes
        count = self.ending.count
        offset = count.position
        count.position += read.records
        count.found += len(read.abstracts)
        self.kept.unseen = {key: name for key, name in self.kept.unseen.items() if key in read.unseen}
        return [abstract._replace(position=abstract.position + offset) for abstract in read.abstracts]

    def finish(self) -> None:
        if self.opened is not None:
            self.opened.check(self.source.name)
        self.kept.finish()
        self.ending.note_if_empty(self.source.is_empty_file())
