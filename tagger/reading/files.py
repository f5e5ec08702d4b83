"""Which files a path names (folders walked, odd files noted), what format each is, and
opening it through its decompressor."""

from __future__ import annotations

import errno
import importlib
import io
import os
import stat
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import IO, cast

from ..errors import InputError
from ..formats import COMPRESSIONS, READ, compression_of, format_of
from .source import ReadReport, bad_record

STDIN = "-"


STDIN_NAME = "<stdin>"


FORMAT_LIST = f".{', .'.join(READ)} (compressed too)"


def find_files(paths: Iterable[str | os.PathLike], report: ReadReport, skip_bad: bool = False) -> list[Path]:
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
            bad_record(
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


def display_name(path: str | os.PathLike) -> str:
    """A path as text that can be written anywhere: bytes of a file name that are not UTF-8
    escaped as ``\\xe9`` (``os.fsdecode`` keeps them as surrogates, which UTF-8 cannot hold)."""
    name = str(path)
    if name.isascii():
        return name
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def open_file(path: Path) -> IO[bytes]:
    """A file opened for reading bytes, through its decompressor (streaming)."""
    compression = compression_of(path.name)
    if compression is None:
        return open(path, "rb")
    if COMPRESSIONS[compression] != "zstandard":  # (gzip, bz2 and lzma open alike)
        return cast(IO[bytes], importlib.import_module(COMPRESSIONS[compression]).open(path, "rb"))
    try:
        import zstandard
    except ImportError:
        raise ImportError("reading .zst files needs the zstandard package") from None
    return io.BufferedReader(_Zstandard(open(path, "rb"), zstandard))  # (the file closed with it)


class _Zstandard(io.RawIOBase):
    """A zstandard file decompressed frame after frame, as it streams in: ``EOFError`` when
    it ends inside a frame (cut short: zstandard's own stream reader ends there quietly, where
    gzip, bzip2 and xz say so), and a corrupt block ``zlib.error``, as damage is for gzip."""

    def __init__(self, compressed: IO[bytes], zstandard) -> None:
        self.compressed, self.zstandard = compressed, zstandard
        self.frame = zstandard.ZstdDecompressor().decompressobj()
        self.inside, self.ended, self.pending = False, False, b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self.pending and not self.ended:
            chunk = self.compressed.read(2**17)
            if not chunk:
                if self.inside:
                    raise EOFError("compressed file ended before the end-of-stream marker was reached")
                self.ended = True
            out = []
            try:
                while chunk:
                    out.append(self.frame.decompress(chunk))
                    self.inside, chunk = not self.frame.eof, b""
                    if self.frame.eof:  # the next frame, if any, starts with what is left
                        chunk = self.frame.unused_data
                        self.frame = self.zstandard.ZstdDecompressor().decompressobj()
            except self.zstandard.ZstdError as error:  # a bad checksum, corrupt blocks: damaged
                raise zlib.error(str(error)) from None
            self.pending = b"".join(out)
        size = min(len(buffer), len(self.pending))
        buffer[:size], self.pending = self.pending[:size], self.pending[size:]
        return size

    def close(self) -> None:
        self.compressed.close()
        super().close()
