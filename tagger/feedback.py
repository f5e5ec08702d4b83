"""What a long command shows on a terminal while it works (on stderr, and only on a
terminal): a line a stage of training, testing or reporting, and a progress bar over the bytes
of the files being tagged."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from pathlib import Path

from .reading import STDIN, ReadReport
from .terminal import say

PROGRESS_DELAY = 1.0  # seconds before the progress bar shows: a short run shows none


@contextlib.contextmanager
def stages():
    """On a terminal, what a long command is doing, a line a stage with the time since it
    began (the ``tagger`` log: training's, the report's, testing a model's); nothing elsewhere."""

    if not sys.stderr.isatty():
        yield
        return
    began = time.monotonic()

    class Stage(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            say(
                f"tagger: [{time.monotonic() - began:5.0f} s] {record.getMessage()}",
            )

    log, handler = logging.getLogger("tagger"), Stage()
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        yield
    finally:
        log.removeHandler(handler)


@contextlib.contextmanager
def progress(quiet: bool, paths: list[str], report: ReadReport, delay: float = PROGRESS_DELAY):
    """A progress bar over the bytes read from ``paths``, on stderr, shown after a second; none
    with --quiet, when stderr is not a terminal, or on stdin (no size known)."""
    sizes = [Path(p) for p in paths]
    if quiet or not sys.stderr.isatty() or STDIN in paths or not paths:
        yield lambda: None
        return
    from tqdm import tqdm

    tqdm.monitor_interval = 0  # no monitor thread: worker processes can then be forked
    total = sum(
        f.stat().st_size for p in sizes for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file()
    )
    try:
        size = os.get_terminal_size(sys.stderr.fileno())
    except (OSError, ValueError):
        size = os.terminal_size((0, 0))
    known = {} if size.columns and size.lines else {"ncols": 80, "nrows": 24}  # (of no size, tqdm is mute)
    with tqdm(
        total=total, unit="B", unit_scale=True, delay=delay, file=sys.stderr, leave=False, **known
    ) as bar:
        seen = 0

        def update() -> None:
            nonlocal seen
            bar.update(report.bytes_read - seen)
            seen = report.bytes_read

        yield update
