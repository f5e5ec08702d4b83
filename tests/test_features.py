import re
import unicodedata

from hypothesis import example, given
from hypothesis import strategies as st

from tagger.features import STOP_WORDS, TextAnalyzer, is_term, words


def reference_words(text: str) -> list[str]:
    """The definition words() implements with its fast paths: \\w+ runs of the NFKC-normalised,
    lower-cased text without LaTeX commands, links and e-mail addresses."""
    text = unicodedata.normalize("NFKC", text).lower()
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
