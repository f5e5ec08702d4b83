"""The labelling page's retrain in a new project: how long the first and the next take.

Usage:
    python tests/benchmarks/bench_page_retrain.py [--pile docs/example/papers.jsonl] [--repeats 2] [--after 10]

In a scratch folder: ``tagger init`` (the 3,409 labels the shipped model learnt from), the pile,
one answer through the page's store (the first abstract of the queue, with the area a reader
gave it: the pile's ``area`` field), ``--after`` seconds (a person reading the first abstract;
default 10), then the page's own retrain (``web.labelling_app``'s, as
the retrain button runs it: the settings of the model it replaces kept, cross-validated, saved,
compared) ``--repeats`` times, each timed; and ``tagger train`` in the same project beside, the
same work from the command line. Nothing is written outside the scratch folder.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pile", type=Path, default=ROOT / "docs" / "example" / "papers.jsonl")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--after", type=float, default=10.0, help="seconds from the page's start to the first retrain"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        subprocess.run([sys.executable, "-m", "tagger", "init"], cwd=folder, check=True, capture_output=True)
        (folder / "pile.jsonl").write_bytes(args.pile.read_bytes())
        os.chdir(folder)
        from tagger.project import Project
        from tagger.reading import read_abstracts
        from tagger.web import labelling_app

        project = Project()
        store = project.store("bench")
        model, areas = project.labelling_model(store)
        pile = list(read_abstracts(["pile.jsonl"]))
        desks = project.desks(pile, model, store, 5)
        app = labelling_app(desks, areas, model, project, pile, "pile.jsonl")
        first = desks[""][0][0].abstract  # answered on the page with the area a reader gave it
        read_by_hand = {a.digest: a.area for a in pile}
        app.answer("", read_by_hand[first.digest], at=0)
        time.sleep(args.after)  # the first abstract read and answered
        for k in range(args.repeats):
            started = time.perf_counter()
            _, result = app.retrain()
            figures = {row["figure"]: (row["before"], row["after"]) for row in result["figures"]}
            print(
                f"page retrain {k + 1}: {time.perf_counter() - started:5.1f} s "
                f"(labelled {result['labelled']}; accuracy {figures['accuracy'][0]} -> {figures['accuracy'][1]})",
                flush=True,
            )
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "tagger", "train"], cwd=folder, check=True, capture_output=True)
        print(f"tagger train:   {time.perf_counter() - started:5.1f} s")


if __name__ == "__main__":
    main()
