"""Text as it comes from PDFs: words broken at line ends joined, soft hyphens dropped.

Used by the readers (before whitespace is normalised, so a file's line ends are still there)
and by the analyser (for text passed from Python). Ligatures (U+FB01 and the like) are left to
the analyser's NFKC normalisation.
"""

from __future__ import annotations

import re

# A word broken at a line end by a hyphen (``gen-\nerative``) is joined when the line goes on
# with a lower-case letter, unless it is the last part of a compound (``state-of-the-\nart``).
_LINE_END_HYPHEN = re.compile(r"(?<![-\w])([^\W\d_]{2,})-[ \t]*\r?\n[ \t]*(?=[a-z\u00df-\u00ff])")
SOFT_HYPHEN = "\u00ad"


def join_broken_words(text: str) -> str:
    """``text`` with words broken at line ends joined and soft hyphens dropped."""
    if "\n" in text and ("-\n" in text or "-\r\n" in text or "- \n" in text or "-\t\n" in text):
        text = _LINE_END_HYPHEN.sub(r"\1", text)
    if not text.isascii() and SOFT_HYPHEN in text:
        text = text.replace(SOFT_HYPHEN, "")
    return text
