"""Figures of merit from cross-validated predictions: accuracy, macro-F1, calibration (ECE),
per-area table, confusion matrix, the review threshold, possible label errors, and plots."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from ._version import install_hint
from .card import Evaluation, Review
from .errors import UsageError
from .prediction import right

CALIBRATION_BINS = 10


class Bins:
    """Equal-width confidence bins, filled a chunk of predictions at a time: the count, the
    sum of confidence and the number right of each (the one binning of every calibration
    figure: the card's, ``tagger evaluate``'s and the report's)."""

    def __init__(self, bins: int = CALIBRATION_BINS) -> None:
        self.edges = np.linspace(0.0, 1.0, bins + 1)
        self.count = np.zeros(bins, dtype=np.int64)
        self.confidence = np.zeros(bins)
        self.right = np.zeros(bins)

    @classmethod
    def of(cls, confidence: np.ndarray, correct: np.ndarray, bins: int = CALIBRATION_BINS) -> Bins:
        filled = cls(bins)
        filled.add(confidence, correct)
        return filled

    def add(self, confidence: np.ndarray, correct: np.ndarray) -> None:
        bins = len(self.count)
        index = np.clip(np.digitize(confidence, self.edges[1:-1], right=True), 0, bins - 1)
        self.count += np.bincount(index, minlength=bins)
        self.confidence += np.bincount(index, weights=confidence, minlength=bins)
        self.right += np.bincount(index, weights=np.asarray(correct, dtype=float), minlength=bins)

    def table(self) -> list[dict]:
        """Count, mean confidence and accuracy of each non-empty bin."""
        return [
            {
                "low": float(self.edges[b]),
                "high": float(self.edges[b + 1]),
                "count": int(self.count[b]),
                "confidence": float(self.confidence[b] / self.count[b]),
                "accuracy": float(self.right[b] / self.count[b]),
            }
            for b in np.flatnonzero(self.count)
        ]

    def ece(self) -> float:
        """ECE: the count-weighted mean gap between confidence and accuracy."""
        total = int(self.count.sum())
        if total == 0:
            return 0.0
        return float(sum(b["count"] * abs(b["accuracy"] - b["confidence"]) for b in self.table()) / total)


def calibration_bins(confidence: np.ndarray, correct: np.ndarray, bins: int = CALIBRATION_BINS) -> list[dict]:
    """Equal-width confidence bins: count, mean confidence and accuracy of each non-empty bin."""
    return Bins.of(confidence, correct, bins).table()


def expected_calibration_error(
    confidence: np.ndarray, correct: np.ndarray, bins: int = CALIBRATION_BINS
) -> float:
    """ECE: the count-weighted mean gap between confidence and accuracy over equal-width bins."""
    return Bins.of(confidence, correct, bins).ece()


def review_threshold(confidence: np.ndarray, correct: np.ndarray, target: float) -> float:
    """The lowest confidence t such that predictions with confidence >= t were right at least
    ``target`` of the time; 1.0 when no such t exists (then every prediction needs review).
    Predictions of one confidence are flagged alike: t is never set inside a run of ties."""
    order = np.argsort(-confidence, kind="stable")
    ranked = confidence[order]
    accuracy_above = np.cumsum(correct[order]) / np.arange(1, len(order) + 1)
    last_of_its_confidence = np.append(ranked[1:] != ranked[:-1], True)
    meets = np.flatnonzero((accuracy_above >= target) & last_of_its_confidence)
    return float(ranked[meets[-1]]) if len(meets) else 1.0


# With fewer labelled abstracts than this, an ECE says little (its bins hold a handful each):
# it is shown as too few to measure.
MEASURE_CALIBRATION_FROM = 100


def accuracy_interval(accuracy: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson interval of an accuracy measured on ``n`` abstracts."""
    if n == 0:
        return 0.0, 1.0
    centre = (accuracy + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(accuracy * (1 - accuracy) / n + z * z / (4 * n * n))
    return max(0.0, float(centre - half)), min(1.0, float(centre + half))


def accuracy_text(accuracy: float, n: int) -> str:
    """'0.833 (95% interval 0.44-0.97)': how sure a figure on ``n`` abstracts is."""
    low, high = accuracy_interval(accuracy, n)
    return f"{accuracy:.3f} (95% interval {low:.2f}-{high:.2f})"


def ece_text(ece: float, n: int) -> str:
    """'0.019', or with a word when ``n`` labelled abstracts are too few to measure it."""
    if n < MEASURE_CALIBRATION_FROM:
        return f"{ece:.3f} (too few labels to measure calibration: {n})"
    return f"{ece:.3f}"


TOP_K = (2, 3)  # evaluate's top-k accuracy: the labelled area among the k likeliest


def summary(labels: Sequence[str], probabilities: np.ndarray, slugs: Sequence[str]) -> dict:
    """Accuracy, macro-F1 (over the areas that have labelled abstracts), ECE, top-k accuracy
    (:data:`TOP_K`, each below the number of areas; an area ranks below those strictly more
    likely), per-area precision, recall, F1 and support, and the confusion matrix, as plain
    data."""
    from sklearn.metrics import confusion_matrix, f1_score, precision_recall_fscore_support

    from .prediction import NO_AREA, decided

    slugs = list(slugs)
    predicted = [slugs[k] if k >= 0 else NO_AREA for k in decided(probabilities).tolist()]
    correct = np.asarray(predicted, dtype=object) == np.asarray(labels, dtype=object)
    present = [slug for slug in slugs if slug in set(labels)]
    precision, recall, f1, support = precision_recall_fscore_support(
        labels, predicted, labels=slugs, zero_division=0
    )
    matrix = confusion_matrix(labels, predicted, labels=slugs)
    truth = np.array([slugs.index(label) for label in labels], dtype=int)
    rank = (probabilities > probabilities[np.arange(len(truth)), truth][:, None]).sum(axis=1)
    macro_f1 = f1_score(labels, predicted, labels=present, average="macro", zero_division=0)
    answers = np.asarray(labels, dtype=object), np.asarray(predicted, dtype=object)
    return {
        **_with_area(*answers, probabilities.max(axis=1), slugs),
        "labelled_abstracts": len(labels),
        "ties": predicted.count(NO_AREA) or None,
        "accuracy": round(float(correct.mean()), 4),
        "macro_f1": round(float(macro_f1), 4),
        "ece": round(expected_calibration_error(probabilities.max(axis=1), correct), 4),
        "top_k": {str(k): round(float((rank < k).mean()), 4) for k in TOP_K if k < len(slugs)} or None,
        "per_area": {
            slug: {
                "precision": round(float(p), 4),
                "recall": round(float(r), 4),
                "f1": round(float(f), 4),
                "support": int(s),
            }
            for slug, p, r, f, s in zip(slugs, precision, recall, f1, support)
        },
        "confusion": {"areas": slugs, "counts": matrix.tolist()},
    }


def _with_area(labels: np.ndarray, predicted: np.ndarray, confidence: np.ndarray, slugs: list[str]) -> dict:
    """When the model answers ``none`` (it learnt it): the figures of the labelled abstracts
    that have an area (accuracy, ECE, how many), and the share of every one answered ``none``."""
    from .prediction import NONE

    if NONE not in slugs:
        return {}
    inside = labels != NONE
    correct = predicted[inside] == labels[inside]
    return {
        "with_area": {
            "labelled_abstracts": int(inside.sum()),
            "accuracy": round(float(correct.mean()), 4) if inside.any() else 0.0,
            "ece": round(expected_calibration_error(confidence[inside], correct), 4) if inside.any() else 0.0,
        },
        "answered_none": round(float((predicted == NONE).mean()), 4),
    }


# A hand label is worth a second look when the cross-validated model gives it less than this
# probability (see tests/benchmarks/bench_label_errors.py for how often that finds a flipped label).
LABEL_ERROR_PROBABILITY = 0.03


def flagged_figures(confidence: np.ndarray, correct: np.ndarray, threshold: float) -> tuple[float, float]:
    """The share of predictions below the review threshold, and how often the rest were right."""
    return figures_of_flags(confidence < threshold, correct)


def figures_of_flags(flagged: np.ndarray, correct: np.ndarray) -> tuple[float, float]:
    """The share of predictions ``flagged`` for review, and how often the rest were right."""
    unflagged = ~flagged
    accuracy = float(correct[unflagged].mean()) if unflagged.any() else 0.0
    return round(float(flagged.mean()), 4), round(accuracy, 4)


def refuse_unknown_areas(labels: Iterable[str], areas: Sequence[str], where: str) -> None:
    """The one rule of the hand labels a model is measured against (``evaluate --data``,
    ``report --label-column``): each one of the model's ``areas`` (or none, or no label);
    any other is refused, named, with the areas to use: a tag is never scored against a
    label it could not give (``LLM`` for ``llm`` counted every tag wrong)."""
    from .errors import LabelError
    from .prediction import NONE

    unknown = sorted(set(labels) - set(areas) - {"", NONE})
    if unknown:
        raise LabelError(
            f"{len(unknown)} area(s) the model does not know: {', '.join(map(repr, unknown[:5]))}",
            where=where,
            fix=f"Measure a model on labels of its areas ({', '.join(a for a in areas if a != NONE)}).",
        )


def test_model(
    model, texts: Sequence[str], labels: Sequence[str], ids: Sequence[str], data: str, name: str = "the model"
):
    """How ``model`` does on labelled abstracts it was not trained on: an :class:`Evaluation`
    (the same figures as cross-validation, by the same definitions), a :class:`Review` at the
    model's threshold, each abstract's confidence and whether it was right. Labels of areas
    the model does not know are refused."""
    refuse_unknown_areas(labels, model.areas, data)
    logging.getLogger("tagger.evaluate").info("testing the model on %s labelled abstracts", f"{len(texts):,}")
    probabilities = model.predict_proba(list(texts))
    slugs = list(model.areas)
    confidence = probabilities.max(axis=1)
    correct = right(probabilities, np.array([slugs.index(label) for label in labels], dtype=int))
    share, accuracy = flagged_figures(confidence, correct, model.review_threshold)
    evaluation = Evaluation(
        scheme=f"{name} tested",
        **summary(list(labels), probabilities, slugs),
        possible_label_errors=tuple(possible_label_errors(ids, texts, labels, probabilities, slugs)),
    )
    review = Review(
        threshold=model.review_threshold,
        target_accuracy=model.card.review.target_accuracy,
        share_flagged=share,
        accuracy_unflagged=accuracy,
    )
    return evaluation, review, confidence, correct


def possible_label_errors(
    ids: Sequence[str],
    texts: Sequence[str],
    labels: Sequence[str],
    probabilities: np.ndarray,
    slugs: Sequence[str],
    below: float = LABEL_ERROR_PROBABILITY,
) -> list[dict]:
    """Labelled abstracts whose hand label gets less than ``below`` probability from the
    cross-validated model (a model that never saw them), least likely first, with the area
    the model prefers: worth a second look. As in confident learning (cleanlab's
    self-confidence), the model's own out-of-sample probability of the given label ranks the
    suspects; a label flipped to an unrelated area typically gets well under 0.03."""
    slugs = list(slugs)
    suspects = []
    for abstract_id, text, label, row in zip(ids, texts, labels, probabilities):
        label_probability = float(row[slugs.index(label)])
        if label_probability < below:
            best = int(row.argmax())
            suspects.append(
                {
                    "abstract_id": abstract_id,
                    "label": label,
                    "predicted": slugs[best],
                    "confidence": round(float(row[best]), 4),
                    "label_probability": round(label_probability, 4),
                    "snippet": " ".join(text.split()[:10]),
                }
            )
    return sorted(suspects, key=lambda s: s["label_probability"])


def format_json(evaluation: Evaluation, review: Review) -> str:
    """The figures as one JSON object (``evaluate --format json``): the evaluation and the
    review threshold's figures, as the model card records them, and every figure the text
    report adds (the accuracy's 95% interval)."""
    import json

    from .card import plain

    figures = plain(evaluation)
    low, high = accuracy_interval(evaluation.accuracy, evaluation.labelled_abstracts)
    figures["accuracy_interval_95"] = [round(low, 4), round(high, 4)]
    return json.dumps({"evaluation": figures, "review": plain(review)}, ensure_ascii=False, indent=2)


def format_report(evaluation: Evaluation, review: Review) -> str:
    """The figures as text: headline, per-area table, confusion matrix, label errors."""
    import pandas as pd

    table = pd.DataFrame.from_dict(evaluation.per_area, orient="index")
    table.index.name = "area"
    confusion = evaluation.confusion
    matrix = pd.DataFrame(confusion["counts"], index=confusion["areas"], columns=confusion["areas"])
    matrix.index.name = "labelled \\ predicted"
    lines = [
        f"{evaluation.scheme} on {evaluation.labelled_abstracts} labelled abstracts",
        *(
            [f"left out of these figures: {', '.join(evaluation.left_out)} (one labelled abstract)"]
            if evaluation.left_out
            else []
        ),
        f"accuracy  {accuracy_text(evaluation.accuracy, evaluation.labelled_abstracts)}",
        *(
            [
                f"ties      {evaluation.ties} abstract(s) with two areas equally likely: "
                "no answer, counted wrong"
            ]
            if evaluation.ties
            else []
        ),
        *(
            [
                "top-k     "
                + ", ".join(f"top-{k} {share:.3f}" for k, share in evaluation.top_k.items())
                + "   (the labelled area among the k likeliest)"
            ]
            if evaluation.top_k
            else []
        ),
        f"macro-F1  {evaluation.macro_f1:.3f}",
        f"ECE       {ece_text(evaluation.ece, evaluation.labelled_abstracts)}"
        f"   (expected calibration error, {CALIBRATION_BINS} bins)",
        f"review    below {review.threshold:.3f} confidence: {review.share_flagged:.0%} of abstracts "
        f"need review; the rest were right {review.accuracy_unflagged:.0%} of the time",
        "",
        table.to_string(float_format=lambda x: f"{x:.3f}"),
        "",
        matrix.to_string(),
    ]
    suspects = evaluation.possible_label_errors
    lines += ["", f"possible label errors: {len(suspects)}"]
    lines += [
        f"  {s['abstract_id']}  labelled {s['label']} ({s['label_probability']:.3f}), "
        f"predicted {s['predicted']} ({s['confidence']:.2f})" + f"  {s['snippet']}"
        for s in suspects
    ]
    return "\n".join(lines)


def require_matplotlib():
    """matplotlib's pyplot (drawing to files), or a clear error saying how to install it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError(
            "--plots needs matplotlib, which is not installed", fix=f"Install it: {install_hint('plots')}."
        ) from None
    return plt


def write_plots(
    evaluation: Evaluation, confidence: np.ndarray, correct: np.ndarray, directory: str | os.PathLike
) -> list[Path]:
    """A confusion-matrix PNG and a reliability-diagram PNG in ``directory``."""
    plt = require_matplotlib()
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    areas = evaluation.confusion["areas"]
    counts = np.asarray(evaluation.confusion["counts"])

    figure, axes = plt.subplots(figsize=(1 + 0.6 * len(areas), 0.6 * len(areas) + 1), layout="constrained")
    image = axes.imshow(counts, cmap="Blues")
    axes.set_xticks(range(len(areas)), areas, rotation=60, ha="right")
    axes.set_yticks(range(len(areas)), areas)
    axes.set_xlabel("predicted area")
    axes.set_ylabel("labelled area")
    axes.set_title(
        f"{evaluation.scheme}: accuracy {evaluation.accuracy:.2f}, macro-F1 {evaluation.macro_f1:.2f}"
    )
    for (i, j), n in np.ndenumerate(counts):
        if n:
            axes.text(
                j, i, str(n), ha="center", va="center", color="white" if n > counts.max() / 2 else "black"
            )
    figure.colorbar(image, ax=axes, shrink=0.7)
    figure.get_layout_engine().set(w_pad=0.1, h_pad=0.1)  # inches: nothing touches the edge
    confusion_path = directory / "confusion-matrix.png"
    figure.savefig(confusion_path, dpi=120)
    plt.close(figure)

    figure = reliability_figure(evaluation, confidence, correct)
    reliability_path = directory / "reliability.png"
    figure.savefig(reliability_path, dpi=120)
    plt.close(figure)
    return [confusion_path, reliability_path]


def reliability_figure(evaluation, confidence: np.ndarray, correct: np.ndarray):
    """The reliability diagram: accuracy per confidence bin against the diagonal, with each
    bin's count; the legend sits below the axes, where it hides no bar."""
    import matplotlib.pyplot as plt

    bins = calibration_bins(confidence, correct)
    figure, axes = plt.subplots(figsize=(5, 5.6), layout="constrained")
    axes.plot([0, 1], [0, 1], color="grey", linestyle="--", label="perfect calibration")
    accuracy = [b["accuracy"] for b in bins]
    axes.bar([b["low"] for b in bins], accuracy, width=1 / CALIBRATION_BINS, align="edge", edgecolor="black",
             alpha=0.7, label="accuracy in bin")  # fmt: skip
    axes.plot([b["confidence"] for b in bins], accuracy, "o", color="black", label="mean confidence in bin")
    for b in bins:  # each count above its bar, clear of the dot on the bar's top
        axes.annotate(str(b["count"]), (b["low"] + 0.5 / CALIBRATION_BINS, b["accuracy"]), xytext=(0, 5),
                      textcoords="offset points", ha="center", va="bottom", fontsize=8)  # fmt: skip
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1.1)
    axes.set_xlabel("confidence")
    axes.set_ylabel("accuracy")
    axes.set_title(f"Reliability ({evaluation.scheme}), ECE {evaluation.ece:.3f}")
    figure.legend(loc="outside lower center", ncols=2, fontsize=8, frameon=False)
    return figure


FIGURES = ("labelled_abstracts", "accuracy", "macro_f1", "ece")


def compare(
    old: Evaluation | None, new: Evaluation, old_areas: Sequence[str], new_areas: Sequence[str]
) -> dict:
    """What retraining changed: each figure before (``old``: none without an old model) and
    after, and how many of the given abstracts (areas predicted by the old and the new
    model, in the same order) moved."""
    before = {k: getattr(old, k) if old else None for k in FIGURES}
    after = {k: getattr(new, k) for k in FIGURES}
    changed = sum(a != b for a, b in zip(old_areas, new_areas)) if old else None
    return {"before": before, "after": after, "changed": changed, "compared": len(new_areas)}


def figure_text(value) -> str:
    """A figure as shown: three decimals, a count as it is, ``-`` for none."""
    return "-" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def format_comparison(comparison: dict) -> str:
    rows = [f"{'':20s}{'before':>10s}{'after':>10s}"]
    for figure in FIGURES:
        before, after = (figure_text(comparison[when][figure]) for when in ("before", "after"))
        rows.append(f"{figure.replace('_', '-'):20s}{before:>10s}{after:>10s}")
    if comparison["changed"] is not None:
        rows.append(f"{comparison['changed']} of {comparison['compared']} abstracts changed area")
    return "\n".join(rows)
