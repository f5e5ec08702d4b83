"""A JSON-lines file read in pieces, where it is tagged (``predict --jobs 2`` and more), reads
as it does whole: the same abstracts (ids, positions, lines, titles, kept fields, texts), the
same report (records left out, notes, bytes), the same first error, whether a piece is a range
of the file's bytes read again by offset or, for a compressed file, its bytes handed over."""

import gzip
import json
import pickle
import zlib

import numpy as np
import pytest
from conftest import run
from hypothesis import given
from hypothesis import strategies as st

from tagger import batch
from tagger.errors import InputError
from tagger.reading import Columns, Cutting, ReadReport, read_abstracts, read_pieces


class TextsSeen:
    """A model that answers with what it was given to read: each text's length and checksum,
    so that a text read wrongly in a piece shows."""

    def predict_proba(self, texts):
        return np.array([[len(t), zlib.crc32(t.encode())] for t in texts], dtype=np.float64).reshape(-1, 2)


words = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=30)
record = st.fixed_dictionaries(
    {"abstract": words},
    optional={"id": st.from_regex(r"[a-z0-9]{1,6}", fullmatch=True), "title": words, "venue": words},
)
line = st.one_of(
    record.map(lambda r: json.dumps(r, ensure_ascii=False).encode()),
    record.map(lambda r: json.dumps(r).encode()),
    st.sampled_from(
        [
            b"",  # blank
            b"   ",
            b'{"abstract": "broken',  # not JSON
            b"[1, 2]",  # not an object
            b'{"title": "no abstract here"}',  # left out, counted
            b'{"abstract": "  "}',
            b'{"abstract": "caf\xe9 au lait"}',  # not UTF-8
            b'{"abstract": 7}',
        ]
    ),
)


def whole(path, **options):
    report = ReadReport()
    try:
        found = list(read_abstracts([path], report=report, **options))
    except InputError as error:
        return str(error), None, None
    return (
        None,
        [(a._replace(text=""), len(a.document), zlib.crc32(a.document.encode())) for a in found],
        report,
    )


def cut(path, cutting, **options):
    report = ReadReport()
    items = read_pieces([path], cutting, report=report, **options)
    try:
        blocks = list(batch.tag_blocks(items, TextsSeen(), jobs=1))
    except InputError as error:
        return str(error), None, None
    found = [
        (a._replace(text=""), int(seen[0]), int(seen[1]))
        for chunk, answers in blocks
        for a, seen in zip(chunk, answers)
    ]
    return None, found, report


@given(
    lines=st.lists(line, max_size=25),
    crlf=st.booleans(),
    bom=st.booleans(),
    last_line_end=st.booleans(),
    compressed=st.booleans(),
    skip_bad=st.booleans(),
    keep=st.sampled_from([(), ("venue",), ("venue", "pages")]),
    piece_bytes=st.integers(1, 300),
    head_lines=st.integers(0, 4),
)
def test_a_file_in_pieces_reads_as_it_does_whole(
    tmp_path_factory, lines, crlf, bom, last_line_end, compressed, skip_bad, keep, piece_bytes, head_lines
):
    end = b"\r\n" if crlf else b"\n"
    data = (b"\xef\xbb\xbf" if bom else b"") + end.join(lines) + (end if last_line_end and lines else b"")
    folder = tmp_path_factory.mktemp("pieces")
    path = folder / ("papers.jsonl.gz" if compressed else "papers.jsonl")
    path.write_bytes(gzip.compress(data) if compressed else data)
    options = {"skip_bad": skip_bad, "columns": Columns(keep=keep)}
    error, found, report = whole(path, **options)
    assert cut(path, Cutting(piece_bytes, head_lines), **options) == (error, found, report)


@pytest.mark.parametrize("compressed", [False, True])
def test_errors_and_records_left_out_are_the_same_for_any_number_of_processes(
    capsys, tmp_path, compressed, seed_model_folder
):
    model = ("--model", seed_model_folder)
    kitchen = " in a cluttered kitchen, beside plates and glasses" * 6  # 4,000 rows: 1.3 MB, 3 pieces
    rows = [json.dumps({"abstract": f"Robots grasp cup number {i}{kitchen}."}) for i in range(4000)]
    rows[2500] = '{"abstract": "broken'
    rows[3100] = '{"title": "an editorial"}'
    data = ("\n".join(rows) + "\n").encode()
    path = tmp_path / ("pile.jsonl.gz" if compressed else "pile.jsonl")
    path.write_bytes(gzip.compress(data) if compressed else data)
    said = {}
    for jobs in (1, 2):
        status, _, err = run(
            capsys, "predict", path, "--jobs", jobs, "--output", tmp_path / "tags.csv", *model
        )
        said[jobs, "stop"] = (status, err)
        status, _, err = run(
            capsys,
            "predict",
            path,
            "--jobs",
            jobs,
            "--skip-bad",
            "--output",
            tmp_path / f"tags-{jobs}.csv",
            *model,
        )
        said[jobs, "skip"] = (status, err, (tmp_path / f"tags-{jobs}.csv").read_bytes())
    assert said[1, "stop"] == said[2, "stop"]
    assert said[1, "stop"][0] == 2 and f"{path}:2501: not valid JSON" in said[1, "stop"][1]
    assert said[1, "skip"] == said[2, "skip"]
    assert said[1, "skip"][0] == 3 and said[1, "skip"][2].count(b"\n") == 3998 + 1


@pytest.mark.parametrize("compressed", [False, True])
def test_a_line_over_the_limit_in_a_piece_is_refused_as_in_a_whole_file(
    capsys, tmp_path, compressed, seed_model_folder
):
    from tagger.reading.source import MAX_LINE_BYTES

    model = ("--model", seed_model_folder)
    rows = [json.dumps({"abstract": f"Bandits with delays, case {i}."}) for i in range(300)]
    rows[149] = json.dumps(
        {"abstract": "word " * (MAX_LINE_BYTES // 5 + 10)}
    )  # line 150: past the first lines
    data = ("\n".join(rows) + "\n").encode()
    path = tmp_path / ("pile.jsonl.gz" if compressed else "pile.jsonl")
    path.write_bytes(gzip.compress(data) if compressed else data)
    for jobs in (1, 2):
        status, _, err = run(
            capsys, "predict", path, "--jobs", jobs, "--output", tmp_path / "tags.csv", *model
        )
        assert status == 2 and f"{path}:150: a line of over {MAX_LINE_BYTES:,} bytes" in err
        status, _, err = run(
            capsys, "predict", path, "--jobs", jobs, "--skip-bad", "-o", tmp_path / f"{jobs}.csv", *model
        )
        assert status == 3 and f"{path}:150" in err
    assert (tmp_path / "1.csv").read_bytes() == (tmp_path / "2.csv").read_bytes()
    assert (tmp_path / "1.csv").read_bytes().count(b"\n") == 299 + 1


def test_workers_are_forked_with_the_lookup_tables_built(seed_model, tmp_path, monkeypatch):
    """The first unit, tagged here before the workers are forked, may be too small to build
    the model's lookup tables (a file's first lines): they are built before the fork all the
    same, so that the workers share them instead of each building its own."""
    from tagger import workers

    path = tmp_path / "pile.jsonl"
    path.write_text(
        "".join(json.dumps({"abstract": f"Robots grasp cup {i} in a kitchen."}) + "\n" for i in range(3000))
    )
    model = pickle.loads(pickle.dumps(seed_model))  # its tables not built yet
    built_at_start = []
    original = workers.Pool.start

    def start(payload, size, **options):
        built_at_start.append(payload.features._tables is not None)
        return original(payload, size, **options)

    monkeypatch.setattr(workers.Pool, "start", staticmethod(start))
    monkeypatch.setattr(batch, "can_fork", lambda: True)
    units = read_pieces([path], Cutting(piece_bytes=20_000, head_lines=3))
    assert sum(len(chunk) for chunk, _ in batch.tag_blocks(units, model, jobs=2)) == 3000
    assert built_at_start == [True]


def _feed(path, prefix, n=400):
    path.write_text(
        "".join(
            json.dumps({"id": f"{prefix}{i}", "abstract": f"Robots grasp cups, {prefix} {i}."}) + "\n"
            for i in range(n)
        )
    )


def _cut_then(path, change):
    """Cut ``path`` into pieces as a run with workers does, ``change`` the file before any
    piece is read, then read and put back every piece: the ids, or the error."""
    from tagger.reading.pieces import FileEnd, PieceTask, read_piece

    items = list(read_pieces([path], Cutting(piece_bytes=2048, head_lines=10)))
    change()
    ids = []
    try:
        for item in items:
            if isinstance(item, PieceTask):
                read = read_piece(item.piece)
                ids += [a.id for a in item.merge(read)]
                if read.error is not None:
                    raise read.error
            elif isinstance(item, FileEnd):
                item.finish()
            else:
                ids.append(item.id)
    except InputError as error:
        return str(error)
    return ids


def test_pieces_are_read_from_the_file_the_run_opened_whatever_happens_to_its_path(tmp_path):
    """The file replaced (``mv new feed.jsonl``) or deleted after it was cut: its pieces are
    still the bytes of the file the run opened, never another file's under its name."""
    feed, other = tmp_path / "feed.jsonl", tmp_path / "other.jsonl"
    _feed(feed, "a")
    expected = [f"a{i}" for i in range(400)]
    for change in (lambda: (_feed(other, "b"), other.replace(feed)), feed.unlink):
        _feed(feed, "a")
        assert _cut_then(feed, change) == expected


def test_a_file_written_to_while_it_is_read_in_pieces_stops_the_run_with_one_clear_line(tmp_path):
    feed = tmp_path / "feed.jsonl"
    _feed(feed, "a")

    def rewrite_in_place():  # the same file (inode), other bytes: cp b.jsonl feed.jsonl
        with open(feed, "r+b") as stream:
            stream.write(b'{"id": "b0", "abstract": "Overwritten while being read."}\n')

    error = _cut_then(feed, rewrite_in_place)
    assert error == (
        f"{feed}: changed while it was being read (written to, replaced or moved): its rows would mix "
        "two files. Tag a copy that nothing writes to while it is read."
    )


def test_a_rewrite_in_place_with_its_old_time_set_back_is_noticed(tmp_path):
    """rsync --inplace -t or touch -r: the same size and modification time, other bytes; the
    change of the file's status is what tells (a run read 9,921 rows of the new bytes)."""
    import os
    import time

    from tagger.errors import InputError
    from tagger.reading.pieces import OpenedFile

    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"abstract": "We train robots."}\n')
    before = os.stat(path)
    with open(path, "rb") as stream:
        opened = OpenedFile.of(path, stream, owner=stream)
        opened.check("a.jsonl")  # unchanged: read on
        time.sleep(0.05)  # (a status change's time is coarser than a nanosecond)
        with open(path, "r+b") as rewrite:
            rewrite.write(b'{"abstract": "We jail LLMs."}\n'.ljust(before.st_size - 1) + b"\n")
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert (os.stat(path).st_size, os.stat(path).st_mtime_ns) == (before.st_size, before.st_mtime_ns)
        with pytest.raises(InputError, match="changed while it was being read"):
            opened.check("a.jsonl")
