"""Tags benchmark: how often the ``tags`` column holds the reader's area, and how many tags an
abstract gets, for each rule of choosing them, on hand-labelled abstracts the model did not see.

Usage:
    python tests/benchmarks/bench_tags.py MODERN.jsonl [MORE.jsonl ...]

MODERN.jsonl is ``../shared/bench/modern-labelled-dev.jsonl``. Each year's abstracts are tagged
by the recipe trained without that year (as ``bench_modern.py --by-year``); for each rule,
over the abstracts with an area: the share whose tags hold the reader's area ("area"), hold the
area or the second area the reader gave ("either"), hold both where the reader gave two
("both", of those), and the mean number of tags; the rule ``tagger predict`` uses by default
is marked.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from bench_modern import held_out_by_year, load

from tagger.prediction import RUNNER_UP_TAG, top_areas


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("modern", type=Path, nargs="+")
    options = parser.parse_args()
    rows = [r for path in options.modern for r in load(path) if r["area"] != "none"]
    predictions = held_out_by_year([r for path in options.modern for r in load(path)])(rows)
    areas = list(predictions[0].scores)
    probabilities = np.array([list(p.scores.values()) for p in predictions])
    rules = {"top 1": (1, 0.0), "top 2": (2, 0.0)}
    rules |= {f"top 2, the second from {m:.2f}": (2, m) for m in (0.1, 0.15, 0.2, 0.25, 0.3)}
    rules |= {f"every area from {m:.2f}": (None, m) for m in (0.15, 0.2, 0.25, 0.3)}
    print(f"{len(rows)} abstracts with an area, {sum(bool(r['alt']) for r in rows)} with a second area")
    print(f"{'rule':36s}{'area':>7s}{'either':>8s}{'both':>7s}{'tags':>7s}")
    for name, (k, least) in rules.items():
        tags = [
            [area for area, _ in row] or [areas[int(np.argmax(p))]]  # the top area always
            for row, p in zip(top_areas(probabilities, areas, k, least), probabilities)
        ]
        held = [r["area"] in t for r, t in zip(rows, tags)]
        either = [r["area"] in t or r["alt"] in t for r, t in zip(rows, tags)]
        both = [r["area"] in t and r["alt"] in t for r, t in zip(rows, tags) if r["alt"]]
        default = " (default)" if (k, least) == (2, RUNNER_UP_TAG) else ""
        print(
            f"{name + default:36s}{np.mean(held):7.3f}{np.mean(either):8.3f}{np.mean(both):7.3f}"
            f"{np.mean([len(t) for t in tags]):7.2f}"
        )


if __name__ == "__main__":
    main()
