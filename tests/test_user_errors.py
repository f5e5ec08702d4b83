"""Anything a user can cause ends in one clear line and a status of the README's table, never in
an internal error (70) or a traceback: the reproductions of a hostile read of the command line."""

import csv
import io
import json
import os
import threading

import pytest
from conftest import ROOT, SEED_FILES, copy_project, run

from tagger.cli import main


def one_line(err: str) -> str:
    assert err.startswith("tagger: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.isprintable() or err[:-1].isprintable(), err
    return err


def test_a_lone_surrogate_in_json_lines_is_a_bad_record(capsys, tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"abstract": "Robots grasp cups."}\n{"abstract": "Broken \\ud800 text."}\n')
    status, _, err = run(capsys, "predict", path)
    assert status == 2 and "a.jsonl:2: " in one_line(err) and "surrogate" in err
    status, out, err = run(capsys, "predict", path, "--skip-bad")
    assert status == 3 and len(out.splitlines()) == 2


def test_a_lone_surrogate_in_a_kept_field_is_a_bad_record(capsys, tmp_path):
    path = tmp_path / "a.json"
    path.write_text('[{"abstract": "Robots grasp cups.", "note": "x\\udfff"}]')
    status, _, err = run(capsys, "predict", path, "--keep", "all")
    assert status == 2 and "surrogate" in one_line(err)


@pytest.mark.skipif(os.name == "nt", reason="file names are bytes on POSIX only")
def test_a_file_name_that_is_not_utf8_is_written_escaped(capsys, tmp_path):
    name = os.fsdecode(b"caf\xe9.txt")
    (tmp_path / name).write_text("Robots learn to grasp cups from human video.\n")
    status, _, err = run(capsys, "predict", tmp_path / name, "-o", tmp_path / "out.csv")
    assert status == 0, err
    text = (tmp_path / "out.csv").read_text(encoding="utf-8")
    assert "caf\\xe9.txt" in text
    status, out, _ = run(capsys, "predict", tmp_path / name)
    assert status == 0 and "caf\\xe9.txt" in out


@pytest.mark.slow  # trains end to end
def test_a_pile_of_labelled_abstracts_only_trains_without_self_training(capsys, tmp_path, monkeypatch):
    copy_project(tmp_path, ("labels", "seeds"))
    monkeypatch.chdir(tmp_path)
    status, _, err = run(capsys, "train", "--unlabelled", "seeds", "--model", "m")
    assert status == 0, err
    assert "no unlabelled abstract" in err and (tmp_path / "m" / "model.json").exists()


def test_a_parquet_file_with_two_abstract_columns_is_refused(capsys, tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.Table.from_arrays([pa.array(["Robots."]), pa.array(["Cups."])], names=["abstract", "abstract"])
    pq.write_table(table, tmp_path / "two.parquet")
    status, _, err = run(capsys, "predict", tmp_path / "two.parquet")
    assert status == 2 and "two.parquet" in one_line(err) and "'abstract'" in err


def test_bytes_inside_a_kept_struct_are_written(capsys, tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    meta = pa.array([{"raw": b"\x00\x01"}], pa.struct([("raw", pa.binary())]))
    table = pa.Table.from_arrays([pa.array(["Robots grasp cups."]), meta], names=["abstract", "meta"])
    pq.write_table(table, tmp_path / "p.parquet")
    for suffix in ("csv", "jsonl", "parquet"):
        status, _, err = run(
            capsys, "predict", tmp_path / "p.parquet", "--keep", "all", "-o", tmp_path / f"o.{suffix}"
        )
        assert status == 0, (suffix, err)


def test_the_command_line_runs_from_a_thread(capsys, tmp_path):
    result = {}
    thread = threading.Thread(
        target=lambda: result.update(
            status=main(["predict", *map(str, SEED_FILES), "-o", str(tmp_path / "t.csv")])
        )
    )
    thread.start()
    thread.join(60)
    assert result["status"] == 0 and len((tmp_path / "t.csv").read_text().splitlines()) == 39


def test_a_corrupt_parquet_page_is_one_clear_line_and_skippable(capsys, tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    texts = [f"Robots grasp cup number {i} with tactile sensing." for i in range(2000)]
    pq.write_table(pa.table({"abstract": texts}), tmp_path / "bad.parquet", compression="none")
    data = bytearray((tmp_path / "bad.parquet").read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = b"\x0f" * 64  # a data page's bytes garbled
    (tmp_path / "bad.parquet").write_bytes(bytes(data))
    (tmp_path / "good.jsonl").write_text(json.dumps({"abstract": "Bandits have regret."}) + "\n")
    status, _, err = run(capsys, "predict", tmp_path)
    assert status == 2 and "bad.parquet" in one_line(err) and "\x0f" not in err
    status, out, err = run(capsys, "predict", tmp_path, "--skip-bad")
    assert status == 3 and "good.jsonl" in out


def test_a_read_only_abstracts_folder_names_the_file_not_a_temporary_one(capsys, tmp_path, monkeypatch):
    copy_project(tmp_path, ("labels", "seeds", "models"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pile.txt").write_text("Robots learn grasping from human video demonstrations.\n")
    import tagger.atomic

    def refuse(path, *args, **kwargs):
        raise OSError(30, "Read-only file system", str(path))  # as os.open does: naming the temporary file

    monkeypatch.setattr(tagger.atomic.os, "open", refuse)
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("robotics\n"))
    status = main(["label", "pile.txt"])
    err = capsys.readouterr().err
    assert status == 2 and ".tmp" not in err and "labelled.jsonl" in err and "Read-only file system" in err


def test_a_read_only_model_folder_is_refused_before_training(capsys, tmp_path, monkeypatch):
    copy_project(tmp_path, ("labels", "seeds"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m").mkdir()
    monkeypatch.setattr("os.access", lambda path, mode, **kw: not str(path).endswith("m"))
    import tagger.training

    monkeypatch.setattr(tagger.training, "train", lambda *a, **k: pytest.fail("trained before checking"))
    status, _, err = run(capsys, "train", "--model", "m")
    assert status == 2 and "m: cannot write" in one_line(err)


def test_json_errors_end_in_a_whole_sentence(capsys, tmp_path):
    (tmp_path / "a.jsonl").write_text('{"abstract": "Robots grasp cups.')
    status, _, err = run(capsys, "predict", tmp_path / "a.jsonl")
    assert status == 2 and "(Unterminated string starting at column 14)" in one_line(err)
    (tmp_path / "a.jsonl").write_text('{"abstract": "Robots grasp cups.\n')
    status, _, err = run(capsys, "predict", tmp_path / "a.jsonl")
    assert status == 2 and "(Invalid control character at column 33)" in one_line(err)


def test_the_note_of_columns_not_written_is_short(capsys, tmp_path):
    records = [{"abstract": "Robots grasp cups."}] * 600 + [
        {"abstract": "Cells divide.", **{f"c{i}": i for i in range(3000)}}
    ]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    status, _, err = run(capsys, "predict", tmp_path / "a.jsonl", "--keep", "all", "-o", tmp_path / "o.csv")
    note = next(line for line in err.splitlines() if "not written" in line)
    assert status == 0 and len(note) < 300 and "3,000 input column(s)" in note


def test_an_output_inside_an_input_folder_is_refused(capsys, tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text("Robots grasp cups.\n")
    status, _, err = run(capsys, "predict", tmp_path / "d", "-o", tmp_path / "d" / "new.txt")
    assert status == 2 and "inside an input folder" in one_line(err)
    assert not (tmp_path / "d" / "new.txt").exists()


def test_a_full_disk_names_the_file_being_written(tmp_path):
    """A write that really fails (files of this process may hold 1,000 bytes at most, for the
    moment, as on a disk that fills): the error names the file meant, not the temporary one,
    and nothing is left behind."""
    import errno
    import resource
    import signal

    from tagger.atomic import atomic_write

    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails, not kills
    resource.setrlimit(resource.RLIMIT_FSIZE, (1000, hard))
    try:
        with pytest.raises(OSError) as caught, atomic_write(tmp_path / "labels.csv") as stream:
            stream.write("abstract_id,area\n" * 1000)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)
    assert caught.value.filename == str(tmp_path / "labels.csv") and caught.value.errno == errno.EFBIG
    assert not list(tmp_path.iterdir())


@pytest.mark.slow  # over 5 s on 2 shared cores: in the slow run, with the other long tests
def test_a_book_in_the_pile_is_learnt_from_by_its_start():
    from tagger.labels import load_training_set
    from tagger.plan import PLAN
    from tagger.selftraining import self_train

    TEXT_MAX = PLAN.self_training.text_max
    from tagger.settings import TrainingSettings

    book = " ".join(["robots grasp cups with tactile sensing and vision"] * 100_000)
    training_set = load_training_set(ROOT / "labels", [ROOT / "seeds"])
    pile = [book, "Diffusion models generate images.", "Bandits have regret bounds.", "Proteins fold."]
    learnt, record = self_train(training_set, pile, TrainingSettings())
    assert record is not None and max(map(len, learnt.pseudo_texts)) <= TEXT_MAX < len(book)


def test_explain_reads_its_input_as_it_goes():
    import itertools

    from tagger import load_model
    from tagger.cli import _explained
    from tagger.reading import Abstract

    endless = (Abstract(str(i), f"Robots grasp cup {i}.", "<gen>", i, i) for i in itertools.count())
    first = list(itertools.islice(_explained(endless, load_model()), 3))
    assert [a.id for a, _ in first] == ["0", "1", "2"] and all(p.top_terms for _, p in first)


def test_skipping_a_bad_record_keeps_the_positions_of_the_input(capsys, tmp_path):
    path = tmp_path / "pile.jsonl"
    path.write_text(
        '{"abstract": "Robots grasp cups."}\n{"abstract": 3}\n{"abstract": "We prove a regret bound."}\n',
        encoding="utf-8",
    )
    status, out, err = run(capsys, "predict", path, "--skip-bad")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert status == 3 and "skipped 1 bad record(s)" in err
    assert [int(r["position"]) for r in rows] == [1, 3]  # as in the input: rows join back by position


def test_keeping_a_column_the_file_does_not_have_is_an_error_with_close_matches(capsys, tmp_path):
    path = tmp_path / "papers.csv"
    path.write_text("title,abstract,doi\nGrasping,Robots grasp cups.,10.1/x\n", encoding="utf-8")
    status, out, err = run(capsys, "predict", path, "--keep", "tilte")
    assert (status, out) == (2, "")
    assert err == (
        f"tagger: {path}:1: no column 'tilte' to keep (columns: 'title', 'abstract', 'doi'); "
        "did you mean 'title'? Name in --keep columns the file has (or --keep all).\n"
    )
    status, out, _ = run(capsys, "predict", path, "--keep", "DOI")  # (any case)
    assert status == 0 and out.splitlines()[1].endswith(",10.1/x")


@pytest.mark.parametrize("name", ["pile.jsonl", "pile.json"])
def test_keeping_a_field_misspelt_in_json_is_an_error_and_one_no_record_has_is_noted(capsys, tmp_path, name):
    records = [
        {"title": "Grasping", "abstract": "Robots grasp cups."},
        {"title": "Bandits", "abstract": "We prove a regret bound.", "venue": "COLT"},
    ]
    path = tmp_path / name
    text = json.dumps(records) if name.endswith(".json") else "".join(json.dumps(r) + "\n" for r in records)
    path.write_text(text, encoding="utf-8")
    status, out, err = run(capsys, "predict", path, "--keep", "tilte")
    assert (status, out) == (2, "")
    assert err == (
        f"tagger: {path}:1: no field 'tilte' to keep (fields: 'title', 'abstract'); did you mean 'title'? "
        "Name in --keep fields the file has (or --keep all).\n"
    )
    # A field some records lack is kept where they have it; one no record has is said.
    status, out, err = run(capsys, "predict", path, "--keep", "venue,pages")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert (
        status == 0 and [r["venue"] for r in rows] == ["", "COLT"] and [r["pages"] for r in rows] == ["", ""]
    )
    assert f"note: {path}: no record has a field 'pages' (kept empty)\n" in err


def test_an_atomic_write_never_changes_the_umask_and_keeps_a_files_permissions(tmp_path, monkeypatch):
    """Another thread (the page's server, a retrain) creating a file meanwhile must get the
    user's umask, never 0: the write does not touch the umask at all."""
    import os

    import tagger.atomic
    from tagger.atomic import atomic_write

    mask = os.umask(0o022)
    os.umask(mask)
    monkeypatch.setattr(tagger.atomic.os, "umask", lambda mask: pytest.fail("the umask was changed"))
    with atomic_write(tmp_path / "new.csv") as stream:
        stream.write("x\n")
    assert (tmp_path / "new.csv").stat().st_mode & 0o777 == 0o666 & ~mask
    (tmp_path / "open.csv").write_text("x\n")
    os.chmod(tmp_path / "open.csv", 0o640)
    with atomic_write(tmp_path / "open.csv") as stream:
        stream.write("y\n")
    assert (tmp_path / "open.csv").stat().st_mode & 0o777 == 0o640


def test_a_labels_file_that_is_a_link_is_written_through_the_link(tmp_path):
    from tagger.labelstore import ProjectLabels
    from tagger.reading import Abstract

    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "labels.csv").write_text("abstract_id,area,title,annotator,labelled_at\n")
    (tmp_path / "labels").mkdir()
    (tmp_path / "labels" / "labels.csv").symlink_to(shared / "labels.csv")
    ProjectLabels(tmp_path / "labels", tmp_path / "seeds", annotator="ana").add(
        Abstract("p1", "Robots grasp cups.", "p.jsonl", 1, 1), "robotics"
    )
    assert (tmp_path / "labels" / "labels.csv").is_symlink()
    assert "robotics" in (shared / "labels.csv").read_text()


@pytest.mark.parametrize(
    ("option", "argument", "bad"),
    [("--review-below", "review_below", "1.5"), ("--min-confidence", "min_confidence", "-0.1")],
)
def test_an_option_and_its_python_argument_take_the_same_numbers(capsys, tmp_path, option, argument, bad):
    """The command line's option and Python's argument of one name refuse the same values in
    the same words, from one table of numbers (tagger.checks.RANGES)."""
    import tagger
    from tagger.errors import UsageError

    (tmp_path / "a.txt").write_text("Robots grasp cups.\n")
    extra = ["--top-k", "2"] if argument == "min_confidence" else []
    status, _, err = run(capsys, "predict", tmp_path / "a.txt", option, bad, *extra)
    assert status == 1 and "Use a number from 0 to 1." in err  # (1: a usage error)
    with pytest.raises(UsageError, match=r"Use a number from 0 to 1\."):
        if argument == "review_below":
            tagger.predict("Robots grasp cups.", review_below=float(bad))
        else:
            tagger.predict("Robots grasp cups.").top(2, min_confidence=float(bad))
