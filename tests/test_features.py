import re
import unicodedata

from hypothesis import example, given
from hypothesis import strategies as st

from tagger.features import LARGE_BATCH, STOP_WORDS, TextAnalyzer, is_term, words
from tagger.reading import normalise_whitespace
from tagger.text import join_broken_words


def reference_words(text: str) -> list[str]:
    """The definition words() implements with its fast paths: \\w+ runs of the NFKC-normalised,
    lower-cased text without LaTeX commands, links and e-mail addresses, words broken at line
    ends joined (tagger.text)."""
    text = unicodedata.normalize("NFKC", join_broken_words(text)).lower()
    text = re.sub(r"\\[a-z]+", " ", text)
    text = re.sub(r"(?:https?://|www\.)\S+|\S+@\S+", " ", text)
    return re.findall(r"\w+", text)


@given(st.text())
@example("Naïve “quoted” — ﬁne-tuning of GPT\u20114 (Fig. 3) at https://x.org, see \\textbf{X}; me@x.org")
@example("ÄÖÜ ß ﬀ ² ½ Ⅻ ﬁ İ")
def test_words_fast_paths_split_like_the_definition(text):
    assert words(text) == reference_words(text)


def test_terms_leave_out_stop_words_numbers_and_single_letters():
    analyzer = TextAnalyzer()
    assert analyzer("The model of layers with 3 heads learns x 3D shapes") == [
        "model",
        "layers",
        "heads",
        "learns",
        "3d",
        "shapes",
        "model layers",  # "of" is left out before pairing
        "heads learns",
        "3d shapes",  # "3" separates "layers" and "heads", "x" separates "learns" and "3d"
    ]
    assert TextAnalyzer(ngram_max=1)("deep nets") == ["deep", "nets"]
    assert not any(is_term(word) for word in STOP_WORDS)


@given(st.text())
def test_every_term_is_a_word_or_a_pair_of_words(text):
    terms = TextAnalyzer()(text)
    found = set(words(text))
    for term in terms:
        parts = term.split(" ")
        assert len(parts) in (1, 2) and all(is_term(part) and part in found for part in parts)


# -- text copied from PDFs ------------------------------------------------------------------------


@given(
    st.lists(
        st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=4, max_size=12), min_size=1, max_size=12
    ),
    st.data(),
)
def test_words_broken_at_line_ends_are_joined(pieces, data):
    text = " ".join(pieces)
    broken = []
    for piece in pieces:
        cut = data.draw(st.integers(2, len(piece) - 1))
        newline = data.draw(st.sampled_from(["-\n", "-\r\n", "- \n  "]))
        broken.append(piece[:cut] + newline + piece[cut:])
    assert words(" ".join(broken)) == words(text)


def test_pdf_artefacts_do_not_change_the_tag(shipped):
    clean = "We train a generative adversarial network for image synthesis with fine-tuning."
    pasted = "We train a gen-\nerative adver\u00adsarial net-\nwork for im-\nage synthe-\nsis with \ufb01ne-tuning."
    assert words(pasted) == words(clean)
    assert shipped.predict(pasted) == shipped.predict(clean)
    # The last part of a compound keeps its hyphen: state-of-the-art, not "theart".
    assert words("a state-of-the-\nart model") == ["a", "state", "of", "the", "art", "model"]


# Text that has broken analysers: LaTeX, links, Greek final sigma, dotted capital I,
# ligatures, full-width and combining characters, control characters, emoji, lone surrogates.
HOSTILE = [
    "\\textbf{Deep} $\\mathcal{L}$ learning",
    "see https://arxiv.org/abs/1234 or www.x.org, mail me@x.org",
    "\u039f\u0394\u039f\u03a3 \u03a3\u039f\u03a6\u039f\u03a3 \u03c2 \u03c3",  # final sigma
    "\u0130stanbul I\u0307 \u0131",  # dotted and dotless I
    "ﬁne-tuning ﬀ ﬃ",
    "\uff46\uff55\uff4c\uff4c \uff27\uff21\uff2e",  # full-width "full GAN"
    "e\u0301 n\u0303 combining",
    "\x00\x01\x1c\x7f\t\r\n control",
    "emoji 🤖 robot 👩‍🔬",
    "lone \ud800 surrogate \udfff",
    "gen-\nerative state-of-the-\nart",
    "Visit WWW.Example.COM/Page, HTTPS://X.ORG or write to ME@X.ORG",  # marks found in any case
    "Plain ASCII (with punctuation)! CAPS_and_under_score 3.5e-3 x_1 [Fig. 2]",
    "",
    " ",
]
hostile_text = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(alphabet=st.characters(exclude_categories=()), max_size=200),
    st.text(alphabet=st.characters(max_codepoint=127), max_size=200),  # ASCII: the plain path
    st.lists(
        st.sampled_from([*HOSTILE, "neural network", "reinforcement learning", "the", "3"]), max_size=12
    ).map(" ".join),
)


@given(st.lists(hostile_text, min_size=1, max_size=70))
def test_a_large_batch_has_the_numbers_of_each_text_alone_and_of_scikit_learn(shipped, texts):
    """A large batch (split by pyarrow, multiplied by scipy) gives each text the matrix row,
    evidence and scores it gets alone (split in Python, multiplied by numpy), bit for bit,
    and the TF-IDF numbers scikit-learn computes with the model's analyser and vocabulary."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    batch = (texts * LARGE_BATCH)[: max(LARGE_BATCH, len(texts))]
    matrix, evidence = shipped.features.transform_with_evidence(batch)
    scores = matrix.dot(shipped._by_feature())  # (scipy's product, as a large batch has it)
    for i, text in enumerate(texts):
        alone, alone_evidence = shipped.features.transform_with_evidence([text])
        start, end = matrix.indptr[i], matrix.indptr[i + 1]
        assert list(matrix.indices[start:end]) == list(alone.indices)
        assert list(matrix.data[start:end]) == list(alone.data)
        assert evidence[i] == alone_evidence[0]
        assert list(scores[i]) == list(alone.dot_transposed(shipped.coef)[0])  # (numpy's, as one text)
    vectorizer = TfidfVectorizer(
        analyzer=shipped.card.settings.analyzer,
        vocabulary=list(shipped.vocabulary),
        sublinear_tf=shipped.features.sublinear_tf,
    )
    vectorizer.idf_ = shipped.idf
    expected = vectorizer.transform(texts)
    ours = matrix.csr()[: len(texts)]
    assert (ours != expected).nnz == 0 or abs(ours - expected).max() < 1e-12
    assert list(ours.indices) == list(expected.sorted_indices().indices)


@given(st.lists(hostile_text, min_size=1, max_size=5))
def test_a_few_texts_found_by_binary_search_have_the_numbers_of_the_lookup_tables(shipped, texts):
    """A new model tags its first abstracts (up to a few hundred) without building its lookup
    tables (a third of a second: a cold start's largest cost), finding each word and pair in
    the sorted vocabulary instead: the same rows, bit for bit, as once the tables are built."""
    from tagger.features import TfidfFeatures

    texts = [*texts, "reinforcement learning for robot manipulation", "graph neural network"] * 40  # (> 64)
    features = shipped.features  # its tables built once, for every example (a third of a second)
    features.ready_for_large_batches()
    fresh = TfidfFeatures(features.analyzer, features.vocabulary, features.idf, features.sublinear_tf)
    searched, searched_evidence = fresh.transform_with_evidence(texts)
    assert fresh._tables is None  # found by binary search
    tabled, tabled_evidence = features.transform_with_evidence(texts)
    assert len(texts) >= LARGE_BATCH
    for got, expected in zip(searched[:3], tabled[:3]):
        assert got.tolist() == expected.tolist()
    assert searched_evidence.tolist() == tabled_evidence.tolist()
    assert searched.data.size > 0


def test_an_unsorted_vocabulary_is_looked_up_in_tables(shipped):
    from tagger.features import TfidfFeatures

    vocabulary = list(reversed(shipped.vocabulary))
    features = TfidfFeatures(shipped.features.analyzer, vocabulary, shipped.idf[::-1], True)
    rows, _ = features.transform_with_evidence(["graph neural network"])
    assert features._tables is not None
    assert sorted(vocabulary[i] for i in rows.indices) == [
        "graph",
        "graph neural",
        "network",
        "neural",
        "neural network",
    ]


def test_without_pyarrow_a_large_batch_is_split_in_python_with_the_same_numbers(shipped, monkeypatch):
    import sys

    from tagger.features import TfidfFeatures

    texts = [HOSTILE[i % len(HOSTILE)] + f" neural network {i}" for i in range(LARGE_BATCH + 5)]
    with_arrow = shipped.features.transform(texts)
    monkeypatch.setitem(sys.modules, "pyarrow.compute", None)  # import pyarrow.compute fails
    assert shipped.features._arrow_features(texts) is None
    fresh = TfidfFeatures(shipped.features.analyzer, shipped.vocabulary, shipped.idf, True)  # (no tables yet)
    fresh.ready_for_large_batches()  # the tables built without pyarrow
    assert (fresh.transform(texts) != with_arrow).nnz == 0


@given(
    st.text(alphabet=st.sampled_from(" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u2003\u3000ab.é"), max_size=40)
)
def test_whitespace_is_normalised_as_splitting_and_joining_would(text):
    assert normalise_whitespace(text) == " ".join(text.split())


@given(st.text())
def test_any_text_is_normalised_as_splitting_and_joining_would(text):
    assert normalise_whitespace(text) == " ".join(text.split())


def test_every_whitespace_character_but_the_space_is_unprintable():
    """normalise_whitespace keeps printable text with single spaces as it is: sound only
    while no other character str.split splits on is printable, in this Python's Unicode."""
    import sys

    splitting = [chr(c) for c in range(sys.maxunicode + 1) if len(f"a{chr(c)}a".split()) == 2]
    assert " " in splitting and "\u3000" in splitting  # the check sees whitespace at all
    assert [c for c in splitting if c.isprintable() and c != " "] == []


@given(st.text())
@example("Naïve “quoted” — ﬁne-tuning of GPT\u20114 (Fig. 3), über-fast Größe 3\u00d73")
@example("Café au lait: résumé of naïve Bayes")
@example("İstanbul ÄÖÜ ß ﬀ ² ½ Ⅻ ﬁ")
@example("soft\u00adhyphen")
def test_a_text_taken_as_plain_splits_like_the_definition(text):
    """The large batch's fast path: a text _lowered_if_plain takes is only lower-cased (and
    normalised) before the batch's ASCII punctuation becomes spaces; it must split as words()."""
    from tagger.features import _ASCII_SPACES, _lowered_if_plain

    lowered = _lowered_if_plain(text)
    if lowered is not None:
        spaced = lowered.encode().translate(_ASCII_SPACES).decode()
        assert spaced.split(" ") and [w for w in spaced.split(" ") if w] == words(text)


marked_text = st.lists(
    st.one_of(
        st.sampled_from(
            [
                *HOSTILE,
                "\\textbf{graph} neural",
                "code https://github.com/x/y graph",
                "gen-\nerative model",
                "a gen-\n  erative",
                "soft\u00adhyphen",
                "ΟΔΟΣ Σίσυφος",
                "İstanbul",
                "\uff27\uff21\uff2e",
                "½ ² ㎏",
                " ",
                "\n",
                "-",
            ]
        ),
        st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=12),
        st.sampled_from(["neural", "network", "the", "of", "3", "graph"]),
    ),
    max_size=20,
).map("".join)


@given(marked_text, st.sampled_from([1, 2]))
@example("\\textbf graph and code https://x.org here gen-\nerative model", 2)
@example("İstanbul ΟΔΟΣ ½", 2)
def test_the_page_finds_the_terms_the_model_reads_and_where_they_are(text, ngram_max):
    """TextAnalyzer.spans (where the page marks terms) gives the very terms the analyser
    gives, in order, over LaTeX, links, broken words and any Unicode: it once paired words
    across what the model drops ("textbf graph", "code https", "gen" + "erative")."""
    analyzer = TextAnalyzer(ngram_max=ngram_max)
    spans = analyzer.spans(text)
    assert [term for term, _ in spans] == analyzer(text)
    for term, places in spans:
        assert len(places) == len(term.split(" "))
        for (start, end), word in zip(places, term.split(" ")):
            assert 0 <= start < end <= len(text)
            assert word in words(text[start:end])  # the characters it was read from


def test_many_small_batches_build_the_lookup_tables_once_searching_has_cost_as_much(seed_model):
    """Binary search serves a few abstracts; batch after batch (tagging a file on one process,
    500 abstracts at a time) it once searched for ever, at a quarter of the tables' speed."""
    from tagger.features import SEARCH_CHARS, TfidfFeatures

    model = seed_model
    features = TfidfFeatures(
        model.features.analyzer, model.vocabulary, model.idf, model.features.sublinear_tf
    )
    budget = SEARCH_CHARS * len(model.vocabulary)
    batch = ["robots grasp cups with a two-finger gripper " * 20] * (budget // 2 // 880)
    assert sum(map(len, batch)) < budget  # each batch alone is too small to pay for the tables
    first = features.transform(batch)
    assert features._tables is None  # searched
    for _ in range(3):
        again = features.transform(batch)
    assert features._tables is not None  # built once the searches had cost as much
    assert (first != again).nnz == 0
