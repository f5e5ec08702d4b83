"""Transfer benchmark: how a model tags real abstracts that nobody here labelled.

Usage:
    python tests/benchmarks/bench_transfer.py DEV.jsonl [--mapping FILE] [--model DIR ...]

DEV.jsonl is ``../shared/bench/conference-abstracts-dev.jsonl``; each abstract's true area
comes from our mapping of its conference categories (default: ``dev-area-mapping.json``
beside this file). Printed, for the same abstracts, in one run:

* ``shipped`` (or each ``--model DIR``): accuracy, macro-F1, ECE and its noise floor, the
  share flagged ``needs_review`` and the accuracy of the rest;
* ``descriptions only``: the same recipe trained on the area descriptions of ``labels/``
  without any labelled abstract: the floor that labels must not push down;
* ``plain``: scikit-learn's ``TfidfVectorizer()`` + ``LogisticRegression()`` trained on the
  labelled seeds;
* text with little evidence: a short GAN sentence, ``hello world``, and the Python standard
  library's docstrings (real English prose about something else);
* with ``--reliability``: each model's reliability table (confidence bins: count, mean
  confidence, accuracy), to see where the ECE comes from;
* with ``--misses N``: N confident disagreements (confidence >= 0.9, tag != mapped area) of the
  first model, drawn at random (seed 0), with title and categories, to read by hand: is the
  tag wrong, or is the mapped area?
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import warnings
from pathlib import Path

import numpy as np
from devdata import MAPPING, document, figures, load, load_mapping, parse_settings

import tagger
from tagger.labels import load_training_set
from tagger.settings import TrainingSettings

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from conftest import fit_pipeline  # noqa: E402
from prose import stdlib_docstrings  # noqa: E402

SHORT_TEXTS = ("We propose a new GAN for anime faces.", "hello world")


def model_row(model: tagger.Model, docs: list[str], truth: list[str]) -> dict:
    predictions = model.predict(docs)
    result = figures(truth, [p.area for p in predictions], np.array([p.confidence for p in predictions]))
    flagged = np.array([p.needs_review for p in predictions])
    correct = np.array([p.area == t for p, t in zip(predictions, truth)])
    result["flagged"] = float(flagged.mean())
    result["accuracy_unflagged"] = float(correct[~flagged].mean()) if (~flagged).any() else float("nan")
    return result


def descriptions_only(docs: list[str]) -> list[str]:
    seeds = load_training_set(ROOT / "labels", [ROOT / "seeds"])
    no_labels = seeds.subset([])
    return list(fit_pipeline(no_labels, TrainingSettings()).predict(docs))


def plain(docs: list[str], project: Path = ROOT, strong: bool = False) -> tuple[list[str], np.ndarray]:
    """A plain scikit-learn pipeline trained on ``project``'s labelled texts (no descriptions):
    defaults, or with ``strong`` the baseline a careful user would write (word pairs, min_df 2,
    English stop words, C 30, balanced classes), which the recipe must beat on every set."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    labelled = load_training_set(project / "labels", [project / "seeds"])
    if strong:
        vectorizer = TfidfVectorizer(ngram_range=(1, 2), min_df=2, stop_words="english", sublinear_tf=True)
        classifier = LogisticRegression(C=30, class_weight="balanced", max_iter=5000)
    else:
        vectorizer, classifier = TfidfVectorizer(), LogisticRegression()
    pipeline = make_pipeline(vectorizer, classifier).fit(labelled.texts, labelled.labels)
    return list(pipeline.predict(docs)), pipeline.predict_proba(docs).max(axis=1)


def reliability(model: tagger.Model, docs: list[str], truth: list[str]) -> None:
    predictions = model.predict(docs)
    confidence = np.array([p.confidence for p in predictions])
    correct = np.array([p.area == t for p, t in zip(predictions, truth)])
    print(f"{'confidence':>12s}{'abstracts':>10s}{'mean conf':>10s}{'accuracy':>9s}")
    for low in np.arange(0.0, 1.0, 0.1):
        rows = (confidence >= low) & (confidence < low + 0.1 if low < 0.9 else confidence <= 1.0)
        if rows.any():
            print(
                f"{low:5.1f}-{low + 0.1:.1f}{rows.sum():10d}{confidence[rows].mean():10.3f}{correct[rows].mean():9.3f}"
            )


def confident_misses(model: tagger.Model, rows: list[dict], docs: list[str], n: int) -> None:
    predictions = model.predict(docs)
    misses = [(p, r) for p, r in zip(predictions, rows) if p.confidence >= 0.9 and p.area != r["area"]]
    print(f"{len(misses)} confident disagreements (confidence >= 0.9); {min(n, len(misses))} at random:")
    for i in np.random.default_rng(0).permutation(len(misses))[:n]:
        p, r = misses[i]
        print(f"  mapped {r['area']} -> tagged {p.area} {p.confidence:.3f}: {r['title']} {r['categories']}")


def print_row(name: str, f: dict) -> None:
    ece = "" if f["ece"] is None else f"{f['ece']:8.3f}{f['ece_if_calibrated']:8.3f}"
    extra = f"{f['flagged']:9.0%}{f['accuracy_unflagged']:9.3f}" if "flagged" in f else ""
    print(f"{name:22s}{f['accuracy']:9.3f}{f['macro_f1']:9.3f}{ece:>16s}{extra}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("abstracts", type=Path)
    parser.add_argument("--mapping", type=Path, default=MAPPING)
    parser.add_argument("--model", type=Path, action="append", help="model folders (default: the shipped)")
    parser.add_argument(
        "--retrain", action="store_true", help="also train from labels/ and seeds/ now and show that model"
    )
    parser.add_argument(
        "--project",
        type=Path,
        default=ROOT,
        help="with --retrain: the project whose labels/ and seeds/ train",
    )
    parser.add_argument(
        "--unlabelled",
        type=Path,
        nargs="+",
        help="with --retrain: also train with these abstracts as the unlabelled pile (self-training)",
    )
    parser.add_argument(
        "--sweep",
        action="append",
        default=[],
        metavar="NAME=V1,V2",
        help="with --retrain: also train with each of these values of a training setting (repeatable)",
    )
    parser.add_argument(
        "--settings",
        action="append",
        default=[],
        metavar="NAME=VALUE,...",
        help="with --retrain: also train with these training settings fixed (repeatable)",
    )
    parser.add_argument("--reliability", action="store_true", help="print each model's reliability table")
    parser.add_argument("--misses", type=int, default=0, metavar="N", help="print N confident disagreements")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    rows = load(args.abstracts, load_mapping(args.mapping))
    docs, truth = [document(r) for r in rows], [r["area"] for r in rows]
    counts = {a: truth.count(a) for a in sorted(set(truth), key=truth.count, reverse=True)}
    print(f"{len(rows)} mapped abstracts: " + ", ".join(f"{a} {n}" for a, n in counts.items()))
    print(f"{'':22s}{'accuracy':>9s}{'macro-F1':>9s}{'ECE':>8s}{'floor':>8s}{'flagged':>9s}{'acc rest':>9s}")
    models = (
        {str(d): tagger.load_model(d) for d in args.model} if args.model else {"shipped": tagger.load_model()}
    )
    if args.retrain:
        variants: dict = {"retrained": None}  # as tagger train does: the label weight chosen by CV
        for sweep in args.sweep:
            name, _, values = sweep.partition("=")
            kind = type(getattr(TrainingSettings(), name))
            for value in values.split(","):
                variants[f"{name}={value}"] = dataclasses.replace(TrainingSettings(), **{name: kind(value)})
        for text in args.settings:
            variants[text] = parse_settings(text)
        piles = {"": None, " + pile": args.unlabelled} if args.unlabelled else {"": None}
        for name, settings in variants.items():
            for suffix, pile in piles.items():
                model = tagger.train(
                    labels=args.project / "labels",
                    abstracts=[args.project / "seeds"],
                    settings=settings,
                    unlabelled=pile,
                )
                models[name + suffix] = model
                seed = model.card.evaluation
                print(f"{name + suffix}: seed {seed.scheme} accuracy {seed.accuracy:.3f}, ECE {seed.ece:.3f}")
    for name, model in models.items():
        print_row(name, model_row(model, docs, truth))
    for name, model in models.items() if args.reliability else ():
        print(f"{name}: reliability on the mapped abstracts")
        reliability(model, docs, truth)
    if args.misses:
        confident_misses(next(iter(models.values())), rows, docs, args.misses)
    print_row("descriptions only", figures(truth, descriptions_only(docs), None))
    print_row("plain (seeds)", figures(truth, *plain(docs)))
    print_row("plain, careful", figures(truth, *plain(docs, args.project, strong=True)))
    prose = stdlib_docstrings()
    for name, model in models.items():
        for text in SHORT_TEXTS:
            p = model.predict(text)
            print(
                f"{name}: {text!r} -> {p.area} {p.confidence:.2f}{' (needs review)' if p.needs_review else ''}"
            )
        predictions = model.predict(prose)
        print(
            f"{name}: {len(prose)} standard-library docstrings: mean confidence "
            f"{np.mean([p.confidence for p in predictions]):.3f}, "
            f"{np.mean([p.needs_review for p in predictions]):.0%} flagged"
        )


if __name__ == "__main__":
    main()
