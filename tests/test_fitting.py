"""The classifier the recipe fits: a logistic regression plus complement naive Bayes, one linear
model (tagger.fitting.BlendedClassifier)."""

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.sparse import csr_matrix
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import ComplementNB

from tagger.card import ModelCard
from tagger.features import TextAnalyzer
from tagger.fitting import BlendedClassifier
from tagger.settings import TrainingSettings

RNG = np.random.default_rng(0)
X = csr_matrix(RNG.random((30, 12)) * (RNG.random((30, 12)) < 0.4))
Y = np.array(["a", "b", "c"] * 10)
WEIGHTS = RNG.random(30) + 0.5


def test_without_naive_bayes_it_is_the_logistic_regression():
    blend = BlendedClassifier(C=3.0, bayes_weight=0.0).fit(X, Y, sample_weight=WEIGHTS)
    plain = LogisticRegression(C=3.0, fit_intercept=False, max_iter=5000).fit(X, Y, sample_weight=WEIGHTS)
    np.testing.assert_allclose(blend.coef_, plain.coef_)
    np.testing.assert_allclose(blend.predict_proba(X), plain.predict_proba(X), atol=1e-12)


@pytest.mark.parametrize("intercept", [False, True])
def test_the_blend_adds_naive_bayes_log_probabilities_centred_over_the_areas(intercept):
    blend = BlendedClassifier(C=3.0, fit_intercept=intercept, bayes_weight=2.0, bayes_smoothing=0.1)
    blend.fit(X, Y, sample_weight=WEIGHTS)
    plain = LogisticRegression(C=3.0, fit_intercept=intercept, max_iter=5000).fit(X, Y, sample_weight=WEIGHTS)
    np.testing.assert_allclose(blend.intercept_, plain.intercept_)
    bayes = ComplementNB(alpha=0.1).fit(X, Y, sample_weight=WEIGHTS)
    centred = bayes.feature_log_prob_ - bayes.feature_log_prob_.mean(axis=0)
    np.testing.assert_allclose(blend.coef_, plain.coef_ + 2.0 * centred)
    # naive Bayes ranks the areas as the blend's added scores do
    added = np.asarray(X @ centred.T)
    np.testing.assert_array_equal(bayes.classes_[added.argmax(1)], bayes.predict(X))
    scores = blend.decision_function(X)
    expected = np.exp(scores - scores.max(1, keepdims=True))
    np.testing.assert_allclose(blend.predict_proba(X), expected / expected.sum(1, keepdims=True))
    assert list(blend.predict(X)) == list(blend.classes_[scores.argmax(1)])


def test_two_areas_blend_on_the_regressions_one_row():
    two = Y != "c"
    blend = BlendedClassifier(C=3.0, bayes_weight=1.0).fit(X[two], Y[two])
    assert blend.coef_.shape == (1, X.shape[1])
    bayes = ComplementNB(alpha=0.01).fit(X[two], Y[two])
    plain = LogisticRegression(C=3.0, fit_intercept=False, max_iter=5000).fit(X[two], Y[two])
    side = bayes.feature_log_prob_[1] - bayes.feature_log_prob_[0]
    np.testing.assert_allclose(blend.coef_[0], plain.coef_[0] + side)
    probabilities = blend.predict_proba(X[two])
    np.testing.assert_allclose(probabilities.sum(1), 1.0)
    assert list(blend.classes_[probabilities.argmax(1)]) == list(blend.predict(X[two]))


@given(st.floats(0, 10), st.floats(1e-3, 1.0))
def test_warm_starts_fit_what_a_cold_fit_does(weight, smoothing):
    warm = BlendedClassifier(C=0.3, bayes_weight=weight, bayes_smoothing=smoothing, warm_start=True)
    warm.fit(X, Y, sample_weight=WEIGHTS)
    warm.set_params(C=3.0).fit(X, Y, sample_weight=WEIGHTS)
    cold = BlendedClassifier(C=3.0, bayes_weight=weight, bayes_smoothing=smoothing).fit(
        X, Y, sample_weight=WEIGHTS
    )
    np.testing.assert_allclose(warm.predict_proba(X), cold.predict_proba(X), atol=1e-3)


@pytest.mark.slow  # over 5 s on 2 shared cores: in the slow run, with the other long tests
def test_candidates_differing_in_naive_bayes_are_scored_each_with_its_own(seed_set):
    """In a fold, fits along increasing C start from the last one: only one of the same other
    settings (a candidate with another naive Bayes weight is fitted with its own)."""
    from tagger.training import out_of_fold_scores

    data = seed_set
    pair = [TrainingSettings(C=10.0, bayes_weight=0.0), TrainingSettings(C=30.0, bayes_weight=3.0)]
    together = out_of_fold_scores(data, pair)
    for settings_, scored in zip(pair, together):
        (alone,) = out_of_fold_scores(data, [settings_])
        np.testing.assert_allclose(scored.scores.raw, alone.scores.raw, atol=1e-6)


@pytest.mark.parametrize(("part", "name"), [("classifier", "bayes_weight"), ("features", "pair_min_df")])
def test_a_card_without_a_setting_is_refused_naming_it(shipped, part, name):
    """Not read as today's default: a model is described by every setting it was trained with."""
    data = json.loads(json.dumps(shipped.card.to_dict()))
    del data[part][name]
    with pytest.raises(ValueError, match=rf"lacks or garbles settings\.{name}"):
        ModelCard.from_dict(data)


@pytest.mark.parametrize(
    ("weight", "kind"), [(0.0, "LogisticRegression"), (2.0, "LogisticRegression + ComplementNB")]
)
def test_the_card_names_the_classifier_it_describes(shipped, weight, kind):
    import dataclasses

    card = dataclasses.replace(shipped.card, settings=TrainingSettings(bayes_weight=weight))
    assert card.to_dict()["classifier"]["type"] == kind


WORDS = [
    "graph",
    "neural",
    "network",
    "robot",
    "policy",
    "the",
    "of",
    "3",
    "x",
    "naïve",
    "ﬁne",
    "læ",
    "learning",
]
corpus_texts = st.lists(
    st.one_of(st.lists(st.sampled_from(WORDS), max_size=30).map(" ".join), st.text(max_size=80)),
    min_size=1,
    max_size=25,
)


@given(
    train=corpus_texts,
    test=corpus_texts,
    seen_before=corpus_texts,
    ngram_max=st.sampled_from([1, 2]),
    sublinear_tf=st.booleans(),
    min_df=st.integers(1, 3),
    max_features=st.sampled_from([None, 2, 5, 10_000]),
)
def test_a_corpus_makes_the_matrices_of_scikit_learn_bit_for_bit(
    train, test, seen_before, ngram_max, sublinear_tf, min_df, max_features
):
    """Training analyses each text once (tagger.corpus) and makes every fold's TF-IDF matrix
    with numpy: the very numbers, columns and order within each row that TfidfVectorizer
    makes, and the same errors, whatever texts the corpus analysed before."""
    from conftest import evidence
    from sklearn.feature_extraction.text import TfidfVectorizer

    from tagger.corpus import Corpus
    from tagger.features import TextAnalyzer

    vectorizer = TfidfVectorizer(
        analyzer=TextAnalyzer(ngram_max),
        sublinear_tf=sublinear_tf,
        min_df=min_df,
        max_features=max_features,
        dtype=np.float64,
    )
    corpus = Corpus()
    corpus.rows(seen_before)
    try:
        expected = vectorizer.fit_transform(train)
    except ValueError as error:
        with pytest.raises(ValueError, match=str(error)[:20]):
            corpus.fit(corpus.rows(train), ngram_max, sublinear_tf, min_df, max_features)
        return
    vocabulary, (data, indices, indptr, _) = corpus.fit(
        corpus.rows(train), ngram_max, sublinear_tf, min_df, max_features
    )
    assert vocabulary.mapping(corpus.names) == vectorizer.vocabulary_
    assert vocabulary.idf.tolist() == vectorizer.idf_.tolist()
    assert (indptr.tolist(), indices.tolist(), data.tolist()) == (
        expected.indptr.tolist(),
        expected.indices.tolist(),
        expected.data.tolist(),
    )
    corpus.rows(["an abstract analysed after the fit: new words"])
    tested = vectorizer.transform(test)
    data, indices, indptr, _ = corpus.matrix(vocabulary, corpus.rows(test))
    assert (indptr.tolist(), indices.tolist(), data.tolist()) == (
        tested.indptr.tolist(),
        tested.indices.tolist(),
        tested.data.tolist(),
    )
    assert (
        corpus.evidence(vocabulary, corpus.rows(test)).tolist()
        == evidence(test, vectorizer.vocabulary_).tolist()
    )


def test_training_on_the_corpus_gives_the_model_of_scikit_learn_s_vectoriser(labelled_sample):
    """The final fit through the corpus and through TfidfVectorizer: the same weights (every
    word pair a feature, as TfidfVectorizer makes them; pair_min_df has its own test)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from tagger.fitting import documents, features_max, fit, make_classifier, one_blas_thread

    settings_ = TrainingSettings(pair_min_df=1)
    fitted = fit(labelled_sample, settings_)
    texts, areas, weights = documents(labelled_sample, settings_)
    vectorizer = TfidfVectorizer(
        analyzer=settings_.analyzer, sublinear_tf=True, max_features=features_max(len(labelled_sample.slugs))
    )
    with one_blas_thread():
        plain = make_classifier(settings_).fit(vectorizer.fit_transform(texts), areas, sample_weight=weights)
    assert fitted.vocabulary.mapping(fitted.corpus.names) == vectorizer.vocabulary_
    assert fitted.classifier.coef_.tolist() == plain.coef_.tolist()


@given(before=corpus_texts, after=corpus_texts)
def test_a_corpus_sent_to_a_worker_makes_the_same_matrices(before, after):
    """A corpus travels to the training workers pickled (compact: one array of term numbers):
    the copy gives the same rows and matrices, and goes on analysing new texts."""
    import pickle

    from tagger.corpus import Corpus

    corpus = Corpus()
    rows = corpus.rows(before)
    copy = pickle.loads(pickle.dumps(corpus))
    assert copy.rows(before).tolist() == rows.tolist()
    for ours in (corpus, copy):
        ours.rows(after)
    assert copy.names == corpus.names
    try:
        expected = corpus.fit(corpus.rows(before + after), 2, True, 1, None)
    except ValueError:
        with pytest.raises(ValueError):
            copy.fit(copy.rows(before + after), 2, True, 1, None)
        return
    got = copy.fit(copy.rows(before + after), 2, True, 1, None)
    assert [a.tolist() for a in got[1][:3]] == [a.tolist() for a in expected[1][:3]]
    assert pickle.loads(pickle.dumps(Corpus())).rows(["x y"]).tolist() == [0]


@given(texts=corpus_texts, pair_min_df=st.integers(1, 3))
def test_pair_min_df_keeps_every_word_and_the_pairs_of_that_many_documents(texts, pair_min_df):
    """A smaller model's rule: every single word stays a feature; a word pair only when
    ``pair_min_df`` documents hold it; the rest of the vocabulary is what it was."""
    from tagger.corpus import Corpus

    corpus = Corpus()
    rows = corpus.rows(texts)
    try:
        everything, _ = corpus.fit(rows, 2, True, 1, None)
    except ValueError:
        return  # (no term at all: refused as scikit-learn refuses it)
    fitted, _ = corpus.fit(rows, 2, True, 1, None, pair_min_df=pair_min_df)
    names = corpus.names
    kept = {names[t] for t in fitted.terms.tolist()}
    every = {names[t] for t in everything.terms.tolist()}
    documents = [set(TextAnalyzer(2)(text)) for text in texts]
    expected = {term for term in every if " " not in term or sum(term in d for d in documents) >= pair_min_df}
    assert kept == expected


def test_the_classifier_s_defaults_are_the_training_settings_defaults():
    """C was 100 in TrainingSettings and 30 in BlendedClassifier: one default, set once."""
    from tagger.fitting import BlendedClassifier
    from tagger.settings import TrainingSettings

    made = BlendedClassifier().get_params()
    assert {name: made[name] for name in ("C", "max_iter", "bayes_weight", "bayes_smoothing")} == {
        name: getattr(TrainingSettings(), name)
        for name in ("C", "max_iter", "bayes_weight", "bayes_smoothing")
    }
