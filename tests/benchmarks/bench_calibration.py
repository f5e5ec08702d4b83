"""Calibration benchmark: which way of turning scores into probabilities stays honest on real
abstracts nobody labelled, when it is fitted on the labelled seeds alone.

Usage:
    python tests/benchmarks/bench_calibration.py DEV.jsonl [--mapping FILE]

Each form is fitted (least log loss) on the leave-one-out scores of the labelled seeds (the
shipped recipe, default settings) and applied to the shipped recipe's scores of the
development abstracts (areas from our mapping); printed: its fitted parameters, the seed
leave-one-out ECE, and accuracy and ECE on the development abstracts, with the ECE a
temperature fitted on the development labels themselves would reach (the best any
temperature can do), and the mean confidence on the standard library's docstrings.

* ``temperature``: ``softmax(s / T)``;
* ``evidence``: the shipped form, ``softmax(g * s / T)`` with ``g = e / (e + a)`` (see
  ``tagger.calibration``; fitted here on whole abstracts only, without the cut-short probes);
* ``moderated``: ``softmax(g * s / sqrt(1 + c * v) / T)``, where ``v = sum tfidf**2 * w**2``
  per area is the variance of the score if each term could be missing (MacKay's moderated
  output): a candidate for a later version, measured here.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from devdata import MAPPING, document, load, load_mapping
from scipy.optimize import minimize

from tagger.calibration import softmax
from tagger.evaluate import expected_calibration_error
from tagger.labels import load_training_set
from tagger.settings import TrainingSettings
from tagger.training import linear_weights

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from conftest import evidence, fit_pipeline  # noqa: E402
from prose import stdlib_docstrings  # noqa: E402


def scores(pipeline, slugs, texts):
    """Linear scores, their term-dropout variance and the evidence of ``texts``."""
    vectorizer, classifier = pipeline.named_steps["tfidf"], pipeline.named_steps["classifier"]
    coef, _ = linear_weights(classifier, slugs)
    matrix = vectorizer.transform(texts)
    squared = matrix.copy()
    squared.data **= 2
    known = evidence(texts, vectorizer.vocabulary_)
    return np.asarray(matrix @ coef.T), np.asarray(squared @ (coef**2).T), known


def probabilities(form, params, linear, variance, known):
    t, a, c = (*np.exp(params), 0.0, 0.0)[:3]  # the parameters a form does not fit are 0
    shrink = known / (known + a) if a > 0 else np.ones(len(known))
    return softmax(shrink[:, None] * linear / np.sqrt(1 + c * variance) / t)


def fit(form, linear, variance, known, truth):
    def loss(params):
        p = probabilities(form, params, linear, variance, known)
        return -np.log(np.clip(p[np.arange(len(truth)), truth], 1e-12, None)).mean()

    starts = {"temperature": [[np.log(0.05)]], "evidence": [[np.log(0.05), 0.0]]}
    starts["moderated"] = [[np.log(0.05), 0.0, log_c] for log_c in (-2.0, 3.0, 7.0)]
    return min((minimize(loss, s, method="Nelder-Mead") for s in starts[form]), key=lambda r: r.fun).x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("abstracts", type=Path)
    parser.add_argument("--mapping", type=Path, default=MAPPING)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    seeds = load_training_set(ROOT / "labels", [ROOT / "seeds"])
    slugs, truth = seeds.slugs, seeds.label_indices()
    loo = [[], [], []]
    for i in range(len(seeds.labels)):
        pipeline = fit_pipeline(
            seeds.subset([j for j in range(len(seeds.labels)) if j != i]), TrainingSettings()
        )
        for part, values in zip(loo, scores(pipeline, slugs, [seeds.texts[i]])):
            part.append(values[0])
    loo = [np.array(part) for part in loo]
    rows = load(args.abstracts, load_mapping(args.mapping))
    full = fit_pipeline(seeds, TrainingSettings())
    dev = scores(full, slugs, [document(r) for r in rows])
    dev_truth = np.array([slugs.index(r["area"]) for r in rows])
    prose = scores(full, slugs, stdlib_docstrings())
    best_t = fit("temperature", dev[0], dev[1], dev[2], dev_truth)
    oracle = probabilities("temperature", best_t, *dev)
    oracle_ece = expected_calibration_error(oracle.max(axis=1), oracle.argmax(axis=1) == dev_truth)
    print(f"{len(rows)} development abstracts; the best temperature on them reaches ECE {oracle_ece:.3f}")
    print(
        f"{'form':12s}{'parameters (T, a, c)':>28s}{'seed ECE':>10s}{'dev acc':>9s}{'dev ECE':>9s}{'prose':>8s}"
    )
    for form in ("temperature", "evidence", "moderated"):
        params = fit(form, *loo, truth)
        seed_p = probabilities(form, params, *loo)
        dev_p = probabilities(form, params, *dev)
        prose_p = probabilities(form, params, *prose)
        shown = ", ".join(f"{v:.3g}" for v in np.exp(params))
        print(
            f"{form:12s}{shown:>28s}"
            f"{expected_calibration_error(seed_p.max(axis=1), seed_p.argmax(axis=1) == truth):10.3f}"
            f"{np.mean(dev_p.argmax(axis=1) == dev_truth):9.3f}"
            f"{expected_calibration_error(dev_p.max(axis=1), dev_p.argmax(axis=1) == dev_truth):9.3f}"
            f"{prose_p.max(axis=1).mean():8.3f}"
        )


if __name__ == "__main__":
    main()
