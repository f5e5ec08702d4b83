"""TF-IDF matrices of many subsets of one collection of texts, each text analysed once.

Training fits the same texts again and again: every fold of cross-validation, every candidate
setting of the search, the final fit, each round of self-training. scikit-learn's
``TfidfVectorizer`` analyses and counts every text anew each time (two thirds of a fold's time
on word pairs). A :class:`Corpus` analyses a text once, with the pair analyser (whose first
terms are the single words: the single-word analyser's terms), keeps its terms as numbers,
and makes each subset's matrix with numpy: the very numbers ``TfidfVectorizer(analyzer=...,
sublinear_tf=..., min_df=..., max_features=...)`` makes, bit for bit, its columns and their
order within each row included (tests/test_fitting.py compares them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .features import SparseRows, TextAnalyzer, evidence_from_counts, tfidf_rows

_PAIRS = TextAnalyzer(ngram_max=2)


@dataclass(frozen=True)
class Vocabulary:
    """A subset's fitted vocabulary: which of the corpus's terms are features (``terms``, in
    scikit-learn's column order: sorted), their idf, and the single-word analyser's or
    the pair analyser's (``ngram_max``)."""

    ngram_max: int
    terms: np.ndarray  # the corpus's term numbers of the features, in column order
    column: np.ndarray  # per term number (of those known when fitted): its column, or -1
    idf: np.ndarray
    sublinear_tf: bool

    def mapping(self, names: Sequence[str]) -> dict[str, int]:
        """``vocabulary_`` as scikit-learn has it: term -> column (``names``: the corpus's)."""
        return {names[t]: i for i, t in enumerate(self.terms.tolist())}


class Corpus:
    """Texts, each analysed once when first seen (:meth:`rows`), and the TF-IDF matrices of
    any of them (:meth:`fit`, :meth:`matrix`). Terms are numbered in the order they are
    first seen, which never changes; scikit-learn's column order (sorted terms) is computed
    from the names when a vocabulary is fitted."""

    def __init__(self) -> None:
        self._row: dict[str, int] = {}  # text -> row
        self._term: dict[str, int] = {}  # term -> number
        self.names: list[str] = []  # number -> term
        self._flat: list[int] = []  # every row's terms' numbers (single words first), row after row
        self._starts: list[int] = [0]  # where each row's start in _flat, and the end
        self._single: list[int] = []  # per row: how many of its terms are single words
        self._content: list[int] = []  # per row: its words that are not stop words
        self._rank = np.zeros(0, dtype=np.int64)  # per term number: its place among the sorted names
        self._pair = np.zeros(0, dtype=bool)  # per term number: whether it is a word pair
        self._arrays: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # _flat, _starts, _single

    def __getstate__(self) -> dict:
        """Compact, for worker processes: the numbers as arrays."""
        return {
            "texts": list(self._row),
            "names": self.names,
            "arrays": self._numbers(),
            "content": self._content,
            "rank": self._rank,
            "pair": self._pair,
        }

    def __setstate__(self, state: dict) -> None:
        self._row = {text: row for row, text in enumerate(state["texts"])}
        self.names = state["names"]
        self._term = {name: number for number, name in enumerate(self.names)}
        self._arrays = state["arrays"]
        flat, starts, single = self._arrays
        self._flat, self._starts, self._single = flat.tolist(), starts.tolist(), single.tolist()
        self._content, self._rank, self._pair = state["content"], state["rank"], state["pair"]

    def rows(self, texts: Sequence[str]) -> np.ndarray:
        """The row of each text, analysing the texts not seen before."""
        rows = np.empty(len(texts), dtype=np.int64)
        for k, text in enumerate(texts):
            row = self._row.get(text)
            if row is None:
                row = self._row[text] = len(self._single)
                analysis = _PAIRS.analyse(text)
                self._flat.extend(map(self._number, analysis.terms))
                self._starts.append(len(self._flat))
                self._single.append(analysis.single)
                self._content.append(analysis.content_words)
                self._arrays = None
            rows[k] = row
        return rows

    def _numbers(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The terms' numbers, where each row starts, and its single words, as arrays."""
        if self._arrays is None:
            self._arrays = (
                np.array(self._flat, dtype=np.int64),
                np.array(self._starts, dtype=np.int64),
                np.array(self._single, dtype=np.int64),
            )
        return self._arrays

    def _number(self, term: str) -> int:
        number = self._term.get(term)
        if number is None:
            number = self._term[term] = len(self.names)
            self.names.append(term)
        return number

    def ranks(self) -> np.ndarray:
        """Each term number's place among the terms sorted (scikit-learn's column order),
        sorted once for every term seen so far (and which terms are word pairs, found then)."""
        if len(self._rank) != len(self.names):
            order = sorted(range(len(self.names)), key=self.names.__getitem__)
            self._rank = np.empty(len(order), dtype=np.int64)
            self._rank[order] = np.arange(len(order))
            new = self.names[len(self._pair) :]
            self._pair = np.concatenate([self._pair, np.fromiter((" " in t for t in new), bool, len(new))])
        return self._rank

    def _terms(self, rows: np.ndarray, ngram_max: int) -> tuple[np.ndarray, np.ndarray]:
        """Per term of each of ``rows``, in order: its number and its row's position in
        ``rows``."""
        flat, starts, single = self._numbers()
        begin = starts[rows]
        lengths = starts[rows + 1] - begin if ngram_max == 2 else single[rows]
        doc = np.repeat(np.arange(len(rows)), lengths)
        first = np.cumsum(lengths) - lengths  # where each row's terms start in the result
        return flat[np.arange(len(doc)) - first[doc] + begin[doc]], doc

    def fit(
        self,
        rows: np.ndarray,
        ngram_max: int,
        sublinear_tf: bool,
        min_df: int,
        max_features: int | None,
        pair_min_df: int = 1,
    ) -> tuple[Vocabulary, SparseRows]:
        """The vocabulary fitted on ``rows`` and their matrix, as
        ``TfidfVectorizer.fit_transform`` makes them (its ValueErrors too); with
        ``pair_min_df``, a word pair is a feature only when that many of them hold it."""
        terms, doc = self._terms(rows, ngram_max)
        if not len(terms):
            raise ValueError("empty vocabulary; perhaps the documents only contain stop words")
        if len(rows) < min_df:
            raise ValueError("max_df corresponds to < documents than min_df")
        # scikit-learn counts each text's terms in the order the terms first appear in the
        # texts (its provisional numbers), then renumbers them sorted: each row keeps that order.
        present, first = np.unique(terms, return_index=True)
        by_appearance = present[np.argsort(first, kind="stable")]
        appearance = np.zeros(len(self.names), dtype=np.int64)
        appearance[by_appearance] = np.arange(len(present))
        keys, counts = np.unique(doc * len(present) + appearance[terms], return_counts=True)
        entry_doc, entry_appearance = np.divmod(keys, len(present))
        entry_term = by_appearance[entry_appearance]
        sorted_terms = present[np.argsort(self.ranks()[present])]  # scikit-learn's column order
        df = np.bincount(entry_term, minlength=len(self.names))[sorted_terms]
        mask = df >= min_df
        if pair_min_df > min_df:
            mask &= ~self._pair[sorted_terms] | (df >= pair_min_df)  # (found by ranks, above)
        if max_features is not None and mask.sum() > max_features:
            frequency = np.bincount(entry_term, weights=counts.astype(np.float64), minlength=len(self.names))
            keep = (-frequency[sorted_terms][mask]).argsort()[:max_features]
            limited = np.zeros(len(mask), dtype=bool)
            limited[np.flatnonzero(mask)[keep]] = True
            mask = limited
        if not mask.any():
            raise ValueError("After pruning, no terms remain. Try a lower min_df or a higher max_df.")
        features = sorted_terms[mask]
        column = np.full(len(self.names), -1, dtype=np.int64)
        column[features] = np.arange(len(features))
        idf = np.full(len(features), len(rows) + 1, dtype=np.float64)
        idf /= df[mask].astype(np.float64) + 1.0
        np.log(idf, out=idf)
        idf += 1.0
        vocabulary = Vocabulary(ngram_max, features, column, idf, sublinear_tf)
        kept = column[entry_term] >= 0
        shape = (len(rows), len(features))
        return vocabulary, tfidf_rows(
            entry_doc[kept], column[entry_term[kept]], counts[kept], shape, idf, sublinear_tf
        )

    def matrix(self, vocabulary: Vocabulary, rows: np.ndarray) -> SparseRows:
        """The matrix of ``rows`` in ``vocabulary``, as
        ``TfidfVectorizer.transform`` makes it (each row's columns ascending)."""
        terms, doc = self._terms(rows, vocabulary.ngram_max)
        column = _columns(vocabulary, terms)
        known = column >= 0
        n_columns = len(vocabulary.terms)
        keys, counts = np.unique(doc[known] * n_columns + column[known], return_counts=True)
        entry_doc, entry_column = np.divmod(keys, n_columns)
        shape = (len(rows), n_columns)
        return tfidf_rows(entry_doc, entry_column, counts, shape, vocabulary.idf, vocabulary.sublinear_tf)

    def known_words(self, vocabulary: Vocabulary, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """How many words of each of ``rows`` that are not stop words are features of
        ``vocabulary`` (with repeats), and how many such words each has."""
        terms, doc = self._terms(rows, 1)
        known = np.bincount(doc[_columns(vocabulary, terms) >= 0], minlength=len(rows))
        return known, np.array([self._content[r] for r in rows.tolist()], dtype=np.int64)

    def evidence(self, vocabulary: Vocabulary, rows: np.ndarray) -> np.ndarray:
        """:func:`tagger.features.evidence_from_counts` of ``rows`` with the features of ``vocabulary``."""
        return evidence_from_counts(*self.known_words(vocabulary, rows))


def _columns(vocabulary: Vocabulary, terms: np.ndarray) -> np.ndarray:
    """The column of each term number (-1: not a feature, or a term first seen after the
    vocabulary was fitted)."""
    column = vocabulary.column
    inside = terms < len(column)
    return np.where(inside, column[np.where(inside, terms, 0)], -1)
