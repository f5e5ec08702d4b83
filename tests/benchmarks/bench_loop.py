"""Labelling-loop benchmark: a simulated user labels the abstracts ``tagger suggest`` picks,
round after round, against a user who labels abstracts picked at random.

Usage:
    python tests/benchmarks/bench_loop.py DEV.jsonl [--mapping FILE] [--rounds 10] [--per-round 20]
        [--seeds 3] [--unlabelled] [--strategies suggest,margin,random] [--plot loop.png]
    python tests/benchmarks/bench_loop.py --modern MODERN.jsonl [MORE.jsonl ...] [--rounds 5] [--per-round 20] [--seeds 5]
                                          [--settings abstract_weight=0.1,C=30]

With ``--modern`` (``../shared/bench/modern-labelled-dev.jsonl``, hand-labelled abstracts of
2022-24 with an area), the simulated user is one whose pile is that kind of abstract: for each
of ``--seeds`` random stratified splits, a third is held out (never labelled: the test) and the
other two thirds are the pile; starting from the repository's labels without these abstracts
(the 38 seeds), ``--rounds`` x ``--per-round`` labels (the reader's area) are added, chosen by
``suggest`` or at random, retraining after each round as ``tagger train`` does. Printed: the
held-out accuracy (strict, and with the second area) with no labels, after each round of each
strategy, and the median gain over no labels and over random labels. With ``--unlabelled``,
every training also self-trains on the user's whole pile (labelled abstracts are left out of
it), as the labelling loop's ``tagger train --unlabelled papers/`` does.

The pile to label is one venue's abstracts (ICML 2015-16 of ``DEV.jsonl``, those our mapping
gives an area); the test set is another venue's (NeurIPS 2016). Starting from the shipped
labels (``labels/`` and ``seeds/``), each round adds ``--per-round`` labels (the true areas
from the mapping, as a user would answer) chosen by

* ``suggest``: ``tagger.labelling.suggest`` as shipped (uncertainty x typicality, diverse);
* ``margin``: plain margin sampling (the same function with ``density=0, diversity=0, balance=0``);
* ``random``: uniformly at random (``--seeds`` runs, median reported);

then retrains as ``tagger train`` does (``tagger.training.train``: the label weight chosen by
cross-validation, and from 200 labels on the other settings too; with ``--unlabelled`` the
rest of the pile is the unlabelled pile too) and tests on the other venue. Also printed: a model trained on every labelled abstract of the pile (the
ceiling the loop is measured against). With ``--plot`` the learning curves are drawn to a PNG.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
import warnings
from pathlib import Path

import numpy as np
from devdata import MAPPING, document, load, load_mapping

from tagger.labelling import suggest
from tagger.labels import TrainingSet, load_training_set
from tagger.reading import Abstract, abstract_id
from tagger.training import train

ROOT = Path(__file__).resolve().parents[2]
PILE_VENUE, TEST_VENUE = "icml", "nips"


def with_labels(base: TrainingSet, abstracts: list[Abstract], areas: list[str]) -> TrainingSet:
    return dataclasses.replace(
        base,
        texts=base.texts + tuple(a.document for a in abstracts),
        labels=base.labels + tuple(areas),
        ids=base.ids + tuple(a.id for a in abstracts),
    )


def score(model, test_docs: list[str], truth: list[str]) -> tuple[float, float]:
    from sklearn.metrics import f1_score

    predicted = [model.areas[k] for k in model.predict_proba(test_docs).argmax(axis=1)]
    accuracy = float(np.mean(np.asarray(predicted) == np.asarray(truth)))
    return accuracy, float(f1_score(truth, predicted, labels=sorted(set(truth)), average="macro"))


def pick(strategy, pile, chosen, model, per_round, rng) -> tuple[list[Abstract], list[Abstract]]:
    """The next ``per_round`` abstracts of ``pile`` to label (none of ``chosen``), by
    ``strategy``, and the rest of the pile after them."""
    labelled = {a.id for a in chosen}
    rest = [a for a in pile if a.id not in labelled]
    if strategy == "random":
        picked = [rest[i] for i in rng.choice(len(rest), per_round, replace=False)]
    elif strategy == "least-confident":  # the lowest top probability first (an experiment)
        top = model.predict_proba([a.document for a in rest]).max(axis=1)
        picked = [rest[i] for i in np.argsort(top, kind="stable")[:per_round]]
    else:
        name, _, given = strategy.partition(":")  # suggest:density=3,diversity=0.5: other weights
        options = {"margin": {"density": 0.0, "diversity": 0.0, "balance": 0.0}}.get(name, {})
        options |= {key: float(value) for key, _, value in (p.partition("=") for p in given.split(",") if p)}
        picked = [s.abstract for s in suggest(rest, model, per_round, **options)]
    return picked, [a for a in rest if a not in picked]


def run_loop(strategy, base, pile, area_of, test, rounds, per_round, unlabelled, rng):
    chosen: list[Abstract] = []
    curve = []
    model = train(base, None, [a.document for a in pile] if unlabelled else None)
    curve.append((0, *score(model, *test)))
    for _ in range(rounds):
        picked, rest = pick(strategy, pile, chosen, model, per_round, rng)
        chosen += picked
        training_set = with_labels(base, chosen, [area_of[a.id] for a in chosen])
        model = train(training_set, None, [a.document for a in rest] if unlabelled else None)
        curve.append((len(chosen), *score(model, *test)))
    return curve


def modern_loop(
    paths: list[Path], rounds: int, per_round: int, seeds: int, settings=None, unlabelled=False,
    strategies: tuple[str, ...] = ("suggest", "random"),
) -> None:  # fmt: skip
    """The loop on hand-labelled modern abstracts (see the module's docstring)."""
    from bench_modern import load as load_labelled
    from bench_modern import repository_labels_without
    from sklearn.model_selection import train_test_split

    rows = [row for path in paths for row in load_labelled(path)]
    base = repository_labels_without(rows)
    rows = [r for r in rows if r["area"] != "none"]
    abstracts = [
        Abstract(abstract_id(r["abstract"]), r["abstract"], "modern", i, i, title=r["title"])
        for i, r in enumerate(rows, start=1)
    ]
    area_of = {a.id: r["area"] for a, r in zip(abstracts, rows)}
    alt_of = {a.id: r.get("alt") or "" for a, r in zip(abstracts, rows)}
    print(f"{len(rows)} labelled abstracts; base: {len(base.labels)} labels; {seeds} splits")

    def held_out(model, test):
        areas = [model.areas[k] for k in model.predict_proba([a.document for a in test]).argmax(axis=1)]
        strict = np.mean([p == area_of[a.id] for p, a in zip(areas, test)])
        lenient = np.mean([p in (area_of[a.id], alt_of[a.id]) for p, a in zip(areas, test)])
        return float(strict), float(lenient)

    results: dict[str, list] = {name: [] for name in strategies}
    started = time.perf_counter()
    for seed in range(seeds):
        pile, test = train_test_split(
            abstracts, test_size=1 / 3, random_state=seed, stratify=[area_of[a.id] for a in abstracts]
        )
        # with --unlabelled, the user's whole pile (the held-out part too: the user tags it) is
        # the unlabelled pile of every training, as `tagger train --unlabelled papers/` does
        everything = [a.document for a in abstracts] if unlabelled else None
        start_model = train(base, settings, everything)
        none = held_out(start_model, test)
        for strategy in results:
            rng = np.random.default_rng(seed)
            model, chosen, curve = start_model, [], [none]
            for _ in range(rounds):
                chosen += pick(strategy, pile, chosen, model, per_round, rng)[0]
                model = train(
                    with_labels(base, chosen, [area_of[a.id] for a in chosen]), settings, everything
                )
                curve.append(held_out(model, test))
            results[strategy].append(curve)
            print(
                f"split {seed} {strategy:8s}: "
                + " ".join(f"{s:.3f}" for s, _ in curve)
                + f"  (last weight {model.card.settings.abstract_weight}, C {model.card.settings.C})",
                flush=True,
            )
    print(
        f"\nlabels -> held-out accuracy strict / with the second area, median of {seeds} splits "
        f"({time.perf_counter() - started:.0f} s)"
    )
    curves = {name: np.median(np.asarray(runs), axis=0) for name, runs in results.items()}
    print(f"{'labels':>7s}" + "".join(f"{name:>18s}" for name in curves))
    for i in range(rounds + 1):
        print(f"{i * per_round:7d}" + "".join(f"{c[i][0]:11.3f} / {c[i][1]:.3f}" for c in curves.values()))
    for name, runs in results.items():
        last, first = np.asarray(runs)[:, -1, 0], np.asarray(runs)[:, 0, 0]
        line = f"after {rounds * per_round} labels: {name} over no labels {np.median(last - first):+.3f}"
        if name != "random" and "random" in results:
            over_random = last - np.asarray(results["random"])[:, -1, 0]
            line += (
                f"; over random {np.median(over_random):+.3f} "
                f"(per split {', '.join(f'{g:+.3f}' for g in over_random)})"
            )
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("abstracts", type=Path, nargs="?")
    parser.add_argument("--modern", type=Path, nargs="+", help="the loop on hand-labelled modern abstracts")
    parser.add_argument(
        "--settings", help="with --modern: NAME=VALUE,... fixed training settings (no search)"
    )
    parser.add_argument("--mapping", type=Path, default=MAPPING)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--per-round", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=3, help="random runs (median reported)")
    parser.add_argument("--unlabelled", action="store_true", help="retrain with the rest of the pile too")
    parser.add_argument(
        "--strategies",
        help="separated by ';': suggest, margin, random, or suggest:density=3,... (default: "
        "suggest;margin;random, with --modern suggest;random)",
    )
    parser.add_argument("--plot", type=Path, help="write the learning curves to this PNG")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    if args.modern:
        from bench_modern import parse_settings

        settings = parse_settings(args.settings) if args.settings else None
        strategies = tuple(args.strategies.split(";")) if args.strategies else ("suggest", "random")
        modern_loop(
            args.modern, args.rounds, args.per_round, args.seeds, settings, args.unlabelled, strategies
        )
        return
    rows = load(args.abstracts, load_mapping(args.mapping))
    pile_rows = [r for r in rows if r["venue"].startswith(PILE_VENUE)]
    test_rows = [r for r in rows if r["venue"].startswith(TEST_VENUE)]
    pile = [
        Abstract(abstract_id(document(r)), r["abstract"], "dev", i, i, title=r.get("title", ""))
        for i, r in enumerate(pile_rows, start=1)
    ]
    area_of = {a.id: r["area"] for a, r in zip(pile, pile_rows)}
    test = ([document(r) for r in test_rows], [r["area"] for r in test_rows])
    base = load_training_set(ROOT / "labels", [ROOT / "seeds"])
    print(f"pile: {len(pile)} {PILE_VENUE} abstracts; test: {len(test_rows)} {TEST_VENUE} abstracts")
    start = time.perf_counter()
    everything = train(with_labels(base, pile, [area_of[a.id] for a in pile]))
    ceiling = score(everything, *test)
    print(f"every pile abstract labelled ({len(pile)}): accuracy {ceiling[0]:.3f}, macro-F1 {ceiling[1]:.3f}")
    curves = {}
    for strategy in (args.strategies or "suggest;margin;random").split(";"):
        runs = range(args.seeds) if strategy == "random" else [0]
        results = [
            run_loop(
                strategy, base, pile, area_of, test, args.rounds, args.per_round, args.unlabelled,
                np.random.default_rng(seed),
            )
            for seed in runs
        ]  # fmt: skip
        curves[strategy] = np.median(np.asarray(results), axis=0)
    suffix = " (+ unlabelled pile)" if args.unlabelled else ""
    print(f"\nlabels added -> test accuracy / macro-F1{suffix}, {time.perf_counter() - start:.0f} s")
    print(f"{'labels':>7s}" + "".join(f"{name:>18s}" for name in curves))
    for i, (n, *_) in enumerate(next(iter(curves.values()))):
        print(f"{int(n):7d}" + "".join(f"{c[i][1]:11.3f} / {c[i][2]:.3f}" for c in curves.values()))
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        figure, axes = plt.subplots(figsize=(6, 4), layout="constrained")
        for name, curve in curves.items():
            axes.plot(curve[:, 0], curve[:, 1], marker="o", label=name)
        axes.axhline(ceiling[0], color="grey", linestyle="--", label=f"all {len(pile)} labelled")
        axes.set_xlabel(f"labels added from the {PILE_VENUE} pile")
        axes.set_ylabel(f"accuracy on {TEST_VENUE}")
        axes.set_title(f"Labelling loop{suffix}")
        axes.legend()
        figure.savefig(args.plot, dpi=120)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
