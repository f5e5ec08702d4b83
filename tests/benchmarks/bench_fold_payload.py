"""What handing the folds to joblib would cost: the size of the cross-validation payload
(labelled abstracts and their analysed texts) pickled, and the time to pickle and unpickle it.

Usage (from the repository's root):
    python tests/benchmarks/bench_fold_payload.py [--labels labels] [--abstracts seeds]

tagger's own pool forks its workers with the payload in memory (nothing copied, nothing
pickled); joblib's process backend (loky) sends a task's arguments pickled to a worker.
"""

from __future__ import annotations

import argparse
import pickle
import time

from tagger.corpus import Corpus
from tagger.labels import load_training_set
from tagger.plan import PLAN
from tagger.training import _Folds  # (the payload itself is what is measured)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--labels", default="labels")
    parser.add_argument("--abstracts", nargs="+", default=["seeds"])
    args = parser.parse_args()
    training_set = load_training_set(args.labels, args.abstracts)
    corpus = Corpus()
    corpus.rows(training_set.texts)
    corpus.rows([area.document() for area in training_set.areas])
    corpus.ranks()
    start = time.perf_counter()
    data = pickle.dumps(_Folds(training_set, corpus, PLAN.self_training), protocol=pickle.HIGHEST_PROTOCOL)
    pickled = time.perf_counter() - start
    start = time.perf_counter()
    pickle.loads(data)
    unpickled = time.perf_counter() - start
    print(
        f"{len(training_set.labels):,} labels: payload {len(data) / 1e6:.1f} MB pickled, "
        f"{pickled:.2f} s to pickle, {unpickled:.2f} s to unpickle (per task sent to a worker)"
    )


if __name__ == "__main__":
    main()
