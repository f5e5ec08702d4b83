"""What tagger says on the terminal beside its output: every message (what was done and
written, notes, warnings, errors, the stages of a long command) goes to standard error through
:func:`say`, one line at a time, so that standard output holds the command's data alone."""

from __future__ import annotations

import sys


def say(message: object = "") -> None:
    """``message`` on standard error, as a line of its own, at once."""
    print(message, file=sys.stderr, flush=True)
