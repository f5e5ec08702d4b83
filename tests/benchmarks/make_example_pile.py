"""Make the README's example pile, ``docs/example/papers.jsonl``: 40 hand-labelled abstracts of
2022-24 that the shipped model does not learn from, so that a user can tag a pile of abstracts
the model has not seen and compare its tags with a careful reader's.

36 abstracts with an area are drawn at random (a fixed seed) from the project's labelled
abstracts of 2022-24 (``seeds/modern-2022-24*.jsonl``): they leave ``seeds/`` and their labels
leave ``labels/labels.csv`` (every other line keeps its bytes). 4 abstracts that fit no area
(``none``) are drawn from the labelled file given (they were never hand labels of the project).
Each record: ``id``, ``venue``, ``year``, ``title``, ``abstract``, and the reader's ``area``
(``none`` for no area) and ``alt`` (a second area where the paper sits between two, else "").
Nothing is labelled by a model: the areas are the readers'.

Usage (once; retrain the shipped model afterwards with ``tagger train``):
    python tests/benchmarks/make_example_pile.py ../shared/bench/modern-labelled-dev.jsonl \
        ../shared/bench/modern-labelled-train.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
SEED_FILES = [ROOT / "seeds" / "modern-2022-24.jsonl", ROOT / "seeds" / "modern-2022-24-train.jsonl"]
PILE = ROOT / "docs" / "example" / "papers.jsonl"
WITH_AREA, WITHOUT_AREA = 36, 4


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("labelled", type=Path, nargs="+", help="the labelled files (id, area, alt)")
    options = parser.parse_args()
    from tagger.reading import abstract_id

    if PILE.exists():
        raise SystemExit(f"{PILE} exists already")
    readers = {}
    for path in options.labelled:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                readers[record["id"]] = record
    rng = random.Random(2026)
    seeded = {path: path.read_text(encoding="utf-8").splitlines(keepends=True) for path in SEED_FILES}
    candidates = [(path, i) for path, lines in seeded.items() for i in range(len(lines))]
    chosen = rng.sample(candidates, WITH_AREA)
    nones = sorted((r for r in readers.values() if r["area"] == "none"), key=lambda r: r["id"])
    pile = []
    for path, i in chosen:
        record = json.loads(seeded[path][i])
        reader = readers[record["id"]]
        assert reader["abstract"] == record["abstract"] and reader["area"] != "none"
        pile.append({**record, "area": reader["area"], "alt": reader.get("alt", "")})
    for record in rng.sample(nones, WITHOUT_AREA):
        fields = ("id", "venue", "year", "title", "abstract", "area", "alt")
        pile.append({name: record.get(name, "") for name in fields})
    rng.shuffle(pile)
    removed = {abstract_id(r["abstract"]) for r in pile}
    for path, lines in seeded.items():
        gone = {i for p, i in chosen if p == path}
        path.write_text("".join(line for i, line in enumerate(lines) if i not in gone), encoding="utf-8")
    labels = ROOT / "labels" / "labels.csv"
    lines = labels.read_text(encoding="utf-8").splitlines(keepends=True)
    kept = [line for line in lines if line.split(",", 1)[0] not in removed]
    assert len(lines) - len(kept) == WITH_AREA, "each drawn abstract has one label line"
    labels.write_text("".join(kept), encoding="utf-8")
    PILE.parent.mkdir(parents=True, exist_ok=True)
    PILE.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in pile), encoding="utf-8")
    print(f"wrote {PILE.relative_to(ROOT)}: {len(pile)} abstracts; {WITH_AREA} labels left the project")


if __name__ == "__main__":
    main()
