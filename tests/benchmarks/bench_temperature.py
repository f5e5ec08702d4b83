"""How the shipped model's confidence would hold with a cooler temperature (an experiment).

Usage:
    python tests/benchmarks/bench_temperature.py --preprints PREPRINTS.jsonl --conference CONFERENCE.jsonl
        [--factors 1.0 1.1 1.2 1.3] [--model DIR]

For each factor, the model's scores are divided by its fitted temperature times the factor
(the rest of its calibration kept; ``with_card`` of tests/conftest.py), and measured on the
conference abstracts (areas by ``dev-area-mapping.json``), on the labelled preprints the model
did not learn from (by the text ids on its card) and on the example pile's abstracts with an
area (``docs/example/papers.jsonl``): accuracy, mean confidence and ECE of each.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_modern import load
from devdata import load as load_conference
from devdata import load_mapping

from tagger import load_model
from tagger.evaluate import expected_calibration_error
from tagger.reading import abstract_id, document

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from conftest import with_card  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preprints", type=Path, required=True)
    parser.add_argument("--conference", type=Path, required=True)
    parser.add_argument("--factors", type=float, nargs="+", default=[1.0, 1.1, 1.2, 1.3])
    parser.add_argument("--model", type=Path)
    args = parser.parse_args()
    model = load_model(args.model) if args.model else load_model()
    seen = set(model.card.training_data.labels or {})
    sets = {
        "conference": load_conference(args.conference, load_mapping()),
        "preprints not learnt from": [
            r for r in load(args.preprints) if r["area"] != "none" and abstract_id(r["abstract"]) not in seen
        ],
        "example pile": [r for r in load(ROOT / "docs" / "example" / "papers.jsonl") if r["area"] != "none"],
    }
    for factor in args.factors:
        calibration = model.card.calibration
        cooler = with_card(
            model, calibration=dataclasses.replace(calibration, temperature=calibration.temperature * factor)
        )
        shown = []
        for name, rows in sets.items():
            found = cooler.predict([document(r["abstract"], r.get("title", "")) for r in rows])
            confidence = np.array([p.confidence for p in found])
            right = np.array([p.area == r["area"] for p, r in zip(found, rows)])
            shown.append(
                f"{name} (n {len(rows)}): accuracy {right.mean():.3f}, confidence {confidence.mean():.3f}, "
                f"ECE {expected_calibration_error(confidence, right):.3f}"
            )
        print(f"temperature x{factor}: " + "; ".join(shown))


if __name__ == "__main__":
    main()
