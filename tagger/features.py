"""The one text analyser: text in, terms out. Training and prediction both call it.

Every setting that changes which terms come out lives in :class:`TextAnalyzer`, is written
to the model card, and is read back from it, so a saved model always analyses text the way
it was trained.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from dataclasses import asdict, dataclass

# Function words that say nothing about a research area. Written for this project; kept
# short on purpose: words such as "learning", "model" or "data" are left to IDF weighting.
STOP_WORDS = frozenset(
    """
    a about above across after again against all almost along already also although always am
    among an and another any anyone anything are around as at be became because become becomes
    been before being below between both but by can cannot could did do does doing done down
    during each either else enough etc even ever every few for from further furthermore had has
    have having he her here hers herself him himself his how however i if in into is it its
    itself just least less many may me might more moreover most much must my myself neither no
    nor not now of off often on once one only onto or other others otherwise our ours ourselves
    out over own per rather same several shall she should since so some such than that the
    their theirs them themselves then there thereby therefore these they this those though
    three through thus to together too two under until up upon us very via was we well were
    what whatever when where whereas whether which while who whom whose why will with within
    without would yet you your yours yourself
    """.split()
)

# LaTeX commands (\textbf, \mathcal, ...), links and e-mail addresses carry no topic. Each
# pattern runs only on text that holds its mark, which keeps the common case fast.
_LATEX = re.compile(r"\\[a-z]+")
_LINK = re.compile(r"(?:https?://|www\.)\S+|\S+@\S+")
_WORD = re.compile(r"\w+")
# Fast paths that split exactly like _WORD: ASCII text is split by bytes.translate (every
# ASCII character that is not [a-z0-9_] becomes a space) and str.split; common Unicode
# punctuation, which is never part of a word, becomes a space first.
_ASCII_NON_WORD = bytes(c for c in range(128) if not (chr(c).isalnum() or chr(c) == "_"))
_ASCII_SPACES = bytes.maketrans(_ASCII_NON_WORD, b" " * len(_ASCII_NON_WORD))
_PUNCTUATION = re.compile("[\u2018\u2019\u201c\u201d\u2013\u2014\u2212\u2022\u00b7\u00d7]")


def words(text: str) -> list[str]:
    """The words of ``text``: runs of word characters (``\\w+``) of the NFKC-normalised,
    lower-cased text, after LaTeX commands, links and e-mail addresses are removed."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    text = text.lower()
    if "\\" in text:
        text = _LATEX.sub(" ", text)
    if "://" in text or "www." in text or "@" in text:
        text = _LINK.sub(" ", text)
    if not text.isascii():
        text = _PUNCTUATION.sub(" ", text)
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_SPACES).decode("ascii").split()
    return _WORD.findall(text)


def is_term(word: str) -> bool:
    """Whether a word can be a feature: two characters or more, not a stop word, not a number."""
    return len(word) > 1 and word not in STOP_WORDS and not word.isdigit()


@dataclass(frozen=True)
class TextAnalyzer:
    """Terms of a text: its words that can be features (:func:`is_term`) and, with
    ``ngram_max=2``, the pairs of such words that stand next to each other once stop words
    are left out. Other words that are not terms (numbers, single letters) separate pairs."""

    ngram_max: int = 2

    def __post_init__(self) -> None:
        if self.ngram_max not in (1, 2):
            raise ValueError(f"ngram_max must be 1 or 2, not {self.ngram_max!r}")

    def __call__(self, text: str) -> list[str]:
        found = [word for word in words(text) if word not in STOP_WORDS]
        keep = [is_term(word) for word in found]
        terms = [word for word, kept in zip(found, keep) if kept]
        if self.ngram_max == 2:
            terms += [
                f"{first} {second}"
                for (first, first_kept), (second, second_kept) in itertools.pairwise(zip(found, keep))
                if first_kept and second_kept
            ]
        return terms

    def settings(self) -> dict:
        """The settings as plain data, for the model card."""
        return asdict(self)

    @classmethod
    def from_settings(cls, settings: dict) -> TextAnalyzer:
        return cls(**settings)
