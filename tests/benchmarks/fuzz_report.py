"""Fuzz ``tagger report``: tags files as ``tagger predict`` writes them (CSV, JSON lines,
Parquet, each also gzip-compressed), mutated at random (bytes flipped, inserted, deleted,
cut short, lines swapped, cells replaced), each reported in this process. Every run must end
in a report (exit 0) or one clear error (exit 1 or 2): never an internal error (exit 70).

Usage:
    python tests/benchmarks/fuzz_report.py [--cases 1500] [--seed 0] [--work DIR]

Prints the count of each exit status and the first line of each internal error found.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

CELLS = ["nan", "inf", "-1", "1e400", "", "True", "maybe", "10" * 30, '"', "\x00", "é", "0x10", "[]", "{}"]


def originals(work: Path) -> dict[str, bytes]:
    """predict's output of the seeds in every format it writes."""
    from tagger.cli import main

    found = {}
    for name in ("tags.csv", "tags.jsonl", "tags.parquet", "tags.csv.gz", "tags.jsonl.gz"):
        with contextlib.redirect_stderr(io.StringIO()):
            assert main(["predict", str(ROOT / "seeds"), "-o", str(work / name), "--quiet"]) == 0
        found[name] = (work / name).read_bytes()
    return found


def mutate(data: bytes, name: str, rng: random.Random) -> bytes:
    """One to three random mutations; a compressed file is mutated inside or outside its
    compression, at random."""
    inside = name.endswith(".gz") and rng.random() < 0.7
    if inside:
        data = gzip.decompress(data)
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["flip", "insert", "delete", "cut", "swap", "cell", "duplicate"])
        at = rng.randrange(max(len(data), 1))
        if kind == "flip":
            data = data[:at] + bytes([rng.randrange(256)]) + data[at + 1 :]
        elif kind == "insert":
            data = data[:at] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))) + data[at:]
        elif kind == "delete":
            data = data[:at] + data[at + rng.randint(1, 40) :]
        elif kind == "cut":
            data = data[:at]
        elif kind in ("swap", "duplicate") and b"\n" in data:
            lines = data.split(b"\n")
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            if kind == "swap":
                lines[i], lines[j] = lines[j], lines[i]
            else:
                lines.insert(i, lines[j])
            data = b"\n".join(lines)
        elif kind == "cell" and name.startswith("tags.csv"):
            lines = data.split(b"\n")
            i = rng.randrange(len(lines))
            cells = lines[i].split(b",")
            cells[rng.randrange(len(cells))] = rng.choice(CELLS).encode()
            lines[i] = b",".join(cells)
            data = b"\n".join(lines)
    return gzip.compress(data) if inside else data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path)
    options = parser.parse_args()
    from tagger.cli import main as tagger

    work = options.work or Path(tempfile.mkdtemp(prefix="fuzz-report-"))
    work.mkdir(parents=True, exist_ok=True)
    found = originals(work)
    rng = random.Random(options.seed)
    statuses: Counter = Counter()
    internal: list[str] = []
    for case in range(options.cases):
        name = rng.choice(sorted(found))
        path = work / f"case-{name}"
        path.write_bytes(mutate(found[name], name, rng))
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            status = tagger(["report", str(path), "-o", str(work / "report.html")])
        statuses[status] += 1
        if status not in (0, 1, 2):
            internal.append(f"case {case} ({name}): {err.getvalue().strip().splitlines()[0]}")
    print(
        f"{options.cases} mutated tags files: "
        + ", ".join(f"exit {s}: {n}" for s, n in sorted(statuses.items()))
    )
    for line in internal:
        print(line)


if __name__ == "__main__":
    main()
