"""Accuracy benchmark: tagger trained on a user's labelled corpus against plain scikit-learn.

Usage:
    python tests/benchmarks/bench_accuracy.py ABSTRACTS.jsonl [--mapping MAPPING.json] [--split venue|random]

ABSTRACTS.jsonl holds one object a line with ``abstract``, ``title``, ``categories`` (a
list) and ``venue``. With ``--mapping`` (a JSON object: area -> list of categories), an
abstract's label is the one area its categories map to (abstracts whose categories map to
none or to several areas are left out) and, by default, the model is trained on the venues
of one conference and tested on the others, both ways. Without it, the label is the first
category and the split is a stratified 70/30 one. Labels with fewer than ``--min-count``
abstracts are left out.

Printed side by side, for each split, on the same training and test abstracts:

* ``tagger``: ``tagger.train(file)``, which chooses its settings by cross-validation;
* ``tagger + test pile``: the same with the test abstracts (their text only) as the
  unlabelled pile (``--unlabelled``): self-training where labels are plentiful;
* ``plain``: ``TfidfVectorizer()`` + ``LogisticRegression()``, scikit-learn defaults;
* ``tuned LinearSVC``: uni+bigram sublinear TF-IDF + ``LinearSVC``, C chosen by 5-fold
  cross-validated macro-F1 from 0.01 to 10.

Figures: accuracy, macro-F1 over the areas present in the test set, expected calibration
error (10 bins; LinearSVC gives no probabilities), and training time. ECE has a noise floor:
``ECE if calibrated`` is the median ECE that a perfectly calibrated model with the same
confidences would show on a test set of this size (1,000 simulations). With several splits,
the test predictions of all splits are also pooled.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from devdata import document, figures, load, load_mapping
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.svm import LinearSVC

import tagger


def splits(rows: list[dict], how: str) -> list[tuple[str, list[dict], list[dict]]]:
    if how == "venue":
        venues = sorted({row["venue"] for row in rows})
        groups = [[v for v in venues if v.startswith(prefix)] for prefix in sorted({v[:4] for v in venues})]
        result = []
        for train_venues in groups:
            train = [r for r in rows if r["venue"] in train_venues]
            test = [r for r in rows if r["venue"] not in train_venues]
            result.append((f"train {'+'.join(train_venues)} -> test the rest", train, test))
        return result
    train, test = train_test_split(rows, test_size=0.3, random_state=0, stratify=[r["area"] for r in rows])
    return [("stratified 70/30", train, test)]


def print_row(method: str, f: dict, seconds: float | None, settings: dict) -> None:
    ece = "n/a" if f["ece"] is None else f"{f['ece']:.3f}"
    floor = "" if f["ece_if_calibrated"] is None else f"{f['ece_if_calibrated']:.3f}"
    time_cell = "" if seconds is None else f"{seconds:.1f}"
    print(
        f"{method:18s}{f['accuracy']:10.3f}{f['macro_f1']:10.3f}{ece:>8s}{floor:>19s}{time_cell:>9s}  "
        + ", ".join(f"{k}={v}" for k, v in settings.items())
    )


def run_tagger(train: list[dict], test_docs: list[str], pile: list[dict] | None = None):
    """tagger.train on the training abstracts (and, given a pile, with it as unlabelled)."""
    with tempfile.TemporaryDirectory() as folder:
        path, pile_path = Path(folder) / "train.jsonl", Path(folder) / "pile.jsonl"
        for rows, target in ((train, path), (pile or [], pile_path)):
            target.write_text(
                "".join(
                    json.dumps(
                        {"title": r.get("title", ""), "abstract": r["abstract"], "area": r.get("area", "")}
                    )
                    + "\n"
                    for r in rows
                ),
                encoding="utf-8",
            )
        model = tagger.train(path, unlabelled=pile_path if pile else None)
    probabilities = model.predict_proba(test_docs)
    chosen = {k: getattr(model.card.settings, k) for k in ("C", "balance_areas", "ngram_max", "sublinear_tf")}
    return [model.areas[k] for k in probabilities.argmax(axis=1)], probabilities, chosen


def run_plain(train_docs, train_labels, test_docs):
    pipeline = make_pipeline(TfidfVectorizer(), LogisticRegression()).fit(train_docs, train_labels)
    return pipeline.predict(test_docs), pipeline.predict_proba(test_docs), {}


def run_svc(train_docs, train_labels, test_docs):
    search = GridSearchCV(
        make_pipeline(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True), LinearSVC()),
        {"linearsvc__C": [0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0]},
        scoring="f1_macro",
        cv=5,
    ).fit(train_docs, train_labels)
    return search.predict(test_docs), None, {"C": search.best_params_["linearsvc__C"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("abstracts", type=Path)
    parser.add_argument("--mapping", type=Path, help="JSON object: area -> list of categories")
    parser.add_argument(
        "--split", choices=("venue", "random"), help="default: venue with --mapping, else random"
    )
    parser.add_argument(
        "--min-count", type=int, default=10, help="fewest abstracts a label needs (default 10)"
    )
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    mapping = load_mapping(args.mapping) if args.mapping else None
    rows = load(args.abstracts, mapping, args.min_count)
    how = args.split or ("venue" if mapping else "random")
    print(f"{len(rows)} labelled abstracts, {len({r['area'] for r in rows})} labels")
    columns = [
        ("method", 18),
        ("accuracy", 10),
        ("macro-F1", 10),
        ("ECE", 8),
        ("ECE if calibrated", 19),
        ("train s", 9),
    ]
    header = "".join(name.ljust(width) if name == "method" else name.rjust(width) for name, width in columns)
    pooled: dict[str, list] = {}
    for name, train, test in splits(rows, how):
        train_docs, train_labels = [document(r) for r in train], [r["area"] for r in train]
        test_docs, test_labels = [document(r) for r in test], [r["area"] for r in test]
        print(f"\n{name}: {len(train)} training, {len(test)} test abstracts")
        print(header + "  settings")
        methods = {
            "tagger": (run_tagger, (train, test_docs)),
            "tagger + test pile": (run_tagger, (train, test_docs, test)),
            "plain": (run_plain, (train_docs, train_labels, test_docs)),
            "tuned LinearSVC": (run_svc, (train_docs, train_labels, test_docs)),
        }
        for method, (run, arguments) in methods.items():
            start = time.perf_counter()
            predicted, probabilities, settings = run(*arguments)
            seconds = time.perf_counter() - start
            confidence = None if probabilities is None else probabilities.max(axis=1)
            print_row(method, figures(test_labels, list(predicted), confidence), seconds, settings)
            truth, guesses, confidences = pooled.setdefault(method, [[], [], []])
            truth += test_labels
            guesses += list(predicted)
            confidences += [] if confidence is None else list(confidence)
    if len(pooled["tagger"][0]) > len(test_labels):
        print(f"\nall test predictions pooled: {len(pooled['tagger'][0])} abstracts")
        print(header)
        for method, (truth, guesses, confidences) in pooled.items():
            print_row(
                method, figures(truth, guesses, np.asarray(confidences) if confidences else None), None, {}
            )


if __name__ == "__main__":
    main()
