"""Modern benchmark: how a model tags hand-labelled abstracts of 2022-24 it never saw.

Usage:
    python tests/benchmarks/bench_modern.py MODERN.jsonl [--model DIR ...]

MODERN.jsonl is ``../shared/bench/modern-labelled-dev.jsonl``: abstracts labelled by reading in
the project's areas (``area``, a second area in ``alt`` where a paper sits between two, ``none``
where it fits no area). For the shipped model (or each ``--model DIR``), on the abstracts with
an area: strict accuracy (the reader's area) and lenient (area or ``alt``) side by side,
macro-F1 (strict), ECE (strict; the 10 equal-width bins of tagger.evaluate), mean confidence, and per area: count,
recall, precision; then the share of ``none`` abstracts flagged ``needs_review``. A model
trained on these abstracts must not be measured here (it saw them).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import numpy as np

from tagger import load_model
from tagger.evaluate import expected_calibration_error
from tagger.reading import document


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def measure(model, rows: list[dict]) -> dict:
    labelled = [r for r in rows if r["area"] != "none"]
    predictions = model.predict([document(r["abstract"], r["title"]) for r in labelled])
    areas = np.array([p.area for p in predictions])
    truth = np.array([r["area"] for r in labelled])
    alt = np.array([r.get("alt") or "" for r in labelled])
    confidence = np.array([p.confidence for p in predictions])
    strict = areas == truth
    per_area = {}
    for area in sorted(set(truth) | set(areas)):
        tp = int(((areas == area) & strict).sum())
        n, predicted = int((truth == area).sum()), int((areas == area).sum())
        per_area[area] = {
            "n": n,
            "recall": tp / n if n else float("nan"),
            "precision": tp / predicted if predicted else float("nan"),
        }
    f1 = [
        2 * a["recall"] * a["precision"] / (a["recall"] + a["precision"])
        if a["n"] and a["recall"] + a["precision"] > 0
        else 0.0
        for a in per_area.values()
        if a["n"]
    ]
    none = [r for r in rows if r["area"] == "none"]
    flagged = [p.needs_review for p in model.predict([document(r["abstract"], r["title"]) for r in none])]
    return {
        "n": len(labelled),
        "strict": float(strict.mean()),
        "lenient": float((strict | (areas == alt)).mean()),
        "macro_f1": float(np.mean(f1)),
        "ece": float(expected_calibration_error(confidence, strict)),
        "mean_confidence": float(confidence.mean()),
        "none_flagged": float(np.mean(flagged)) if flagged else float("nan"),
        "none": len(none),
        "per_area": per_area,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("modern", type=Path)
    parser.add_argument("--model", action="append", default=[])
    options = parser.parse_args()
    rows = load(options.modern)
    print(f"{len(rows)} abstracts: {dict(Counter(r['area'] for r in rows).most_common())}")
    for name in options.model or [None]:
        figures = measure(load_model(name), rows)
        print(
            f"\n{name or 'shipped'}: n {figures['n']}, accuracy strict {figures['strict']:.3f}, "
            f"with the second area {figures['lenient']:.3f}, macro-F1 {figures['macro_f1']:.3f}, "
            f"ECE {figures['ece']:.3f}, mean confidence {figures['mean_confidence']:.3f}; "
            f"'none' flagged {figures['none_flagged']:.2f} of {figures['none']}"
        )
        print(f"  {'area':<14}{'n':>4}{'recall':>8}{'precision':>10}")
        for area, a in figures["per_area"].items():
            print(f"  {area:<14}{a['n']:>4}{a['recall']:>8.2f}{a['precision']:>10.2f}")


if __name__ == "__main__":
    main()
