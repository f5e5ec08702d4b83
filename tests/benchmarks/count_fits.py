"""How many classifier fits a training makes: a new project of the 38 seeds (36 labels with an
area) and the shipped labels, first trained (no model before), then retrained with the model it
replaces (one label fewer), and with ``--search``. Each fit is counted in this process (the
folds run here: one job).

    python tests/benchmarks/count_fits.py [--shipped]
"""

import argparse
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: conftest's project helpers

from conftest import LABELS, ROOT, copy_project

from tagger import fitting, training
from tagger.labels import load_training_set

fits = [0]
original = fitting.BlendedClassifier.fit


def counted(self, *args, **kwargs):
    fits[0] += 1
    return original(self, *args, **kwargs)


def count(training_set, run) -> tuple[int, object]:
    fits[0] = 0
    model = training.train(training_set, run=run)
    return fits[0], model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shipped", action="store_true", help="also the shipped labels (minutes)")
    args = parser.parse_args()
    fitting.BlendedClassifier.fit = counted
    training.default_jobs = lambda: 1  # (the folds here, where the fits are counted)
    with tempfile.TemporaryDirectory() as work:
        seeds = copy_project(Path(work), ("labels", "seeds"))
        projects = [("a project of the 38 seeds", load_training_set(seeds / "labels", [seeds / "seeds"]))]
        if args.shipped:
            projects.append(("the shipped labels", load_training_set(LABELS, [ROOT / "seeds"])))
        for name, training_set in projects:
            first, model = count(training_set, training.Run())
            fewer = training_set.subset(np.arange(len(training_set.labels))[1:])
            again, _ = count(fewer, training.Run(previous=model.card))
            searched, _ = count(training_set, training.Run(plan=replace(training.PLAN, search=True)))
            print(
                f"{name} ({len(training_set.labels)} labels with an area): first train {first} fits, "
                f"a retrain with one label fewer {again}, --search {searched}"
            )


if __name__ == "__main__":
    main()
