"""Batch tagging: abstracts in, their probabilities (or predictions) out, in input order, a
chunk at a time, so that input of any size streams through in constant memory.

With ``jobs`` above 1, ``jobs - 1`` worker processes tag chunks while this process reads
the input, writes the output, and tags a chunk itself whenever the next result is not ready
yet, so every core stays busy without a process to spare. The pool starts only when the
input holds more than two chunks, so a small run never pays for it. Workers are forked where
that is safe (Linux, no other thread running: the command line), holding the model and every
import from the start; elsewhere they come from a fork server (or are spawned) and receive the
model once, when they start, never per chunk (``workers.Pool``: our own processes, one pipe
each). Every abstract is tagged by the same arithmetic whichever process tags it, so the
output does not depend on ``jobs``.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import signal
import threading
from collections.abc import Generator, Iterable, Iterator

import numpy as np

from .errors import WorkerError
from .model import Model
from .prediction import Prediction, predictions
from .reading import Abstract
from .workers import Pool, Worker, can_fork

CHUNK_SIZE = 500
_pools_running = 0  # worker pools this process is feeding now (see pool_running)


def pool_running() -> bool:
    """Whether this process is feeding a worker pool now: a signal is then best handled
    between chunks, not in the middle of the pool's code."""
    return _pools_running > 0


def tag_blocks(
    abstracts: Iterable[Abstract], model: Model, *, jobs: int = 1, chunk_size: int = CHUNK_SIZE
) -> Generator[tuple[list[Abstract], np.ndarray], None, None]:
    """(chunk of abstracts, their calibrated probabilities), chunk after chunk, in input
    order, on ``jobs`` processes."""
    chunks = chunked(abstracts, chunk_size)
    first = list(itertools.islice(chunks, 3))
    chunks = itertools.chain(first, chunks)
    if jobs > 1 and len(first) == 3:
        yield from _in_parallel(chunks, model, jobs)
    else:
        for chunk in chunks:
            yield chunk, model.predict_proba([a.document for a in chunk])


def chunked(items: Iterable, size: int = CHUNK_SIZE) -> Iterator[list]:
    """Lists of ``size`` consecutive items (the last one shorter), read as they are needed."""
    iterator = iter(items)
    return iter(lambda: list(itertools.islice(iterator, size)), [])


def tag_abstracts(
    abstracts: Iterable[Abstract],
    model: Model,
    *,
    review_below: float | None = None,
    jobs: int = 1,
    chunk_size: int = CHUNK_SIZE,
) -> Iterator[tuple[Abstract, Prediction]]:
    """Each abstract with its prediction, in input order."""
    for chunk, probabilities in tag_blocks(abstracts, model, jobs=jobs, chunk_size=chunk_size):
        yield from zip(chunk, predictions(probabilities, model.areas, model.threshold(review_below)))


def _in_parallel(
    chunks: Iterator[list[Abstract]], model: Model, jobs: int
) -> Iterator[tuple[list, np.ndarray]]:
    window: collections.deque = collections.deque()  # [chunk, Worker or probabilities], in order
    global _pools_running
    _pools_running += 1
    pool: Pool | None = None
    starting = None
    try:
        if can_fork():
            # Forked workers start in milliseconds with the model and every import already
            # in memory. This process tags one chunk first, so the imports large batches
            # need (pyarrow, scipy) are made once, before the fork, not in each process.
            chunk = next(chunks)
            window.append([chunk, model.predict_proba([a.document for a in chunk])])
            pool = Pool.start(model, jobs - 1, fork=True)
        else:
            # A worker that is not forked here takes half a second to start and read the
            # model: a thread starts the pool while this process tags the first chunks.
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(1) as starter:
                starting = starter.submit(Pool.start, model, jobs - 1, fork=False)
                while not starting.done() and (chunk := next(chunks, None)) is not None:  # type: ignore[arg-type]
                    yield chunk, model.predict_proba([a.document for a in chunk])
            pool = starting.result()
        held = None  # a chunk read while every worker was full
        while True:
            while (chunk := held if held is not None else next(chunks, None)) is not None:  # type: ignore[arg-type]
                held = None
                worker = pool.submit([a.document for a in chunk])
                if worker is None:  # every worker is full: the chunk waits for one, or for here
                    held = chunk
                    break
                window.append([chunk, worker])
            if not window:
                return
            chunk, result = window[0]
            if isinstance(result, Worker) and not result.ready():
                local = held if held is not None else next(chunks, None)
                held = None
                if local is not None:  # rather than wait, tag the next chunk here
                    window.append([local, model.predict_proba([a.document for a in local])])
                    continue
            window.popleft()
            if isinstance(result, Worker):
                result = pool.answer(result)
            yield chunk, result
    finally:
        _pools_running -= 1
        if pool is None and starting is not None and starting.done() and not starting.exception():
            pool = starting.result()  # started while this run was being stopped
        if pool is not None:
            pool.stop(kill=bool(window))  # stopped early: their work is not wanted


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
