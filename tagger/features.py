"""The one text analyser: text in, terms out; and the TF-IDF features a fitted model computes
from it. Training (through scikit-learn) and prediction (through :class:`TfidfFeatures`, with
numpy) both follow the rules defined here.

Every setting that changes which terms come out lives in :class:`TextAnalyzer`, is written
to the model card, and is read back from it, so a saved model always analyses text the way
it was trained.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .text import join_broken_words, kept_by_joining

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
    return _spaced_words(text).split()


def _spaced_words(text: str) -> str:
    """The words of ``text`` (see :func:`words`) separated by whitespace (ASCII spaces only):
    what both ways of splitting, :func:`words` and :meth:`TfidfFeatures._arrow_features`, split."""
    text = join_broken_words(text)
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    text = text.lower()
    if _may_hold_latex(text):
        text = _LATEX.sub(" ", text)
    if _may_hold_link(text):
        text = _LINK.sub(" ", text)
    if not text.isascii():
        text = _PUNCTUATION.sub(" ", text)
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_SPACES).decode("ascii")
    return " ".join(_WORD.findall(text))


def _lowered_if_plain(text: str) -> str | None:
    """``text`` lower-cased if that, with every ASCII character that is not a word character
    made a space, is its :func:`_spaced_words`: ASCII text without line ends (where words
    broken by a hyphen are joined), LaTeX commands, links or e-mail addresses; else None."""
    if not text.isascii() or "\n" in text:
        return None
    lowered = text.lower()
    if _may_hold_latex(lowered) or _may_hold_link(lowered):
        return None
    return lowered


def _may_hold_latex(lowered: str) -> bool:
    """Whether lower-cased text has the mark of a LaTeX command (see _LATEX)."""
    return "\\" in lowered


def _may_hold_link(lowered: str) -> bool:
    """Whether lower-cased text has the mark of a link or an e-mail address (see _LINK)."""
    return "://" in lowered or "www." in lowered or "@" in lowered


def word_spans(text: str) -> list[tuple[str, int, int]]:
    """The words of ``text``, exactly as :func:`words` gives them, each with the offsets in
    ``text`` of the characters it was read from (a broken word spans its hyphen and line end).
    The same steps, each tracking where every character came from: words joined, NFKC and
    lower case a character at a time where that gives what the whole text gives (else a word,
    or what is between words, at a time, else a run between spaces, else the whole text as one
    place), LaTeX commands and links
    blanked (not removed: the offsets stay), then ``\\w+``. Slower than :func:`words`: for
    showing terms, not for tagging."""
    joined: list[str] = []
    origin: list[tuple[int, int]] = []  # of each character of the text being analysed
    for start, end in kept_by_joining(text):
        joined.append(text[start:end])
        origin += [(i, i + 1) for i in range(start, end)]
    lowered, origin = _lowered_with_origin("".join(joined), origin)
    if _may_hold_latex(lowered) or _may_hold_link(lowered):
        blanked = _LATEX.sub(lambda m: " " * len(m.group()), lowered)
        lowered = _LINK.sub(lambda m: " " * len(m.group()), blanked)
    return [(m.group(), origin[m.start()][0], origin[m.end() - 1][1]) for m in _WORD.finditer(lowered)]


def _lowered_with_origin(text: str, origin: list[tuple[int, int]]) -> tuple[str, list[tuple[int, int]]]:
    """``text`` NFKC-normalised (when not ASCII) and lower-cased as :func:`words` does it,
    with the origin of each character of the result (see :func:`word_spans`)."""

    def change(part: str) -> str:
        return (part if part.isascii() else unicodedata.normalize("NFKC", part)).lower()

    whole = change(text)
    if text.isascii() or (len(whole) == len(text) and whole == "".join(map(change, text))):
        return whole, origin  # (one character for one: ASCII, and most text)
    for pattern in (r"\w+|\W+", r"\s+|\S+"):  # words and what is between them, else runs between spaces
        runs = [m.span() for m in re.finditer(pattern, text)]
        if whole == "".join(change(text[a:b]) for a, b in runs):
            pieces = [(change(text[a:b]), a, b) for a, b in runs]
            break
    else:
        pieces = [(whole, 0, len(text))]
    out: list[tuple[int, int]] = []
    for changed, a, b in pieces:
        by_character = [change(c) for c in text[a:b]]
        if "".join(by_character) == changed:
            out += [origin[i] for i, c in zip(range(a, b), by_character) for _ in c]
        else:
            out += [(origin[a][0], origin[b - 1][1])] * len(changed)
    return whole, out


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

    def spans(self, text: str) -> list[tuple[str, list[tuple[int, int]]]]:
        """The terms of ``text``, exactly as :meth:`__call__` gives them, each with the
        character offsets in ``text`` of the words it is made of (:func:`word_spans`): where
        to show it (the labelling page's highlights)."""
        found = [(word, start, end) for word, start, end in word_spans(text) if word not in STOP_WORDS]
        keep = [is_term(word) for word, _, _ in found]
        terms = [(word, [(start, end)]) for (word, start, end), kept in zip(found, keep) if kept]
        if self.ngram_max == 2:
            terms += [(f"{a[0]} {b[0]}", [a[1:], b[1:]]) for a, b in _pairs(found, keep)]
        return terms

    def __call__(self, text: str) -> list[str]:
        return self.analyse(text).terms

    def analyse(self, text: str) -> Analysis:
        """The terms of ``text`` (single words first, then pairs), how many of them are single
        words, and how many of its words are not stop words (see :func:`evidence_from_counts`)."""
        found = [word for word in words(text) if word not in STOP_WORDS]
        keep = [is_term(word) for word in found]
        terms = [word for word, kept in zip(found, keep) if kept]
        single = len(terms)
        if self.ngram_max == 2:
            terms += [f"{first} {second}" for first, second in _pairs(found, keep)]
        return Analysis(terms, single, len(found))


def _pairs(found: Sequence, keep: list[bool]) -> list[tuple]:
    """The neighbours in ``found`` (words left after stop words) that are both terms."""
    return [
        (first, second)
        for (first, kept), (second, also) in itertools.pairwise(zip(found, keep))
        if kept and also
    ]


class Analysis(NamedTuple):
    """A text's terms as :class:`TextAnalyzer` makes them: ``terms[:single]`` are its single
    words that are features (with repeats, in order), the rest pairs; ``content_words``
    counts its words that are not stop words."""

    terms: list[str]
    single: int
    content_words: int


class SparseRows(NamedTuple):
    """A sparse matrix in CSR form as numpy arrays: prediction multiplies it without
    importing scipy (0.2 s at start-up, in every process); :meth:`csr` makes it scipy's."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    shape: tuple[int, int]

    def dot(self, dense: np.ndarray) -> np.ndarray:
        """This matrix times ``dense`` (one row per column of this matrix): each row's
        products added in the order of its indices. A large batch goes through scipy (ten
        times faster per row, once its import has been paid), a small one through numpy
        (no import: one abstract in a new process); the numbers are the same."""
        if self.shape[0] >= LARGE_BATCH:
            return np.asarray(self.csr() @ dense)
        return self.dot_transposed(dense.T)

    def dot_transposed(self, weights: np.ndarray) -> np.ndarray:
        """This matrix times ``weights.T`` (``weights``: one column per column of this matrix),
        each row's products added in the order of its indices, with numpy alone: for one
        abstract, the weights of its terms are gathered without transposing them all."""
        row = np.repeat(np.arange(self.shape[0]), np.diff(self.indptr))
        products = self.data[:, None] * weights[:, self.indices].T
        columns = [
            np.bincount(row, weights=products[:, j], minlength=self.shape[0]) for j in range(weights.shape[0])
        ]
        return np.stack(columns, axis=1) if columns else np.zeros((self.shape[0], 0))

    def csr(self):
        from scipy.sparse import csr_matrix

        return csr_matrix((self.data, self.indices, self.indptr), shape=self.shape)


def tfidf_rows(
    row: np.ndarray,
    column: np.ndarray,
    counts: np.ndarray,
    shape: tuple[int, int],
    idf: np.ndarray,
    sublinear: bool,
) -> SparseRows:
    """The TF-IDF matrix of a batch from each (row, column) entry's count of its term, the
    entries in CSR order (by row, then column): each count (or ``1 + log`` of it) times its
    column's idf, each row l2-normed, as scikit-learn's ``TfidfTransformer`` computes them.
    Training's matrices and tagging's are both made here."""
    values = counts.astype(np.float64)
    if sublinear:
        np.log(values, out=values)
        values += 1.0
    values *= idf[column]
    values /= np.sqrt(np.bincount(row, weights=values * values, minlength=shape[0]))[row]
    indptr = np.zeros(shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=shape[0]), out=indptr[1:])
    return SparseRows(values, column.astype(np.int32), indptr, shape)


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
        if analyzer.ngram_max < 2 and (pair := next((term for term in vocabulary if " " in term), None)):
            raise _not_made(pair)
        # scikit-learn's vocabulary is sorted: a few words (an abstract, a few hundred) are
        # found by binary search, and the tables of every word and pair (a third of a second
        # to build for 100,000 terms) are built for the first batch that pays for them.
        self._sorted = all(map(operator.lt, vocabulary, itertools.islice(vocabulary, 1, None)))
        self._tables: _Lookup | None = None
        self._searched_chars = 0  # characters of the texts found by binary search so far

    def _lookup(self) -> _Lookup:
        """The tables of every word and pair of the vocabulary (built on first use)."""
        if self._tables is None:
            self._tables = _Lookup(self.vocabulary)
        return self._tables

    def _searching(self, texts: Sequence[str]) -> bool:
        """Whether the words of ``texts`` are found by binary search: while the tables are not
        built, for texts too short to pay for building them (fewer than SEARCH_CHARS
        characters for each term of the vocabulary: a few hundred abstracts), counting the
        texts searched before (batch after batch, the tables pay)."""
        if self._tables is not None or not self._sorted:
            return False
        self._searched_chars += sum(map(len, texts))
        return self._searched_chars < SEARCH_CHARS * len(self.vocabulary)

    def _searched(self, word: str) -> int:
        """A word's feature (or STOP, or NOT_A_TERM), found by binary search."""
        at = bisect.bisect_left(self.vocabulary, word)
        if at < len(self.vocabulary) and self.vocabulary[at] == word:
            return at
        return STOP if word in STOP_WORDS else NOT_A_TERM

    def transform(self, texts: Sequence[str]):
        """The TF-IDF matrix of ``texts``: a scipy CSR matrix, one l2-normed row per text,
        sorted indices."""
        return self.transform_with_evidence(texts)[0].csr()

    def transform_with_evidence(self, texts: Sequence[str]) -> tuple[SparseRows, np.ndarray]:
        """The TF-IDF matrix of ``texts`` (as :class:`SparseRows`) and, per text, its
        evidence (see :func:`evidence`)."""
        n, n_features = len(texts), len(self.vocabulary)
        word_feature, row = self._word_features(texts)
        kept = word_feature != STOP
        word_feature, row = word_feature[kept], row[kept]
        known = word_feature >= 0
        parts = [row[known] * n_features + word_feature[known]]  # one key per (text, term) seen
        known_words = evidence_from_counts(
            np.bincount(row[known], minlength=n), np.bincount(row, minlength=n)
        )
        if self.analyzer.ngram_max == 2 and len(word_feature) > 1:
            parts.append(self._pair_terms(word_feature, row, n))
        keys = np.sort(np.concatenate(parts))  # by text, then by term: the CSR order
        starts = np.flatnonzero(np.diff(keys, prepend=-1))  # first of each run of one key
        row_of, indices = np.divmod(keys[starts], n_features)
        counts = np.diff(starts, append=len(keys))
        return tfidf_rows(row_of, indices, counts, (n, n_features), self.idf, self.sublinear_tf), known_words

    def _pair_terms(self, word_feature: np.ndarray, row: np.ndarray, n: int) -> np.ndarray:
        """The (text, term) keys of the pair features among neighbouring words: the pairs'
        keys are sorted first, so that one pass of ``searchsorted`` finds them all (a few
        pairs, before the tables are built: each by binary search)."""
        n_features = len(self.vocabulary)
        first, second = word_feature[:-1], word_feature[1:]
        neighbours = (row[:-1] == row[1:]) & (first >= 0) & (second >= 0)
        if self._tables is None and self._sorted:
            vocabulary = self.vocabulary
            found = [
                (text, self._searched(f"{vocabulary[a]} {vocabulary[b]}"))
                for a, b, text in zip(
                    first[neighbours].tolist(), second[neighbours].tolist(), row[:-1][neighbours].tolist()
                )
            ]
            return np.array([text * n_features + f for text, f in found if f >= 0], dtype=np.int64)
        tables = self._lookup()
        if not len(tables.pair_keys):
            return np.zeros(0, dtype=np.int64)
        pair_key, pair_row = first[neighbours] * n_features + second[neighbours], row[:-1][neighbours]
        if n_features * n_features * n < 2**62:  # (pair, text) fits in one int64: sort both at once
            pair_key, pair_row = np.divmod(np.sort(pair_key * n + pair_row), n)
        at = np.minimum(np.searchsorted(tables.pair_keys, pair_key), len(tables.pair_keys) - 1)
        found = tables.pair_keys[at] == pair_key
        return pair_row[found] * n_features + tables.pair_features[at[found]]

    def _word_features(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Per word of ``texts``, in order: its feature (or :data:`STOP`, or
        :data:`NOT_A_TERM`) and the index of its text."""
        searching = self._searching(texts)
        if not searching and len(texts) >= LARGE_BATCH and (found := self._arrow_features(texts)) is not None:
            return found
        spaced = [_spaced_words(text) for text in texts]
        if searching:
            feature_of = self._searched
        else:
            get, feature_of = self._lookup().word_feature.get, None
        ids: list[int] = []
        lengths: list[int] = []
        for text in spaced:
            words = text.split()
            lengths.append(len(words))
            ids.extend(
                map(feature_of, words) if feature_of else map(get, words, itertools.repeat(NOT_A_TERM))
            )
        return np.array(ids, dtype=np.int64), np.repeat(np.arange(len(spaced), dtype=np.int64), lengths)

    def _arrow_tables(self):
        """pyarrow's compute module and the lookup tables with pyarrow's set of words (built
        on first use), or None without pyarrow."""
        try:
            import pyarrow.compute as pc
        except ImportError:
            return None
        tables = self._lookup()
        if tables.arrow_lookup is None:
            tables.arrow_lookup = pc.SetLookupOptions(_arrow_strings(list(tables.word_feature)))
        return pc, tables

    def ready_for_large_batches(self) -> None:
        """Build now what large batches look words up in (the tables, pyarrow's set of
        words): before worker processes are forked, which then share it instead of each
        building its own (tens of megabytes, and a third of a second, each)."""
        if self._arrow_tables() is None:
            self._lookup()

    def _arrow_features(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`_word_features` of ``texts``, spaced (see :func:`_spaced_words`) a batch at
        a time, split and looked up in pyarrow's C++ kernels, without a Python string per
        word; None without pyarrow.

        A plain text (:func:`_lowered_if_plain`) is only lower-cased here; the batch's
        punctuation then becomes spaces in one ``bytes.translate`` over all its texts, which
        does nothing to texts :func:`_spaced_words` spaced already (their ASCII characters
        are word characters and spaces; UTF-8 encodes other characters in bytes above 127)."""
        arrow = self._arrow_tables()
        if arrow is None:
            return None
        pc, tables = arrow
        spaced = [
            lowered if (lowered := _lowered_if_plain(text)) is not None else _spaced_words(text)
            for text in texts
        ]
        lists = pc.ascii_split_whitespace(_arrow_strings(spaced, _ASCII_SPACES))
        words = lists.flatten()
        found = pc.index_in(words, options=tables.arrow_lookup)  # null: not a word the model knows
        index = np.where(_valid(found), _numbers(found, np.int32), -1)
        row = np.repeat(np.arange(len(spaced), dtype=np.int64), np.diff(_numbers(lists, np.int32, 1)))
        word = np.diff(_numbers(words, np.int64, 1)) > 0  # not an empty string (at a text's ends)
        return tables.arrow_features_of[index[word]], row[word]


class _Lookup:
    """The tables :class:`TfidfFeatures` looks words and pairs up in: each word's feature (or
    STOP), each pair of word features' key (first * n + second, sorted) and its feature."""

    def __init__(self, vocabulary: Sequence[str]) -> None:  # (of an analyser that makes pairs, if any)
        n = len(vocabulary)
        spaced = np.fromiter((" " in term for term in vocabulary), bool, n)
        single, pairs = np.flatnonzero(~spaced), np.flatnonzero(spaced)
        self.word_feature: dict[str, int] = dict.fromkeys(STOP_WORDS, STOP)
        self.word_feature.update(zip([vocabulary[i] for i in single.tolist()], single.tolist()))
        firsts, seconds = _pair_words(vocabulary, pairs, single, self.word_feature)
        if (bad := np.flatnonzero((firsts < 0) | (seconds < 0))).size:
            raise _not_made(vocabulary[pairs[bad[0]]])
        keys = firsts * n + seconds
        order = np.argsort(keys, kind="stable")
        self.arrow_lookup = None  # pyarrow's table of known words: made on first use
        # Feature (or STOP) of each known word in the table's order, then NOT_A_TERM for the
        # index -1 that stands for a word the table does not hold.
        self.arrow_features_of = np.append(np.array(list(self.word_feature.values()), np.int64), NOT_A_TERM)
        self.pair_keys = keys[order]
        self.pair_features = pairs.astype(np.int64)[order]


def _pair_words(
    vocabulary: Sequence[str], pairs: np.ndarray, single: np.ndarray, word_feature: dict[str, int]
) -> tuple[np.ndarray, np.ndarray]:
    """The features of the first and of the second word of each pair term (``pairs``: their
    indices; a word that is not a single-word feature: below 0), split and looked up in
    pyarrow's kernels (a third of a million pairs in a tenth of a second), or in Python without
    pyarrow. A term of other than two words is refused."""
    try:
        import pyarrow.compute as pc
    except ImportError:
        words = [vocabulary[i].split(" ") for i in pairs.tolist()]
        if (odd := next((k for k, w in enumerate(words) if len(w) != 2), None)) is not None:
            raise _not_made(vocabulary[pairs[odd]]) from None
        found = np.array([word_feature.get(w, NOT_A_TERM) for pair in words for w in pair], np.int64)
        return found[0::2], found[1::2]
    terms = _arrow_terms(vocabulary)
    parts = pc.split_pattern(terms.take(_arrow_indices(pairs)), " ")
    if (uneven := np.flatnonzero(_numbers(pc.list_value_length(parts), np.int32) != 2)).size:
        raise _not_made(vocabulary[pairs[uneven[0]]])
    looked_up = pc.index_in(parts.flatten(), value_set=terms.take(_arrow_indices(single)))  # null: not a word
    features = np.where(_valid(looked_up), single[np.maximum(_numbers(looked_up, np.int32), 0)], NOT_A_TERM)
    return features[0::2], features[1::2]


def _not_made(term: str) -> ValueError:
    return ValueError(f"the term {term!r} is not one this analyser makes")


# Texts of fewer characters than this for each term of a model's vocabulary are looked up by
# binary search: building the tables costs about as much as searching that many.
SEARCH_CHARS = 4

# A batch of this many texts or more is large: its words are split and looked up by pyarrow
# (if installed), and its matrix multiplied by scipy; a smaller one imports neither.
LARGE_BATCH = 64


def _valid(array) -> np.ndarray | bool:
    """Whether each value of a pyarrow array is there (not null); True if all are."""
    if not array.null_count:
        return True
    bits = np.frombuffer(array.buffers()[0], dtype=np.uint8)
    return np.unpackbits(bits, count=array.offset + len(array), bitorder="little")[array.offset :].astype(
        bool
    )


def _numbers(array, dtype, offsets: int = 0) -> np.ndarray:
    """The numbers of a pyarrow array without nulls (with ``offsets=1``, the offsets of an
    array of strings or lists) as a numpy array sharing its memory (``to_numpy`` would
    import pandas, 0.3 s)."""
    start = array.offset * np.dtype(dtype).itemsize
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array) + offsets, offset=start)


def _arrow_terms(terms: Sequence[str]):
    """A vocabulary's terms (which hold no line end) as a pyarrow array: joined, then split in
    pyarrow's kernels, without a size taken of each in Python."""
    import pyarrow.compute as pc

    if not terms:
        return _arrow_strings([])
    return pc.split_pattern(_arrow_strings(["\n".join(terms)]), "\n").flatten()


def _arrow_indices(indices: np.ndarray):
    """Whole numbers as a pyarrow array over their own buffer (given a numpy array, pyarrow
    imports pandas to check what it is)."""
    import pyarrow as pa

    indices = np.ascontiguousarray(indices, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(indices), [None, pa.py_buffer(indices)])


def _arrow_strings(strings: list[str], table: bytes | None = None):
    """``strings`` as a pyarrow array, made from one UTF-8 buffer (``pyarrow.array`` would
    import pandas to check what it was given), its bytes translated by ``table`` if given
    (which must map ASCII bytes to ASCII bytes only)."""
    import pyarrow as pa

    data = "".join(strings).encode("utf-8")
    if table is not None:
        data = data.translate(table)
    sizes = np.fromiter(
        (len(s) if s.isascii() else len(s.encode("utf-8")) for s in strings), np.int64, len(strings)
    )
    offsets = np.zeros(len(strings) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return pa.Array.from_buffers(
        pa.large_string(), len(strings), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


def evidence_from_counts(known: np.ndarray, content_words: np.ndarray) -> np.ndarray:
    """Per text, the evidence a model has about it: ``k * k / w``, where ``w`` counts the
    text's words that are not stop words (``content_words``) and ``k`` those of them that are
    features (``known``, with repeats). It grows with the words the model knows, and falls
    when most of the text is about something the model does not know."""
    known = known.astype(np.float64)
    return np.divide(known * known, content_words, out=np.zeros_like(known), where=content_words > 0)
