"""A small pool of worker processes of our own, each holding one payload (the model, or a
training set): one duplex pipe per worker, a task in (a chunk of texts, a fold), its answer out
(``work(payload, task)``: probabilities, a fold's scores), answers in the order tasks went in
(``map`` hands each worker its next task as soon as it answers, so tasks of unequal cost keep
every worker busy).

Nothing here belongs to an executor: no manager thread in this process, no shared queue that a
killed worker could leave half written. Stopping is plain: kill the workers (when their work
is not wanted), close this process's ends of the pipes, and join each with a timeout, killing
any that does not end in time. A worker ends by itself when its pipe closes, so one whose
parent dies (however it dies) ends too.

Workers are forked on Linux when no other thread runs in this process (they start in
milliseconds with the model and every import in memory, and are killed by the kernel when the
thread that forked them ends); beside other threads (a notebook, the labelling page's retrain)
a fork server forks them (:func:`warm_up` starts it early, with imports made), and where there
is none (macOS, Windows) they are spawned; either way they receive the payload when they
start.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from .errors import TaggerError, WorkerError

PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when the thread that forked it ends
STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # the signals that stop a run
PENDING = 4  # tasks a worker holds at once: one it works on, the next ones waiting (read already)
JOIN_TIMEOUT = 5.0  # seconds a stopping pool waits for all its workers before killing them


@dataclass(eq=False)
class Worker:
    """One worker process and this process's end of its pipe."""

    process: BaseProcess  # a multiprocessing Process
    pipe: Connection
    pending: int = 0  # chunks sent whose answer has not been read

    def ready(self) -> bool:
        """Whether its oldest pending answer can be read without waiting."""
        return self.pipe.poll()

    def __repr__(self) -> str:
        return f"Worker(pid={self.process.pid}, pending={self.pending})"


@dataclass(eq=False)
class Pool:
    """Worker processes holding one payload. ``submit`` hands a task to the least busy worker
    (``None`` when each holds ``PENDING`` tasks), ``answer`` reads that worker's oldest
    answer, and ``stop`` ends them all."""

    workers: list[Worker] = field(default_factory=list)
    job: str = "tagging"  # what the workers do, as errors name it

    @classmethod
    def start(cls, payload, size: int, *, fork: bool, work: Callable, job: str = "tagging") -> Pool:
        """``size`` workers holding ``payload``, forked (or from the fork server, or spawned:
        see the module's docstring), started now, each answering a task with
        ``work(payload, task)`` (a module-level function). ``job``: what they do, for errors."""
        import multiprocessing

        context: Any = multiprocessing.get_context("fork" if fork else _START_METHOD)  # (its Process, Pipe)
        if not fork:
            warm_up()  # (the fork server started without the caller's script among its imports)
        pool = cls(job=job)
        if fork:
            for stream in (sys.stdout, sys.stderr):  # else a worker could write their buffers again
                if stream is not None:
                    stream.flush()
        # Signals wait while the workers are forked: a handler that raised in the middle of a
        # fork would be lost, and a worker must not run this process's handlers before its
        # own are in place (see _serve).
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS) if fork else None
        try:
            for _ in range(size):
                ours, theirs = context.Pipe(duplex=True)
                inherited = [ours, *(w.pipe for w in pool.workers)] if fork else []
                process = context.Process(
                    target=_serve,
                    args=(theirs, payload, work, os.getpid() if fork else None, inherited),
                    daemon=True,
                    name="tagger-worker",
                )
                try:
                    with _main_left_out(fork):
                        process.start()
                finally:
                    theirs.close()
                pool.workers.append(Worker(process, ours))
        except BaseException:
            pool.stop(kill=True)
            raise
        finally:
            if previous is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        return pool

    def submit(self, task) -> Worker | None:
        """Send ``task`` to the least busy worker and return it; ``None`` when all are full."""
        worker = min(self.workers, key=lambda w: w.pending)
        if worker.pending >= PENDING:
            return None
        self._send(worker, task)
        return worker

    @staticmethod
    def _send(worker: Worker, task) -> None:
        with contextlib.suppress(OSError):  # it died: reading its answer will say so
            worker.pipe.send(task)
        worker.pending += 1

    def answer(self, worker: Worker):
        """The answer to the oldest task sent to ``worker``, waiting for it."""
        try:
            kind, value = worker.pipe.recv()
        except (EOFError, OSError):
            raise WorkerError(
                f"a {self.job} worker process stopped before it finished{self._how_ended(worker)}",
                fix="Run again"
                + ("; --jobs 1 tags in this process alone." if self.job == "tagging" else "."),
            ) from None
        worker.pending -= 1
        if kind == "raise":  # an error the user can fix, as the work raised it
            raise value
        if kind == "memory":
            raise WorkerError(
                f"a {self.job} worker process ran out of memory ({value})",
                fix="Close other programs or use a machine with more memory"
                + ("; --jobs 1 holds one copy of the model." if self.job == "tagging" else "."),
            )
        if kind != "ok":
            raise WorkerError(f"a {self.job} worker process failed: {value}", fix="Run again with --jobs 1.")
        return value

    def map(self, tasks: Iterable, meanwhile: Callable[[], object] | None = None) -> list:
        """Every task's answer, in order. Each worker holds one task at a time and gets the
        next one as soon as it answers, so tasks of unequal cost keep every worker busy to
        the end. ``meanwhile``: called once the first tasks are sent, for work of this
        process's own."""
        from multiprocessing.connection import wait

        tasks = list(tasks)
        answers: list = [None] * len(tasks)
        working: dict[Worker, int] = {}  # worker -> the task it holds
        sent = 0
        while sent < len(tasks) or working:
            for worker in self.workers:
                if worker not in working and sent < len(tasks):
                    self._send(worker, tasks[sent])
                    working[worker], sent = sent, sent + 1
            if meanwhile is not None:
                meanwhile()
                meanwhile = None
            ready = wait([worker.pipe for worker in working])
            for worker in [w for w in working if w.pipe in ready]:
                answers[working.pop(worker)] = self.answer(worker)
        return answers

    def stop(self, *, kill: bool = False) -> None:
        """End every worker: killed at once with ``kill`` (their work is not wanted), else
        told by their pipe closing, once they finish what they hold. Waits for each, at most
        ``JOIN_TIMEOUT`` seconds in all, and kills any that has not ended by then."""
        import time

        if kill:
            for worker in self.workers:
                _kill(worker.process)
        for worker in self.workers:
            worker.pipe.close()
        deadline = time.monotonic() + JOIN_TIMEOUT
        for worker in self.workers:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.exitcode is None:
                _kill(worker.process)
                worker.process.join(1.0)
        self.workers = []

    @staticmethod
    def _how_ended(worker: Worker) -> str:
        """' (killed by signal 9)' or ' (exit status 1)', where known."""
        worker.process.join(1.0)
        code = worker.process.exitcode
        if code is None:
            return ""
        return f" (killed by signal {-code})" if code < 0 else f" (exit status {code})"


def _kill(process) -> None:
    with contextlib.suppress(OSError, AttributeError, ValueError):
        if process.exitcode is None:
            process.kill()


def run_all(
    work: Callable,
    payload,
    tasks: list,
    jobs: int,
    job: str = "training",
    meanwhile: Callable[[], object] | None = None,
) -> list:
    """``work(payload, task)`` of every task, in order, on ``jobs`` worker processes (in this
    process when ``jobs`` is 1 or there is one task), which end with this process however it
    ends: a killed ``tagger train`` leaves no worker behind. ``job``: what they do, for errors.
    ``meanwhile``: work of this process's own, done while the workers work."""
    if jobs <= 1 or len(tasks) <= 1:
        answers = [work(payload, task) for task in tasks]
        if meanwhile is not None:
            meanwhile()
        return answers
    pool = Pool.start(payload, min(jobs, len(tasks)), fork=can_fork(), work=work, job=job)
    done = False
    try:
        answers = pool.map(tasks, meanwhile)
        done = True
        return answers
    finally:
        pool.stop(kill=not done)


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


def _serve(
    pipe: Connection, payload, work: Callable, parent: int | None, inherited: list[Connection]
) -> None:
    """A worker's life: tasks in, ``("ok", work(payload, task))`` out, until its pipe
    closes. Ctrl-C reaches every process of a terminal's job: the main process stops the run,
    a worker ignores it and is ended by the pool. SIGTERM and SIGHUP end a worker as they end
    any program. A forked worker (``parent``: the pid of the process that forked it) dies with
    that process, however it ends: it would otherwise hold the output's pipe open."""
    for inherited_pipe in inherited:  # the other ends of this pool's pipes, copied by the fork:
        inherited_pipe.close()  # held here, they would keep the other workers from ever ending
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    if parent is not None:
        _die_with(parent)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)  # blocked while it was forked
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.close(sys.stdout.fileno())  # a worker writes no output: `| wc -l` must not wait for it
    # A thread reads the pipe while the worker tags, so that the main process never waits to
    # send a chunk while this worker waits to send an answer.
    inbox: queue.SimpleQueue = queue.SimpleQueue()

    def receive() -> None:
        try:
            while True:
                inbox.put(pipe.recv())
        except (EOFError, OSError):
            inbox.put(None)

    threading.Thread(target=receive, daemon=True).start()
    while (task := inbox.get()) is not None:
        try:
            answer = ("ok", work(payload, task))
        except TaggerError as error:  # raised again in the main process, as it is
            answer = ("raise", error)
        except MemoryError as error:
            answer = ("memory", str(error) or "MemoryError")
        except Exception as error:  # a bug: said in the main process, which stops the run
            answer = ("error", f"{type(error).__name__}: {error}")
        try:
            pipe.send(answer)
        except OSError:
            break
    os._exit(0)


def _die_with(parent: int) -> None:
    """Ask Linux to kill this process when ``parent`` (the thread that forked it) ends, and
    end now if it has ended already."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)
