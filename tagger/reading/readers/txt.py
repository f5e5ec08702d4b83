"""Text files (``.txt``): abstracts separated by blank lines, a heading standing alone left
out, and a paragraph of one abstract a line told from wrapped text."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator

from ...errors import InputError
from ...text import MAX_ABSTRACT_CHARS, join_broken_words, too_long
from ..records import Record
from ..source import Source

HEADING_MAX_WORDS = 12


def _paragraphs(lines: Iterable[str]) -> Iterator[tuple[int, int, list[str], int]]:
    """(first line, last line, lines, characters) of each blank-line-separated paragraph; the
    lines of one longer than :data:`MAX_ABSTRACT_CHARS` are not kept (it is too long anyway)."""
    paragraph: list[str] = []
    start = size = number = 0
    for number, line in enumerate(lines, start=1):
        if line.strip():
            if not size:
                start = number
            size += len(line)
            if size <= MAX_ABSTRACT_CHARS:
                paragraph.append(line)
            else:
                paragraph.clear()
        elif size:
            yield start, number - 1, paragraph, size
            paragraph, size = [], 0
    if size:
        yield start, number, paragraph, size


def _is_heading(lines: list[str]) -> bool:
    text = lines[0].strip()
    return len(lines) == 1 and len(text.split()) <= HEADING_MAX_WORDS and text[-1] not in ".!?"


def read_txt_records(source: Source) -> Iterator[Record | InputError]:
    report = source.report
    for index, (first, last, lines, size) in enumerate(_paragraphs(source.lines())):
        where = f"{source.name}:{first}"
        error = source.check_text(first, last, where) or too_long(size, where)
        if error:
            yield error
            continue
        # A short title-like first paragraph is a heading; on stdin a single short line is
        # a (short) abstract typed or piped in on its own.
        if index == 0 and _is_heading(lines) and not source.is_stdin:
            report.headings.append(where)
            continue
        if why := _one_record_a_line(lines):
            report.notes.append(f"{where}: read one abstract per line ({len(lines)} lines: {why})")
            for offset, line in enumerate(lines):
                if line.strip():
                    yield Record({"abstract": line}, first + offset, f"{source.name}:{first + offset}")
            continue
        text = "".join(lines)
        if not join_broken_words(text).strip():
            continue  # only soft hyphens: blank
        if (long := sum(len(line.strip()) >= WHOLE_ABSTRACT_CHARS for line in lines)) >= 2:
            report.notes.append(
                f"{where}: read as one abstract over {len(lines)} lines, {long} of them of "
                f"{WHOLE_ABSTRACT_CHARS} characters or more "
                "(one abstract a line? a blank line between them says so)"
            )
        yield Record({"abstract": text}, first, where)


def _one_record_a_line(lines: list[str]) -> str | None:
    """Why the lines of a paragraph (no blank line between them) are one record a line, or
    ``None`` when they are one wrapped text (the default). Wrapped text has lines that end
    near one width and sentences that go on across them; records a line end their sentence
    (or are titles) where the line ends, start with a capital, and differ in length."""
    rows = [line.strip() for line in lines]
    if len(rows) < 2:
        return None
    if all(len(row) >= ONE_PER_LINE_CHARS for row in rows):
        return f"each of {ONE_PER_LINE_CHARS} characters or more"
    short = [k for k, row in enumerate(rows) if len(row) < WHOLE_ABSTRACT_CHARS]
    if len(rows) - len(short) >= 2 and 3 * len(short) <= len(rows):  # (a session's name among them?)
        named = ", ".join(str(k + 1) for k in short[:5]) + (", ..." if len(short) > 5 else "")
        return (
            f"most of {WHOLE_ABSTRACT_CHARS} characters or more; the shorter ones tagged as abstracts too "
            f"(a heading?): line(s) {named} of the paragraph"
        )
    if len(rows) < 3:  # two short lines: too little to tell; one text, as a blank line would say
        return None
    pairs = list(itertools.pairwise(rows))
    going_on = sum(_sentence_goes_on(line, after) for line, after in pairs)
    if going_on > len(pairs) // 10:
        return None
    if not all(row[:1].isupper() or row[:1].isdigit() or row[:1] in "\"'([" for row in rows):
        return None
    lengths = sorted(len(row) for row in rows[:-1])
    if len(rows) >= 3 and lengths[-1] - lengths[0] <= max(8, lengths[-1] // 10):
        return None  # every line ends near one width: wrapped, whatever its punctuation
    if not any(row.endswith((".", "!", "?")) for row in rows):
        return "each starting with a capital, none ending a sentence or going on to the next (titles?)"
    if not all(row.endswith((".", "!", "?", '"', "'", ")")) for row in rows):
        return None
    several = sum(bool(_SENTENCE_INSIDE.search(row)) for row in rows)
    if several * 2 >= len(rows):
        return "most of several sentences, each line ending where its last sentence ends"
    if len(rows) > SENTENCES_A_LINE_MAX:  # one sentence a line is how some write an abstract, not so many
        return f"more than {SENTENCES_A_LINE_MAX} lines of one sentence each"
    return None


_SENTENCE_INSIDE = re.compile(r"[a-z0-9)][.!?] +[A-Z]")  # a sentence ends and another starts

SENTENCES_A_LINE_MAX = 20  # an abstract written one sentence a line has fewer lines than this


def _sentence_goes_on(line: str, after: str) -> bool:
    """Whether a sentence runs from ``line`` on to the line ``after`` it."""
    if line.endswith(("-", ",", ";", ":", "(")):
        return True
    return not line.endswith((".", "!", "?", '"', "'", ")")) and after[:1].islower()


# A paragraph of a .txt file whose lines are all at least this long (an abstract is a
# thousand characters; a line of wrapped text under a hundred) holds one abstract per line.
ONE_PER_LINE_CHARS = 200
# A line this long is a whole abstract (a sentence of one written a sentence a line is shorter):
# most lines of a paragraph this long, and it is one abstract a line, the others among them too.
WHOLE_ABSTRACT_CHARS = 500
