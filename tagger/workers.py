"""Worker processes: the standard library's ``ProcessPoolExecutor``, each worker holding one
payload (the model, or a training set) from its start (an initializer), so that a task sends
only its own data (a chunk of texts, a fold) and ``work(payload, task)`` answers it.

Workers are forked on Linux when no other thread runs in this process (they start in
milliseconds with the model and every import in memory); beside other threads (a notebook,
the labelling page's retrain) a fork server forks them (:func:`warm_up` starts it early, with
imports made), and where there is none (macOS, Windows) they are spawned; either way they
receive the payload when they start. A forked worker dies with the process that forked it,
however that ends (Linux's parent-death signal), and closes its standard output, so that a
killed ``tagger predict | wc -l`` leaves nothing behind and nothing waiting.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from .errors import TaggerError, WorkerError

PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when the thread that forked it ends
STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # the signals that stop a run


class Pool:
    """``size`` worker processes holding ``payload``, each answering a task with
    ``work(payload, task)`` (a module-level function); ``job``: what they do, for errors.
    ``submit`` hands a task on, ``answer`` waits for its answer; as a context manager, the
    workers end when it ends (their tasks not yet started are cancelled)."""

    def __init__(self, payload, size: int, work: Callable, job: str = "tagging") -> None:
        import multiprocessing

        self.job = job
        self.fork = can_fork()
        self.method = "fork" if self.fork else _START_METHOD  # how its workers start
        if self.fork:
            for stream in (sys.stdout, sys.stderr):  # else a worker could write their buffers again
                if stream is not None:
                    stream.flush()
        else:
            warm_up()  # (the fork server started without the caller's script among its imports)
        self.executor = ProcessPoolExecutor(
            size,
            mp_context=multiprocessing.get_context(self.method),
            initializer=_start,
            initargs=(payload, work, os.getpid() if self.fork else None),
        )

    def submit(self, task) -> Future:
        # Forked workers start at the first task, with the signals that stop a run held back
        # meanwhile (a worker must not run this process's handlers before its own are set).
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS) if self.fork else None
        try:
            with _main_left_out(self.fork):
                return self.executor.submit(_work, task)
        except BrokenProcessPool:  # (a worker ended since the last answer)
            raise self._stopped() from None
        finally:
            if previous is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, previous)

    def answer(self, future: Future):
        """The answer of a task, waiting for it; a worker's error as the user's error, or
        one line saying what happened to the worker."""
        try:
            return future.result()
        except TaggerError:  # an error the user can fix, as the work raised it
            raise
        except BrokenProcessPool:
            raise self._stopped() from None
        except MemoryError as error:
            raise WorkerError(
                f"a {self.job} worker process ran out of memory ({error or 'MemoryError'})",
                fix="Close other programs or use a machine with more memory"
                + ("; --jobs 1 holds one copy of the model." if self.job == "tagging" else "."),
            ) from None
        except Exception as error:  # a bug: said in one line, the run stops
            raise WorkerError(
                f"a {self.job} worker process failed: {type(error).__name__}: {error}",
                fix="Run again with --jobs 1.",
            ) from None

    def _stopped(self) -> WorkerError:
        return WorkerError(
            f"a {self.job} worker process stopped before it finished",
            fix="Run again" + ("; --jobs 1 tags in this process alone." if self.job == "tagging" else "."),
        )

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)


def run_all(
    work: Callable,
    payload,
    tasks: list,
    jobs: int,
    job: str = "training",
    meanwhile: Callable[[], object] | None = None,
) -> list:
    """``work(payload, task)`` of every task, in order, on ``jobs`` worker processes (in this
    process when ``jobs`` is 1 or there is one task); each worker takes the next task when it
    answers, so tasks of unequal cost keep every worker busy. ``job``: what they do, for
    errors. ``meanwhile``: work of this process's own, done while the workers work."""
    if jobs <= 1 or len(tasks) <= 1:
        answers = [work(payload, task) for task in tasks]
        if meanwhile is not None:
            meanwhile()
        return answers
    with Pool(payload, min(jobs, len(tasks)), work, job) as pool:
        futures = [pool.submit(task) for task in tasks]
        if meanwhile is not None:
            meanwhile()
        return [pool.answer(future) for future in futures]


# Where forking this process is not safe: a fork server (a process started clean, which forks
# each worker: milliseconds, with what it imported in memory) where the platform has one, else
# spawned workers (Windows: each starts a new interpreter).
_START_METHOD = "forkserver" if sys.platform.startswith("linux") else "spawn"


# What training's workers import (tagger.fitting imports the rest when a fit runs):
# scikit-learn's import takes seconds. Named here, not imported, so that warming a fork server
# with them costs the caller nothing.
TRAINING_IMPORTS = (
    "tagger.training",
    "sklearn.linear_model",
    "sklearn.naive_bayes",
    "scipy.sparse",
    "threadpoolctl",
)


@contextlib.contextmanager
def _main_left_out(fork: bool) -> Iterator[None]:
    """A worker started from the fork server (or spawned) imports the caller's ``__main__``
    again unless told where it is not: a script without ``if __name__ == "__main__":`` would run
    again in each worker, and fail. The workers need none of it (their work and payload are
    tagger's), so while one starts the main module does not say where its file is."""
    main = sys.modules.get("__main__")
    if fork or main is None:
        yield
        return
    hidden: dict[str, Any] = {n: main.__dict__.pop(n) for n in ("__file__", "__spec__") if n in main.__dict__}
    main.__spec__ = None
    try:
        yield
    finally:
        main.__dict__.update(hidden)
        if "__spec__" not in hidden:
            del main.__spec__


def warm_up(modules: Sequence[str] = TRAINING_IMPORTS) -> None:
    """Start the fork server now, with ``modules`` imported (in the server, not here), so
    that workers started later from a thread (the labelling page's retrain) start in
    milliseconds with them, instead of importing them anew. Nothing happens where there is
    no fork server; once it runs, its imports stay as they were."""
    if _START_METHOD != "forkserver":
        return
    import multiprocessing
    from multiprocessing import forkserver

    context: Any = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(modules))  # (read when the server starts)
    forkserver.ensure_running()


def default_jobs() -> int:
    """All the cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def can_fork() -> bool:
    """Whether worker processes can be forked from this one: on Linux, from the main thread,
    while no other Python thread runs (one could hold a lock the workers would inherit held;
    the native threads of numpy's BLAS and of pyarrow reset themselves in a forked child).
    Elsewhere (a notebook's threads, the labelling page's) they are forked by a fork server
    (see :func:`warm_up`), or spawned where there is none (macOS, Windows)."""
    return (
        sys.platform.startswith("linux")
        and threading.current_thread() is threading.main_thread()
        and threading.active_count() == 1
    )


_held: tuple[Any, Callable] | None = None  # a worker's payload and work, from its start


def _start(payload, work: Callable, parent: int | None) -> None:
    """A worker's start: it holds the payload and its work. Ctrl-C reaches every process of a
    terminal's job: the main process stops the run, and a worker stops the task it works on
    (raised in the main process as the interruption it is; a worker waiting for a task
    ignores it, to be ended by the pool). SIGTERM and SIGHUP end a worker as they end any
    program. A forked worker (``parent``: the pid of the process that forked it) dies with
    that process, however it ends: it would otherwise hold the output's pipe open."""
    global _held
    _held = (payload, work)
    signal.signal(signal.SIGINT, _interrupt)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    if parent is not None:
        _die_with(parent)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)  # blocked while it was forked
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.close(sys.stdout.fileno())  # a worker writes no output: `| wc -l` must not wait for it


_working = False


def _interrupt(signum, frame) -> None:
    if _working:
        raise KeyboardInterrupt


def _work(task):
    global _working
    assert _held is not None
    payload, work = _held
    _working = True
    try:
        return work(payload, task)
    finally:
        _working = False


def _die_with(parent: int) -> None:
    """Ask Linux to kill this process when ``parent`` (the thread that forked it) ends, and
    end now if it has ended already."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)
