import csv
import io
import json
import subprocess
import sys

import pytest
from conftest import LABELS, ROOT, SEED_FILES, SEEDS, copy_project, run

from tagger import load_model
from tagger.output import COLUMNS
from tagger.reading import read_abstracts

SEED_ABSTRACTS = list(read_abstracts(SEED_FILES))


def test_predict_tags_every_seed_in_order(capsys, shipped):
    status, out, err = run(capsys, "predict", *SEED_FILES)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert status == 0
    assert tuple(rows[0]) == (*COLUMNS, "tags")
    assert [(r["source"], int(r["position"]), r["id"]) for r in rows] == [
        (a.source, a.position, a.id) for a in SEED_ABSTRACTS
    ]
    assert [r["area"] for r in rows] == [p.area for p in shipped.predict([a.text for a in SEED_ABSTRACTS])]
    for r in rows:
        assert 0 <= float(r["runner_up_confidence"]) <= float(r["confidence"]) <= 1
        assert r["runner_up"] in shipped.areas and r["runner_up"] != r["area"]
    predictions = shipped.predict([a.text for a in SEED_ABSTRACTS])
    flagged = [p.needs_review for p in predictions]
    assert [r["needs_review"] for r in rows] == [str(flag) for flag in flagged]
    # tags: the area, and the runner-up too when it is at least 0.15 likely
    assert [r["tags"] for r in rows] == [
        ";".join(f"{a}:{round(c, 4)}" for a, c in p.tags) for p in predictions
    ]
    for r in rows:
        expected = [r["area"]] + ([r["runner_up"]] if float(r["runner_up_confidence"]) >= 0.15 else [])
        assert [tag.split(":")[0] for tag in r["tags"].split(";")] == expected
    assert err.startswith("tagged 38 abstract(s) from 2 file(s) (2 heading(s) skipped): llm 9, ")
    summary, which = err.splitlines()
    assert summary.endswith(f"; {sum(flagged)} need review (confidence below {shipped.review_threshold:.2f})")
    card = shipped.card  # which model tagged: said on every run
    assert (
        which.startswith("model: ") and f"on 6121 labelled abstracts of {card.training_data.origin}" in which
    )
    assert card.created[:10] in which


def test_predict_flags_abstracts_below_the_review_threshold(capsys):
    status, out, err = run(capsys, "predict", *SEED_FILES, "--review-below", "1")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert status == 0 and all(r["needs_review"] == "True" for r in rows)
    assert err.splitlines()[0].endswith("; 38 need review (confidence below 1.00)")


def test_predict_writes_jsonl_to_a_file(capsys, tmp_path):
    target = tmp_path / "tags.jsonl"
    status, out, _ = run(
        capsys, "predict", SEEDS / "neurips2026-a.txt", "--format", "jsonl", "--output", target
    )
    assert status == 0 and out == ""
    rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 19 and list(rows[0]) == [*COLUMNS, "tags"]
    assert [r["position"] for r in rows] == list(range(1, 20))


def test_predict_reads_stdin(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("Robots learn to grasp cups from demonstrations.\n"))
    status, out, _ = run(capsys, "predict", "-", "--format", "jsonl")
    row = json.loads(out)
    assert status == 0 and row["source"] == "<stdin>" and row["area"] == "robotics"


def test_predict_reads_csv_and_jsonl_with_their_ids(capsys, tmp_path):
    (tmp_path / "a.csv").write_text(
        "id,abstract\nx1,Quantization of LLM weights on GPUs.\n", encoding="utf-8"
    )
    (tmp_path / "b.jsonl").write_text('{"id": "y2", "abstract": "Gaussian processes."}\n', encoding="utf-8")
    status, out, _ = run(capsys, "predict", tmp_path)
    assert status == 0
    assert [r["id"] for r in csv.DictReader(io.StringIO(out))] == ["x1", "y2"]


@pytest.mark.slow
def test_train_then_predict_with_the_new_model(capsys, tmp_path, seed_project, seed_set):
    labels, seeds = seed_project / "labels", seed_project / "seeds"
    status, _, err = run(capsys, "train", "--labels", labels, "--abstracts", seeds, "--model", tmp_path)
    assert status == 0
    assert "trained on 38 labelled abstracts; leave-one-out: accuracy" in err
    # no model there yet: compared with the model that tagged until now, the shipped one
    assert "before     after" in err and "labelled-abstracts        6121        38" in err
    assert load_model(tmp_path).card.training_data.sha256 == seed_set.fingerprint()
    status, _, err = run(capsys, "train", "--labels", labels, "--abstracts", seeds, "--model", tmp_path)
    assert status == 0
    assert "before     after" in err and "0 of 38 abstracts changed area" in err
    assert "new since the previous model" not in err  # no label is new
    status, out, _ = run(capsys, "predict", *SEED_FILES, "--model", tmp_path)
    assert status == 0 and len(out.splitlines()) == 39


@pytest.mark.slow  # trains
def test_a_retrain_says_how_the_models_do_on_the_new_labels(capsys, tmp_path):
    from tagger.labelstore import ProjectLabels
    from tagger.reading import Abstract

    project = copy_project(tmp_path, ("labels", "seeds"))
    model = project / "model"
    train_here = ("train", "--labels", project / "labels", "--abstracts", project / "seeds", "--model", model)
    assert run(capsys, *train_here)[0] == 0
    before = load_model(model)
    new = [
        ("Robots grasp cups with a two-finger gripper on a mobile manipulator.", "robotics"),
        ("We prove a regret bound for contextual bandits with linear rewards.", "theory"),
        ("A diffusion model generates images of anime faces from text prompts.", "generative"),
    ]
    store = ProjectLabels(project / "labels", project / "seeds")
    for k, (text, area) in enumerate(new):
        store.add(Abstract(f"n{k}", text, "mine.jsonl", k, k), area)
    status, _, err = run(capsys, *train_here)
    assert status == 0
    added = load_model(model).card.evaluation.new_labels
    assert added.labelled == 3 and 0 <= added.accuracy <= 1
    right = sum(p.area == area for p, (_, area) in zip(before.predict([t for t, _ in new]), new))
    assert (
        f"on the 3 label(s) new since the previous model: it tagged {right} ({right / 3:.0%}) right; "
        f"the new model, cross-validated, {added.accuracy:.0%}"
    ) in err


@pytest.mark.slow  # trains end to end
def test_evaluate_prints_figures_tables_and_suspect_labels(capsys, tmp_path, shipped):
    status, out, err = run(capsys, "evaluate", "--labels", LABELS, "--abstracts", SEEDS, "--plots", tmp_path)
    assert status == 0
    lines = out.splitlines()
    assert lines[0] == "stratified 5-fold on 6121 labelled abstracts"
    figures = {line.split()[0]: float(line.split()[1]) for line in lines[1:5] if not line.startswith("top-k")}
    assert lines[2] == f"top-k     top-2 {shipped.card.evaluation.top_k['2']:.3f}, top-3 " + (
        f"{shipped.card.evaluation.top_k['3']:.3f}   (the labelled area among the k likeliest)"
    )
    assert figures == pytest.approx(
        {
            "accuracy": shipped.card.evaluation.accuracy,
            "macro-F1": shipped.card.evaluation.macro_f1,
            "ECE": shipped.card.evaluation.ece,
        },
        abs=5e-4,
    )
    assert figures["accuracy"] >= 0.70
    assert lines[5].startswith(f"review    below {shipped.review_threshold:.3f} confidence: ")
    assert "precision" in out and "labelled \\ predicted" in out
    suspects = shipped.card.evaluation.possible_label_errors
    assert f"possible label errors: {len(suspects)}" in out
    for suspect in suspects:
        assert (
            f"{suspect['abstract_id']}  labelled {suspect['label']} ({suspect['label_probability']:.3f}), "
            f"predicted {suspect['predicted']}" in out
        )
    for name in ("confusion-matrix.png", "reliability.png"):
        assert (tmp_path / name).read_bytes().startswith(b"\x89PNG")
        assert f"wrote {tmp_path / name}" in err


def test_plots_without_matplotlib_say_how_to_install_it(capsys, tmp_path, monkeypatch):
    from tagger import training

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails as if not installed
    monkeypatch.setattr(training, "cross_validate", lambda *a: pytest.fail("checked only after the work"))
    status, _, err = run(capsys, "evaluate", "--labels", LABELS, "--abstracts", SEEDS, "--plots", tmp_path)
    assert status == 1
    assert err == (
        "tagger: --plots needs matplotlib, which is not installed. Install it: pip install 'matplotlib>=3.7'.\n"
    )


@pytest.mark.parametrize("extra", ["plots", "zstd", "dask", "parquet"])
def test_every_install_hint_is_a_command_that_installs_from_the_package_index(extra):
    """The distribution is not served by the public index: a hint names the libraries."""
    from tagger._version import install_hint

    tomllib = pytest.importorskip("tomllib")  # (Python 3.11)
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert install_hint(extra) == "pip install " + " ".join(f"'{name}'" for name in extras[extra])
    assert "abstract-tagger" not in install_hint() and "abstract-tagger" not in install_hint(extra)


def test_explain_shows_the_deciding_terms(capsys):
    status, out, _ = run(
        capsys, "explain", "--text", "A jailbreak attack makes aligned models ignore their guardrails."
    )
    lines = out.splitlines()
    assert status == 0 and lines[0].startswith("<text>:1  id ")
    assert lines[1].startswith("  safety ")
    pushes = [float(line.split()[0]) for line in lines[2:]]
    assert pushes == sorted(pushes, reverse=True) and all(p > 0 for p in pushes)
    assert "jailbreak" in {line.split(maxsplit=1)[1] for line in lines[2:]}
    status, out, _ = run(capsys, "explain", SEEDS / "neurips2026-b.txt", "--terms", "3")
    assert status == 0 and out.count("  id ") == 19 and len(out.splitlines()) == 19 * 5
    status, out, _ = run(
        capsys, "explain", "--text", "Robots grasp cups.", "LLM agents use tools.", "--format", "jsonl"
    )
    records = [json.loads(line) for line in out.splitlines()]
    assert status == 0 and [r["position"] for r in records] == [1, 2]  # never merged
    assert [r["area"] for r in records] == ["robotics", "llm"] and all(
        len(r["top_terms"]) <= 10 for r in records
    )


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["predict", "no-such-file.txt"], 2, "tagger: no-such-file.txt: no such file or directory."),
        (["suggest"], 1, "tagger: the following arguments are required: PATH."),
        (["predict", "x", "--format", "xml"], 1, "tagger: argument --format: invalid choice"),
        (["frobnicate"], 1, "tagger: argument command: invalid choice"),
        (["predict", *SEED_FILES, "--model", "no-model-here"], 2, "tagger: no-model-here: no model here"),
    ],
)
def test_errors_are_one_line_with_a_status(capsys, args, status, message):
    code, _out, err = run(capsys, *args)
    assert code == status
    assert err.startswith(message) and err.count("\n") == 1 and "Traceback" not in err


def test_the_installed_command_runs_in_a_new_process(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "tagger", "predict", *map(str, SEED_FILES)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 39


def test_mistyped_verbs_and_options_get_a_did_you_mean(capsys):
    status, _, err = run(capsys, "predcit", *SEED_FILES)
    assert status == 1 and "Did you mean predict? See 'tagger --help'." in err
    status, _, err = run(capsys, "predict", *SEED_FILES, "--outptu", "x.csv")
    assert status == 1 and "unrecognized arguments: --outptu x.csv. Did you mean --output?" in err
    status, _, err = run(capsys, "predict", *SEED_FILES, "--terms", "3")  # explain's option, not a typo
    assert status == 1 and "--terms is an option of explain only. See 'tagger --help'." in err
    assert "Did you mean" not in err


def test_shell_completion_completes_verbs_and_options(tmp_path):
    pytest.importorskip("argcomplete")
    import os
    import subprocess
    import sys

    for line, expected in (("tagger pre", "predict"), ("tagger predict --top", "--top-k")):
        out = tmp_path / "completions.txt"
        env = {**os.environ, "_ARGCOMPLETE": "1", "COMP_LINE": line, "COMP_POINT": str(len(line)),
               "_ARGCOMPLETE_STDOUT_FILENAME": str(out)}  # fmt: skip
        subprocess.run([sys.executable, "-m", "tagger"], env=env, check=True, stderr=subprocess.DEVNULL)
        assert out.read_text().split() == [expected]


def test_text_piped_in_is_tagged_without_naming_stdin(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("Robots grasp cups with a two-finger gripper.\n"))
    status, out, _ = run(capsys, "predict")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert status == 0 and [(r["source"], r["area"]) for r in rows] == [("<stdin>", "robotics")]


def test_nothing_to_tag_at_a_terminal_is_a_clear_error(capsys, monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdin", Terminal())
    status, out, err = run(capsys, "predict")
    assert (status, out) == (1, "")
    assert err == "tagger: no abstracts to tag. Name files or folders (or - for stdin), or pipe text in.\n"


def test_abstracts_are_tagged_from_the_command_line_with_text_as_explain_takes_them(capsys):
    [seed] = list(read_abstracts([SEED_FILES[0]]))[:1]
    status, out, err = run(capsys, "predict", "--text", seed.text, "We prove a regret bound.")
    assert status == 0 and err.startswith("tagged 2 abstract(s) given with --text: ")
    rows = list(csv.DictReader(out.splitlines()))
    status, from_file, _ = run(capsys, "predict", SEED_FILES[0])
    first = next(csv.DictReader(from_file.splitlines()))
    # The same abstract gets the same id, area and confidence as from a file.
    assert [rows[0][k] for k in ("id", "area", "confidence")] == [
        first[k] for k in ("id", "area", "confidence")
    ]
    assert [(row["source"], row["position"]) for row in rows] == [("<text>", "1"), ("<text>", "2")]
    status, _, err = run(capsys, "predict", "--text", "We prove.", " ")
    assert status == 2 and err == "tagger: <text> 2: empty abstract. Fill it in or remove the record.\n"
    status, _, err = run(capsys, "predict", "--text")
    assert status == 1 and "--text with no text" in err


@pytest.mark.parametrize("rows", [0, 24])  # a pseudo-terminal of no size, and one of 24 x 80
def test_a_progress_bar_shows_on_a_terminal(monkeypatch, tmp_path, rows):
    import fcntl
    import os
    import pty
    import struct
    import termios
    import threading

    from tagger import feedback
    from tagger.reading import ReadReport

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, 80 if rows else 0, 0, 0))
    shown: list[bytes] = []

    def read() -> None:  # (a pty holds little: its reader must keep up)
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            shown.append(data)

    reader = threading.Thread(target=read)
    reader.start()
    terminal = open(slave, "w", encoding="utf-8", closefd=True)  # noqa: SIM115
    monkeypatch.setattr("sys.stderr", terminal)
    report = ReadReport()
    try:
        with feedback.progress(False, [str(SEEDS)], report, delay=0.0) as update:  # (predict's: after 1 s)
            report.bytes_read = 1000
            update()
    finally:
        terminal.close()
        reader.join(timeout=10)
        os.close(master)
    said = b"".join(shown)
    assert b"%|" in said and b"B/s" in said, said[:300]
