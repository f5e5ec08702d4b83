"""Batch tagging: abstracts in, their probabilities (or predictions) out, in input order, a
chunk at a time, so that input of any size streams through in constant memory.

With ``jobs`` above 1, ``jobs - 1`` worker processes tag chunks while this process reads
the input, writes the output, and tags a chunk itself whenever the next result is not ready
yet, so every core stays busy without a process to spare. The pool starts only when the
input holds more than two chunks, so a small run never pays for it. Workers are forked where
that is safe (Linux, no other thread running: the command line), holding the model and every
import from the start; elsewhere they come from a fork server (or are spawned) and receive the
model once, when they start, never per chunk (``workers.Pool``: the standard library's
process pool). Every abstract is tagged by the same arithmetic whichever process tags it, so the
output does not depend on ``jobs``.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import signal
import threading
from collections.abc import Generator, Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np

from .errors import InputError, WorkerError
from .model import Model
from .reading import Abstract
from .workers import Pool, can_fork

CHUNK_SIZE = 500
PENDING = 4  # chunks a worker holds at once: one it works on, the next ones waiting
_pools_running = 0  # worker pools this process is feeding now (see pool_running)


def pool_running() -> bool:
    """Whether this process is feeding a worker pool now: a signal is then best handled
    between chunks, not in the middle of the pool's code."""
    return _pools_running > 0


def tag_blocks(
    abstracts: Iterable[Abstract],
    model: Model,
    *,
    jobs: int = 1,
    chunk_size: int = CHUNK_SIZE,
) -> Generator[tuple[list[Abstract], np.ndarray], None, None]:
    """(chunk of abstracts, their calibrated probabilities), chunk after chunk, in input
    order, on ``jobs`` processes."""
    units = _units(abstracts, chunk_size)
    first = list(itertools.islice(units, 3))
    units = itertools.chain(first, units)
    if jobs > 1 and len(first) == 3:
        yield from _in_parallel(units, model, jobs)
    else:
        for unit in units:
            yield from _finished(unit, _here(model, unit))


@dataclass(frozen=True)
class _Stop:
    """Where reading stopped on a bad record: raised in its turn, once every abstract read
    before it is tagged and given out (whichever process reads the input)."""

    error: InputError


Unit = list[Abstract] | _Stop  # what a process is handed at once


def _units(items: Iterable[Abstract], size: int) -> Iterator[Unit]:
    """Abstracts in lists of ``size`` (the last one shorter); a bad record that stops the
    reading as the last unit."""
    chunk: list[Abstract] = []
    try:
        for item in items:
            chunk.append(item)
            if len(chunk) == size:
                yield chunk
                chunk = []
    except InputError as error:
        if chunk:
            yield chunk
        yield _Stop(error)
        return
    if chunk:
        yield chunk


def tag_task(model: Model, texts: list[str]) -> np.ndarray:
    """The work of a unit, wherever it is done (a worker, or here)."""
    return model.predict_proba(texts)


def _here(model: Model, unit: Unit):
    return None if isinstance(unit, _Stop) else tag_task(model, [a.document for a in unit])


def _finished(unit: Unit, answer) -> Iterator[tuple[list[Abstract], np.ndarray]]:
    """A unit's chunk of abstracts and their probabilities, once its work is done; a stop
    raised."""
    if isinstance(unit, _Stop):
        raise unit.error
    yield unit, answer


def chunked(items: Iterable, size: int = CHUNK_SIZE) -> Iterator[list]:
    """Lists of ``size`` consecutive items (the last one shorter), read as they are needed."""
    iterator = iter(items)
    return iter(lambda: list(itertools.islice(iterator, size)), [])


def _in_parallel(units: Iterator[Unit], model: Model, jobs: int) -> Iterator[tuple[list, np.ndarray]]:
    """The units tagged on ``jobs - 1`` workers and here: each worker holds at most
    ``PENDING`` chunks, and whenever the next answer in order is not ready this process tags
    the next unit itself rather than wait."""
    global _pools_running
    window: collections.deque = collections.deque()  # [unit, its Future or its answer], in order
    if can_fork():
        # Forked workers start in milliseconds with the model and every import already in
        # memory. This process tags one unit first, so the imports large batches need
        # (pyarrow, scipy) are made once, before the fork, not in each process.
        unit = next(units)
        window.append([unit, _here(model, unit)])
        model.ready_for_large_batches()  # (the first unit may be too small to build them)
    _pools_running += 1
    try:
        with Pool(model, jobs - 1, tag_task) as pool:
            while True:
                busy = sum(isinstance(answer, Future) for _, answer in window)
                while busy < PENDING * (jobs - 1) and (queued := next(units, None)) is not None:
                    if isinstance(queued, _Stop):  # no work: said in its turn
                        window.append([queued, None])
                        continue
                    window.append([queued, pool.submit([a.document for a in queued])])
                    busy += 1
                if not window:
                    return
                unit, answer = window[0]
                if isinstance(answer, Future) and not answer.done():
                    local = next(units, None)
                    if local is not None:  # rather than wait, do the next unit here
                        window.append([local, _here(model, local)])
                        continue
                window.popleft()
                if isinstance(answer, Future):
                    answer = pool.answer(answer)
                yield from _finished(unit, answer)
    finally:
        _pools_running -= 1


@contextlib.contextmanager
def signals_between_chunks():
    """Ctrl-C and SIGTERM stop a run at once while no worker pool runs (reading the input,
    waiting for stdin, tagging here); while one does, between chunks, where stopping is clean
    (the pool is shut down, the output left as it was), not in the middle of the pool's code,
    unless the signal comes twice."""
    received: list[int] = []
    stops = [signal.SIGINT, signal.SIGTERM]
    if threading.current_thread() is not threading.main_thread():  # signals reach the main one only
        yield lambda: None
        return

    def check() -> None:
        if signal.SIGINT in received:
            raise KeyboardInterrupt
        if received:
            raise SystemExit(128 + received[0])

    def receive(signum: int, frame) -> None:
        received.append(signum)
        if not pool_running() or len(received) > 1:
            check()

    previous = {signum: signal.signal(signum, receive) for signum in stops}
    try:
        yield check
        check()
    except WorkerError:
        check()  # a signal to the whole job ended the workers too: it is the signal's exit
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
