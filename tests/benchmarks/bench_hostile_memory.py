"""Peak memory of ``tagger predict`` on small hostile files whose text is huge once read.

Usage:
    python tests/benchmarks/bench_hostile_memory.py [--chars 600000000] [--limit-mb 8000]

Writes into a temporary folder (removed after): an ``.atom.gz`` feed whose one entry's summary
holds ``--chars`` characters (under a megabyte compressed); the same feed with that text
outside any entry; a Parquet file of one row whose ``large_string`` abstract holds
``--chars`` characters; BibTeX whose ``@string`` values double 40 times (2.9 KB). Each is
tagged with ``tagger predict --skip-bad`` in a process of its own, its address space limited
to ``--limit-mb`` (so that a runaway read is killed, not the machine), and its peak resident
memory (``ru_maxrss`` of the child) printed with its exit status.
"""

from __future__ import annotations

import argparse
import gzip
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ATOM = '<?xml version="1.0" encoding="utf-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom">\n'


def write_files(folder: Path, chars: int) -> list[Path]:
    piece = "We train legged robots to walk. " * 2048  # (65,536 characters)
    times, rest = divmod(chars, len(piece))
    with gzip.open(folder / "summary.atom.gz", "wt", compresslevel=9) as out:
        out.write(ATOM + "<entry><id>a1</id><summary>")
        for _ in range(times):
            out.write(piece)
        out.write(piece[:rest] + "</summary></entry>\n</feed>\n")
    with gzip.open(folder / "outside.atom.gz", "wt", compresslevel=9) as out:
        out.write(ATOM + "<title>")
        for _ in range(times):
            out.write(piece)
        out.write(
            piece[:rest] + "</title><entry><id>a1</id><summary>Robots walk.</summary></entry>\n</feed>\n"
        )
    import pyarrow as pa
    import pyarrow.parquet as parquet

    big = pa.array([piece * times + piece[:rest]], type=pa.large_string())
    parquet.write_table(pa.table({"abstract": big}), folder / "one-row.parquet", compression="zstd")
    del big
    lines = ['@string{s0 = "We train legged robots to walk. "}']
    lines += [f"@string{{s{i} = s{i - 1} # s{i - 1}}}" for i in range(1, 41)]
    lines.append("@article{k1, title = {Doubled}, abstract = s40}")
    lines.append("@article{k2, title = {Fine}, abstract = {We study jailbreaks of language models.}}")
    (folder / "doubling.bib").write_text("\n".join(lines) + "\n")
    return [
        folder / name for name in ("summary.atom.gz", "outside.atom.gz", "one-row.parquet", "doubling.bib")
    ]


def peak_of(path: Path, limit_mb: int) -> tuple[int, int, str]:
    """Exit status, peak resident memory (MB) and first error line of tagging ``path``, run
    from a process of its own (whose children's peak is that one run's)."""
    done = subprocess.run(
        [sys.executable, __file__, "--one", str(path), "--limit-mb", str(limit_mb)],
        capture_output=True,
        text=True,
        check=True,
    )
    status, peak, said = done.stdout.rstrip("\n").split("\t", 2)
    return int(status), int(peak), said


def run_one(path: Path, limit_mb: int) -> None:
    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_mb * 2**20, limit_mb * 2**20))

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tagger",
            "predict",
            str(path),
            "--skip-bad",
            "-o",
            str(path.parent / "t.csv"),
        ],
        capture_output=True,
        text=True,
        preexec_fn=limited,
        check=False,
    )
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
    said = next((line for line in done.stderr.splitlines() if line.startswith(("  ", "tagger:"))), "")
    print(f"{done.returncode}\t{peak}\t{said.strip()[:160]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chars", type=int, default=600_000_000)
    parser.add_argument("--limit-mb", type=int, default=8000)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # (one file, from a process of its own)
    args = parser.parse_args()
    if args.one:
        run_one(Path(args.one), args.limit_mb)
        return
    with tempfile.TemporaryDirectory() as folder:
        for path in write_files(Path(folder), args.chars):
            status, peak, said = peak_of(path, args.limit_mb)
            print(
                f"{path.name:18} {path.stat().st_size / 1024:10,.0f} KB  exit {status}  peak {peak:,} MB  {said}"
            )


if __name__ == "__main__":
    main()
