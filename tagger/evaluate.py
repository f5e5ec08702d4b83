"""Figures of merit from cross-validated predictions: accuracy, macro-F1, a per-area table."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def summary(labels: Sequence[str], probabilities: np.ndarray, slugs: Sequence[str]) -> dict:
    """Accuracy, macro-F1 (over the areas that have labelled abstracts) and per-area
    precision, recall, F1 and support, as plain data for the model card."""
    from sklearn.metrics import accuracy_score, f1_score, precision_recall_fscore_support

    predicted = [slugs[k] for k in probabilities.argmax(axis=1)]
    present = [slug for slug in slugs if slug in set(labels)]
    precision, recall, f1, support = precision_recall_fscore_support(
        labels, predicted, labels=list(slugs), zero_division=0
    )
    return {
        "labelled_abstracts": len(labels),
        "accuracy": round(float(accuracy_score(labels, predicted)), 4),
        "macro_f1": round(
            float(f1_score(labels, predicted, labels=present, average="macro", zero_division=0)), 4
        ),
        "per_area": {
            slug: {
                "precision": round(float(p), 4),
                "recall": round(float(r), 4),
                "f1": round(float(f), 4),
                "support": int(s),
            }
            for slug, p, r, f, s in zip(slugs, precision, recall, f1, support)
        },
    }


def format_report(report: dict) -> str:
    """The summary as text: headline figures, then the per-area table."""
    import pandas as pd

    table = pd.DataFrame.from_dict(report["per_area"], orient="index")
    table.index.name = "area"
    lines = [
        f"{report['scheme']} on {report['labelled_abstracts']} labelled abstracts",
        f"accuracy  {report['accuracy']:.3f}",
        f"macro-F1  {report['macro_f1']:.3f}",
        "",
        table.to_string(float_format=lambda x: f"{x:.3f}"),
    ]
    return "\n".join(lines)
