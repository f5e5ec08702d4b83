"""Recipe designs compared, fast: each design's tags on abstracts its fit never saw, from two
sources at once (what the recipe's settings must be chosen for, never one pool alone).

Usage:
    python tests/benchmarks/bench_recipes.py MODERN.jsonl [MORE.jsonl ...] --conference DEV.jsonl
                                             [--designs "NAME;blend:beta=2,alpha=0.01,aw=0.1,nb_aw=0.1"]
                                             [--confusion]

- Modern, held out by year: each year of the labelled MODERN files (``area`` not ``none``) in
  turn is tagged by a fit on the repository's labels (``labels/`` and ``seeds/``, without the
  MODERN abstracts), the other years' labels, and the area descriptions: strict, lenient (area
  or ``alt``), macro-F1, and ECE of the raw probabilities (before the recipe's calibration).
- Conference: the development abstracts (areas by ``dev-area-mapping.json``) tagged by a fit
  on all of it: accuracy, macro-F1, raw ECE.

A design is a function from (labelled texts, their areas, the areas) to a fitted predictor of
probabilities; the designs are experiments around the shipped recipe's fit
(tagger.fitting.documents), without its settings search or calibration, to choose what the
recipe becomes. Nothing is written anywhere.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_modern import load, repository_labels_without
from devdata import MAPPING, load_mapping
from devdata import load as load_conference

from tagger.evaluate import expected_calibration_error
from tagger.fitting import _label_weights
from tagger.fitting import _vectorizer as recipe_vectorizer
from tagger.reading import document
from tagger.settings import TrainingSettings


def _vectorizer(ngram_max=2, min_df=1):
    """The recipe's TF-IDF vectoriser (tagger.fitting) with these feature settings."""
    return recipe_vectorizer(TrainingSettings(ngram_max=ngram_max, min_df=min_df), areas=1)  # (no cap)


def _balanced(labels, scale):
    """The recipe's label weights (tagger.fitting): each area's labels together ``scale * n / k``."""
    return np.array(_label_weights(tuple(labels), TrainingSettings(), scale))


class Mixed:
    """The shipped fit: labels and descriptions in one logistic regression, the labels' mass per
    area ``aw * n / k`` (or ``aw * mass_n / k`` with ``mass_n`` fixed), each description 1."""

    def __init__(self, aw=0.03, C=30.0, ngram_max=2, mass_n=None, classifier=None, vectorizer=None, extra=()):
        self.aw, self.C, self.ngram_max, self.mass_n = aw, C, ngram_max, mass_n
        self.classifier, self.vectorizer, self.extra = classifier, vectorizer, extra

    def fit(self, texts, labels, areas):
        from sklearn.linear_model import LogisticRegression

        n = len(labels)
        scale = self.aw * (self.mass_n / n if self.mass_n else 1.0)
        weights = list(_balanced(labels, scale))
        docs = list(texts) + [a.document() for a in areas]
        ys = list(labels) + [a.slug for a in areas]
        weights += [1.0] * len(areas)
        self.vec = self.vectorizer() if self.vectorizer else _vectorizer(self.ngram_max)
        if self.extra:
            self.vec.fit(docs + list(self.extra))
            X = self.vec.transform(docs)
        else:
            X = self.vec.fit_transform(docs)
        self.clf = (
            self.classifier()
            if self.classifier
            else LogisticRegression(C=self.C, fit_intercept=False, max_iter=5000)
        )
        self.clf.fit(X, ys, sample_weight=np.array(weights))
        self.classes_ = self.clf.classes_
        return self

    def predict_proba(self, texts):
        return self.clf.predict_proba(self.vec.transform(texts))

    def decision(self, texts):
        return self.clf.decision_function(self.vec.transform(texts))


class Experts:
    """Two fits, their log-probabilities added: one on the descriptions alone (what an area is),
    one on the labels (with the descriptions at weight ``aw``); ``beta`` weighs the first."""

    def __init__(self, beta=0.5, aw=0.03, C=30.0, C_desc=30.0, ngram_max=2):
        self.beta = beta
        self.labels = Mixed(aw=aw, C=C, ngram_max=ngram_max)
        self.C_desc, self.ngram_max = C_desc, ngram_max

    def fit(self, texts, labels, areas):
        self.labels.fit(texts, labels, areas)
        from sklearn.linear_model import LogisticRegression

        self.dvec = _vectorizer(self.ngram_max)
        X = self.dvec.fit_transform([a.document() for a in areas])
        self.dclf = LogisticRegression(C=self.C_desc, fit_intercept=False, max_iter=5000).fit(
            X, [a.slug for a in areas]
        )
        assert list(self.dclf.classes_) == list(self.labels.classes_)
        self.classes_ = self.labels.classes_
        return self

    def predict_proba(self, texts):
        from scipy.special import softmax

        a = np.log(np.clip(self.labels.predict_proba(texts), 1e-12, 1))
        b = np.log(np.clip(self.dclf.predict_proba(self.dvec.transform(texts)), 1e-12, 1))
        return softmax(a + self.beta * b, axis=1)


class Blend:
    """One linear model: the logistic regression's scores plus ``beta`` times complement naive
    Bayes' (both linear in the same TF-IDF features, so their sum is a linear classifier)."""

    def __init__(self, beta=1.0, alpha=0.3, aw=0.03, nb_aw=None, vectorizer=None, C=30.0, **options):
        self.beta, self.alpha, self.aw, self.nb_aw, self.vectorizer, self.C = (
            beta,
            alpha,
            aw,
            nb_aw,
            vectorizer,
            C,
        )
        # binary=1 or norm=1: naive Bayes on binary features, or normalised; min_df=K
        self.binary, self.norm = options.get("binary", 0), options.get("norm", 0)
        self.min_df = int(options.get("min_df", 1))
        self.pieces = options.get("pieces", 0)  # K: each description as its sentences, weighing K in all

    def fit(self, texts, labels, areas):
        from sklearn.linear_model import LogisticRegression
        from sklearn.naive_bayes import ComplementNB

        if self.pieces:
            parts = [(a.slug, piece) for a in areas for piece in _pieces(a)]
            count = {a.slug: sum(1 for slug, _ in parts if slug == a.slug) for a in areas}
            described, areas_of = [piece for _, piece in parts], [slug for slug, _ in parts]
            area_weights = np.array([self.pieces / count[slug] for slug in areas_of])
        else:
            described, areas_of = [a.document() for a in areas], [a.slug for a in areas]
            area_weights = np.ones(len(areas))
        docs = list(texts) + described
        ys = list(labels) + areas_of
        self.vec = self.vectorizer() if self.vectorizer else _vectorizer(2, self.min_df)
        X = self.vec.fit_transform(docs)
        weights = np.concatenate([_balanced(labels, self.aw), area_weights])
        self.lr = LogisticRegression(C=self.C, fit_intercept=False, max_iter=5000).fit(
            X, ys, sample_weight=weights
        )
        nb_weights = np.concatenate([_balanced(labels, self.nb_aw), area_weights]) if self.nb_aw else None
        nb_X = (X > 0).astype(float) if self.binary else X
        self.nb = ComplementNB(alpha=self.alpha, norm=bool(self.norm)).fit(nb_X, ys, sample_weight=nb_weights)
        assert list(self.nb.classes_) == list(self.lr.classes_)
        self.classes_ = self.lr.classes_
        return self

    def scores(self, texts):
        X = self.vec.transform(texts)
        nb = X @ self.nb.feature_log_prob_.T
        nb = nb - nb.mean(1, keepdims=True)
        return self.lr.decision_function(X) + self.beta * np.asarray(nb)

    def predict_proba(self, texts):
        from scipy.special import softmax

        return softmax(self.scores(texts), axis=1)


def _other():
    from tagger.labels import Area

    return Area(
        "other",
        "Outside these areas",
        "Research outside the areas of machine learning above: graph mining and network analysis, logic, "
        "knowledge representation and reasoning, planning and scheduling, time series and forecasting, "
        "recommender systems, human-computer interaction, databases, software engineering, social choice "
        "and multi-agent systems, and work of other sciences without machine learning.",
        ("graphs", "knowledge representation", "logic", "time series", "recommendation", "user study"),
    )


def _pieces(area) -> list[str]:
    """An area's description as its sentences, and its keywords as one more piece."""
    sentences = [f"{area.name}. {s}" for s in area.description.split(". ") if s.strip()]
    return [*sentences, ", ".join(area.keywords)] if area.keywords else sentences


def _pile(n=20000):
    import gzip

    path = Path(__file__).resolve().parents[3] / "shared" / "bench" / "preprint-pile-2025.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        rows = [json.loads(line) for _, line in zip(range(n), lines)]
    return [document(r["abstract"], r.get("title", "")) for r in rows]


def _cnb(alpha=0.3):
    from sklearn.naive_bayes import ComplementNB

    return lambda: ComplementNB(alpha=alpha)


def _sgd(alpha=1e-4, loss="modified_huber"):
    from sklearn.linear_model import SGDClassifier

    return lambda: SGDClassifier(
        loss=loss, alpha=alpha, class_weight=None, max_iter=50, random_state=0, fit_intercept=False
    )


def _words_and_characters():
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import FeatureUnion

    return FeatureUnion(
        [
            ("words", _vectorizer(2)),
            (
                "characters",
                TfidfVectorizer(
                    analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True, min_df=2, lowercase=True
                ),
            ),
        ]
    )


# The designs measured (docs/evaluation.md, "Choosing the recipe"); any other as kind:arg=value,...
DESIGNS = {
    "before": lambda: Mixed(0.03),  # the recipe before the blend: labels weigh 0.03
    "before-aw0.003": lambda: Mixed(0.003),
    "before-mass363": lambda: Mixed(0.03, mass_n=363),  # the labels' mass held at 363 labels'
    "experts": lambda: Experts(1.0),  # a descriptions-only model's log-probabilities added
    "complement-nb": lambda: Mixed(0.03, classifier=_cnb(0.1)),
    "sgd-huber": lambda: Mixed(0.03, classifier=_sgd()),
    "characters": lambda: Mixed(0.03, vectorizer=_words_and_characters),
    "pile-idf": lambda: Mixed(0.03, extra=_pile()),  # IDF of 20,000 preprints of every subject
    "blend": lambda: Blend(2.0, alpha=0.01, aw=0.1, nb_aw=0.1),  # the recipe now (settings' defaults)
    "blend-beta1": lambda: Blend(1.0, alpha=0.01, aw=0.1, nb_aw=0.1),
    "blend-beta3": lambda: Blend(3.0, alpha=0.01, aw=0.1, nb_aw=0.1),
    "blend-alpha0.1": lambda: Blend(2.0, alpha=0.1, aw=0.1, nb_aw=0.1),
    "blend-aw0.03": lambda: Blend(2.0, alpha=0.01, aw=0.03, nb_aw=0.03),
    "blend-aw0.3": lambda: Blend(2.0, alpha=0.01, aw=0.3, nb_aw=0.3),
    "blend-sentences": lambda: Blend(2.0, alpha=0.01, aw=0.1, nb_aw=0.1, pieces=1),  # descriptions split
}


def _parametric(name: str):
    """``blend:beta=1,alpha=0.1,nb_aw=0.03`` (or ``mixed:...``): a design of those arguments."""
    kind, _, arguments = name.partition(":")
    values = {}
    for pair in filter(None, arguments.split(",")):
        key, _, value = pair.partition("=")
        values[key] = _words_and_characters if value == "chars" else float(value)
    return lambda: {"blend": Blend, "mixed": Mixed}[kind](**values)


def figures(model, texts, truth, alt=None):
    from sklearn.metrics import f1_score

    probabilities = model.predict_proba(texts)
    classes = np.asarray(model.classes_)
    best = probabilities.argmax(1)
    predicted = classes[best]
    confidence = probabilities[np.arange(len(best)), best]
    truth = np.asarray(truth)
    strict = predicted == truth
    result = {
        "strict": strict.mean(),
        "f1": f1_score(truth, predicted, labels=sorted(set(truth)), average="macro", zero_division=0),
        "ece": expected_calibration_error(confidence, strict),
    }
    if alt is not None:
        result["lenient"] = (strict | (predicted == np.asarray(alt))).mean()
    return result, predicted, confidence


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modern", type=Path, nargs="+")
    parser.add_argument("--conference", type=Path, required=True)
    parser.add_argument(
        "--designs", default=";".join(DESIGNS), help="names or kind:arg=value,... separated by ;"
    )
    parser.add_argument("--confusion", action="store_true", help="print each design's confusions by year")
    parser.add_argument(
        "--other",
        action="store_true",
        help="the abstracts labelled none become labels of an area 'other' (described as _other says)",
    )
    args = parser.parse_args()

    rows = [r for path in args.modern for r in load(path)]
    base = repository_labels_without(rows)
    areas = base.areas
    if args.other:
        areas = (*areas, _other())
        for r in rows:
            r["area"] = "other" if r["area"] == "none" else r["area"]
    labelled = [r for r in rows if r["area"] != "none"]
    conference = load_conference(args.conference, load_mapping(MAPPING))
    conf_texts = [document(r["abstract"], r["title"]) for r in conference]
    conf_truth = [r["area"] for r in conference]
    years = sorted({r["year"] for r in labelled})
    for name in args.designs.split(";"):
        started = time.perf_counter()
        make = DESIGNS.get(name) or _parametric(name)
        truth, predicted, alt, confidence = [], [], [], []
        for year in years:
            train = [r for r in labelled if r["year"] != year]
            test = [r for r in labelled if r["year"] == year]
            model = make().fit(
                list(base.texts) + [document(r["abstract"], r["title"]) for r in train],
                list(base.labels) + [r["area"] for r in train],
                areas,
            )
            _, p, c = figures(
                model, [document(r["abstract"], r["title"]) for r in test], [r["area"] for r in test]
            )
            truth += [r["area"] for r in test]
            alt += [r.get("alt") or "" for r in test]
            predicted += list(p)
            confidence += list(c)
        truth, predicted, alt = map(np.asarray, (truth, predicted, alt))
        strict = predicted == truth
        from sklearn.metrics import f1_score

        by_year = {
            "strict": strict.mean(),
            "lenient": (strict | (predicted == alt)).mean(),
            "f1": f1_score(truth, predicted, labels=sorted(set(truth)), average="macro"),
            "ece": expected_calibration_error(np.asarray(confidence), strict),
        }
        if args.confusion:
            import pandas as pd

            table = pd.crosstab(pd.Series(truth, name="reader"), pd.Series(predicted, name="tagged"))
            print(table.to_string())
            misses = pd.Series([f"{t}->{p}" for t, p, a in zip(truth, predicted, alt) if p != t and p != a])
            print(misses.value_counts().head(15).to_string())
        model = make().fit(
            list(base.texts) + [document(r["abstract"], r["title"]) for r in labelled],
            list(base.labels) + [r["area"] for r in labelled],
            areas,
        )
        conf, _, _ = figures(model, conf_texts, conf_truth)
        if args.other:
            known = truth != "other"
            print(
                f"{name}: on the abstracts with an area, strict {(predicted == truth)[known].mean():.3f}, "
                f"tagged other {(predicted == 'other')[known].mean():.3f}; of the {(~known).sum()} 'none', "
                f"tagged other {(predicted == 'other')[~known].mean():.3f}"
            )
        print(
            f"{name:22s} by year {by_year['strict']:.3f} / {by_year['lenient']:.3f} / F1 {by_year['f1']:.3f} / "
            f"rawECE {by_year['ece']:.3f} | conference {conf['strict']:.3f} / F1 {conf['f1']:.3f} / "
            f"rawECE {conf['ece']:.3f}   ({time.perf_counter() - started:.0f} s)",
            flush=True,
        )


if __name__ == "__main__":
    main()
