import csv
import io
import json
import subprocess
import sys

import pytest
from conftest import LABELS, SEEDS

from tagger import load_model
from tagger.cli import main
from tagger.corpus import read_abstracts
from tagger.output import COLUMNS

SEED_ABSTRACTS = list(read_abstracts([SEEDS]))


def run(capsys, *args):
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out, err


def test_predict_tags_every_seed_in_order(capsys, shipped):
    status, out, err = run(capsys, "predict", SEEDS)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert status == 0
    assert tuple(rows[0]) == COLUMNS
    assert [(r["source"], int(r["position"]), r["id"]) for r in rows] == [
        (a.source, a.position, a.id) for a in SEED_ABSTRACTS
    ]
    assert [r["area"] for r in rows] == [p.area for p in shipped.predict([a.text for a in SEED_ABSTRACTS])]
    for r in rows:
        assert 0 <= float(r["runner_up_confidence"]) <= float(r["confidence"]) <= 1
        assert r["runner_up"] in shipped.areas and r["runner_up"] != r["area"]
    assert err.startswith("tagged 38 abstract(s); 2 heading(s) not tagged: ")


def test_predict_writes_jsonl_to_a_file(capsys, tmp_path):
    target = tmp_path / "tags.jsonl"
    status, out, _ = run(capsys, "predict", SEEDS / "neurips2026-a.txt", "--format", "jsonl", "--output", target)
    assert status == 0 and out == ""
    rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 19 and list(rows[0]) == list(COLUMNS)
    assert [r["position"] for r in rows] == list(range(1, 20))


def test_predict_reads_stdin(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("Robots learn to grasp cups from demonstrations.\n"))
    status, out, _ = run(capsys, "predict", "-", "--format", "jsonl")
    row = json.loads(out)
    assert status == 0 and row["source"] == "<stdin>" and row["area"] == "robotics"


def test_predict_reads_csv_and_jsonl_with_their_ids(capsys, tmp_path):
    (tmp_path / "a.csv").write_text("id,abstract\nx1,Quantization of LLM weights on GPUs.\n", encoding="utf-8")
    (tmp_path / "b.jsonl").write_text('{"id": "y2", "abstract": "Gaussian processes."}\n', encoding="utf-8")
    status, out, _ = run(capsys, "predict", tmp_path)
    assert status == 0
    assert [r["id"] for r in csv.DictReader(io.StringIO(out))] == ["x1", "y2"]


def test_train_then_predict_with_the_new_model(capsys, tmp_path, shipped):
    status, _, err = run(capsys, "train", "--labels", LABELS, "--abstracts", SEEDS, "--model", tmp_path)
    assert status == 0
    assert "trained on 38 labelled abstracts; leave-one-out: accuracy" in err
    assert load_model(tmp_path).card["training_data"]["sha256"] == shipped.card["training_data"]["sha256"]
    status, out, _ = run(capsys, "predict", SEEDS, "--model", tmp_path)
    assert status == 0 and len(out.splitlines()) == 39


def test_evaluate_prints_figures_and_a_table(capsys):
    status, out, _ = run(capsys, "evaluate", "--labels", LABELS, "--abstracts", SEEDS)
    assert status == 0
    assert out.startswith("leave-one-out on 38 labelled abstracts\naccuracy  ")
    accuracy = float(out.splitlines()[1].split()[1])
    assert accuracy >= 0.65
    assert "probabilistic" in out and "precision" in out


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["predict", "no-such-file.txt"], 2, "tagger: no-such-file.txt: no such file or directory."),
        (["predict"], 1, "tagger: the following arguments are required: PATH."),
        (["predict", "x", "--format", "xml"], 1, "tagger: argument --format: invalid choice"),
        (["frobnicate"], 1, "tagger: argument command: invalid choice"),
        (["predict", SEEDS, "--model", "no-model-here"], 2, "tagger: no-model-here: no model here"),
    ],
)
def test_errors_are_one_line_with_a_status(capsys, args, status, message):
    code, out, err = run(capsys, *args)
    assert code == status
    assert err.startswith(message) and err.count("\n") == 1 and "Traceback" not in err


def test_the_installed_command_runs_in_a_new_process(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "tagger", "predict", str(SEEDS)], capture_output=True, text=True, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 39
