"""A file tagged on several processes reads as it does on one (the same rows, the same
errors and records left out), and a file written to while it is read stops the run."""

import gzip
import json
import os
import pickle
import time

import pytest
from conftest import run

from tagger import batch
from tagger.errors import InputError
from tagger.reading import read_abstracts


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
def test_a_line_over_the_limit_is_refused_whatever_the_number_of_processes(
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
    original = workers.Pool.__init__

    def start(pool, payload, *args, **options):
        built_at_start.append(payload.features._tables is not None)
        original(pool, payload, *args, **options)

    monkeypatch.setattr(workers.Pool, "__init__", start)
    monkeypatch.setattr(batch, "can_fork", lambda: True)
    units = read_abstracts([path])
    assert sum(len(chunk) for chunk, _ in batch.tag_blocks(units, model, jobs=2)) == 3000
    assert built_at_start == [True]


def _feed(path, prefix, n=400):
    path.write_text(
        "".join(
            json.dumps({"id": f"{prefix}{i}", "abstract": f"Robots grasp cups, {prefix} {i}."}) + "\n"
            for i in range(n)
        )
    )


def _read_then(path, change):
    """Read ``path``'s first abstract, ``change`` the file, then read on: the ids, or the error."""
    read = read_abstracts([path])
    ids = [next(read).id]
    change()
    try:
        ids += [a.id for a in read]
    except InputError as error:
        return str(error)
    return ids


def test_a_file_replaced_or_deleted_while_it_is_read_is_read_to_its_end(tmp_path):
    """The file replaced (``mv new feed.jsonl``) or deleted once opened: the run reads on the
    bytes of the file it opened, never another file's under its name."""
    feed, other = tmp_path / "feed.jsonl", tmp_path / "other.jsonl"
    expected = [f"a{i}" for i in range(400)]
    for change in (lambda: (_feed(other, "b"), other.replace(feed)), feed.unlink):
        _feed(feed, "a")
        assert _read_then(feed, change) == expected


def _rewrite(feed, keep_time=False):
    def change():  # the same file (inode), other bytes: cp b.jsonl feed.jsonl, or rsync --inplace -t
        before = os.stat(feed)
        time.sleep(0.05)  # (a status change's time is coarser than a nanosecond)
        with open(feed, "r+b") as stream:
            stream.write(b'{"id": "b0", "abstract": "Overwritten while being read."}\n')
        if keep_time:
            os.utime(feed, ns=(before.st_atime_ns, before.st_mtime_ns))
            assert (os.stat(feed).st_size, os.stat(feed).st_mtime_ns) == (before.st_size, before.st_mtime_ns)

    return change


@pytest.mark.parametrize("keep_time", [False, True])
def test_a_file_written_to_while_it_is_read_stops_the_run_with_one_clear_line(tmp_path, keep_time):
    """Its rows would mix two versions of it; with its old modification time set back
    (``rsync --inplace -t``, ``touch -r``: a run read 9,921 rows of the new bytes), the time
    of its status change tells."""
    feed = tmp_path / "feed.jsonl"
    _feed(feed, "a", n=20_000)  # (more than the reader's buffer: the change is read)
    assert _read_then(feed, _rewrite(feed, keep_time)) == (
        f"{feed}: was written to while it was being read: its rows would mix two versions of it. "
        "Tag a copy that nothing writes to while it is read."
    )
