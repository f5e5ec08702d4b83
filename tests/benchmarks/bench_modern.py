"""Modern benchmark: how a model tags hand-labelled abstracts of 2022-24 it never saw.

Usage:
    python tests/benchmarks/bench_modern.py MODERN.jsonl [MORE.jsonl ...] [--model DIR ...] [--train-years 2022,2023 | --by-year]
                                            [--settings abstract_weight=0.3,C=3 ...] [--reliability]

MODERN.jsonl is ``../shared/bench/modern-labelled-dev.jsonl``: abstracts labelled by reading in
the project's areas (``area``, a second area in ``alt`` where a paper sits between two, ``none``
where it fits no area). For the shipped model (or each ``--model DIR``), on the abstracts with
an area: strict accuracy (the reader's area) and lenient (area or ``alt``) side by side,
macro-F1 (strict), ECE (strict; the 10 equal-width bins of tagger.evaluate), mean confidence, and per area: count,
recall, precision; then the share of ``none`` abstracts flagged ``needs_review``. A model
trained on these abstracts must not be measured here (it saw them).

With ``--train-years``, the abstracts of those years (with an area) become hand labels beside
the repository's (``labels/`` and ``seeds/``), the shipped recipe is trained on them (settings
search and calibration included), and every model is measured on the other years only. With
``--by-year``, each year in turn is held out and tagged by the recipe trained with the other
years' labels: the pooled predictions of every abstract by a model that did not see it
(nested in years: the settings search and calibration run inside each training), against the
shipped model on the same abstracts. Each ``--settings`` adds the same held-out run with those
training settings fixed (no search), to see what the search would have to find; with
``--reliability``, each model's reliability table (equal-width confidence bins: count, mean
confidence, accuracy) shows where its ECE comes from; ``--folds K --repeats R`` measures each ``--settings`` over R
draws of K stratified random folds instead (mean and range of each figure); ``--isotonic`` adds, for each ``--settings``, the same models
with their confidence mapped by an isotonic regression fitted to their own training's
out-of-fold predictions (an experiment toward a calibration of another form).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from tagger import load_model
from tagger.evaluate import calibration_bins, expected_calibration_error
from tagger.reading import document

sys.path.insert(0, str(Path(__file__).resolve().parent))
from devdata import parse_settings


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def measure(model, rows: list[dict]) -> dict:
    """The figures of ``model`` on ``rows`` (a model, or a function from rows to predictions)."""
    predict = (
        model
        if callable(model)
        else lambda some: model.predict([document(r["abstract"], r["title"]) for r in some])
    )
    labelled = [r for r in rows if r["area"] != "none"]
    predictions = predict(labelled)
    areas = np.array([p.area for p in predictions])
    truth = np.array([r["area"] for r in labelled])
    alt = np.array([r.get("alt") or "" for r in labelled])
    confidence = np.array([p.confidence for p in predictions])
    unflagged = ~np.array([p.needs_review for p in predictions], dtype=bool)
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
    none_predictions = predict(none) if none else []
    flagged = [p.needs_review or p.area == "other" for p in none_predictions]
    # the pile as a user has it, the abstracts that fit no area among the rest (never right)
    pile_unflagged = np.concatenate([unflagged, ~np.array(flagged, dtype=bool)])
    pile_right = np.concatenate([strict, np.zeros(len(none), dtype=bool)])
    return {
        "n": len(labelled),
        "strict": float(strict.mean()),
        "lenient": float((strict | (areas == alt)).mean()),
        "macro_f1": float(np.mean(f1)),
        "ece": float(expected_calibration_error(confidence, strict)),
        "mean_confidence": float(confidence.mean()),
        "unflagged": float(unflagged.mean()),
        "unflagged_strict": float(strict[unflagged].mean()) if unflagged.any() else float("nan"),
        "none_flagged": float(np.mean(flagged)) if flagged else float("nan"),
        "none": len(none),
        "pile_unflagged": float(pile_unflagged.mean()),
        "pile_unflagged_right": float(pile_right[pile_unflagged].mean())
        if pile_unflagged.any()
        else float("nan"),
        "per_area": per_area,
        "bins": calibration_bins(confidence, strict),
    }


def plan_value(name: str, value: str):
    """A Plan field's value as given on the command line: a number, or for ``grid`` and
    ``weight_grid`` a setting's values separated by slashes (``weight_grid=abstract_weight:0.03/0.1``,
    ``grid=C:1/10/30;ngram_max:1/2``)."""
    if name in ("grid", "weight_grid"):
        return tuple(
            (setting, tuple(float(v) if "." in v else int(v) for v in values.split("/")))
            for setting, values in (part.split(":") for part in value.split(";"))
        )
    return float(value) if "." in value else int(value)


# An experiment: the abstracts a reader found no area for, as an area of their own (with
# --outside: its description the topics such abstracts are about), tagged "other".
OUTSIDE = None
# Whether the ``none`` abstracts among the training rows teach the review flag, as a project's
# ``none`` labels do (tagger.training.reviewed_with_no_area); otherwise left out of training.
NONE_TEACHES_REVIEW = False


def outside_area():
    from tagger.labels import Area

    return Area(
        "other",
        "Outside the areas",
        "Research that is not about machine learning methods: human-computer interaction studies and "
        "user surveys, signal processing and audio coding, time series forecasting, graph theory and "
        "graph mining, software engineering and testing, recommender systems, tabular data and databases, "
        "logic and knowledge representation, information retrieval and search, networking and hardware.",
        ("user study", "survey", "signal processing", "software engineering", "database", "logic"),
    )


def repository_labels_without(rows: list[dict]):
    """The repository's training set without the labelled abstracts of MODERN.jsonl (the
    repository keeps those with an area as hand labels): what a split adds back its part of."""
    from tagger.labels import load_training_set
    from tagger.reading import abstract_id

    root = Path(__file__).resolve().parents[2]
    base = load_training_set(root / "labels", [root / "seeds"])
    modern = {abstract_id(r["abstract"]) for r in rows}
    kept = base.subset([i for i, digest in enumerate(base.ids) if digest not in modern])
    return dataclasses.replace(kept, areas=(*kept.areas, OUTSIDE)) if OUTSIDE is not None else kept


def seen_by(model, rows: list[dict]) -> set:
    """The ids of ``rows`` whose text ``model`` was trained on (by the text ids on its card)."""
    from tagger.reading import abstract_id

    trained_on = model.card.training_data.labels or {}
    return {r["id"] for r in rows if abstract_id(r["abstract"]) in trained_on}


def trained_with(
    rows: list[dict], settings=None, everything: list[dict] | None = None, plan=None, weight=None, pile=None
):
    """The shipped recipe trained on the repository's labels without ``everything`` (the whole
    labelled file; default ``rows``) and with ``rows`` as hand labels (``weight``: a row's
    weight as a label, the repository's weighing 1 each; default: 1 each; ``pile``: unlabelled
    texts to self-train on)."""
    import time

    from tagger.reading import abstract_id
    from tagger.training import Run, train

    base = repository_labels_without(everything or rows)
    labelled = [r for r in rows if r["area"] != "none" or OUTSIDE is not None]
    training_set = dataclasses.replace(
        base,
        texts=base.texts + tuple(document(r["abstract"], r["title"]) for r in labelled),
        labels=base.labels + tuple(OUTSIDE.slug if r["area"] == "none" else r["area"] for r in labelled),
        ids=base.ids + tuple(abstract_id(r["abstract"]) for r in labelled),
        weights=(1.0,) * len(base.labels) + tuple(weight(r) for r in labelled) if weight else (),
        no_area_texts=base.no_area_texts
        + tuple(
            document(r["abstract"], r["title"])
            for r in rows
            if NONE_TEACHES_REVIEW and OUTSIDE is None and r["area"] == "none"
        ),
    )
    started = time.perf_counter()
    model = train(training_set, settings, pile, Run(plan=plan) if plan else None)
    selection = model.card.settings_selection
    print(
        f"trained on {len(training_set.labels)} labels in {time.perf_counter() - started:.0f} s: "
        f"abstract_weight {model.card.settings.abstract_weight}, C {model.card.settings.C}, "
        f"temperature {model.card.calibration.temperature:.3f}, "
        f"evidence scale {model.card.calibration.evidence_scale:.3f}"
        + (f" ({selection.criterion})" if selection else "")
    )
    return model, training_set


def held_out_by_year(rows: list[dict], settings=None, isotonic: bool = False, plan=None):
    """:func:`held_out` by year."""
    return held_out(rows, {r["id"]: r["year"] for r in rows}, settings, isotonic, plan)


def held_out(
    rows: list[dict],
    group: dict,
    settings=None,
    isotonic: bool = False,
    plan=None,
    rows_beside: list[dict] = (),
    everything: list[dict] | None = None,
    weight=None,
    pile=None,
):
    """A function from rows to predictions, each by the recipe trained without its group
    (``group``: a row's id -> its group, a year or a fold; ``rows_beside``: labelled rows of
    another source in every training; ``everything``: the rows kept out of the repository's
    labels, default ``rows``); with
    ``isotonic``, each confidence mapped by an isotonic regression of correctness on confidence
    fitted to the out-of-fold predictions of that training's own labels (an experiment: the
    model's other probabilities are left as they are)."""
    from sklearn.isotonic import IsotonicRegression

    from tagger.training import cross_validate

    by_group = {}
    for key in sorted(set(group.values())):
        kept = [r for r in rows if group[r["id"]] != key] + list(rows_beside)
        model, training_set = trained_with(kept, settings, everything or rows, plan, weight, pile)
        mapping = None
        if isotonic:
            folds = cross_validate(training_set, model.card.settings)
            mapping = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip")
            mapping.fit(folds.confidence, folds.correct)
        by_group[key] = (model, mapping)

    def predict(some: list[dict]) -> list:
        predictions = {}
        for key, (model, mapping) in by_group.items():
            mine = [i for i, r in enumerate(some) if group[r["id"]] == key]
            found = (
                model.predict([document(some[i]["abstract"], some[i]["title"]) for i in mine]) if mine else []
            )
            if mapping is not None and found:
                mapped = mapping.predict([p.confidence for p in found])
                found = [dataclasses.replace(p, confidence=float(c)) for p, c in zip(found, mapped)]
            predictions.update(zip(mine, found))
        return [predictions[i] for i in range(len(some))]

    return predict


def plain_by_year(rows: list[dict]):
    """A function from rows to predictions, each by the careful plain scikit-learn baseline
    (word pairs, min_df 2, English stop words, C 30, balanced classes; no descriptions) trained
    on the repository's labels and the other years' (the baseline the recipe must beat; it has
    no review threshold: nothing is flagged)."""
    from types import SimpleNamespace

    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    base = repository_labels_without(rows)
    by_year = {}
    for year in sorted({r["year"] for r in rows}):
        labelled = [r for r in rows if r["year"] != year and r["area"] != "none"]
        texts = list(base.texts) + [document(r["abstract"], r["title"]) for r in labelled]
        labels = list(base.labels) + [r["area"] for r in labelled]
        pipeline = make_pipeline(
            TfidfVectorizer(ngram_range=(1, 2), min_df=2, stop_words="english", sublinear_tf=True),
            LogisticRegression(C=30, class_weight="balanced", max_iter=5000),
        )
        by_year[year] = pipeline.fit(texts, labels)

    def predict(some: list[dict]) -> list:
        found = []
        for r in some:
            pipeline = by_year[r["year"]]
            p = pipeline.predict_proba([document(r["abstract"], r["title"])])[0]
            found.append(
                SimpleNamespace(
                    area=pipeline.classes_[p.argmax()], confidence=float(p.max()), needs_review=False
                )
            )
        return found

    return predict


def repeated_folds(rows: list[dict], options) -> None:
    """Each --settings (and --isotonic) over --repeats draws of --folds stratified folds: the
    mean and the range of each figure, to tell a difference from the noise of one split."""
    from sklearn.model_selection import StratifiedKFold

    for settings, text in [(parse_settings(t), t) for t in options.settings] or [(None, "searched")]:
        for isotonic in [False, True] if options.isotonic else [False]:
            figures = []
            for seed in range(options.repeats):
                folds = StratifiedKFold(options.folds, shuffle=True, random_state=seed)
                group = {}
                for k, (_, test) in enumerate(folds.split(rows, [r["area"] for r in rows])):
                    group.update({rows[i]["id"]: k for i in test})
                figures.append(measure(held_out(rows, group, settings, isotonic), rows))
            summary = ", ".join(
                f"{name} {np.mean([f[name] for f in figures]):.3f} "
                f"[{min(f[name] for f in figures):.3f}-{max(f[name] for f in figures):.3f}]"
                for name in ("strict", "lenient", "macro_f1", "ece")
            )
            label = f"{text}{', isotonic' if isotonic else ''}"
            print(f"{label}: {options.repeats} x {options.folds} folds: {summary}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("modern", type=Path, nargs="+", help="one labelled file or more, measured together")
    parser.add_argument("--model", action="append", default=[])
    parser.add_argument("--train-years", help="comma-separated years whose abstracts become labels")
    parser.add_argument("--by-year", action="store_true", help="hold out each year in turn (see above)")
    parser.add_argument(
        "--plain", action="store_true", help="also the careful plain scikit-learn baseline, held out by year"
    )
    parser.add_argument(
        "--settings", action="append", default=[], help="NAME=VALUE,... fixed, held out by year"
    )
    parser.add_argument(
        "--plan",
        action="append",
        default=[],
        metavar="NAME=VALUE,...",
        help="also the recipe's search under another plan (tagger.plan.Plan fields), held out by year",
    )
    parser.add_argument("--reliability", action="store_true", help="print each model's reliability table")
    parser.add_argument(
        "--isotonic", action="store_true", help="with --settings: also each with an isotonic confidence map"
    )
    parser.add_argument(
        "--folds", type=int, help="with --settings: K random stratified folds, --repeats times"
    )
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    rows = [row for path in options.modern for row in load(path)]
    if len({r["id"] for r in rows}) != len(rows):
        raise SystemExit("two rows share an id: give each file once")
    models = [(name or "shipped", load_model(name)) for name in options.model or [None]]
    if options.by_year:
        models.append(("+ labels of the other years", held_out_by_year(rows)))
    for text in options.plan:
        from tagger.plan import Plan

        values = {
            name: plan_value(name, value) for name, value in (item.split("=") for item in text.split(","))
        }
        models.append(
            (f"+ labels of the other years, plan {text}", held_out_by_year(rows, plan=Plan(**values)))
        )
    if options.plain:
        models.append(("plain baseline, labels of the other years", plain_by_year(rows)))
    for text in options.settings:
        settings = parse_settings(text)
        models.append((f"+ labels of the other years, {text}", held_out_by_year(rows, settings)))
        if options.isotonic:
            models.append(("  the same, isotonic map", held_out_by_year(rows, settings, isotonic=True)))
    if options.folds:
        repeated_folds(rows, options)
        return
    if options.train_years:
        years = {int(y) for y in options.train_years.split(",")}
        models.append(
            (
                f"+ labels of {sorted(years)}",
                trained_with([r for r in rows if r["year"] in years], None, rows)[0],
            )
        )
        rows = [r for r in rows if r["year"] not in years]
    print(f"{len(rows)} abstracts measured: {dict(Counter(r['area'] for r in rows).most_common())}")
    for name, model in models:
        measured = rows
        if not callable(model) and (seen := seen_by(model, rows)):
            measured = [r for r in rows if r["id"] not in seen]
            print(
                f"\n{name}: trained on {len(seen)} of these abstracts; measured on the other {len(measured)}"
            )
            if not any(r["area"] != "none" for r in measured):
                print("  (none with an area: measure the recipe with --by-year or --folds instead)")
                flagged = [
                    p.needs_review
                    for p in model.predict([document(r["abstract"], r["title"]) for r in measured])
                ]
                print(f"  'none' flagged {np.mean(flagged):.2f} of {len(flagged)}")
                continue
        figures = measure(model, measured)
        print(
            f"\n{name}: n {figures['n']}, accuracy strict {figures['strict']:.3f}, "
            f"with the second area {figures['lenient']:.3f}, macro-F1 {figures['macro_f1']:.3f}, "
            f"ECE {figures['ece']:.3f}, mean confidence {figures['mean_confidence']:.3f}; "
            f"not flagged {figures['unflagged']:.3f}, right {figures['unflagged_strict']:.3f} strict; "
            f"'none' flagged {figures['none_flagged']:.2f} of {figures['none']}"
        )
        if options.reliability:
            for b in figures["bins"]:
                print(
                    f"  confidence {b['low']:.1f}-{b['high']:.1f}: {b['count']:4d}, mean {b['confidence']:.2f}, accuracy {b['accuracy']:.2f}"
                )
        print(f"  {'area':<14}{'n':>4}{'recall':>8}{'precision':>10}")
        for area, a in figures["per_area"].items():
            print(f"  {area:<14}{a['n']:>4}{a['recall']:>8.2f}{a['precision']:>10.2f}")


if __name__ == "__main__":
    main()
