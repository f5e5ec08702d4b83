"""The one text analyser: text in, terms out; and the TF-IDF features a fitted model computes
from it. Training (through scikit-learn) and prediction (through :class:`TfidfFeatures`, with
numpy) both follow the rules defined here.

Every setting that changes which terms come out lives in :class:`TextAnalyzer`, is written
to the model card, and is read back from it, so a saved model always analyses text the way
it was trained.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .text import join_broken_words

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
    algorithm algorithms problem problems method methods approach approaches propose proposed
    show shows shown result results paper novel new based using use used non task tasks
    performance work existing demonstrate experiments experimental study present provide
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
    lower-cased text, after LaTeX commands, links and e-mail addresses are removed, and words
    broken at line ends (as in text copied from PDFs) joined."""
    text = join_broken_words(text)
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


NOT_A_TERM = -1  # a word that is not a feature: it separates pairs
STOP = -2  # a stop word: left out before pairing


class TfidfFeatures:
    """The TF-IDF features of a fitted model: the numbers of scikit-learn's
    ``TfidfVectorizer(analyzer=TextAnalyzer(...), sublinear_tf=...)`` fitted at training time,
    computed with numpy and scipy for a whole batch at once.

    It follows :class:`TextAnalyzer` without calling it per text: each word of :func:`words`
    is looked up once (stop words and words that are not features have their own marks), and
    pairs of neighbouring features are looked up among the pair features when the analyser
    makes pairs.
    """

    def __init__(
        self, analyzer: TextAnalyzer, vocabulary: Sequence[str], idf: np.ndarray, sublinear_tf: bool
    ) -> None:
        self.analyzer = analyzer
        self.vocabulary = vocabulary
        self.idf = idf
        self.sublinear_tf = sublinear_tf
        n = len(vocabulary)
        self._word_feature: dict[str, int] = dict.fromkeys(STOP_WORDS, STOP)
        pairs: list[tuple[int, int]] = []
        for feature, term in enumerate(vocabulary):
            if " " not in term:
                self._word_feature[term] = feature
        for feature, term in enumerate(vocabulary):
            if " " in term:
                first, _, second = term.partition(" ")
                known = first in self._word_feature and second in self._word_feature
                if analyzer.ngram_max < 2 or not known:
                    raise ValueError(f"the term {term!r} is not one this analyser makes")
                pairs.append((self._word_feature[first] * n + self._word_feature[second], feature))
        pairs.sort()
        self._pair_keys = np.array([key for key, _ in pairs], dtype=np.int64)
        self._pair_features = np.array([feature for _, feature in pairs], dtype=np.int64)

    def transform(self, texts: Sequence[str]):
        """The TF-IDF matrix of ``texts``: a scipy CSR matrix, one l2-normed row per text,
        sorted indices."""
        return self.transform_with_evidence(texts)[0]

    def transform_with_evidence(self, texts: Sequence[str]):
        """The TF-IDF matrix of ``texts`` and, per text, its evidence (see :func:`evidence`)."""
        from scipy.sparse import csr_matrix  # C speed for counting and products; loaded on first use

        get, missing = self._word_feature.get, itertools.repeat(NOT_A_TERM)
        ids: list[int] = []
        lengths: list[int] = []
        for text in texts:
            found = words(text)
            lengths.append(len(found))
            ids.extend(map(get, found, missing))
        n, n_features = len(lengths), len(self.vocabulary)
        word_feature = np.array(ids, dtype=np.int64)
        row = np.repeat(np.arange(n, dtype=np.int64), lengths)
        kept = word_feature != STOP
        word_feature, row = word_feature[kept], row[kept]
        known = word_feature >= 0
        rows, features = [row[known]], [word_feature[known]]
        known_words = _evidence(np.bincount(rows[0], minlength=n), np.bincount(row, minlength=n))
        if len(self._pair_keys) and len(word_feature) > 1:
            first, second = word_feature[:-1], word_feature[1:]
            neighbours = (row[:-1] == row[1:]) & (first >= 0) & (second >= 0)
            keys = first[neighbours] * n_features + second[neighbours]
            at = np.minimum(np.searchsorted(self._pair_keys, keys), len(self._pair_keys) - 1)
            found_pair = self._pair_keys[at] == keys
            rows.append(row[:-1][neighbours][found_pair])
            features.append(self._pair_features[at[found_pair]])
        row, feature = np.concatenate(rows), np.concatenate(features)
        order = np.argsort(row, kind="stable")  # pairs come after words: group terms by text
        counts = csr_matrix(
            (np.ones(len(row)), feature[order], np.searchsorted(row[order], np.arange(n + 1))),
            shape=(n, n_features),
        )
        counts.sum_duplicates()  # counts per (text, term), indices sorted
        values = counts.data
        if self.sublinear_tf:
            values = 1.0 + np.log(values)
        values *= self.idf[counts.indices]
        row_of = np.repeat(np.arange(n), np.diff(counts.indptr))
        values /= np.sqrt(np.bincount(row_of, weights=values * values, minlength=n))[row_of]
        return csr_matrix((values, counts.indices, counts.indptr), shape=counts.shape), known_words


def evidence(texts: Sequence[str], vocabulary) -> np.ndarray:
    """Per text, the evidence a model with ``vocabulary`` (a container of terms) has about
    it: ``k * k / w``, where ``w`` counts the text's words that are not stop words and ``k``
    those of them that are features (with repeats). It grows with the words the model knows,
    and falls when most of the text is about something the model does not know."""
    found = [[word for word in words(text) if word not in STOP_WORDS] for text in texts]
    known = np.array([sum(word in vocabulary for word in text) for text in found])
    return _evidence(known, np.array([len(text) for text in found]))


def _evidence(known: np.ndarray, content_words: np.ndarray) -> np.ndarray:
    known = known.astype(np.float64)
    return np.divide(known * known, content_words, out=np.zeros_like(known), where=content_words > 0)
