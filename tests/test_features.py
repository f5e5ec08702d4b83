import re
import unicodedata

from hypothesis import example, given
from hypothesis import strategies as st

from tagger.features import STOP_WORDS, TextAnalyzer, is_term, words
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
