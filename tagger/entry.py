"""The ``tagger`` command's entry point: signals first, then everything else.

Ctrl-C, SIGTERM and SIGHUP (a closed terminal) unwind like an exception from the moment the
process starts, so that temporary files are removed and no traceback is shown; once the work
is done (while joblib stops its workers) they are ignored. The handlers go in before the
command's modules (numpy, scipy) are imported, which is why this module imports nothing else.

A signal that arrives while a finaliser runs (a ``__del__``, such as numpy's closing of a weights
file when it is collected) cannot unwind from there: Python would print the exception as
"ignored" and carry on. Such a stop is put off for a moment (an alarm) and raised from wherever
the work is by then.
"""

from __future__ import annotations

import signal
import sys

PUT_OFF = 0.02  # seconds a stop waits for a finaliser to end


def _in_finaliser(frame) -> bool:
    while frame is not None:
        code = frame.f_code
        if code.co_name == "__del__":
            return True
        if code.co_name == "__call__" and code.co_filename.endswith("weakref.py"):  # weakref.finalize
            return True
        frame = frame.f_back
    return False


def run() -> None:
    done = False
    pending: list[int] = []  # a stop put off while a finaliser ran
    can_put_off = hasattr(signal, "setitimer") and hasattr(signal, "SIGALRM")

    def stop(signum: int, frame) -> None:
        if done:
            return
        if signum == getattr(signal, "SIGALRM", None):
            if not pending:
                return
            signum = pending[0]
        if can_put_off and _in_finaliser(frame):
            pending[:] = [signum]
            signal.setitimer(signal.ITIMER_REAL, PUT_OFF)
            return
        raise KeyboardInterrupt if signum == signal.SIGINT else SystemExit(128 + signum)

    for name in ("SIGINT", "SIGTERM", "SIGHUP") + (("SIGALRM",) if can_put_off else ()):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), stop)
    try:
        from .cli import main

        status = main()
        done = True
    except KeyboardInterrupt:
        from .terminal import say

        say("tagger: interrupted")
        status = 130
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else 1
    done = True
    sys.exit(status)
