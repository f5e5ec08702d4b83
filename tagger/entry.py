"""The ``tagger`` command's entry point: signals first, then everything else.

Ctrl-C, SIGTERM and SIGHUP (a closed terminal) unwind like an exception from the moment the
process starts, so that temporary files are removed and no traceback is shown; once the work
is done (while joblib stops its workers) they are ignored. The handlers go in before the
command's modules (numpy, scipy) are imported, which is why this module imports nothing else.
"""

from __future__ import annotations

import signal
import sys


def run() -> None:
    done = False

    def stop(signum: int, frame) -> None:
        if not done:
            raise KeyboardInterrupt if signum == signal.SIGINT else SystemExit(128 + signum)

    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), stop)
    try:
        from .cli import main

        status = main()
        done = True
    except KeyboardInterrupt:
        print("tagger: interrupted", file=sys.stderr)
        status = 130
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else 1
    done = True
    sys.exit(status)
