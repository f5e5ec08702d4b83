"""Make hand labels of a labelled development file part of a project: its abstracts with an
area become a texts file in the project's ``seeds/`` (id, venue, year, title, abstract, as
``seeds/modern-2022-24.jsonl`` holds the development set's) and their areas hand labels in
``labels/labels.csv``, written through the label store as ``tagger label`` writes them.
Abstracts labelled ``none`` (no area) are labelled ``none`` with their topic; the abstracts of
the README's example pile (``docs/example/papers.jsonl``) are left out. Nothing is labelled by a
model.

Usage:
    python tests/benchmarks/import_labels.py LABELLED.jsonl --texts seeds/NAME.jsonl
                                             [--labels labels] [--abstracts seeds]
                                             [--venue arxiv] [--hold-out K]

Used for ``../shared/bench/modern-labelled-train.jsonl`` and, with ``--venue arxiv --hold-out 8``,
for ``../shared/bench/preprint-labelled-2025.jsonl`` (arXiv abstracts have no venue or year: the
venue is ``--venue`` and the year the arXiv id's, ``2506.13434`` of 2025). ``--hold-out K`` leaves
out the first of K stratified folds (``bench_sources.preprint_folds``, seed 0) so that the
shipped model can be measured on labelled abstracts it did not see. Run it in a copy of the
project to measure before the labels are committed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
EXAMPLE_PILE = ROOT / "docs" / "example" / "papers.jsonl"
FIELDS = ("id", "venue", "year", "title", "abstract")
ARXIV_ID = re.compile(r"(\d\d)(\d\d)\.\d{4,5}(v\d+)?")


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def with_source(row: dict, venue: str | None) -> dict:
    """The row with its venue (``venue`` where given) and year (an arXiv id's where it has none)."""
    row = {**row, "venue": venue or row["venue"]}
    if "year" not in row:
        match = ARXIV_ID.fullmatch(row["id"])
        if match is None:
            raise SystemExit(f"{row['id']}: no year, and not an arXiv id to read one from")
        row["year"] = 2000 + int(match.group(1))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("labelled", type=Path)
    parser.add_argument("--texts", type=Path, required=True, help="the texts file to write (new)")
    parser.add_argument("--labels", type=Path, default=Path("labels"))
    parser.add_argument("--abstracts", type=Path, default=Path("seeds"))
    parser.add_argument("--venue", help="the venue of every abstract (arXiv abstracts have none)")
    parser.add_argument("--hold-out", type=int, default=0, help="leave out the first of K stratified folds")
    options = parser.parse_args()
    from tagger.labelstore import NONE, ProjectLabels
    from tagger.reading import abstract_id, read_abstracts

    example = {abstract_id(row["abstract"]) for row in load(EXAMPLE_PILE)}  # the README's: never labels

    rows = load(options.labelled)
    held = 0
    if options.hold_out:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_sources import preprint_folds

        fold = preprint_folds(rows, options.hold_out)
        held = sum(fold[row["id"]] == 0 for row in rows)
        rows = [row for row in rows if fold[row["id"]] != 0]
    rows = [with_source(row, options.venue) for row in rows if abstract_id(row["abstract"]) not in example]
    if options.texts.exists():
        raise SystemExit(f"{options.texts} exists already")
    options.texts.write_text(
        "".join(json.dumps({name: row[name] for name in FIELDS}, ensure_ascii=False) + "\n" for row in rows),
        encoding="utf-8",
    )
    store = ProjectLabels(options.labels, options.abstracts, annotator="")  # the readers are not named
    by_id = {row["id"]: row for row in rows}
    added = 0
    for abstract in read_abstracts([options.texts]):
        row = by_id[abstract.id]
        answer = store.add(abstract, row["area"], (row.get("topic") or "") if row["area"] == NONE else "")
        added += answer.earlier is None
    outside = sum(row["area"] == NONE for row in rows)
    print(f"{options.texts}: {len(rows)} abstracts ({outside} {NONE}, {held} held out); "
          f"{added} new labels in {options.labels / 'labels.csv'}")  # fmt: skip


if __name__ == "__main__":
    main()
