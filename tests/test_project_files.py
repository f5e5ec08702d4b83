"""A command's output never replaces a file of the project (the taxonomy, the labels, the
labelled abstracts' texts, the model) or an input of the same run; ``tagger labels -o``
writes the format its name says, through the one writer of every output."""

import csv
import gzip
import json

import pandas as pd
import pytest
from conftest import copy_project, run


@pytest.fixture
def project(tmp_path, monkeypatch):
    copy_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _snapshot(folder):
    return {path: path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.mark.parametrize(
    "target",
    [
        "labels/labels.csv",
        "labels/areas.csv",
        "labels/new.csv",
        "seeds/neurips2026-seeds.txt",
        "seeds/more.jsonl",
        "models/card.json",
        "models/tags.csv",
    ],
)
@pytest.mark.parametrize(
    "command", [["labels", "-o"], ["predict", "pile.jsonl", "-o"], ["report", "tags.csv", "-o"]]
)
def test_no_command_writes_into_the_projects_own_files(project, capsys, command, target):
    (project / "pile.jsonl").write_text(json.dumps({"abstract": "Robots grasp cups."}) + "\n")
    (project / "tags.csv").write_text("")
    status, _, _ = run(capsys, "predict", "pile.jsonl", "-o", "tags.csv")
    assert status == 0
    before = _snapshot(project)
    status, out, err = run(capsys, *command, target)
    assert status != 0 and out == ""
    assert err.startswith(f"tagger: {target}: is a file of this project") or err.startswith(
        f"tagger: {target}: is inside this project's"
    ), err
    assert "Choose another" in err and len(err.splitlines()) == 1
    assert _snapshot(project) == before


def test_the_labels_export_still_writes_beside_the_project(project, capsys):
    status, _, err = run(capsys, "labels", "-o", "exported.jsonl")
    assert status == 0 and "wrote exported.jsonl" in err
    assert len((project / "exported.jsonl").read_text().splitlines()) == 38


@pytest.mark.parametrize(
    "name",
    ["labels.csv", "labels.csv.gz", "labels.jsonl.gz", "labels.parquet", "labels.jsonl", "labels.xlsx"],
)
def test_the_labels_export_is_written_in_the_format_its_name_says(project, capsys, name):
    status, _, _ = run(capsys, "labels", "-o", name)
    assert status == 0
    status, out, _ = run(capsys, "labels")
    expected = pd.DataFrame([json.loads(line) for line in out.splitlines()])
    path = project / name
    if name.endswith(".parquet"):
        read = pd.read_parquet(path)
    elif name.endswith(".xlsx"):
        read = pd.read_excel(path, dtype=str, keep_default_na=False)
    elif ".csv" in name:
        read = pd.read_csv(path, dtype=str, keep_default_na=False)
        with gzip.open(path, "rt") if name.endswith(".gz") else open(path) as stream:
            assert next(csv.reader(stream))[:2] == ["abstract_id", "area"]
    else:
        read = pd.read_json(path, lines=True, dtype=False)
    assert list(read.columns) == list(expected.columns)
    pd.testing.assert_frame_equal(read.astype(str), expected.astype(str))


def test_the_labels_export_refuses_a_name_of_no_format(project, capsys):
    status, _, err = run(capsys, "labels", "-o", "labels.xls")
    assert status != 0 and "cannot tell which format to write" in err
    assert not (project / "labels.xls").exists()


@pytest.mark.parametrize("folder", ["seeds/p", "labels", "labels/team", "seeds"])
def test_init_never_makes_a_project_inside_the_project_s_own_folders(project, capsys, folder):
    """``tagger init seeds/p`` wrote a project's labels into seeds/, after which every command
    failed (``seeds/p/labels/areas.csv:1: no 'abstract' column``)."""
    before = _snapshot(project)
    status, _, err = run(capsys, "init", folder)
    assert status == 1 and f"tagger: {folder} is inside this project's {folder.split('/')[0]}/ (" in err
    assert "Run 'tagger init' in a folder outside" in err and _snapshot(project) == before
    assert run(capsys, "init", "elsewhere")[0] == 0  # (beside the project: a project of its own)
