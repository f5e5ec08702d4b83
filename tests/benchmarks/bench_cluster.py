"""The cluster path on one machine: ``tagger.cluster.tag_files`` on a local Dask cluster with as
many worker processes as cores (one thread each), against ``tagger predict`` and the plain
scikit-learn script (see bench_speed.py) on the same abstracts, in one run.

Usage:
    python tests/benchmarks/bench_cluster.py --abstracts DEV.jsonl [--n 50000] [--files 4]
                                             [--repeats 3] [--work DIR]

The ``--n`` real abstracts (the development abstracts, shuffled and repeated) are written as
``--files`` JSON-lines files (the cluster makes one partition per file) and as one file (for
the plain script). Each round runs the three in turn; each figure is the median of the rounds.
The cluster starts once, before the rounds (its start is given on its own), and each round
writes every partition's rows as CSV (``to_dataframe().to_csv``), as a user would.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import bench_speed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--abstracts", type=Path, required=True, help="the development abstracts (JSON lines)"
    )
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", type=Path)
    args = parser.parse_args()
    from dask.distributed import Client, LocalCluster

    import tagger.cluster

    work = args.work or Path(tempfile.mkdtemp(prefix="tagger-cluster-"))
    work.mkdir(parents=True, exist_ok=True)
    whole = bench_speed.write_real_corpus(work / f"real-{args.n}.jsonl", args.n, args.abstracts)
    lines = whole.read_bytes().splitlines(keepends=True)
    folder = work / "parts"
    folder.mkdir(exist_ok=True)
    share = -(-len(lines) // args.files)
    parts = []
    for i in range(args.files):
        part = folder / f"part-{i}.jsonl"
        part.write_bytes(b"".join(lines[i * share : (i + 1) * share]))
        parts.append(part)
    plain_model = bench_speed.plain_pipeline(work)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1

    start = time.perf_counter()
    cluster = LocalCluster(n_workers=cores, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    started = time.perf_counter() - start
    times: dict[str, list[float]] = {"cluster": [], "tagger predict": [], "plain": []}
    try:
        for round_ in range(args.repeats):
            start = time.perf_counter()
            rows = tagger.cluster.tag_files(parts)
            rows.to_dataframe().to_csv(str(work / f"cluster-{round_}-*.csv"), index=False)
            times["cluster"].append(time.perf_counter() - start)
            for name, command in (
                (
                    "tagger predict",
                    [
                        sys.executable,
                        "-m",
                        "tagger",
                        "predict",
                        "--quiet",
                        str(folder),
                        "-o",
                        str(work / "tags.csv"),
                    ],
                ),
                (
                    "plain",
                    [
                        sys.executable,
                        "-c",
                        bench_speed.PLAIN_SCRIPT,
                        str(plain_model),
                        str(whole),
                        str(work / "plain.csv"),
                    ],
                ),
            ):
                start = time.perf_counter()
                subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                times[name].append(time.perf_counter() - start)
    finally:
        client.close()
        cluster.close()
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"{args.n:,} real abstracts in {args.files} files, {cores} cores; medians of {args.repeats} rounds")
    print(f"  local cluster start ({cores} worker processes): {started:.1f} s (once)")
    for name, seconds in medians.items():
        print(
            f"  {name:16s} {seconds:6.2f} s  {args.n / seconds:8,.0f} abstracts/s  "
            f"{medians['plain'] / seconds:5.2f}x the plain script"
        )


if __name__ == "__main__":
    main()
