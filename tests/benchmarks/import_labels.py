"""Make hand labels of a labelled development file part of a project: its abstracts with an
area become a texts file in the project's ``seeds/`` (id, venue, year, title, abstract, as
``seeds/modern-2022-24.jsonl`` holds the development set's) and their areas hand labels in
``labels/labels.csv``, written through the label store as ``tagger label`` writes them.
Abstracts labelled ``none`` (no area) are left out; nothing is labelled by a model.

Usage:
    python tests/benchmarks/import_labels.py LABELLED.jsonl --texts seeds/NAME.jsonl
                                             [--labels labels] [--abstracts seeds]

Used for ``../shared/bench/modern-labelled-train.jsonl``; run it in a copy of the project to
measure before the labels are committed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
FIELDS = ("id", "venue", "year", "title", "abstract")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("labelled", type=Path)
    parser.add_argument("--texts", type=Path, required=True, help="the texts file to write (new)")
    parser.add_argument("--labels", type=Path, default=Path("labels"))
    parser.add_argument("--abstracts", type=Path, default=Path("seeds"))
    options = parser.parse_args()
    from tagger.labelstore import ProjectLabels
    from tagger.reading import read_abstracts

    rows = [json.loads(line) for line in options.labelled.read_text(encoding="utf-8").splitlines() if line]
    with_area = [row for row in rows if row["area"] != "none"]
    if options.texts.exists():
        raise SystemExit(f"{options.texts} exists already")
    options.texts.write_text(
        "".join(
            json.dumps({name: row[name] for name in FIELDS}, ensure_ascii=False) + "\n" for row in with_area
        ),
        encoding="utf-8",
    )
    store = ProjectLabels(options.labels, options.abstracts)
    areas = {row["id"]: row["area"] for row in with_area}
    added = 0
    for abstract in read_abstracts([options.texts]):
        answer = store.add(abstract, areas[abstract.id])
        added += answer.earlier is None
    print(f"{options.texts}: {len(with_area)} abstracts with an area ({len(rows) - len(with_area)} 'none' left out); "
          f"{added} new labels in {options.labels / 'labels.csv'}")  # fmt: skip


if __name__ == "__main__":
    main()
