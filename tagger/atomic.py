"""Writing files so that a reader (or a crash) only ever sees the old or the new content."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary file beside ``path``; on success it replaces ``path`` in one rename,
    on any error (or interruption) it is removed and ``path`` is untouched."""
    path = Path(path)
    binary = "b" in mode
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(temporary, _permissions(path))
        with open(
            descriptor, mode, encoding=None if binary else encoding, newline=None if binary else ""
        ) as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def _permissions(path: Path) -> int:
    """Keep an existing file's permissions; a new file gets the usual ones (0o666 less umask),
    not the owner-only ones of a temporary file."""
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
