"""A small pool of worker processes of our own, each holding the model: one duplex pipe per
worker, a chunk of texts in, its probabilities out, answers in the order the chunks went in.

Nothing here belongs to an executor: no manager thread in this process, no shared queue that a
killed worker could leave half written. Stopping is plain: kill the workers (when their work
is not wanted), close this process's ends of the pipes, and join each with a timeout, killing
any that does not end in time. A worker ends by itself when its pipe closes, so one whose
parent dies (however it dies) ends too.

Workers are forked on Linux when no other thread runs in this process (they start in
milliseconds with the model and every import in memory, and are killed by the kernel when the
thread that forked them ends); elsewhere they are spawned and receive the model when they
start.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import sys
import threading
from dataclasses import dataclass, field
from multiprocessing.connection import Connection

import numpy as np

from .errors import WorkerError

PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when the thread that forked it ends
STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # the signals that stop a run
PENDING = 2  # chunks a worker holds at once: one it tags, the next one waiting
JOIN_TIMEOUT = 5.0  # seconds a stopping pool waits for all its workers before killing them


@dataclass(eq=False)
class Worker:
    """One worker process and this process's end of its pipe."""

    process: object  # a multiprocessing Process
    pipe: Connection
    pending: int = 0  # chunks sent whose answer has not been read

    def ready(self) -> bool:
        """Whether its oldest pending answer can be read without waiting."""
        return self.pipe.poll()

    def __repr__(self) -> str:
        return f"Worker(pid={self.process.pid}, pending={self.pending})"


@dataclass(eq=False)
class Pool:
    """Worker processes holding one model. ``submit`` hands a chunk to the least busy worker
    (``None`` when each holds ``PENDING`` chunks), ``answer`` reads that worker's oldest
    answer, and ``stop`` ends them all."""

    workers: list[Worker] = field(default_factory=list)

    @classmethod
    def start(cls, model, size: int, *, fork: bool) -> Pool:
        """``size`` workers holding ``model``, forked or spawned, started now."""
        import multiprocessing

        context = multiprocessing.get_context("fork" if fork else "spawn")
        pool = cls()
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
                    args=(theirs, model, os.getpid() if fork else None, inherited),
                    daemon=True,
                    name="tagger-worker",
                )
                try:
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

    def submit(self, texts: list[str]) -> Worker | None:
        """Send ``texts`` to the least busy worker and return it; ``None`` when all are full."""
        worker = min(self.workers, key=lambda w: w.pending)
        if worker.pending >= PENDING:
            return None
        with contextlib.suppress(OSError):  # it died: reading its answer will say so
            worker.pipe.send(texts)
        worker.pending += 1
        return worker

    def answer(self, worker: Worker) -> np.ndarray:
        """The probabilities of the oldest chunk sent to ``worker``, waiting for them."""
        try:
            kind, value = worker.pipe.recv()
        except (EOFError, OSError):
            raise WorkerError(
                f"a tagging worker process stopped before it finished{self._how_ended(worker)}",
                fix="Run again; --jobs 1 tags in this process alone.",
            ) from None
        worker.pending -= 1
        if kind != "ok":
            raise WorkerError(f"a tagging worker process failed: {value}", fix="Run again with --jobs 1.")
        return value

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


def _serve(pipe: Connection, model, parent: int | None, inherited: list[Connection]) -> None:
    """A worker's life: chunks of texts in, ``("ok", probabilities)`` out, until its pipe
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
    while (texts := inbox.get()) is not None:
        try:
            answer = ("ok", model.predict_proba(texts))
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
