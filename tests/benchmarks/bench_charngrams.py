"""Character n-grams beside words, measured in a plain regression (an experiment).

Usage:
    python tests/benchmarks/bench_charngrams.py --proceedings MODERN.jsonl [MORE.jsonl ...]
        --preprints PREPRINTS.jsonl --conference CONFERENCE.jsonl [--variants word char:0.5 ...]

Each variant is a logistic regression (C 30, balanced areas) over the recipe's word TF-IDF
(``word``) or over it and character 3-5-grams within words (``char:S``: the character block
scaled by S), on the labelled abstracts only (no descriptions, no naive Bayes, no calibration):
like against like, to see whether character n-grams earn a place in the recipe. Measured as
``bench_sources.py`` measures: proceedings held out by year, preprints by stratified fold (5,
seed 0), and the conference abstracts by the variant trained on every label.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_modern import load
from bench_sources import preprint_folds
from devdata import load as load_conference
from devdata import load_mapping

from tagger.features import TextAnalyzer
from tagger.reading import document


def fitted(variant: str, texts: list[str], areas: np.ndarray):
    """The variant fitted on ``texts``: a function from texts to predicted areas."""
    blocks = [(TfidfVectorizer(analyzer=TextAnalyzer(), sublinear_tf=True), 1.0)]
    if variant.startswith("char:"):
        chars = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True, min_df=2)
        blocks.append((chars, float(variant.split(":")[1])))
    train = sparse.hstack([vectorizer.fit_transform(texts) * s for vectorizer, s in blocks]).tocsr()
    model = LogisticRegression(C=30, class_weight="balanced", max_iter=3000).fit(train, areas)
    return lambda some: model.predict(sparse.hstack([v.transform(some) * s for v, s in blocks]).tocsr())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--proceedings", type=Path, nargs="+", required=True)
    parser.add_argument("--preprints", type=Path, required=True)
    parser.add_argument("--conference", type=Path, required=True)
    parser.add_argument("--variants", nargs="+", default=["word", "char:0.5", "char:1"])
    args = parser.parse_args()
    proceedings = [{**r, "group": ("year", r["year"])} for path in args.proceedings for r in load(path)]
    preprints = load(args.preprints)
    fold = preprint_folds(preprints, 5)
    preprints = [{**r, "group": ("fold", fold[r["id"]])} for r in preprints]
    rows = [r for r in proceedings + preprints if r["area"] != "none"]
    texts = [document(r["abstract"], r["title"]) for r in rows]
    areas = np.array([r["area"] for r in rows])
    conference = load_conference(args.conference, load_mapping())
    for variant in args.variants:
        started = time.perf_counter()
        predicted = np.empty(len(rows), dtype=object)
        for group in sorted({r["group"] for r in rows}):
            test = np.array([r["group"] == group for r in rows])
            tag = fitted(variant, [t for t, held in zip(texts, test) if not held], areas[~test])
            predicted[test] = tag([t for t, held in zip(texts, test) if held])
        for name, kind in (("proceedings by year", "year"), ("preprints by fold", "fold")):
            mine = [i for i, r in enumerate(rows) if r["group"][0] == kind]
            strict = np.mean([predicted[i] == rows[i]["area"] for i in mine])
            lenient = np.mean([predicted[i] in (rows[i]["area"], rows[i].get("alt")) for i in mine])
            print(f"{variant:10s} {name:20s} strict {strict:.3f}  lenient {lenient:.3f}")
        tag = fitted(variant, texts, areas)
        found = tag([document(r["abstract"], r["title"]) for r in conference])
        accuracy = np.mean([p == r["area"] for p, r in zip(found, conference)])
        print(
            f"{variant:10s} {'conference':20s} accuracy {accuracy:.3f}  ({time.perf_counter() - started:.0f} s)"
        )


if __name__ == "__main__":
    main()
