"""The development abstracts (``../shared/bench/conference-abstracts-dev.jsonl``) as the
benchmarks use them: each abstract's area from our mapping of its categories
(``dev-area-mapping.json`` beside this file), and the figures we report.

The abstracts never enter the repository; only the mapping of category names does.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np

from tagger.evaluate import expected_calibration_error

MAPPING = Path(__file__).with_name("dev-area-mapping.json")


def load_mapping(path: Path = MAPPING) -> dict[str, list[str]]:
    """Area -> the categories that map onto it (keys starting with ``_`` are notes)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {area: categories for area, categories in data.items() if not area.startswith("_")}


def load(path: Path, mapping: dict | None, min_count: int = 1) -> list[dict]:
    """The abstracts with an ``area``: with a mapping, the one area their categories map to
    (abstracts mapping to none or to several areas are left out); without, the first
    category. Labels with fewer than ``min_count`` abstracts are left out."""
    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    area_of = {category: area for area, categories in (mapping or {}).items() for category in categories}
    for row in rows:
        if mapping:
            areas = {area_of[c] for c in row["categories"] if c in area_of}
            row["area"] = areas.pop() if len(areas) == 1 else None
        else:
            row["area"] = row["categories"][0] if row["categories"] else None
    counts = Counter(row["area"] for row in rows)
    return [row for row in rows if row["area"] and counts[row["area"]] >= min_count]


def document(row: dict) -> str:
    """What tagger reads for a row: title and abstract, as for a file with a title column."""
    return f"{row['title']}. {row['abstract']}" if row.get("title") else row["abstract"]


def figures(truth: list[str], predicted: list[str], confidence: np.ndarray | None) -> dict:
    """Accuracy, macro-F1 over the areas in ``truth``, ECE, and the ECE a perfectly
    calibrated model with these confidences would show on this many abstracts (median of
    1,000 simulations: ECE's noise floor)."""
    from sklearn.metrics import accuracy_score, f1_score

    correct = np.asarray(predicted) == np.asarray(truth)
    result = {
        "n": len(truth),
        "accuracy": float(accuracy_score(truth, predicted)),
        "macro_f1": float(
            f1_score(truth, predicted, labels=sorted(set(truth)), average="macro", zero_division=0)
        ),
        "ece": None,
        "ece_if_calibrated": None,
    }
    if confidence is not None:
        rng = np.random.default_rng(0)
        simulated = [
            expected_calibration_error(confidence, rng.random(len(confidence)) < confidence)
            for _ in range(1000)
        ]
        result["ece"] = expected_calibration_error(confidence, correct)
        result["ece_if_calibrated"] = float(np.median(simulated))
    return result


def parse_settings(text: str):
    """TrainingSettings of 'NAME=VALUE,...' (a bool as True or False)."""
    import dataclasses

    from tagger.settings import TrainingSettings

    values = dict(item.split("=") for item in text.split(","))
    kinds = {f.name: f.type for f in dataclasses.fields(TrainingSettings)}
    return TrainingSettings(
        **{
            k: (v == "True" if "bool" in str(kinds[k]) else float(v) if "float" in str(kinds[k]) else int(v))
            for k, v in values.items()
        }
    )
