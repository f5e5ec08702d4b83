"""The JSON array reader against ijson's backends: faithfulness first, then time.

Usage:
    python tests/benchmarks/bench_json_array.py JSONL [--n 20000] [--repeats 5]

Writes ``n`` records of ``JSONL`` (repeated as needed) as one indented JSON array in a temporary
folder, then times, in interleaved rounds (medians): tagger's whole read of the file
(``read_abstracts``: framing, decoding, each abstract checked) and ijson's ``items`` over the
same bytes with its C (yajl2_c) and Python backends (parsing only). Before that, it feeds each
backend the arrays that decide whether it can stand in for the reader: a lone surrogate escape
(half a character: a bad record, never a changed text) and an integer past 64 bits (an id).
Needs ``pip install ijson`` (not a dependency of tagger).
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import tempfile
import time
from pathlib import Path

import ijson

from tagger.errors import InputError
from tagger.reading import read_abstracts

CASES = {
    "lone surrogate": b'[{"abstract": "a half \\ud800 here"}]',
    "integer past 64 bits": b'[{"id": 123456789012345678901234567890, "abstract": "text"}]',
}


def faithfulness() -> None:
    for case, data in CASES.items():
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "a.json"
            path.write_bytes(data)
            try:
                ours = repr([(a.id, a.text) for a in read_abstracts([path])])
            except InputError as error:
                ours = f"error: {error}"
        print(f"{case}: tagger -> {ours}")
        for backend in ("yajl2_c", "python"):
            try:
                got = repr(list(ijson.get_backend(backend).items(io.BytesIO(data), "item", use_float=True)))
            except Exception as error:  # (what each backend raises is the finding)
                got = f"error: {type(error).__name__}: {str(error).splitlines()[0]}"
            print(f"  ijson {backend} -> {got}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("jsonl", type=Path)
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    faithfulness()
    records = [json.loads(line) for line in args.jsonl.open(encoding="utf-8") if line.strip()]
    records = (records * (args.n // len(records) + 1))[: args.n]
    data = json.dumps(records, indent=1, ensure_ascii=False).encode("utf-8")
    times: dict[str, list[float]] = {"tagger (whole read)": [], "ijson yajl2_c": [], "ijson python": []}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "a.json"
        path.write_bytes(data)
        for _ in range(args.repeats):
            for name in times:
                start = time.perf_counter()
                if name.startswith("tagger"):
                    n = sum(1 for _ in read_abstracts([path]))
                else:
                    items = ijson.get_backend(name.split()[1]).items(io.BytesIO(data), "item", use_float=True)
                    n = sum(1 for _ in items)
                times[name].append(time.perf_counter() - start)
                assert n == args.n, (name, n)
    print(f"{args.n:,} records, {len(data) / 1e6:.1f} MB, medians of {args.repeats}:")
    base = statistics.median(times["tagger (whole read)"])
    for name, seconds in times.items():
        median = statistics.median(seconds)
        print(f"  {name:22} {median:6.2f} s  ({median / base:.2f}x tagger's)")


if __name__ == "__main__":
    main()
