"""Locks that let two tagger processes share a folder: one writer at a time, readers that
never see a folder half-way through a change.

A folder is locked by an advisory lock (``flock``) on the folder itself, so no lock file is
left in it: exclusive while a process changes what is in it (a label added, a model saved and
its old weights removed), shared while a process reads several files that must match (a
model's card and its weights). Locks are released when the process ends, however it ends.
Only processes that take the lock are kept out: tagger's own commands and functions do; an
editor or ``cp`` into the folder does not. Where a folder cannot be locked (no ``flock``, as
on Windows; a file system without locks; a folder that cannot be opened), the lock does
nothing and the work goes on as without it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


@contextlib.contextmanager
def locked(*folders: str | os.PathLike, shared: bool = False) -> Iterator[None]:
    """Hold a lock on each folder (exclusive, or ``shared`` for readers) for the block.
    Several folders are locked in one order (by their real path), so that two processes
    locking the same folders never wait for each other forever."""
    real = sorted({os.path.realpath(folder) for folder in folders})
    with contextlib.ExitStack() as stack:
        for folder in real:
            stack.enter_context(_folder_lock(folder, shared))
        yield


@contextlib.contextmanager
def _folder_lock(folder: str, shared: bool) -> Iterator[None]:
    if fcntl is None:
        yield
        return
    try:
        descriptor = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        yield
        return
    try:
        with contextlib.suppress(OSError):  # e.g. ENOLCK on a network file system
            fcntl.flock(descriptor, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # closing releases the lock
