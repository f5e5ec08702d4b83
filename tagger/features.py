"""The one text analyser: text in, terms out. Training and prediction both call it.

Every setting that changes which terms come out lives in :class:`TextAnalyzer`, is written
to the model card, and is read back from it, so a saved model always analyses text the way
it was trained.
"""

from __future__ import annotations

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

# LaTeX commands (\textbf, \mathcal, ...), URLs and e-mail addresses carry no topic.
_NOISE = re.compile(r"\\[a-z]+|https?://\S+|www\.\S+|\S+@\S+")
_TOKEN = re.compile(r"\b\w\w+\b")


@dataclass(frozen=True)
class TextAnalyzer:
    """Lower-cases, drops LaTeX commands and URLs, keeps word tokens of two or more
    characters that are not stop words or bare numbers, and adds word n-grams."""

    ngram_min: int = 1
    ngram_max: int = 2

    def __post_init__(self) -> None:
        if not 1 <= self.ngram_min <= self.ngram_max:
            raise ValueError(f"bad n-gram range ({self.ngram_min}, {self.ngram_max})")

    def tokens(self, text: str) -> list[str]:
        """The word tokens of ``text``, in order."""
        if not text.isascii():
            text = unicodedata.normalize("NFKC", text)
        text = _NOISE.sub(" ", text.lower())
        return [token for token in _TOKEN.findall(text) if token not in STOP_WORDS and not token.isdigit()]

    def __call__(self, text: str) -> list[str]:
        """The terms of ``text``: its tokens and the n-grams made of neighbouring tokens."""
        tokens = self.tokens(text)
        if self.ngram_max == 1:
            return tokens
        terms = tokens if self.ngram_min == 1 else []
        for n in range(max(2, self.ngram_min), self.ngram_max + 1):
            terms = terms + [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
        return terms

    def settings(self) -> dict:
        """The settings as plain data, for the model card."""
        return asdict(self)

    @classmethod
    def from_settings(cls, settings: dict) -> TextAnalyzer:
        return cls(**settings)
