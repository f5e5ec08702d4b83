"""The one error type users see: what went wrong, where, and what to do about it."""

from __future__ import annotations


class TaggerError(Exception):
    """A problem the user can fix. Its message is one line: where: what. what to do."""

    exit_status = 2

    def __init__(self, what: str, *, where: str | None = None, fix: str | None = None) -> None:
        self.what = what
        self.where = where
        self.fix = fix
        super().__init__(str(self))

    def __str__(self) -> str:
        message = f"{self.where}: {self.what}" if self.where else self.what
        if self.fix:
            ended = message.endswith(("?", "!"))
            message = f"{message} {self.fix}" if ended else f"{message.rstrip('.')}. {self.fix}"
        # One line, whatever a file name holds: line breaks and other control characters escaped.
        return "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)


class UsageError(TaggerError):
    """The command or function was called the wrong way."""

    exit_status = 1


class ArgumentError(UsageError, ValueError):
    """A function of the Python API was given a bad argument: a ``ValueError`` too, as
    scikit-learn and pandas code expects."""


class ArgumentTypeError(UsageError, TypeError):
    """A function of the Python API was given an argument of the wrong type: a ``TypeError``
    too, as Python code expects."""


class InputError(TaggerError):
    """An abstract file (or stdin) cannot be read as abstracts."""


class LabelError(TaggerError, ValueError):
    """The taxonomy or the hand labels are inconsistent: a ``ValueError`` too, as
    scikit-learn's tools (a search, cross-validation) catch it."""


class ModelError(TaggerError):
    """A model directory is missing, damaged or from an incompatible version."""


class OutputError(TaggerError):
    """The output cannot be written where it was asked for."""


class WorkerError(TaggerError):
    """A worker process of a parallel run ended before its work was done (killed from
    outside, or out of memory)."""


class TaggerWarning(UserWarning):
    """Something the user should know, while the work went on (the command line prints it as
    one ``tagger: warning:`` line)."""
