"""Text as it comes from PDFs: words broken at line ends joined, soft hyphens dropped; and
what text can be an abstract to tag (:func:`abstract_problem`).

Used by the readers (before whitespace is normalised, so a file's line ends are still there)
and by the analyser (for text passed from Python). Ligatures (U+FB01 and the like) are left to
the analyser's NFKC normalisation. Light: tagging text from Python imports no file reader.
"""

from __future__ import annotations

import re

from .errors import InputError

# An abstract longer than this many characters (a thousand long abstracts) is a bad record:
# tagging it would take memory in proportion (about 25 bytes a character).
MAX_ABSTRACT_CHARS = 5_000_000

# A word broken at a line end by a hyphen (``gen-\nerative``) is joined when the line goes on
# with a lower-case letter, unless it is the last part of a compound (``state-of-the-\nart``).
_LINE_END_HYPHEN = re.compile(r"(?<![-\w])([^\W\d_]{2,})-[ \t]*\r?\n[ \t]*(?=[a-z\u00df-\u00ff])")
SOFT_HYPHEN = "\u00ad"


def join_broken_words(text: str) -> str:
    """``text`` with words broken at line ends joined and soft hyphens dropped."""
    if _may_break_words(text):
        text = _LINE_END_HYPHEN.sub(r"\1", text)
    if not text.isascii() and SOFT_HYPHEN in text:
        text = text.replace(SOFT_HYPHEN, "")
    return text


def kept_by_joining(text: str) -> list[tuple[int, int]]:
    """The ranges of ``text`` that :func:`join_broken_words` keeps, in order (what it drops:
    a broken word's hyphen and line end, soft hyphens): where each character of its result
    comes from, for showing a word where it stands in the text."""
    dropped = [(m.end(1), m.end()) for m in _LINE_END_HYPHEN.finditer(text)] if _may_break_words(text) else []
    if not text.isascii() and SOFT_HYPHEN in text:
        dropped = sorted(dropped + [(i, i + 1) for i, c in enumerate(text) if c == SOFT_HYPHEN])
    kept, at = [], 0
    for start, end in dropped:
        if start > at:
            kept.append((at, start))
        at = max(at, end)
    return [*kept, (at, len(text))] if at < len(text) else kept


def _may_break_words(text: str) -> bool:
    return "\n" in text and ("-\n" in text or "-\r\n" in text or "- \n" in text or "-\t\n" in text)


def too_long(size: int, where: str) -> InputError | None:
    """The error for an abstract of ``size`` characters, if it is over the limit."""
    if size <= MAX_ABSTRACT_CHARS:
        return None
    return InputError(
        f"an abstract of {size:,} characters, over the limit of {MAX_ABSTRACT_CHARS:,}",
        where=where,
        fix="Split it (in .txt files, a blank line separates abstracts), or leave it out with --skip-bad.",
    )


def empty(text: str) -> bool:
    """Whether a text is no abstract at all: empty, or only whitespace."""
    return not text or text.isspace()


def abstract_problem(text: str, where: str | None = None) -> InputError | None:
    """What is wrong with a text as an abstract to tag, if anything: empty (or only
    whitespace), over :data:`MAX_ABSTRACT_CHARS`, or holding a lone surrogate (half of a
    UTF-16 pair, no character: it cannot be written as UTF-8). The one rule for files, stdin
    and the Python API."""
    if empty(text):
        return InputError("empty abstract", where=where, fix="Fill it in or remove the record.")
    if not text.isascii() and (half := _LONE_SURROGATE.search(text)):
        return InputError(
            f"a lone surrogate ({half.group()!r}, at character {half.start()}), which is no character",
            where=where,
            fix="Decode the text properly (it was made from bytes with errors='surrogateescape'?).",
        )
    return too_long(len(text), where or "")


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
