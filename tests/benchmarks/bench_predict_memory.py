"""Peak memory of Python's ``predict`` on a long list of abstracts.

Usage:
    python tests/benchmarks/bench_predict_memory.py PILE.jsonl.gz [--n 200000]

The first abstracts of PILE (a gzip-compressed JSON lines file with an ``abstract`` field,
such as the preprint pile of the development data), repeated to ``--n`` texts, tagged with
``tagger.predict`` in this process; prints the peak resident memory before and after tagging.
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pile")
    parser.add_argument("--n", type=int, default=200_000)
    args = parser.parse_args()
    texts: list[str] = []
    with gzip.open(args.pile, "rt", encoding="utf-8") as stream:
        for line in stream:
            texts.append(json.loads(line)["abstract"])
            if len(texts) == args.n:
                break
    texts = [texts[i % len(texts)] for i in range(args.n)]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    from tagger import predict

    found = predict(texts)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"{len(found):,} texts: peak {peak:,} MB (texts read: {before:,} MB)")


if __name__ == "__main__":
    main()
