"""Writing files so that a reader, a crash or a kill only ever sees the old or the new content.

The new content goes to a hidden temporary file beside the target (``.NAME.tmp-PID``; for a
name over 200 bytes, a digest of it instead of NAME), which is renamed over the target only
when complete. On an error or an interruption the temporary file is removed; a process
killed outright (SIGKILL, power loss) leaves it behind, and the next write of the same target
removes it once its process is gone. The target itself is never partial.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary file beside ``path``; on success it replaces ``path`` in one rename,
    on any error (or interruption) ``path`` is untouched and the temporary file is removed."""
    shown = Path(path)
    path = Path(os.path.realpath(path)) if shown.is_symlink() else shown  # (a link: its target written)
    binary = "b" in mode
    _remove_stale_temporaries(path)
    temporary = path.parent / f"{_temporary_prefix(path)}{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()  # ours, from an earlier write that was cut short
    try:
        # A new file gets the usual permissions (0o666 less the umask, which os.open applies:
        # the umask itself is never changed, other threads may be creating files meanwhile);
        # an existing file keeps its own.
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        if (kept := _permissions(path)) is not None:
            os.fchmod(descriptor, kept)
    except OSError as error:
        raise _naming(error, shown, temporary) from None
    try:
        with open(
            descriptor,
            "wb" if binary else "w",
            encoding=None if binary else encoding,
            newline=None if binary else "",
        ) as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException as error:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        if isinstance(error, OSError):
            raise _naming(error, shown, temporary) from None
        raise


def _naming(error: OSError, path: Path, temporary: Path) -> OSError:
    """``error`` naming ``path`` where it names the hidden temporary file or no file at all
    (a full disk), so that the user reads the name of the file they asked for."""
    if error.filename not in (None, str(temporary), temporary):
        return error
    return OSError(error.errno, error.strerror or str(error), str(path))  # (its subclass, by errno)


def _remove_stale_temporaries(path: Path) -> None:
    """Remove temporary files of ``path`` left by processes that no longer run."""
    for leftover in path.parent.glob(f"{glob.escape(_temporary_prefix(path))}*"):
        pid = leftover.name.rsplit("-", 1)[1]
        if pid.isdigit() and int(pid) != os.getpid() and not _running(int(pid)):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


def _temporary_prefix(path: Path) -> str:
    """``.NAME.tmp-``, or for a name too long to take the prefix, a digest of the name."""
    name = path.name if len(path.name.encode("utf-8", "surrogateescape")) <= 200 else _digest(path.name)
    return f".{name}.tmp-"


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _permissions(path: Path) -> int | None:
    """An existing file's permissions, which its new content keeps; None for a new file."""
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        return None


def inside(path: str | os.PathLike, folders) -> tuple[Path, str] | None:
    """The first of ``folders`` (each with what it holds: ``tagger.project.Project.own_folders``) that
    ``path`` is, or is inside, links resolved: the one rule of where nothing may be written."""
    real = Path(os.path.realpath(path))
    return next(((Path(f), holds) for f, holds in folders if real.is_relative_to(os.path.realpath(f))), None)
