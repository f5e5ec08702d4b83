"""Calibration folds grouped by source: does confidence fitted on held-out years or venues hold
better on older abstracts than confidence fitted on stratified folds?

Usage:
    python tests/benchmarks/bench_grouped_calibration.py PROJECT CONFERENCE.jsonl LABELLED.jsonl ...
        [--by year|venue] [--settings abstract_weight=0.03,ngram_max=2 ...]

PROJECT is a project whose labels include those of the LABELLED files (made with
``import_labels.py``); each labelled abstract's group is its year or venue there (the seeds of
NeurIPS 2026 are one group). For each ``--settings``, one fit on every label, calibrated twice:
on stratified-fold predictions (as training does) and on predictions of folds that each hold
out one group; printed: the temperature, the out-of-fold accuracy and ECE, and on
CONFERENCE.jsonl (``../shared/bench/conference-abstracts-dev.jsonl``, areas by our mapping)
the accuracy, ECE, share flagged and accuracy of the rest.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from devdata import MAPPING, load, load_mapping, parse_settings
from devdata import document as conference_document

from tagger import training
from tagger.calibration import PROBE_WORDS, Scores
from tagger.evaluate import expected_calibration_error
from tagger.fitting import fit
from tagger.labels import load_training_set
from tagger.plan import PLAN
from tagger.reading import abstract_id


def out_of_fold(training_set, settings, splits) -> training.OutOfFold:
    """The out-of-fold scores of ``settings`` over ``splits`` (train index, test index)."""
    n = len(training_set.labels)
    folds = [
        training._fold_scores(training_set, [settings], [[0]], tr, te, PLAN.probes_max) for tr, te in splits
    ]
    held_out = Scores.stack([fold[0][0] for fold in folds])
    order = np.argsort(np.concatenate([te for _, te in splits]), kind="stable")
    probes = Scores.stack([fold[0][1] for fold in folds])
    probed = np.concatenate([training._probed(te, n, PLAN.probes_max) for _, te in splits])
    return training.OutOfFold("grouped", held_out.take(order), probes, np.repeat(probed, len(PROBE_WORDS)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("conference", type=Path)
    parser.add_argument("labelled", type=Path, nargs="+")
    parser.add_argument("--by", choices=("year", "venue"), default="year")
    parser.add_argument("--settings", action="append", default=[])
    options = parser.parse_args()
    warnings.filterwarnings("ignore")
    training_set = load_training_set(options.project / "labels", [options.project / "seeds"])
    group_of = {}
    for path in options.labelled:
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            group_of[abstract_id(row["abstract"])] = str(row[options.by])
    groups = np.array([group_of.get(i, "seeds") for i in training_set.ids])
    print({str(g): int((groups == g).sum()) for g in np.unique(groups)})
    rows = load(options.conference, load_mapping(MAPPING))
    docs, truth = [conference_document(r) for r in rows], np.array([r["area"] for r in rows])
    for text in options.settings or ["abstract_weight=0.03"]:
        settings = parse_settings(text)
        fitted = fit(training_set, settings)
        features = len(fitted.vocabulary.terms)
        grouped = [(np.flatnonzero(groups != g), np.flatnonzero(groups == g)) for g in np.unique(groups)]
        for name, splits in (("stratified", training.folds(training_set)[1]), (f"by {options.by}", grouped)):
            started = time.perf_counter()
            validation = training.calibrate(
                training_set, settings, out_of_fold(training_set, settings, splits)
            )
            model = training.export(fitted, training.model_card(training_set, validation, features, None))
            predictions = model.predict(docs)
            confidence = np.array([p.confidence for p in predictions])
            right = np.array([p.area for p in predictions]) == truth
            flagged = np.array([p.needs_review for p in predictions])
            print(
                f"{text} {name:>10}: temperature {validation.calibration.temperature:.3f}, out of fold "
                f"{validation.evaluation.accuracy:.3f} ECE {validation.evaluation.ece:.3f} | conference "
                f"{right.mean():.3f} ECE {expected_calibration_error(confidence, right):.3f}, flagged "
                f"{flagged.mean():.2f}, the rest right {right[~flagged].mean():.3f} "
                f"({time.perf_counter() - started:.0f} s)",
                flush=True,
            )


if __name__ == "__main__":
    main()
