"""Calibration forms compared on abstracts the model did not see.

Usage:
    python tests/benchmarks/bench_calibration_forms.py MODERN.jsonl [--settings abstract_weight=0.2,C=3]
                                                       [--folds 5 --repeats 3] [--cache FILE]

For each outer split of MODERN.jsonl's abstracts with an area (each year held out in turn, then
``--repeats`` draws of ``--folds`` stratified random folds), the recipe is trained with fixed
settings on the repository's labels plus the other abstracts, and the scores it gives the
held-out abstracts are kept, with the out-of-fold scores of its own training (what a
calibration may be fitted on). Each calibration form is then fitted on the inner out-of-fold
scores alone and measured on the held-out abstracts: strict accuracy, ECE, mean confidence,
log loss, the share of ``none`` abstracts flagged by the review threshold the form gives.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

import numpy as np
from bench_modern import load, parse_settings, repository_labels_without

from tagger.evaluate import expected_calibration_error, review_threshold
from tagger.reading import abstract_id, document


def outer_splits(rows: list[dict], folds: int, repeats: int) -> list[tuple[str, set]]:
    from sklearn.model_selection import StratifiedKFold

    splits = [
        (f"year {y}", {r["id"] for r in rows if r["year"] == y}) for y in sorted({r["year"] for r in rows})
    ]
    for seed in range(repeats):
        for k, (_, test) in enumerate(
            StratifiedKFold(folds, shuffle=True, random_state=seed).split(rows, [r["area"] for r in rows])
        ):
            splits.append((f"draw {seed} fold {k}", {rows[i]["id"] for i in test}))
    return splits


def scores_of(rows: list[dict], held: set, settings) -> dict:
    """Train on the repository's labels + the rows not in ``held``; the inner out-of-fold
    scores and the held-out rows' scores."""
    import dataclasses

    from conftest import evidence

    from tagger.calibration import Scores

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/
    from conftest import fit_pipeline

    from tagger.training import linear_weights, out_of_fold_scores

    base = repository_labels_without(rows)
    taken = [r for r in rows if r["id"] not in held and r["area"] != "none"]
    training_set = dataclasses.replace(
        base,
        texts=base.texts + tuple(document(r["abstract"], r["title"]) for r in taken),
        labels=base.labels + tuple(r["area"] for r in taken),
        ids=base.ids + tuple(abstract_id(r["abstract"]) for r in taken),
    )
    [oof] = out_of_fold_scores(training_set, [settings])
    pipeline = fit_pipeline(training_set, settings)
    vectorizer, classifier = pipeline.named_steps["tfidf"], pipeline.named_steps["classifier"]
    coef, intercept = linear_weights(classifier, training_set.slugs)
    test = [r for r in rows if r["id"] in held]
    texts = [document(r["abstract"], r["title"]) for r in test]
    matrix = vectorizer.transform(texts)
    held_scores = Scores(
        np.asarray(matrix @ coef.T),
        np.tile(intercept, (len(texts), 1)),
        evidence(texts, vectorizer.vocabulary_),
    )
    return {
        "slugs": training_set.slugs,
        "oof": oof,
        "truth": training_set.label_indices(),
        "seed_rows": np.arange(len(training_set.labels)) < len(base.labels),
        "held": held_scores,
        "held_area": [r["area"] for r in test],
        "held_alt": [r.get("alt") or "" for r in test],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("modern", type=Path)
    parser.add_argument("--settings", default="abstract_weight=0.2,C=3")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cache", type=Path, help="keep (or reuse) the trained splits' scores here")
    options = parser.parse_args()
    rows = load(options.modern)
    if options.cache and options.cache.exists():
        runs = pickle.loads(options.cache.read_bytes())
    else:
        settings = parse_settings(options.settings)
        runs = [
            (name, scores_of(rows, held, settings))
            for name, held in outer_splits(rows, options.folds, options.repeats)
        ]
        if options.cache:
            options.cache.write_bytes(pickle.dumps(runs))
    report(runs)


FORMS = {}


def form(name):
    def register(fit):
        FORMS[name] = fit
        return fit

    return register


@form("temperature + evidence (shipped)")
def _shipped(run):
    from tagger.calibration import calibrated, fit_calibration

    oof, truth = run["oof"], run["truth"]
    t, s = fit_calibration(oof.scores, truth, oof.probes, truth[oof.probe_rows])
    return lambda scores: calibrated(scores, t, s)


def report(runs) -> None:
    from tagger.calibration import log_loss

    for name, fit in FORMS.items():
        by_kind = {"year": [], "draw": []}
        for split, run in runs:
            apply = fit(run)
            slugs = list(run["slugs"])
            area, alt = np.array(run["held_area"]), np.array(run["held_alt"])
            labelled = area != "none"
            p = apply(run["held"])
            inner = apply(run["oof"].scores)
            inner_correct = inner.argmax(1) == run["truth"]
            threshold = review_threshold(inner.max(1), inner_correct, 0.9)
            predicted = np.array(slugs)[p.argmax(1)]
            conf = p.max(1)
            correct = (predicted == area)[labelled]
            truth = np.array([slugs.index(a) for a in area[labelled]])
            by_kind["year" if split.startswith("year") else "draw"].append(
                {
                    "n": int(labelled.sum()),
                    "strict": correct.mean(),
                    "lenient": ((predicted == area) | (predicted == alt))[labelled].mean(),
                    "ece": expected_calibration_error(conf[labelled], correct),
                    "conf": conf[labelled].mean(),
                    "log_loss": log_loss(p[labelled], truth),
                    "none_flagged": (conf[~labelled] < threshold).mean() if (~labelled).any() else np.nan,
                    "_conf": conf[labelled],
                    "_correct": correct,
                    "_none": (conf[~labelled] < threshold),
                }
            )
        print(f"\n{name}")
        for kind, figures in by_kind.items():
            if not figures:
                continue
            if kind == "year":  # pooled over the years: each abstract once
                conf = np.concatenate([f["_conf"] for f in figures])
                correct = np.concatenate([f["_correct"] for f in figures])
                none = np.concatenate([f["_none"] for f in figures])
                print(
                    f"  held out by year (pooled): strict {correct.mean():.3f}, ECE {expected_calibration_error(conf, correct):.3f}, "
                    f"mean conf {conf.mean():.3f}, none flagged {none.mean():.2f}"
                )
            else:
                draws = {}
                for f, (split, _) in zip(figures, [r for r in runs if r[0].startswith("draw")]):
                    draws.setdefault(split.split(" fold")[0], []).append(f)
                eces = []
                for parts in draws.values():
                    conf = np.concatenate([f["_conf"] for f in parts])
                    correct = np.concatenate([f["_correct"] for f in parts])
                    eces.append(expected_calibration_error(conf, correct))
                print(
                    f"  random folds, {len(draws)} draws: strict {np.mean([f['strict'] for f in figures]):.3f}, "
                    f"ECE (pooled per draw) {np.mean(eces):.3f} [{min(eces):.3f}-{max(eces):.3f}], "
                    f"mean conf {np.mean([f['conf'] for f in figures]):.3f}, "
                    f"log loss {np.mean([f['log_loss'] for f in figures]):.3f}, "
                    f"none flagged {np.nanmean([f['none_flagged'] for f in figures]):.2f}"
                )


def _top_map(run, base, mapping_fit):
    """``base`` form, then its top confidence mapped (others rescaled to fill the rest)."""
    apply = base(run)
    inner = apply(run["oof"].scores)
    mapping = mapping_fit(inner.max(1), inner.argmax(1) == run["truth"])

    def mapped(scores):
        p = apply(scores)
        top = p.max(1)
        new = np.clip(mapping(top), 1e-6, 1 - 1e-6)
        rest = (1 - new) / np.clip(1 - top, 1e-12, None)
        out = p * rest[:, None]
        out[np.arange(len(p)), p.argmax(1)] = new
        return out

    return mapped


def _isotonic(conf, correct):
    from sklearn.isotonic import IsotonicRegression

    m = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(conf, correct)
    return m.predict


def _platt(conf, correct):
    from scipy.optimize import minimize

    z = np.log(np.clip(conf, 1e-6, 1 - 1e-6) / np.clip(1 - conf, 1e-6, None))

    def loss(ab):
        q = 1 / (1 + np.exp(-(ab[0] * z + ab[1])))
        q = np.clip(q, 1e-9, 1 - 1e-9)
        return -np.mean(correct * np.log(q) + (1 - correct) * np.log(1 - q))

    a, b = minimize(loss, [1.0, 0.0]).x
    return lambda c: (
        1 / (1 + np.exp(-(a * np.log(np.clip(c, 1e-6, 1 - 1e-6) / np.clip(1 - c, 1e-6, None)) + b)))
    )


form("shipped, then isotonic on the top confidence")(lambda run: _top_map(run, _shipped, _isotonic))
form("shipped, then Platt on the top confidence's logit")(lambda run: _top_map(run, _shipped, _platt))


@form("temperature + evidence + uniform floor")
def _floor(run):
    from scipy.optimize import minimize

    from tagger.calibration import EVIDENCE_SCALE_RANGE, TEMPERATURE_RANGE, Scores, calibrated, log_loss

    oof, truth = run["oof"], run["truth"]
    scores = Scores.stack([oof.scores, oof.probes])
    truth_all = np.concatenate([truth, truth[oof.probe_rows]])
    n, m = len(truth), len(oof.probe_rows)
    weights = np.concatenate([np.ones(n), np.full(m, n / max(m, 1))])
    k = scores.linear.shape[1]

    def probs(point, s):
        p = calibrated(s, np.exp(point[0]), np.exp(point[1]))
        e = 1 / (1 + np.exp(-point[2]))
        return (1 - e) * p + e / k

    result = minimize(
        lambda point: log_loss(probs(point, scores), truth_all, weights),
        [0.0, 0.0, -3.0],
        method="L-BFGS-B",
        bounds=[tuple(np.log(TEMPERATURE_RANGE)), tuple(np.log(EVIDENCE_SCALE_RANGE)), (-12, 3)],
    )
    run.setdefault("floor_params", []).append(result.x)
    return lambda s: probs(result.x, s)


def _top_label(run):
    import tagger.calibration as calibration

    oof, truth = run["oof"], run["truth"]
    t, s = calibration.fit_calibration(oof.scores, truth, oof.probes, truth[oof.probe_rows])
    top = calibration.fit_top_label(calibration.calibrated(oof.scores, t, s), truth, oof.scores.evidence)
    return lambda held: calibration.calibrated(held, t, s, top)


form("temperature + evidence + top-label map (product)")(_top_label)


@form("temperature + evidence, fitted on abstracts only (no probes)")
def _no_probes(run):
    from tagger.calibration import calibrated, fit_temperature

    t = fit_temperature(run["oof"].scores, run["truth"])
    return lambda scores: calibrated(scores, t, 0.0)


if __name__ == "__main__":
    main()
