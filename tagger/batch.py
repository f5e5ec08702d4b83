"""Batch tagging: abstracts in, their probabilities (or predictions) out, in input order, a
chunk at a time, so that input of any size streams through in constant memory.

With ``jobs`` above 1, ``jobs - 1`` worker processes tag chunks while this process reads
the input, writes the output, and tags a chunk itself whenever the next result is not ready
yet, so every core stays busy without a process to spare. The pool starts only when the
input holds more than two chunks, so a small run never pays for it. Workers are forked where
that is safe (Linux, no other thread running: the command line), holding the model and every
import from the start; elsewhere they are spawned by joblib's loky executor and receive the
model once, when they start (the executor's initializer), never per chunk. Every abstract is
tagged by the same arithmetic whichever process tags it, so the output does not depend on
``jobs``.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import os
import signal
import sys
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool

import numpy as np

from .errors import WorkerError
from .model import Model
from .prediction import Prediction, predictions
from .reading import Abstract

CHUNK_SIZE = 500
PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent ends
STOPS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}  # the signals that stop a run
_pools_running = 0  # worker pools this process is feeding now (see pool_running)


def pool_running() -> bool:
    """Whether this process is feeding a worker pool now: a signal is then best handled
    between chunks, not in the middle of the pool's code."""
    return _pools_running > 0


def default_jobs() -> int:
    """All the cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def tag_blocks(
    abstracts: Iterable[Abstract], model: Model, *, jobs: int = 1, chunk_size: int = CHUNK_SIZE
) -> Iterator[tuple[list[Abstract], np.ndarray]]:
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
    window: collections.deque = collections.deque()  # [chunk, future or probabilities], in order
    in_flight = 0
    global _pools_running
    _pools_running += 1
    forked = executor = None
    workers: list = []  # the forked worker processes
    try:
        if _can_fork():
            # Forked workers start in milliseconds with the model and every import already
            # in memory. This process tags one chunk first, so the imports large batches
            # need (pyarrow, scipy) are made once, before the fork, not in each process.
            chunk = next(chunks)
            window.append([chunk, model.predict_proba([a.document for a in chunk])])
            executor = forked = _fork_pool(model, jobs)
            workers = _processes(forked)
        else:
            # Starting a spawned worker blocks until the new process has read the model from
            # a pipe, which it does once Python is up (half a second): a thread waits for
            # that while this process tags the first chunks.
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(1) as starter:
                starting = starter.submit(_spawn_pool, model, jobs)
                while not starting.done() and (chunk := next(chunks, None)) is not None:
                    yield chunk, model.predict_proba([a.document for a in chunk])
                executor = starting.result()
        while True:
            while in_flight < 4 * (jobs - 1) and (chunk := next(chunks, None)) is not None:
                window.append([chunk, executor.submit(_probabilities, [a.document for a in chunk])])
                in_flight += 1
            if not window:
                return
            chunk, result = window[0]
            if isinstance(result, Future) and not result.done():
                local = next(chunks, None)
                if local is not None:  # rather than wait, tag the next chunk here
                    window.append([local, model.predict_proba([a.document for a in local])])
                    continue
            window.popleft()
            if isinstance(result, Future):
                in_flight -= 1
                result = result.result()
            yield chunk, result
    except BrokenProcessPool:
        raise WorkerError(
            f"a tagging worker process stopped before it finished{_how_workers_ended(workers)}",
            fix="Run again; --jobs 1 tags in this process alone.",
        ) from None
    finally:
        _pools_running -= 1
        if forked is not None and window:  # stopped early: by a signal, an error, a dead worker
            _abandon(forked, workers)
        elif forked is not None:  # done: its idle workers exit at once
            forked.shutdown(wait=True)
        else:
            for _, result in window:
                if isinstance(result, Future):
                    result.cancel()


def _how_workers_ended(workers: list) -> str:
    """' (killed by signal 9)', from the exit codes of forked workers, where known. A broken
    pool ends its other workers with SIGTERM itself: that one is named only alone."""
    import time

    deadline = time.monotonic() + 1  # the pool's thread may be reaping them meanwhile
    while not (codes := [p.exitcode for p in workers if p.exitcode]) and time.monotonic() < deadline:
        time.sleep(0.01)
    killed = sorted({-code for code in codes if code < 0})
    killed = [signum for signum in killed if signum != signal.SIGTERM] or killed
    if killed:
        return f" (killed by signal {', '.join(map(str, killed))})"
    return f" (exit status {', '.join(map(str, sorted(set(codes))))})" if codes else ""


def _processes(executor) -> list:
    """The worker processes of a pool (none once it is shut down, or of another kind)."""
    return list((getattr(executor, "_processes", None) or {}).values())


def _abandon(executor, workers: list) -> None:
    """End a forked pool stopped before its work was done, at once: its workers are killed
    (their chunks are not wanted), and the pool's own thread, finding them gone, fails its
    futures, unblocks its queues and ends; this waits for that, so that nothing of the pool
    is left running at exit. Its futures are not cancelled here: the pool's thread would fail
    on one cancelled meanwhile."""
    for process in workers:
        if process.exitcode is None:
            process.kill()
    executor.shutdown(wait=True)


def _can_fork() -> bool:
    """Whether worker processes can be forked from this one: on Linux, from the main thread,
    while no other Python thread runs (one could hold a lock the workers would inherit held;
    the native threads of numpy's BLAS and of pyarrow reset themselves in a forked child).
    Elsewhere (macOS, Windows, a notebook's threads) workers are spawned."""
    return (
        sys.platform.startswith("linux")
        and threading.current_thread() is threading.main_thread()
        and threading.active_count() == 1
    )


def _fork_pool(model: Model, jobs: int):
    """A pool of ``jobs - 1`` forked worker processes holding ``model``, started now."""
    import multiprocessing
    import warnings
    from concurrent.futures import ProcessPoolExecutor

    for stream in (sys.stdout, sys.stderr):  # else a worker could write their buffers again
        if stream is not None:
            stream.flush()
    executor = ProcessPoolExecutor(
        jobs - 1,
        mp_context=multiprocessing.get_context("fork"),
        initializer=_receive_model,
        initargs=(model, os.getpid()),
    )
    # Signals wait while the workers are forked: a handler that raised in the middle of a
    # fork (in its at-fork hooks) would be lost, and a worker must not run this process's
    # handlers before its own are in place (see _receive_model).
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    try:
        with warnings.catch_warnings():
            # Python 3.12+ warns of forking beside any thread, native ones included (see
            # _can_fork for why these are safe).
            warnings.filterwarnings("ignore", r".*multi-threaded, use of fork\(\)", DeprecationWarning)
            executor.submit(_started)  # the workers are forked on the first task
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    return executor


def _spawn_pool(model: Model, jobs: int):
    """A pool of ``jobs - 1`` spawned worker processes holding ``model``, started. The pool is
    kept for the next run with the same model (an executor is reused only when its
    initializer and model are the same objects)."""
    from joblib.executor import get_memmapping_executor  # the executor joblib.Parallel shares

    executor = get_memmapping_executor(jobs - 1, initializer=_receive_model, initargs=(model,))
    executor.submit(_started)  # the workers start on the first task
    return executor


def _started() -> None:
    """A first task, run in a worker: it starts the workers."""


_worker_model: Model | None = None  # in a worker process: the model it tags with


def _receive_model(model: Model, parent: int | None = None) -> None:
    """Run once in each worker process as it starts. Ctrl-C reaches every process of a
    terminal's job: the main process stops the run, a worker finishes its chunk. Other
    signals end a worker as they end any program (a forked worker inherits the handlers of
    the process it was forked from). A forked worker (``parent``: the pid of the process
    that forked it) dies with that process, however it ends: it would otherwise hold the
    output's pipe open (``tagger predict ... | wc -l`` would never end)."""
    global _worker_model
    _worker_model = model
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    if parent is not None:
        _die_with(parent)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)  # blocked while it was forked


def _die_with(parent: int) -> None:
    """Ask Linux to kill this process when ``parent`` (the thread that forked it) ends, and
    end now if it has ended already."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def _probabilities(texts: list[str]) -> np.ndarray:
    """Run in a worker: the calibrated probabilities of ``texts``."""
    if _worker_model is None:
        raise RuntimeError("a tagging worker started without its model")
    return _worker_model.predict_proba(texts)
