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
    if not path.is_file():  # its frames are checked whole before it is read: a file read once can't be
        raise InputError(
            "a .zst that is not a regular file (a pipe?) cannot be checked whole before it is read",
            where=display_name(path),
            fix=f"Decompress it into tagger instead: zstd -dc {display_name(path)} | tagger predict -",
        )
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
        import zstandard

        try:
            return self.reader.readinto(buffer)
        except zstandard.ZstdError as error:  # a bad checksum, corrupt blocks: damaged, as gzip's are
            raise zlib.error(str(error)) from None

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
