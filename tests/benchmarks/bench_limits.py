"""Memory and time bounded by design: the inputs that once took gigabytes or minutes.

Usage:
    python tests/benchmarks/bench_limits.py [--array-mb 1024] [--repeats 3] [--work DIR]

Each case is a file made here from the seed abstracts (sentences shuffled into new
abstracts), tagged by the installed ``tagger`` in a new process; peak memory is that
process's maximum resident set (``--jobs 1``: the reading path, without workers' copies),
times are medians over ``--repeats`` runs, compared within the same run:

1. a one-line JSON array (what ``json.dump`` writes) of ``--array-mb`` megabytes;
2. a 50 MB UTF-16 JSON-lines file (``--encoding utf-16``);
3. a gzip-compressed CSV holding one line of 400 MB (left out with ``--skip-bad``; exit 3);
4. ``tagger suggest --n 1000`` on 50,000 abstracts;
5. a 21 MB pretty-printed JSON array against the same records as JSON lines (time ratio);
6. ``--keep all`` on a CSV of 3,000 columns against the same file without ``--keep``;
7. ``tagger report`` of a tags file of 3,000,000 rows (a CSV as predict writes it);
8. ``tagger train --data`` on a taxonomy of 2,000 areas with 20 labelled abstracts each (peak
   memory: of the largest process, the training's worker processes included).

Each line ends with the target it is checked against (400 MB; 2x; 3x; minutes, not hours).
``--cases 7 8`` runs some of them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MEMORY_TARGET_MB = 400


def sentences() -> list[str]:
    sys.path.insert(0, str(ROOT))
    from tagger.reading import read_abstracts

    return [s for a in read_abstracts([ROOT / "seeds"]) for s in a.text.split(". ") if s]


def abstracts(n: int, seed: int = 0):
    rng = random.Random(seed)
    pool = sentences()
    for i in range(n):
        yield {"id": f"p{i}", "title": f"Paper {i}", "abstract": ". ".join(rng.sample(pool, 6)) + "."}


def run(args: list[str], **options) -> tuple[float, float, int]:
    """(seconds, peak resident MB, exit status) of ``tagger ARGS`` in a new process."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "tagger", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        **options,
    )
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    process.stderr.close()
    return elapsed, usage.ru_maxrss / 1024, process.returncode


def median_time(args: list[str], repeats: int) -> float:
    return statistics.median(run(args)[0] for _ in range(repeats))


def report(name: str, seconds: float, mb: float, status: int, target: str) -> None:
    print(f"{name:<44} {seconds:8.1f} s {mb:8.0f} MB  exit {status}  ({target})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--array-mb", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", type=Path)
    parser.add_argument("--cases", type=int, nargs="+", default=list(range(1, 9)))
    options = parser.parse_args()
    work = options.work or Path(tempfile.mkdtemp(prefix="bench-limits-"))
    work.mkdir(parents=True, exist_ok=True)
    out = str(work / "out.csv")

    if 1 in options.cases:
        # 1. a one-line JSON array
        path = work / "one-line.json"
        with open(path, "w", encoding="utf-8") as stream:
            stream.write("[")
            size, i = 0, 0
            for record in abstracts(10**9):
                text = ("," if i else "") + json.dumps(record)
                stream.write(text)
                size, i = size + len(text), i + 1
                if size >= options.array_mb * 2**20:
                    break
            stream.write("]")
        seconds, mb, status = run(["predict", str(path), "--jobs", "1", "--quiet", "-o", out])
        report(
            f"1. one-line JSON array, {path.stat().st_size / 2**20:.0f} MB",
            seconds,
            mb,
            status,
            f"< {MEMORY_TARGET_MB} MB",
        )

    if 2 in options.cases:
        # 2. a 50 MB UTF-16 file
        path = work / "wide.jsonl"
        with open(path, "w", encoding="utf-16") as stream:
            for record in abstracts(10**9, seed=2):
                stream.write(json.dumps(record, ensure_ascii=False) + "\n")
                if stream.tell() >= 50 * 2**20:
                    break
        seconds, mb, status = run(
            ["predict", str(path), "--encoding", "utf-16", "--jobs", "1", "--quiet", "-o", out]
        )
        report(
            f"2. UTF-16 JSON lines, {path.stat().st_size / 2**20:.0f} MB",
            seconds,
            mb,
            status,
            f"< {MEMORY_TARGET_MB} MB",
        )

    if 3 in options.cases:
        # 3. a compressed file holding a 400 MB line
        path = work / "long-line.csv.gz"
        with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as stream:
            stream.write("id,abstract\n1,Robots grasp cups from video.\n2,")
            chunk = "word " * 2**18
            for _ in range(400 * 2**20 // len(chunk)):
                stream.write(chunk)
            stream.write("\n3,Bandits with delayed feedback have regret bounds.\n")
        seconds, mb, status = run(["predict", str(path), "--skip-bad", "--jobs", "1", "--quiet", "-o", out])
        report(
            f"3. .csv.gz with a 400 MB line ({path.stat().st_size / 2**20:.1f} MB)",
            seconds,
            mb,
            status,
            f"< {MEMORY_TARGET_MB} MB, exit 3",
        )

    if 4 in options.cases:
        # 4. suggest --n 1000 on 50,000 abstracts
        path = work / "pile.jsonl"
        with open(path, "w", encoding="utf-8") as stream:
            for record in abstracts(50_000, seed=4):
                stream.write(json.dumps(record) + "\n")
        seconds, mb, status = run(["suggest", str(path), "--n", "1000", "--format", "jsonl"], cwd=work)
        report("4. suggest --n 1000 on 50,000 abstracts", seconds, mb, status, f"< {MEMORY_TARGET_MB} MB")

    if 5 in options.cases:
        # 5. a pretty-printed JSON array against JSON lines
        records = []
        size = 0
        for record in abstracts(10**9, seed=5):
            records.append(record)
            size += len(json.dumps(record, indent=2)) + 2
            if size >= 21 * 2**20:
                break
        pretty, lines = work / "pretty.json", work / "same.jsonl"
        pretty.write_text(json.dumps(records, indent=2), encoding="utf-8")
        lines.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        array = median_time(["predict", str(pretty), "--jobs", "1", "--quiet", "-o", out], options.repeats)
        plain = median_time(["predict", str(lines), "--jobs", "1", "--quiet", "-o", out], options.repeats)
        print(
            f"5. pretty JSON {pretty.stat().st_size / 2**20:.0f} MB: {array:.2f} s, as JSON lines {plain:.2f} s: "
            f"{array / plain:.2f}x  (target 2x)",
            flush=True,
        )

    if 6 in options.cases:
        # 6. --keep all on 3,000 columns
        path = work / "wide.csv"
        columns = [f"c{k}" for k in range(2999)]
        with open(path, "w", encoding="utf-8") as stream:
            stream.write("abstract," + ",".join(columns) + "\n")
            for i, record in enumerate(abstracts(2000, seed=6)):
                stream.write(
                    record["abstract"].replace(",", "") + "," + ",".join(f"v{i}" for _ in columns) + "\n"
                )
        kept = median_time(
            ["predict", str(path), "--keep", "all", "--jobs", "1", "--quiet", "-o", out], options.repeats
        )
        bare = median_time(["predict", str(path), "--jobs", "1", "--quiet", "-o", out], options.repeats)
        print(
            f"6. --keep all, 3,000 columns: {kept:.2f} s, without --keep {bare:.2f} s: {kept / bare:.2f}x  (target 3x)"
        )

    if 7 in options.cases:  # 7. a report of 3,000,000 rows
        path = work / "tags.csv"
        with open(path, "w", encoding="utf-8") as stream:
            stream.write(
                "source,position,id,area,confidence,runner_up,runner_up_confidence,needs_review,tags\n"
            )
            for i in range(1, 3_000_001):
                p = 0.3 + (i * 7919 % 700) / 1000
                stream.write(
                    f"pile.jsonl,{i},{i:016x},vision,{p},rl,{(1 - p) / 2:.4f},{p < 0.8},vision:{p}\n"
                )
        seconds, mb, status = run(["report", str(path), "-o", str(work / "report.html")], cwd=work)
        report(
            f"7. report of 3,000,000 rows ({path.stat().st_size / 2**20:.0f} MB)",
            seconds,
            mb,
            status,
            f"< {MEMORY_TARGET_MB} MB",
        )

    if 8 in options.cases:  # 8. 2,000 areas of 20 labels each
        path = work / "areas.jsonl"
        with open(path, "w", encoding="utf-8") as stream:
            for i, record in enumerate(abstracts(40_000, seed=8)):
                stream.write(
                    json.dumps({"abstract": record["abstract"], "area": f"area{i % 2000:04d}"}) + "\n"
                )
        seconds, mb, status = run(["train", "--data", str(path), "--model", str(work / "many")], cwd=work)
        report("8. train on 2,000 areas x 20 labels", seconds, mb, status, "minutes, not hours")


if __name__ == "__main__":
    main()
