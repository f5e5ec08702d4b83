"""Label-error benchmark: flip a few hand labels at random and count how many of them
``tagger evaluate`` lists as possible label errors, and how many correct labels it lists.

Usage:
    python tests/benchmarks/bench_label_errors.py [--trials 50] [--flips 2 | --share 0.02] [--seed 0]
                                                  [--among MODERN.jsonl [MORE.jsonl ...]]

Each trial takes the repository's labels (``labels/`` and ``seeds/``), gives ``--flips`` of
them (with ``--among``, of the labelled abstracts of that file: the hand-labelled abstracts of
2022-24), chosen at random, another area chosen at random (with ``--among``, neither the
reader's area nor the second area ``alt`` the reader gave: a label that is wrong, not one
between two areas); ``--share`` flips that share of all the labels instead. It cross-validates the shipped recipe
with the shipped model's settings (as ``tagger evaluate`` does while the labels changed
little) and compares the listed suspects with the flipped labels.
Printed, for a few thresholds of the label's cross-validated probability (``tagger evaluate``'s
among them): the share of flipped labels listed (recall), the share of listed labels that were
flipped (precision), and the false listings per trial (mean and median).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
import warnings
from pathlib import Path

import numpy as np

from tagger import load_model
from tagger.evaluate import LABEL_ERROR_PROBABILITY, possible_label_errors
from tagger.labels import load_training_set
from tagger.reading import abstract_id
from tagger.training import cross_validate

ROOT = Path(__file__).resolve().parents[2]
THRESHOLDS = (0.005, 0.01, 0.02, LABEL_ERROR_PROBABILITY, 0.05, 0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--flips", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--share", type=float, help="flip this share of all the labels (instead of --flips)")
    parser.add_argument(
        "--among",
        type=Path,
        nargs="+",
        help="flip labels of these files' abstracts only, away from their alt",
    )
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    training_set = load_training_set(ROOT / "labels", [ROOT / "seeds"])
    settings = load_model().card.settings
    candidates = np.arange(len(training_set.labels))
    alt: dict[str, str] = {}
    if args.among:
        from bench_modern import load as load_labelled

        rows = [row for path in args.among for row in load_labelled(path)]
        alt = {abstract_id(row["abstract"]): row["alt"] for row in rows if row.get("alt")}
        wanted = {abstract_id(row["abstract"]) for row in rows}
        candidates = np.array([i for i, digest in enumerate(training_set.ids) if digest in wanted])
    flips = round(args.share * len(training_set.labels)) if args.share else args.flips
    rng = np.random.default_rng(args.seed)
    found = {t: [] for t in THRESHOLDS}
    false = {t: [] for t in THRESHOLDS}
    listed_all = {t: 0 for t in THRESHOLDS}
    start = time.perf_counter()
    for _ in range(args.trials):
        flipped = rng.choice(candidates, flips, replace=False)
        labels = list(training_set.labels)
        for i in flipped:
            keep = {labels[i], alt.get(training_set.ids[i])}
            labels[i] = str(rng.choice([s for s in training_set.slugs if s not in keep]))
        noisy = dataclasses.replace(training_set, labels=tuple(labels))
        validation = cross_validate(noisy, settings)
        truly_flipped = {noisy.ids[i] for i in flipped}
        for threshold in THRESHOLDS:
            listed = {
                s["abstract_id"]
                for s in possible_label_errors(
                    noisy.ids, noisy.texts, noisy.labels, validation.probabilities, noisy.slugs, threshold
                )
            }
            found[threshold].append(len(listed & truly_flipped) / flips)
            false[threshold].append(len(listed - truly_flipped))
            listed_all[threshold] += len(listed)
    seconds = time.perf_counter() - start
    print(
        f"{args.trials} trials, {flips} of {len(candidates)} labels flipped each "
        f"(of {len(training_set.labels)}), {seconds:.0f} s"
    )
    print(f"{'listed below':>14s}{'recall':>9s}{'precision':>11s}{'false/trial':>13s}{'median false':>14s}")
    for threshold in THRESHOLDS:
        mark = "  (tagger evaluate)" if threshold == LABEL_ERROR_PROBABILITY else ""
        true_listed = sum(found[threshold]) * flips
        precision = true_listed / listed_all[threshold] if listed_all[threshold] else float("nan")
        print(
            f"{threshold:14.3f}{np.mean(found[threshold]):9.2f}{precision:11.2f}{np.mean(false[threshold]):13.2f}"
            f"{np.median(false[threshold]):14.1f}{mark}"
        )


if __name__ == "__main__":
    main()
