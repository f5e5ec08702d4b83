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
import errno
import io
import lzma
import os
import re
import stat
import sys
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from .._version import install_hint
from ..errors import InputError
from ..formats import COMPRESSIONS, compression_of, format_of, split_name
from ..formats import READ as FORMATS
from ..text import MAX_ABSTRACT_CHARS
from .abstracts import KEEP_ALL, Abstract, Columns, abstract_id, document, normalise_whitespace
from .files import FORMAT_LIST, STDIN, STDIN_NAME, display_name, find_files, open_file
from .readers import PATH_READERS, READERS
from .readers.csv import DELIMITERS, header_delimiter, looks_like_header
from .readers.ris import is_wos_text
from .records import abstract_from_record, abstracts_of_records, field_names, record_problem
from .source import MAX_LINE_BYTES, NOT_FOR_FILES, PIECE_BYTES, ReadOptions, ReadReport, Source

__all__ = [  # what the rest of tagger (and a user) reads abstracts with
    "DELIMITERS",
    "FORMATS",
    "FORMAT_LIST",
    "KEEP_ALL",
    "MAX_ABSTRACT_CHARS",
    "MAX_LINE_BYTES",
    "PIECE_BYTES",
    "STDIN",
    "STDIN_NAME",
    "Abstract",
    "Columns",
    "ReadReport",
    "abstract_id",
    "display_name",
    "document",
    "field_names",
    "find_files",
    "format_of",
    "header_delimiter",
    "normalise_whitespace",
    "read_abstracts",
    "read_texts",
]


def read_abstracts(  # noqa: PLR0913 (the public keyword options)
    paths: Iterable[str | os.PathLike],
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
    options = _options(input_format, encoding, skip_bad, report, columns)
    return _read_files(find_files(paths, options.report, skip_bad), options, stdin)


def _options(
    input_format: str | None,
    encoding: str,
    skip_bad: bool,
    report: ReadReport | None,
    columns: Columns | None,
) -> ReadOptions:
    """A read's options, checked before anything is read: the encoding, the format."""
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
    report = report if report is not None else ReadReport()
    return ReadOptions(input_format, encoding, skip_bad, columns or Columns(), report)


def read_texts(texts: Iterable[str], report: ReadReport, source: str = "<text>") -> Iterator[Abstract]:
    """Abstracts given as text (``--text`` of ``predict`` and ``explain``), under the rules of
    a file's: an empty one or one over the limit is an error naming which (``<text> 2``)."""
    texts = list(texts)
    for position, text in enumerate(texts, start=1):
        where = f"{source} {position}" if len(texts) > 1 else source
        if problem := record_problem({"abstract": text}, where):
            raise problem
    report.read += len(texts)
    for position, text in enumerate(texts, start=1):
        yield abstract_from_record({"abstract": text}, source, position, 1, None)


def _read_files(files: list[Path], options: ReadOptions, stdin: IO | None) -> Iterator[Abstract]:
    sheet = options.columns.sheet
    if sheet is not None and not any(
        str(path) != STDIN and (options.input_format or format_of(path)) == "xlsx" for path in files
    ):
        options.report.notes.append(f"--sheet {sheet!r} read no workbook: no input is an .xlsx file")
    for path in files:
        if str(path) == STDIN:
            stream = stdin if stdin is not None else getattr(sys.stdin, "buffer", sys.stdin)
            source = Source(STDIN_NAME, stream, options, is_stdin=True)
            if options.input_format in PATH_READERS:
                options.bad(
                    InputError(
                        f"{options.input_format} is not read from standard input",
                        where=STDIN_NAME,
                        fix=f"Give the .{options.input_format} file's path instead of -.",
                    )
                )
                continue
            yield from _read_file(source, options.input_format or _sniff_stdin(source))
            continue
        fmt = options.input_format or format_of(path)
        _note_forced_format(path, options)
        if fmt is None:
            unknown = InputError(
                f"unknown file type {path.suffix or '(no extension)'!r}",
                where=str(path),
                fix=f"Use one of {FORMAT_LIST}, or say which with --input-format.",
            )
            options.bad(unknown)
            continue
        if fmt in PATH_READERS:
            rows = [0]
            records = PATH_READERS[fmt](path, options, rows)

            def empty(rows: list[int] = rows) -> bool:
                return not rows[0]

            yield from abstracts_of_records(display_name(path), records, options, empty)
            continue
        try:
            stream = open_file(path)
        except InputError as error:
            options.bad(error)
            continue
        except OSError as error:
            options.bad(InputError(f"cannot read ({error.strerror or error})", where=str(path)))
            continue
        except ImportError as error:
            options.bad(InputError(str(error), where=str(path), fix=install_hint("zstd")))
            continue
        with stream:
            try:
                plain = path if compression_of(path.name) is None else None
                opened = _status(stream, path)
                yield from _read_file(Source(display_name(path), stream, options, path=plain), fmt)
                if _written_to(opened, _status(stream, path)):
                    raise InputError(
                        "was written to while it was being read: its rows would mix two versions of it",
                        where=str(path),
                        fix="Tag a copy that nothing writes to while it is read.",
                    )
            except (
                OSError,
                EOFError,
                zlib.error,
                lzma.LZMAError,
            ) as error:  # a damaged compressed file
                if isinstance(error, OSError) and error.errno in (errno.EMFILE, errno.ENFILE):
                    raise InputError(  # (no damage: the system's limit of open files, for the whole run)
                        f"too many files open at once ({error.strerror})",
                        where=str(path),
                        fix="Raise the limit (ulimit -n 4096), or tag fewer files in one run.",
                    ) from None
                kind = COMPRESSIONS.get(compression_of(path.name) or "", "file")
                options.bad(
                    InputError(f"damaged {kind} data ({error})", where=str(path), fix="Leave it out.")
                )


def _status(stream: IO, path: Path) -> os.stat_result:
    try:
        return os.fstat(stream.fileno())
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
        return os.stat(path)


def _written_to(before: os.stat_result, after: os.stat_result) -> bool:
    """Whether a regular file was written to while it was read: its size or modification
    time changed, or the time of its status change while its links stayed as many (``touch
    -r`` sets the modification time back, never that one; a file deleted or replaced by
    another changes it too, and is read to its end from the descriptor held). Never for a
    pipe or a device, whose times move as data passes."""
    if not stat.S_ISREG(before.st_mode):
        return False
    return (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns) or (
        before.st_ctime_ns != after.st_ctime_ns and before.st_nlink == after.st_nlink
    )


def _note_forced_format(path: Path, options: ReadOptions) -> None:
    """A note when ``--input-format`` reads a file as another format than its name says."""
    forced, (form, _) = options.input_format, split_name(path)
    if forced is not None and form is not None and forced != form.name:
        options.report.notes.append(
            f"{display_name(path)}: read as {forced} (--input-format), though its name says {form.said}"
        )


def _sniff_stdin(source: Source) -> str:
    """The format of standard input from its first bytes, as a file's name would say it:
    BibTeX when it starts with an entry (``@article{``, after any comment lines), RIS with
    ``TY  -``, XML (an Atom feed) with ``<``, JSON lines when it starts with ``{``, a JSON
    array with ``[``, CSV when its first line is a header (one naming the abstract column, or
    short cells in the same number as the next line's), otherwise text (which is then read as
    a text file is: Web of Science's plain text, tab-separated values, or prose). Any format
    but text is noted in the report."""
    text = source.head()
    first_line, _, rest = text.lstrip().partition("\n")
    first_line = first_line.rstrip("\r")
    fmt = "txt"
    if re.match(r"(\s*%[^\n]*\n)*\s*@\s*[A-Za-z]+\s*[{(]", text):
        fmt = "bib"
    elif re.match(r"TY  -", first_line):
        fmt = "ris"
    elif first_line.startswith("<"):
        fmt = "xml"
    elif first_line.startswith("{"):
        fmt = "jsonl"
    elif first_line.startswith("["):
        fmt = "json"
    elif header_delimiter(first_line, source.options.columns, require=True) or looks_like_header(
        first_line, rest.split("\n", 1)[0]
    ):
        fmt = "csv"
    said = "text" if fmt == "txt" else fmt
    source.options.report.notes.append(
        f"{STDIN_NAME}: read as {said} (from its first line; --input-format says otherwise)"
    )
    return fmt


def _tab_header(source: Source) -> bool:
    """Whether a .txt file is a table of tab-separated values, as Web of Science saves its
    exports (``savedrecs.txt``: a header of field tags, PT AU TI ... AB ... UT): its first
    line splits on tabs into cells one of which names the abstract column. Noted when so."""
    first = source.head().split("\n", 1)[0].rstrip("\r")
    cells = first.split("\t")
    column = field_names(cells, source.options.columns).get("abstract") if len(cells) >= 3 else None
    if column is None:
        return False
    source.report.notes.append(
        f"{source.name}: read as tab-separated values, its first line a header of {len(cells)} "
        f"columns (abstracts in {column!r}: a Web of Science export?)"
    )
    return True


def _read_file(source: Source, fmt: str) -> Iterator[Abstract]:
    problem = source.binary_problem()
    if fmt == "txt" and not problem and not source.options.input_format:
        fmt = "wos" if is_wos_text(source) else "tsv" if _tab_header(source) else fmt
    records = [problem] if problem else READERS[fmt](source)
    yield from abstracts_of_records(source.name, records, source.options, source.is_empty_file)
