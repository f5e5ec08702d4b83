"""Whole-feed benchmark: the reader's answer for every abstract of a feed, ``none`` included,
each abstract tagged by the recipe trained without it.

Usage:
    python tests/benchmarks/bench_feed.py --bench ../shared/bench
        [--design class|review ...] [--settings C=100,abstract_weight=0.1,pair_min_df=2 ...]
        [--sources preprints,proceedings,2015-16,conference] [--folds 5] [--json FILE]

The hand-labelled files of ``--bench`` (``preprint-labelled-2025.jsonl``, ``modern-labelled-dev.jsonl``
and ``modern-labelled-train.jsonl``, ``conference-labelled-2015-16.jsonl``) are the feed; each is
measured held out, the others' labels (and the repository's own that are none of them: the
38 seeds) in every training:

* preprints by fold: 5 stratified folds (``none`` spread over them too), each tagged by the recipe
  trained without it;
* proceedings by year: each year tagged by the recipe trained without that year;
* 2015-16 by fold: as the preprints;
* conference: ``conference-abstracts-dev.jsonl`` with its categories mapped onto the areas
  (``dev-area-mapping.json``; no ``none`` there), less the 300 of them labelled by reading, tagged
  by the recipe trained on every label. The 2015-16 abstracts that have both a reader's answer
  and a mapped category are measured against each, with the same held-out tags: how far the
  mapping itself is from the reader.

A design is what training does with the ``none`` labels: ``class`` (the library's: an answer the
model learns, ``none``), ``review`` (the previous release's: they only set the review threshold,
the model always answers an area). Figures, over the whole feed (a tag is right when it is the
reader's answer: the area, or ``none`` for a ``none`` abstract): strict, lenient (area or ``alt``),
ECE, macro-F1 (``none`` an area of its own); on the abstracts with an area: strict and lenient;
the share answered ``none``; of the ``none`` abstracts, the share answered ``none`` and the share
answered ``none`` or flagged; the share the model leaves unflagged (its own review threshold) and
how often those are right; the largest share of the most confident tags right 93 % of the time
(the "sure share at 0.93", read off the held-out tags themselves); per area recall and precision.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sources import preprint_folds
from devdata import load as load_conference
from devdata import load_mapping, parse_settings

from tagger import labels as labels_module
from tagger.evaluate import calibration_bins, expected_calibration_error
from tagger.reading import abstract_id, document

ROOT = Path(__file__).resolve().parents[2]
NONE = "none"
SURE = 0.93


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def base_training_set(feed: list[dict]):
    """The repository's labels without any abstract of the feed (the seeds that are not
    in a benchmark file)."""
    from tagger.labels import load_training_set

    base = load_training_set(ROOT / "labels", [ROOT / "seeds"])
    out = {abstract_id(r["abstract"]) for r in feed}
    kept = base.subset([i for i, digest in enumerate(base.ids) if digest not in out])
    outside = [i for i, digest in enumerate(base.no_area_ids) if digest not in out]
    return dataclasses.replace(
        kept,
        no_area_texts=tuple(base.no_area_texts[i] for i in outside),
        no_area_ids=tuple(base.no_area_ids[i] for i in outside),
    )


def trained(base, rows: list[dict], settings, design: str):
    """The recipe trained on ``base`` and ``rows`` (``none`` rows as the labels that fit no
    area, which ``design`` decides what to do with)."""
    from tagger.training import train

    with_area = [r for r in rows if r["area"] != NONE]
    outside = [r for r in rows if r["area"] == NONE]
    training_set = dataclasses.replace(
        base,
        texts=base.texts + tuple(document(r["abstract"], r["title"]) for r in with_area),
        labels=base.labels + tuple(r["area"] for r in with_area),
        ids=base.ids + tuple(abstract_id(r["abstract"]) for r in with_area),
        no_area_texts=base.no_area_texts + tuple(document(r["abstract"], r["title"]) for r in outside),
        no_area_ids=base.no_area_ids + tuple(abstract_id(r["abstract"]) for r in outside),
    )
    minimum = labels_module.NO_AREA_MIN
    labels_module.NO_AREA_MIN = 10**9 if design == "review" else minimum
    try:
        started = time.perf_counter()
        model = train(training_set, settings)
    finally:
        labels_module.NO_AREA_MIN = minimum
    print(
        f"  trained on {len(training_set.labels)} labels and {len(outside) + base.no_area} none "
        f"in {time.perf_counter() - started:.0f} s (C {model.card.settings.C}, "
        f"abstract_weight {model.card.settings.abstract_weight})",
        flush=True,
    )
    return model


def held_out(base, rows: list[dict], group: dict, beside: list[dict], settings, design: str) -> list:
    """Each row's prediction by the recipe trained without its group (``beside``: in every training)."""
    predictions: dict[int, object] = {}
    for key in sorted(set(group.values())):
        model = recipe(base, [r for r in rows if group[r["id"]] != key] + beside, settings, design)
        mine = [i for i, r in enumerate(rows) if group[r["id"]] == key]
        found = model.predict([document(rows[i]["abstract"], rows[i]["title"]) for i in mine])
        predictions.update(zip(mine, found))
    return [predictions[i] for i in range(len(rows))]


def recipe(base, rows: list[dict], settings, design: str):
    """The model of ``design`` trained on ``base`` and ``rows``: one model (``class``,
    ``review``), or for ``two-stage`` two (:class:`TwoStages`)."""
    if design != "two-stage":
        return trained(base, rows, settings, design)
    return TwoStages(trained(base, rows, settings, "class"), trained(base, rows, settings, "review"))


class TwoStages:
    """An experiment, the two-stage design: whether an abstract fits no area is the model that
    learnt ``none``'s answer (with its probability of ``none``, p); else the area is the model
    trained on the areas alone, its confidence that model's times 1 - p; flagged below the
    first model's review threshold."""

    def __init__(self, with_none, areas_only) -> None:
        self.with_none, self.areas_only = with_none, areas_only

    def predict(self, texts: list[str]) -> list:
        from types import SimpleNamespace

        first = self.with_none.predict(texts)
        second = self.areas_only.predict(texts)
        threshold = self.with_none.review_threshold
        found = []
        for outside, inside in zip(first, second):
            if outside.area == NONE:
                area, confidence = NONE, outside.confidence
            else:
                area, confidence = inside.area, inside.confidence * (1 - outside.scores[NONE])
            found.append(
                SimpleNamespace(area=area, confidence=confidence, needs_review=confidence < threshold)
            )
        return found


def sure_share(confidence: np.ndarray, correct: np.ndarray, target: float = SURE) -> float:
    """The largest share of the most confident tags that are right ``target`` of the time."""
    order = np.argsort(-confidence, kind="stable")
    running = np.cumsum(correct[order]) / np.arange(1, len(order) + 1)
    good = np.nonzero(running >= target)[0]
    return float((good.max() + 1) / len(order)) if len(good) else 0.0


def figures(rows: list[dict], predictions: list) -> dict:
    """The whole-feed figures of ``predictions`` of ``rows`` (see the module's docstring)."""
    truth = np.array([r["area"] for r in rows])
    alt = np.array([r.get("alt") or "" for r in rows])
    tag = np.array([p.area for p in predictions])
    confidence = np.array([p.confidence for p in predictions])
    flagged = np.array([p.needs_review for p in predictions], dtype=bool)
    strict = tag == truth
    lenient = strict | ((alt != "") & (tag == alt))
    has_area = truth != NONE
    outside = ~has_area
    per_area = {}
    for area in sorted(set(truth) | set(tag)):
        tp = int(((tag == area) & strict).sum())
        n, predicted = int((truth == area).sum()), int((tag == area).sum())
        recall = tp / n if n else float("nan")
        precision = tp / predicted if predicted else float("nan")
        f1 = 2 * tp / (n + predicted) if n + predicted else 0.0
        per_area[area] = {"n": n, "recall": recall, "precision": precision, "f1": f1}
    return {
        "n": len(rows),
        "none": int(outside.sum()),
        "strict": float(strict.mean()),
        "lenient": float(lenient.mean()),
        "ece": float(expected_calibration_error(confidence, strict)),
        "macro_f1": float(np.mean([a["f1"] for a in per_area.values() if a["n"]])),
        "area_strict": float(strict[has_area].mean()),
        "area_lenient": float(lenient[has_area].mean()),
        "area_ece": float(expected_calibration_error(confidence[has_area], strict[has_area])),
        "answered_none": float((tag == NONE).mean()),
        "none_answered_none": float((tag[outside] == NONE).mean()) if outside.any() else float("nan"),
        "none_answered_or_flagged": float(((tag[outside] == NONE) | flagged[outside]).mean())
        if outside.any()
        else float("nan"),
        "unflagged": float((~flagged).mean()),
        "unflagged_right": float(strict[~flagged].mean()) if (~flagged).any() else float("nan"),
        "sure_share": sure_share(confidence, strict),
        "mean_confidence": float(confidence.mean()),
        "per_area": per_area,
        "bins": calibration_bins(confidence, strict),
    }


def show(source: str, f: dict) -> None:
    print(
        f"{source:22s} n {f['n']:5d} (none {f['none']:3d})  whole: strict {f['strict']:.3f} lenient "
        f"{f['lenient']:.3f} ECE {f['ece']:.3f} macro-F1 {f['macro_f1']:.3f} | with an area: strict "
        f"{f['area_strict']:.3f} lenient {f['area_lenient']:.3f} | answered none {f['answered_none']:.2f}; "
        f"none: answered none {f['none_answered_none']:.2f}, or flagged {f['none_answered_or_flagged']:.2f} | "
        f"unflagged {f['unflagged']:.2f} right {f['unflagged_right']:.3f} | sure share at {SURE} "
        f"{f['sure_share']:.2f} | mean confidence {f['mean_confidence']:.3f}",
        flush=True,
    )
    print(
        "    per area (n recall/precision): "
        + ", ".join(
            f"{area} {a['n']} {a['recall']:.2f}/{a['precision']:.2f}" for area, a in f["per_area"].items()
        ),
        flush=True,
    )


def mapped_areas(bench: Path) -> dict[str, str]:
    """The area each conference abstract's categories map to, by its text's id (those with one)."""
    rows = load_conference(bench / "conference-abstracts-dev.jsonl", load_mapping())
    return {abstract_id(r["abstract"]): r["area"] for r in rows}


def conference_rows(bench: Path, labelled: list[dict]) -> list[dict]:
    """The conference development abstracts with a mapped area, less those labelled by reading."""
    known = {abstract_id(r["abstract"]) for r in labelled}
    rows = load_conference(bench / "conference-abstracts-dev.jsonl", load_mapping())
    return [
        {**r, "id": f"c{i}", "alt": ""} for i, r in enumerate(rows) if abstract_id(r["abstract"]) not in known
    ]


def run(bench: Path, settings, design: str, sources: list[str], k: int) -> dict:
    preprints = load(bench / "preprint-labelled-2025.jsonl")
    proceedings = load(bench / "modern-labelled-dev.jsonl") + load(bench / "modern-labelled-train.jsonl")
    older = load(bench / "conference-labelled-2015-16.jsonl")
    for name, part in (("p", preprints), ("m", proceedings), ("o", older)):
        for r in part:
            r["id"] = f"{name}:{r['id']}"
    feed = preprints + proceedings + older
    base = base_training_set(feed)
    print(f"{design}: the repository's labels outside the feed: {len(base.labels)} (+{base.no_area} none)")
    results = {}
    splits = {
        "preprints by fold": (preprints, preprint_folds(preprints, k), proceedings + older),
        "proceedings by year": (proceedings, {r["id"]: r["year"] for r in proceedings}, preprints + older),
        "2015-16 by fold": (older, preprint_folds(older, k), preprints + proceedings),
    }
    for name, (rows, group, beside) in splits.items():
        if name.split()[0] not in sources:
            continue
        predictions = held_out(base, rows, group, beside, settings, design)
        results[name] = figures(rows, predictions)
        show(name, results[name])
        if rows is older:  # the same tags against the areas the conference's categories map to
            mapped = mapped_areas(bench)
            kept = [i for i, r in enumerate(rows) if abstract_id(r["abstract"]) in mapped]
            for against, truth in (("reader", None), ("categories", mapped)):
                some = [
                    {**rows[i], "area": truth[abstract_id(rows[i]["abstract"])] if truth else rows[i]["area"]}
                    for i in kept
                ]
                key = f"2015-16 with mapped categories, against the {against}"
                results[key] = figures(some, [predictions[i] for i in kept])
                show(key, results[key])
    if "conference" in sources:
        model = recipe(base, feed, settings, design)
        rows = conference_rows(bench, older)
        results["conference (mapped)"] = figures(
            rows, model.predict([document(r["abstract"], r["title"]) for r in rows])
        )
        show("conference (mapped)", results["conference (mapped)"])
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", type=Path, required=True)
    parser.add_argument("--design", action="append", choices=["class", "review", "two-stage"])
    parser.add_argument("--settings", action="append", default=[])
    parser.add_argument("--sources", default="preprints,proceedings,2015-16,conference")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    recipes = [(s, parse_settings(s)) for s in args.settings] or [("settings searched", None)]
    everything = {}
    for design in args.design or ["class"]:
        for name, settings in recipes:
            print(f"\n== design {design}, {name}", flush=True)
            everything[f"{design}, {name}"] = run(
                args.bench, settings, design, args.sources.split(","), args.folds
            )
    if args.json:
        args.json.write_text(json.dumps(everything, indent=2, default=str))


if __name__ == "__main__":
    main()
