"""Abstracts outside the areas in a preprint feed: how many of the preprints whose authors filed
them outside computer science, statistics and electrical engineering the shipped model flags
for review, against the preprints filed under machine-learning categories.

Usage:
    python tests/benchmarks/bench_outside.py PILE.jsonl.gz

PILE.jsonl.gz is ``../shared/bench/preprint-pile-2025.jsonl.gz`` (30,000 arXiv abstracts of
every subject, each with its authors' categories, the primary first). The categories are a
noisy check only: a preprint filed under physics may well be machine learning.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

import numpy as np

import tagger
from tagger.reading import document

ML = {"cs.LG", "stat.ML", "cs.CL", "cs.CV", "cs.AI", "cs.RO", "cs.NE", "cs.IR", "cs.CR", "cs.MA"}
NEAR = ("cs.", "stat.", "eess.", "math.OC", "q-bio", "physics.comp")  # fields that use ML often


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pile", type=Path)
    options = parser.parse_args()
    with gzip.open(options.pile, "rt", encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines if line.strip()]
    predictions = tagger.predict([document(r["abstract"], r.get("title", "")) for r in rows])
    flagged = np.array([p.needs_review for p in predictions])
    confidence = np.array([p.confidence for p in predictions])
    primary = [r["categories"][0] if r["categories"] else "" for r in rows]
    outside = np.array([not p.startswith(NEAR) for p in primary])
    ml = np.array([p in ML for p in primary])
    print(f"{len(rows)} preprints; flagged for review: {flagged.mean():.3f}")
    for name, part in (("filed outside cs/stat/eess", outside), ("filed under ML categories", ml)):
        print(
            f"{name}: {part.sum()}, flagged {flagged[part].mean():.3f}, "
            f"mean confidence {confidence[part].mean():.3f}"
        )


if __name__ == "__main__":
    main()
