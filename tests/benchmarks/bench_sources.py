"""Sources benchmark: one recipe measured on every source, each on abstracts it did not see.

Usage:
    python tests/benchmarks/bench_sources.py --proceedings MODERN.jsonl [MORE.jsonl ...]
        --preprints PREPRINTS.jsonl --conference CONFERENCE.jsonl
        [--folds 5] [--settings abstract_weight=0.1,C=10 ...] [--without-preprints] [--source-balanced]
        [--title-repeats N] [--pile PILE.jsonl.gz --pile-size N] [--outside] [--none-review] [--title-features]
        [--json FILE]

The proceedings are ``../shared/bench/modern-labelled-dev.jsonl`` and ``modern-labelled-train.jsonl``
(hand-labelled abstracts of 2022-24, the repository's own labels among them), the preprints
``../shared/bench/preprint-labelled-2025.jsonl`` (2,700 arXiv abstracts of 2025 labelled the same
way), the conference abstracts ``../shared/bench/conference-abstracts-dev.jsonl`` (their areas by
our mapping of their categories, ``dev-area-mapping.json``). The recipe is the shipped one
(settings search and calibration inside every training), trained on the repository's labels
(the seeds and the proceedings' labels) and the preprints' labels, and measured three ways:

* proceedings held out by year: each year's abstracts tagged by the recipe trained without
  that year's labels (the other years and every preprint label in);
* preprints held out by fold: each of ``--folds`` stratified folds (seed 0; the ``none``
  abstracts spread over the folds too) tagged by the recipe trained without that fold's labels
  (every proceedings label in);
* conference abstracts, which nothing trains on, tagged by the recipe trained on everything.

For each: strict accuracy (the reader's area) and lenient (area or ``alt``), macro-F1, ECE,
the share not flagged for review and their strict accuracy, the share of ``none`` abstracts
flagged, and per area recall and precision. ``--without-preprints`` measures the recipe
without the preprint labels the same way (the preprints then all tagged by the recipe trained
on the proceedings); ``--source-balanced`` weighs each preprint label so that the two sources'
labels weigh the same in all (scikit-learn's sample weights); each ``--settings`` fixes the
training settings (no search); ``--title-repeats N`` (an experiment) has the recipe read each
title N times before its abstract, in training and tagging; ``--pile`` self-trains every
training on the first ``--pile-size`` abstracts of an unlabelled pile (those labelled left out);
``--outside`` (an experiment) trains the ``none`` abstracts as an area ``other`` of their own
(a tag ``other`` counts as flagged for them, and as wrong for the others); ``--none-review``
has the ``none`` abstracts of each training set the review threshold with the labelled ones
(their tags counted wrong), as a project's ``none`` labels do (the figures "with them" count
the held-out ``none`` abstracts among the rest, never right); ``--title-features``
(an experiment) adds each title word as a feature of its own beside the words of the text.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_modern import held_out, load, measure, trained_with
from devdata import figures, load_mapping
from devdata import load as load_conference

from tagger.reading import document


def preprint_folds(rows: list[dict], k: int) -> dict[str, int]:
    """Each preprint's fold: stratified by area (``none`` one more area), shuffled with seed 0."""
    by_area: dict[str, list[str]] = {}
    for row in rows:
        by_area.setdefault(row["area"], []).append(row["id"])
    folds = {}
    generator = random.Random(0)
    for area in sorted(by_area):
        ids = sorted(by_area[area])
        generator.shuffle(ids)
        folds.update({identifier: i % k for i, identifier in enumerate(ids)})
    return folds


def with_source(rows: list[dict], source: str) -> list[dict]:
    return [{**row, "id": f"{source}:{row['id']}", "source": source} for row in rows]


def unlabelled_pile(args, labelled: list[dict]) -> list[str] | None:
    """``--pile``: its first ``--pile-size`` abstracts that are none of the labelled ones, as
    the recipe reads them (self-training learns from them), or None."""
    if args.pile is None:
        return None
    import gzip

    from tagger.reading import abstract_id

    known = {abstract_id(r["abstract"]) for r in labelled}
    texts = []
    with gzip.open(args.pile, "rt", encoding="utf-8") as stream:
        for line in stream:
            row = json.loads(line)
            if abstract_id(row["abstract"]) not in known:
                texts.append(document(row["abstract"], row.get("title", "")))
            if len(texts) == args.pile_size:
                break
    print(f"self-training on {len(texts)} abstracts of {args.pile}")
    return texts


def conference_figures(model, path: Path) -> dict:
    rows = load_conference(path, load_mapping())
    predictions = model.predict([document(r["abstract"], r["title"]) for r in rows])
    confidence = np.array([p.confidence for p in predictions])
    result = figures([r["area"] for r in rows], [p.area for p in predictions], confidence)
    unflagged = ~np.array([p.needs_review for p in predictions])
    correct = np.array([p.area == r["area"] for p, r in zip(predictions, rows)])
    result["unflagged"] = float(unflagged.mean())
    result["unflagged_strict"] = float(correct[unflagged].mean()) if unflagged.any() else float("nan")
    return result


def run(args, settings, use_preprints: bool) -> dict:
    proceedings = with_source([r for path in args.proceedings for r in load(path)], "proceedings")
    preprints = with_source(load(args.preprints), "preprint")
    everything = proceedings + preprints
    trained_on_preprints = preprints if use_preprints else []

    weight = None
    if args.source_balanced and use_preprints:  # each source's labels weigh the same in all
        share = sum(r["area"] != "none" for r in proceedings) / sum(r["area"] != "none" for r in preprints)
        print(f"each preprint label weighs {share:.3f}")

        def weight(row: dict) -> float:
            return share if row["source"] == "preprint" else 1.0

    pile = unlabelled_pile(args, everything)
    year = {r["id"]: r["year"] for r in proceedings}
    by_year = held_out(
        proceedings,
        year,
        settings,
        rows_beside=trained_on_preprints,
        everything=everything,
        weight=weight,
        pile=pile,
    )
    results = {"proceedings by year": measure(by_year, proceedings)}

    if use_preprints:
        fold = preprint_folds(preprints, args.folds)
        by_fold = held_out(
            preprints,
            fold,
            settings,
            rows_beside=proceedings,
            everything=everything,
            weight=weight,
            pile=pile,
        )
        results["preprints by fold"] = measure(by_fold, preprints)
    model, _ = trained_with(
        proceedings + trained_on_preprints, settings, everything, weight=weight, pile=pile
    )
    if not use_preprints:
        results["preprints (none trained on)"] = measure(model, preprints)
    results["conference"] = conference_figures(model, args.conference)
    return results


def show(name: str, results: dict) -> None:
    print(f"\n== {name}")
    for source, f in results.items():
        if "strict" in f:
            low = min((a["recall"], area) for area, a in f["per_area"].items() if a["n"])
            print(
                f"{source:28s} n {f['n']:5d}  strict {f['strict']:.3f}  lenient {f['lenient']:.3f}  "
                f"macro-F1 {f['macro_f1']:.3f}  ECE {f['ece']:.3f}  unflagged {f['unflagged']:.2f} "
                f"right {f['unflagged_strict']:.3f}  none flagged {f['none_flagged']:.2f} of {f['none']}  "
                f"(with them: unflagged {f['pile_unflagged']:.2f} right {f['pile_unflagged_right']:.3f})  "
                f"lowest recall {low[1]} {low[0]:.2f}"
            )
            print(
                "    per area (recall/precision): "
                + ", ".join(
                    f"{area} {a['recall']:.2f}/{a['precision']:.2f}"
                    for area, a in f["per_area"].items()
                    if a["n"]
                )
            )
        else:
            print(
                f"{source:28s} n {f['n']:5d}  accuracy {f['accuracy']:.3f}  macro-F1 {f['macro_f1']:.3f}  "
                f"ECE {f['ece']:.3f} (noise floor {f['ece_if_calibrated']:.3f})  unflagged {f['unflagged']:.2f} "
                f"right {f['unflagged_strict']:.3f}"
            )


def repeat_titles(times: int) -> None:
    """An experiment: what the recipe reads is the title ``times`` times, then the abstract
    (a title word then weighs more than a body word), in training and in tagging alike."""
    import bench_modern

    from tagger import reading

    def document_with_titles(abstract: str, title: str = "") -> str:
        return reading.document(abstract, ". ".join([title] * times) if title else "")

    bench_modern.document = document_with_titles
    globals()["document"] = document_with_titles


def title_features() -> None:
    """An experiment: each title word also read as a feature of its own (``ttlWORD``), beside
    the title and the abstract, in training and in tagging alike."""
    import re

    import bench_modern

    from tagger import reading

    def document_with_title_words(abstract: str, title: str = "") -> str:
        marked = " ".join(f"ttl{word}" for word in re.findall(r"\w+", title.lower()))
        return reading.document(f"{abstract} {marked}" if marked else abstract, title)

    bench_modern.document = document_with_title_words
    globals()["document"] = document_with_title_words


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--proceedings", type=Path, nargs="+", required=True)
    parser.add_argument("--preprints", type=Path, required=True)
    parser.add_argument("--conference", type=Path, required=True)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--settings", action="append", default=[])
    parser.add_argument("--settings-only", action="store_true", help="leave out the searched recipe")
    parser.add_argument("--without-preprints", action="store_true")
    parser.add_argument(
        "--source-balanced",
        action="store_true",
        help="preprint labels weighted so each source weighs the same",
    )
    parser.add_argument("--pile", type=Path, help="unlabelled abstracts (.jsonl.gz) to self-train on")
    parser.add_argument("--pile-size", type=int, default=5000)
    parser.add_argument(
        "--title-features", action="store_true", help="an experiment: title words as features"
    )
    parser.add_argument(
        "--outside", action="store_true", help="an experiment: the 'none' abstracts as an area 'other'"
    )
    parser.add_argument(
        "--none-review",
        action="store_true",
        help="the 'none' abstracts of each training teach the review flag (as a project's do)",
    )
    parser.add_argument("--title-repeats", type=int, default=1, help="an experiment: the title read N times")
    parser.add_argument("--json", type=Path, help="write every figure here too")
    args = parser.parse_args()
    if args.title_repeats > 1:
        repeat_titles(args.title_repeats)
    if args.title_features:
        title_features()
    if args.outside:
        import bench_modern

        bench_modern.OUTSIDE = bench_modern.outside_area()
    if args.none_review:
        import bench_modern

        bench_modern.NONE_TEACHES_REVIEW = True
    from devdata import parse_settings

    searched = [] if args.settings_only else [("shipped recipe (settings searched)", None)]
    recipes = searched + [(s, parse_settings(s)) for s in args.settings]
    everything = {}
    for name, settings in recipes:
        if args.without_preprints:
            everything[f"{name}, without preprint labels"] = run(args, settings, use_preprints=False)
            show(f"{name}, without preprint labels", everything[f"{name}, without preprint labels"])
        everything[f"{name}, with preprint labels"] = run(args, settings, use_preprints=True)
        show(f"{name}, with preprint labels", everything[f"{name}, with preprint labels"])
    if args.json:
        args.json.write_text(json.dumps(everything, indent=2, default=str))


if __name__ == "__main__":
    main()
