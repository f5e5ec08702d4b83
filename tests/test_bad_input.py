"""Bad input ends in one clear line (what, where, what to do), and nothing is lost."""

import csv
import io
import json
import os
import pickle
import random
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from conftest import LABELS, ROOT, SEED_FILES, SEEDS, copy_project, run
from hypothesis import given
from hypothesis import strategies as st

from tagger import load_model
from tagger.errors import LabelError, ModelError
from tagger.labels import load_areas, load_labels
from tagger.model import CARD_FILE, Model

ABSTRACT = "We train robots to grasp unseen objects from a few human demonstrations."


def one_line_error(err, status, expected_status=2):
    """The run failed with exactly one line on stderr, starting 'tagger: ', no traceback."""
    assert status == expected_status
    assert err.startswith("tagger: ") and err.count("\n") == 1 and "Traceback" not in err
    return err


def rows(out):
    return list(csv.DictReader(io.StringIO(out)))


# -- abstract files -------------------------------------------------------------------------


def test_text_that_is_not_utf8_names_the_byte_and_the_fix(capsys, tmp_path):
    path = tmp_path / "latin.txt"
    path.write_bytes(f"{ABSTRACT}\n\nUne m\xe9thode pour les robots.\n".encode("latin-1"))
    status, _, err = run(capsys, "predict", path)
    offset = len(ABSTRACT) + 2 + len("Une m")
    assert one_line_error(err, status) == (
        f"tagger: {path}:3: not valid utf-8 text (byte {offset}, line 3). Convert it to UTF-8, or name its "
        "encoding with --encoding (for example --encoding latin-1).\n"
    )
    status, out, _ = run(capsys, "predict", path, "--encoding", "latin-1")
    assert status == 0 and len(rows(out)) == 2


def test_utf16_files_are_read_with_their_encoding(capsys, tmp_path):
    path = tmp_path / "wide.txt"
    path.write_text(f"{ABSTRACT}\n\nSecond abstract about graphs.\n", encoding="utf-16")
    status, out, _ = run(capsys, "predict", path, "--encoding", "utf-16")
    assert status == 0 and len(rows(out)) == 2
    status, _, err = run(capsys, "predict", path)  # read as UTF-8: named, with the option that reads it
    assert (
        one_line_error(err, status)
        == f"tagger: {path}: UTF-16 text, not utf-8. Read it with --encoding utf-16.\n"
    )
    for encoding in ("utf-16-le", "utf-16-be", "utf-32"):  # without a byte-order mark too
        path.write_text(f"{ABSTRACT}\n", encoding=encoding)
        status, _, err = run(capsys, "predict", path)
        assert one_line_error(err, status).endswith(f"Read it with --encoding {encoding}.\n")
        status, out, _ = run(capsys, "predict", path, "--encoding", encoding)
        assert status == 0 and len(rows(out)) == 1


def test_binary_files_are_refused(capsys, tmp_path):
    path = tmp_path / "paper.txt"
    path.write_bytes(b"%PDF-1.7\n\x00\x01\x02binary")
    status, _, err = run(capsys, "predict", path)
    assert (
        one_line_error(err, status)
        == f"tagger: {path}: a binary file (it holds NUL bytes), not text. Leave it out.\n"
    )


def test_empty_and_heading_only_files_are_noted_not_errors(capsys, tmp_path):
    (tmp_path / "a-empty.txt").write_bytes(b"")
    (tmp_path / "b-heading.txt").write_text("NeurIPS 2026 Papers\n", encoding="utf-8")
    (tmp_path / "c-header-only.csv").write_text("abstract,id\n", encoding="utf-8")
    (tmp_path / "d.txt").write_text(ABSTRACT, encoding="utf-8")
    status, out, err = run(capsys, "predict", tmp_path)
    assert status == 0 and len(rows(out)) == 1
    assert "tagged 1 abstract(s) from 4 file(s) (1 heading(s) skipped)" in err
    assert f"note: {tmp_path / 'a-empty.txt'}: empty file" in err
    assert f"note: {tmp_path / 'b-heading.txt'}: only a heading, no abstracts" in err
    assert f"note: {tmp_path / 'c-header-only.csv'}: no abstracts" in err


def test_an_abstract_of_several_megabytes(capsys, tmp_path):
    words = (ABSTRACT + " ").split() * 60000
    for name, content in [
        ("big.txt", " ".join(words)),
        ("big.jsonl", json.dumps({"abstract": " ".join(words)}) + "\n"),
        ("big.csv", 'abstract\n"' + " ".join(words) + '"\n'),
    ]:
        (tmp_path / name).write_text(content, encoding="utf-8")
        assert (tmp_path / name).stat().st_size > 4_000_000
    status, out, _ = run(capsys, "predict", tmp_path)
    assert status == 0 and [r["area"] for r in rows(out)] == ["robotics"] * 3


def test_unknown_extensions(capsys, tmp_path):
    path = tmp_path / "abstracts.md"
    path.write_text(ABSTRACT, encoding="utf-8")
    status, _, err = run(capsys, "predict", path)
    assert one_line_error(err, status) == (
        f"tagger: {path}: unknown file type '.md'. Use one of .txt, .csv, .tsv, .jsonl, .json, .parquet, .bib, .ris, .xlsx, .atom, .xml "
        "(compressed too), or say which with --input-format.\n"
    )
    status, out, _ = run(capsys, "predict", path, "--input-format", "txt")
    assert status == 0 and len(rows(out)) == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("abstract,id\none,a\ntwo,b,extra\n", "{path}:3: row has 3 cells, the header has 2. Quote cells"),
        ('abstract,id\n"one" two,a\n', "{path}:2: malformed CSV row (',' expected after '\"')"),
        (
            'abstract,id\none,a\n"two,b\nthree,c\n',
            "{path}:3: malformed CSV row (a quoted field runs to the end",
        ),
        ("title,text\nA,B\n", "{path}:1: no 'abstract' column (columns: 'title', 'text')"),
    ],
)
def test_bad_csv_records(capsys, tmp_path, content, message):
    path = tmp_path / "papers.csv"
    path.write_text(content, encoding="utf-8")
    status, _, err = run(capsys, "predict", path)
    assert one_line_error(err, status).startswith("tagger: " + message.format(path=path))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"abstract": "broken"', "not valid JSON (Expecting ',' delimiter)"),
        ('["a list"]', "a JSON list, not an object"),
        ('{"name": "no abstract"}', "no 'abstract' field (fields: 'name'). Name the field that holds"),
        ('{"abstract": 42}', "'abstract' is a int, not a string"),
    ],
)
def test_bad_jsonl_records_name_their_line(capsys, tmp_path, line, message):
    path = tmp_path / "papers.jsonl"
    path.write_text(json.dumps({"abstract": ABSTRACT}) + "\n" + line + "\n", encoding="utf-8")
    status, _, err = run(capsys, "predict", path)
    assert one_line_error(err, status).startswith(f"tagger: {path}:2: {message}")


def hostile_folder(folder):
    """A folder of good and bad files; returns (good abstracts, bad records) in it."""
    (folder / "a-good.txt").write_text(
        f"Heading\n\n{ABSTRACT}\n\nSecond good abstract on graphs.\n", encoding="utf-8"
    )
    (folder / "b-binary.txt").write_bytes(b"\x00\x01\x02")
    (folder / "c-latin.txt").write_bytes(f"{ABSTRACT}\n\nm\xe9thode\n\nThird good one.\n".encode("latin-1"))
    (folder / "d.jsonl").write_text('{"abstract": "Fourth good."}\n{oops\n[1]\n{"abstract": "Fifth good."}\n')
    (folder / "e.csv").write_text('abstract,id\nSixth good.,x\n,y\nseventh,z,extra\n"Eighth good.",w\n')
    (folder / "f-empty.jsonl").write_text("")
    (folder / "g.md").write_text("not an abstract file")
    return 8, 5  # (e.csv's row without an abstract is left out and counted, not a bad record)


def test_a_folder_of_hostile_files_stops_at_the_first_bad_record(capsys, tmp_path):
    hostile_folder(tmp_path)
    status, out, err = run(
        capsys, "predict", tmp_path, "--output", tmp_path.parent / f"{tmp_path.name}-out.csv"
    )
    assert (
        one_line_error(err, status)
        == f"tagger: {tmp_path / 'b-binary.txt'}: a binary file (it holds NUL bytes), not text. Leave it out.\n"
    )
    assert out == "" and not (tmp_path.parent / f"{tmp_path.name}-out.csv").exists()  # no partial output


def test_skip_bad_tags_the_rest_and_lists_every_skipped_record(capsys, tmp_path):
    good, bad = hostile_folder(tmp_path)
    status, out, err = run(capsys, "predict", tmp_path, "--skip-bad")
    assert status == 3
    assert len(rows(out)) == good
    lines = err.splitlines()
    assert lines[0].startswith(
        f"tagged {good} abstract(s) from 6 file(s) (1 heading(s) skipped; 1 without an abstract left out)"
    )
    assert lines[1] == f"skipped {bad} bad record(s):"
    assert [line.split(": ")[0].strip() for line in lines[2 : 2 + bad]] == [
        str(tmp_path / "b-binary.txt"),
        f"{tmp_path / 'c-latin.txt'}:3",
        f"{tmp_path / 'd.jsonl'}:2",
        f"{tmp_path / 'd.jsonl'}:3",
        f"{tmp_path / 'e.csv'}:4",
    ]
    assert lines[2 + bad : -1] == [
        f"left out 1 record(s) without an abstract, nothing to tag: {tmp_path / 'e.csv'}:3 (y)",
        f"note: {tmp_path / 'g.md'}: ignored, not one of .txt, .csv, .tsv, .jsonl, .json, .parquet, .bib, .ris, .xlsx, .atom, .xml (compressed too)",
        f"note: {tmp_path / 'f-empty.jsonl'}: empty file",
    ]
    assert lines[-1].startswith("model: ")  # which model tagged, last
    assert "Traceback" not in err
    status, _, _ = run(capsys, "predict", tmp_path / "a-good.txt", "--skip-bad")
    assert status == 0  # nothing skipped


def test_a_file_that_cannot_be_opened_is_one_line(capsys, tmp_path, monkeypatch):
    from tagger.reading import files

    path = tmp_path / "locked.txt"
    path.write_text(ABSTRACT)

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(files, "open", refuse, raising=False)  # as for a file without read permission
    status, _, err = run(capsys, "predict", path)
    assert one_line_error(err, status) == f"tagger: {path}: cannot read (Permission denied)\n"
    status, _, err = run(capsys, "predict", path, "--skip-bad")
    assert status == 3 and f"  {path}: cannot read (Permission denied)" in err


def test_an_unexpected_failure_is_one_line_too(capsys, monkeypatch):
    from tagger import cli

    monkeypatch.setattr(cli, "_predict", lambda args: 1 / 0)
    status, _, err = run(capsys, "predict", *SEED_FILES)
    assert one_line_error(err, status, 70).startswith(
        "tagger: internal error (ZeroDivisionError: division by zero)"
    )


# -- property tests: any file either tags every record or fails with one line ----------------

unicode_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=120)


@pytest.mark.slow  # over 5 s on 2 shared cores: in the slow run, with the other long tests
@given(
    st.binary(max_size=300) | unicode_text.map(lambda t: t.encode("utf-8")),
    st.sampled_from(["txt", "csv", "jsonl"]),
)
def test_any_bytes_end_in_rows_or_one_clear_line(capsys, tmp_path_factory, content, extension):
    path = tmp_path_factory.mktemp("any") / f"input.{extension}"
    path.write_bytes(content)
    for extra in ([], ["--skip-bad"]):
        status, out, err = run(capsys, "predict", path, *extra)
        assert "Traceback" not in err and "internal error" not in err
        if status == 2:
            one_line_error(err, status)
        else:
            assert status in (0, 3) and (status == 3) == ("bad record(s):" in err)
            tagged = int(err.split()[1])
            assert len(rows(out)) == tagged


@pytest.mark.slow  # over 5 s on 2 shared cores: in the slow run, with the other long tests
@given(
    # A bare carriage return inside an unquoted field is not well-formed CSV (RFC 4180), and
    # Python's writer leaves it unquoted with "\n" line ends; NUL marks a binary file.
    st.lists(
        unicode_text.filter(lambda t: t.strip() and "\x00" not in t and "\r" not in t), min_size=1, max_size=6
    ),
    st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL, csv.QUOTE_NONNUMERIC]),
    st.sampled_from(["\n", "\r\n"]),
    st.booleans(),
)
def test_any_well_formed_csv_tags_every_record(capsys, tmp_path_factory, abstracts, quoting, newline, bom):
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=quoting, lineterminator=newline)
    writer.writerow(["id", "abstract"])
    writer.writerows([f"r{i}", text] for i, text in enumerate(abstracts))
    path = tmp_path_factory.mktemp("csv") / "input.csv"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + buffer.getvalue().encode("utf-8"))
    status, out, err = run(capsys, "predict", path)
    assert status == 0, err
    assert [r["id"] for r in rows(out)] == [f"r{i}" for i in range(len(abstracts))]


@pytest.mark.slow  # over 5 s on 2 shared cores: in the slow run, with the other long tests
@given(
    st.lists(
        st.fixed_dictionaries(
            {"abstract": unicode_text.filter(lambda t: t.strip())},
            optional={"id": st.integers(), "title": unicode_text},
        ),
        min_size=1,
        max_size=6,
    )
)
def test_any_well_formed_jsonl_tags_every_record(capsys, tmp_path_factory, records):
    path = tmp_path_factory.mktemp("jsonl") / "input.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    status, out, err = run(capsys, "predict", path, "--format", "jsonl")
    assert status == 0, err
    assert len(out.splitlines()) == len(records)


# -- labels -------------------------------------------------------------------------------------


def test_a_labels_file_that_is_not_utf8_or_not_csv(tmp_path):
    areas = load_areas(LABELS / "areas.csv")
    path = tmp_path / "labels.csv"
    path.write_bytes(b"abstract_id,area,title\nabc,llm,caf\xe9\n")
    with pytest.raises(
        LabelError, match=r"labels.csv:2: not valid utf-8 text \(byte 34, line 2\)\. Save it as UTF-8\."
    ):
        load_labels(path, areas)
    path.write_text('abstract_id,area,title\nabc,llm,"x"y\n', encoding="utf-8")
    with pytest.raises(LabelError, match=r"labels.csv:2: malformed CSV"):
        load_labels(path, areas)


def test_label_errors_reach_the_command_line_as_one_line(capsys, tmp_path):
    copy_project(tmp_path, ("labels",))
    with open(tmp_path / "labels" / "labels.csv", "a", encoding="utf-8") as stream:
        stream.write("abbb359e75f8616b,astrology,oops\n")
    status, _, err = run(capsys, "evaluate", "--labels", tmp_path / "labels", "--abstracts", *SEED_FILES)
    assert one_line_error(err, status) == (
        f"tagger: {tmp_path / 'labels' / 'labels.csv'}:40: unknown area 'astrology'. Use one of: generative, llm, "
        "optimization, probabilistic, rl, robotics, safety, science, systems, theory, vision, or none (fits no area).\n"
    )


# -- models -------------------------------------------------------------------------------------


@pytest.fixture
def model_dir(tmp_path, seed_model):
    """A model folder to damage and forge (the seeds' model: 1 MB to write, not 33)."""
    return seed_model.save(tmp_path / "model")


def test_a_truncated_or_missing_weights_file(model_dir):
    weights = next(model_dir.glob("weights-*.npz"))
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(ModelError, match="does not match its model card"):
        Model.load(model_dir)
    weights.unlink()
    with pytest.raises(ModelError, match=r"cannot read the weights file \(No such file or directory\)"):
        Model.load(model_dir)


def test_a_garbled_card_is_a_clear_error(capsys, model_dir):
    card = json.loads((model_dir / CARD_FILE).read_text())
    card["areas"] = "llm"
    (model_dir / CARD_FILE).write_text(json.dumps(card))
    status, _, err = run(capsys, "predict", *SEED_FILES, "--model", model_dir)
    assert "the model card lacks or garbles areas" in one_line_error(err, status)


class Payload:
    """Unpickling this creates a file: what a malicious model file would do."""

    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (open, (self.target, "w"))


def test_a_model_file_crafted_to_run_code_does_not_run_it(capsys, model_dir, tmp_path):
    target = tmp_path / "pwned"
    weights = next(model_dir.glob("weights-*.npz"))
    with np.load(weights) as arrays:
        contents = {name: arrays[name] for name in arrays.files}
    contents["coef"] = np.array([Payload(str(target))], dtype=object)
    buffer = io.BytesIO()
    np.savez(buffer, **contents)  # an object array: stored with pickle
    data = buffer.getvalue()
    weights.write_bytes(data)
    card = json.loads((model_dir / CARD_FILE).read_text())
    card["weights_sha256"] = __import__("hashlib").sha256(data).hexdigest()  # the attacker fixes the hash
    (model_dir / CARD_FILE).write_text(json.dumps(card))
    assert pickle.loads(pickle.dumps(contents["coef"][0])) and target.exists()  # the payload works...
    target.unlink()
    status, _, err = run(capsys, "predict", *SEED_FILES, "--model", model_dir)
    assert "damaged weights file (Object arrays cannot be loaded when allow_pickle=False)" in one_line_error(
        err, status
    )
    assert not target.exists()  # ...but loading the model did not run it


def forge(model_dir, card_edit=None, **arrays):
    """Rewrite a model folder as an attacker who knows the format would: the card and arrays
    changed, every hash and digest made to match."""
    import hashlib

    card = json.loads((model_dir / CARD_FILE).read_text())
    if card_edit:
        card_edit(card)
    weights = next(model_dir.glob("weights-*.npz"))
    with np.load(weights) as stored:
        contents = {name: stored[name] for name in stored.files}
    contents.update(arrays)
    buffer = io.BytesIO()
    np.savez(buffer, **contents)
    weights.write_bytes(buffer.getvalue())
    card["weights_sha256"] = hashlib.sha256(buffer.getvalue()).hexdigest()
    card["weights_bytes"] = len(buffer.getvalue())
    (model_dir / CARD_FILE).write_text(json.dumps(card))


def set_value(path, value):
    def edit(card):
        *parents, last = path.split(".")
        target = card
        for name in parents:
            target = target[name]
        target[last] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (set_value("calibration.temperature", 1e-320), "impossible value: calibration.temperature"),
        (set_value("calibration.temperature", float("inf")), "impossible value: calibration.temperature"),
        (set_value("calibration.evidence_scale", -1.0), "impossible value: calibration.evidence_scale"),
        (set_value("review.threshold", float("nan")), "impossible value: review.threshold"),
        (set_value("review.threshold", 1.5), "impossible value: review.threshold"),
        (
            lambda card: card.update(areas=card["areas"][:1]),
            "impossible value: areas (a model needs at least two)",
        ),
        (
            lambda card: card["areas"][1].update(slug=card["areas"][0]["slug"]),
            "impossible value: areas (a slug is repeated)",
        ),
    ],
)
def test_a_forged_card_with_matching_hashes_is_refused(capsys, model_dir, edit, message):
    forge(model_dir, edit)
    status, out, err = run(capsys, "predict", *SEED_FILES, "--model", model_dir)
    assert out == "" and message in one_line_error(err, status)
    assert err.startswith(f"tagger: {model_dir / CARD_FILE}: ")


def test_forged_weights_are_refused_before_they_are_allocated(capsys, model_dir, seed_model):
    forge(model_dir, coef=seed_model.coef.astype(np.complex128))
    status, _, err = run(capsys, "predict", *SEED_FILES, "--model", model_dir)
    assert "damaged weights file (coef holds complex128, not real numbers)" in one_line_error(err, status)
    forge(model_dir, coef=seed_model.coef)
    weights = next(model_dir.glob("weights-*.npz"))
    data = weights.read_bytes()
    shape = str(seed_model.coef.shape).encode()
    header = b"'shape': " + shape
    assert data.count(header) == 1
    huge = b"(" + b"9" * (len(shape) - 3) + b",)"  # as many bytes: far more float64 than the file holds
    forged = data.replace(header, b"'shape': " + huge)
    weights.write_bytes(forged)
    card = json.loads((model_dir / CARD_FILE).read_text())
    card["weights_sha256"] = __import__("hashlib").sha256(forged).hexdigest()
    card["weights_bytes"] = len(forged)
    (model_dir / CARD_FILE).write_text(json.dumps(card))
    status, _, err = run(capsys, "predict", *SEED_FILES, "--model", model_dir)
    assert "damaged weights file (" in one_line_error(err, status)


# -- nothing is lost when a run is cut short ------------------------------------------------------


def big_input(folder, n=20000):
    rng = random.Random(0)
    sentences = [s for a in SEEDS.glob("*.txt") for s in a.read_text(encoding="utf-8").split(". ")[1:]]
    path = folder / "pile.jsonl"
    with open(path, "w", encoding="utf-8") as stream:
        for _ in range(n):
            stream.write(json.dumps({"abstract": ". ".join(rng.sample(sentences, 6))}) + "\n")
    return path, n


def leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") or p.name.endswith(".tmp"))


@pytest.mark.slow
def test_killing_predict_never_leaves_a_partial_output(tmp_path):
    pile, n = big_input(tmp_path)
    target = tmp_path / "tags.csv"
    target.write_text("old complete output\n")
    rng = random.Random(1)
    killed = set()  # temporary files of runs killed outright: the next run that writes removes them
    for stop in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL, signal.SIGTERM):
        with open(tmp_path / "stderr.txt", "w+") as stderr:  # not a pipe: workers of a killed run may hold it
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tagger",
                    "predict",
                    str(pile),
                    "--output",
                    str(target),
                    "--jobs",
                    "2",
                ],
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
            time.sleep(rng.uniform(0.2, 1.5))
            process.send_signal(stop)
            process.wait(timeout=60)
            stderr.seek(0)
            err = stderr.read()
        content = target.read_text()
        assert content == "old complete output\n" or len(content.splitlines()) == n + 1
        assert "Traceback" not in err
        if stop == signal.SIGKILL:
            killed.add(f".tags.csv.tmp-{process.pid}")
        else:
            # nothing of its own; a killed run's file stays if this one was stopped before writing
            assert set(leftovers(tmp_path)) <= killed
            # finished (0), stopped cleanly (130, 143), or killed by the signal in the last
            # instant of interpreter shut-down, after the output was complete (-2, -15)
            assert process.returncode in (0, 130, 128 + signal.SIGTERM, -signal.SIGINT, -signal.SIGTERM)
            if process.returncode < 0:
                assert len(content.splitlines()) == n + 1
    status = subprocess.run(
        [sys.executable, "-m", "tagger", "predict", str(pile), "--output", str(target)], capture_output=True
    ).returncode
    assert status == 0 and len(target.read_text().splitlines()) == n + 1
    assert leftovers(tmp_path) == []  # the next write removed what the killed run left


@pytest.mark.slow
def test_killing_train_leaves_the_previous_model_intact(tmp_path, shipped):
    copy_project(tmp_path, ("labels", "seeds", "models"))
    before = {p.name: p.read_bytes() for p in (tmp_path / "models").iterdir()}
    rng = random.Random(2)
    for stop in (signal.SIGTERM, signal.SIGKILL, signal.SIGINT):
        process = subprocess.Popen(
            [sys.executable, "-m", "tagger", "train"],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        time.sleep(rng.uniform(0.5, 4.0))
        process.send_signal(stop)
        process.communicate(timeout=60)
        model = load_model(tmp_path / "models")  # loads: old or new, never half of each
        assert model.predict("Robots grasp cups.").area == shipped.predict("Robots grasp cups.").area
        # Either the old files or a complete new model: the card and the weights it names.
        files = {p.name for p in (tmp_path / "models").iterdir() if not p.name.startswith(".")}
        named = json.loads((tmp_path / "models" / "model.json").read_text())["weights_file"]
        assert files == {"model.json", named}
        if process.returncode != 0 and model.card.created == shipped.card.created:
            assert {name: (tmp_path / "models" / name).read_bytes() for name in files} == before


# -- inputs just past the ones above ---------------------------------------------------------------


def test_skip_bad_leaves_out_a_whole_file_and_tags_the_rest(capsys, tmp_path):
    (tmp_path / "a.txt").write_text(ABSTRACT, encoding="utf-8")
    (tmp_path / "b.csv").write_text(
        "title,text\nA title,An abstract in the wrong column.\n", encoding="utf-8"
    )
    (tmp_path / "c.csv").write_text('abstract\n"unclosed\n', encoding="utf-8")
    (tmp_path / "d.jsonl").write_text(json.dumps({"abstract": "Robots grasp cups."}) + "\n", encoding="utf-8")
    status, _, err = run(capsys, "predict", tmp_path)
    assert one_line_error(err, status).startswith(f"tagger: {tmp_path / 'b.csv'}:1: no 'abstract' column")
    status, out, err = run(capsys, "predict", tmp_path, "--skip-bad")
    assert status == 3 and len(rows(out)) == 2
    assert f"  {tmp_path / 'b.csv'}:1: no 'abstract' column" in err
    assert f"  {tmp_path / 'c.csv'}:2: malformed CSV row" in err
    unknown = tmp_path / "e.pdf"
    unknown.write_text("x")
    status, out, err = run(capsys, "predict", tmp_path / "a.txt", unknown, "--skip-bad")
    assert status == 3 and len(rows(out)) == 1 and f"  {unknown}: unknown file type '.pdf'" in err


def test_a_number_too_long_for_python_is_a_bad_record(capsys, tmp_path):
    path = tmp_path / "ids.jsonl"
    path.write_text(
        '{"abstract": "Robots grasp cups.", "id": '
        + "9" * 5000
        + "}\n"
        + json.dumps({"abstract": ABSTRACT})
        + "\n"
    )
    status, _, err = run(capsys, "predict", path)
    assert one_line_error(err, status).startswith(f"tagger: {path}:1: not valid JSON (Exceeds the limit")
    status, out, err = run(capsys, "predict", path, "--skip-bad")
    assert status == 3 and len(rows(out)) == 1


@pytest.mark.parametrize("encoding", ["rot13", "hex", "base64", "idna", "zlib"])
def test_an_encoding_that_is_not_for_text_files_is_refused(capsys, encoding):
    status, out, err = run(capsys, "predict", *SEED_FILES, "--encoding", encoding)
    assert out == "" and one_line_error(err, status) == (
        f"tagger: {encoding!r} is not an encoding of text files. Use one such as utf-8, latin-1 or utf-16.\n"
    )


@pytest.mark.slow  # trains a model
def test_a_card_nested_too_deeply_is_a_clear_error_and_train_replaces_it(capsys, tmp_path, monkeypatch):
    copy_project(tmp_path, ("labels", "seeds"))
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / CARD_FILE).write_text('{"a": ' * 100_000 + "1" + "}" * 100_000)
    monkeypatch.chdir(tmp_path)
    status, out, err = run(capsys, "predict", "seeds", "--model", "models")
    assert out == "" and one_line_error(err, status) == (
        "tagger: models/model.json: unreadable model card (nested too deeply). Retrain with 'tagger train'.\n"
    )
    status, _, err = run(capsys, "train")
    assert status == 0 and load_model(tmp_path / "models").taxonomy == load_model(ROOT / "models").taxonomy


def test_an_area_with_one_labelled_abstract_trains_with_a_warning(capsys, tmp_path):
    data = tmp_path / "mine.csv"
    data.write_text(
        "abstract,area\nRobots grasp cups.,robotics\nA theorem on regret.,theory\nSample complexity bounds.,theory\n"
        "Deep nets learn images.,vision\nConvolutions see images.,vision\n"
    )
    status, _, err = run(capsys, "train", "--data", data, "--model", tmp_path / "m")
    assert status == 0
    assert err.startswith(
        "tagger: warning: only one labelled abstract of 'robotics': trained on, but left out of the "
        "cross-validated figures (label another to measure it)\n"
    )
    assert "trained on 5 labelled abstracts (4 cross-validated)" in err
    model = load_model(tmp_path / "m")
    assert model.areas == ("robotics", "theory", "vision") and model.card.evaluation.left_out == ("robotics",)
    assert model.card.evaluation.labelled_abstracts == 4
    status, out, _ = run(capsys, "evaluate", "--data", data)
    assert status == 0 and "left out of these figures: robotics (one labelled abstract)" in out


def test_too_few_labels_to_cross_validate_is_named(capsys, tmp_path):
    data = tmp_path / "mine.csv"
    data.write_text(
        "abstract,area\nRobots grasp cups.,robotics\nA theorem on regret.,theory\nA bound.,theory\n"
    )
    status, _, err = run(capsys, "train", "--data", data, "--model", tmp_path / "m")
    assert one_line_error(err, status) == (
        f"tagger: {data}: fewer than two areas have two labelled abstracts or more (theory). Cross-validation needs "
        "two of each of at least two areas: label more.\n"
    )


def test_a_line_break_in_a_file_name_stays_on_one_line(capsys, tmp_path):
    path = tmp_path / "bad\nname.jsonl"
    path.write_text("{oops\n")
    status, _, err = run(capsys, "predict", path)
    assert one_line_error(err, status) == (
        f"tagger: {tmp_path}/bad\\nname.jsonl:1: not valid JSON (Expecting property name enclosed in double "
        "quotes). Fix or remove this line.\n"
    )


def test_an_abstract_over_the_size_limit_is_a_bad_record(capsys, tmp_path):
    from tagger.text import MAX_ABSTRACT_CHARS

    long = " ".join([ABSTRACT] * (MAX_ABSTRACT_CHARS // len(ABSTRACT) + 1))
    assert len(long) > MAX_ABSTRACT_CHARS
    (tmp_path / "a.txt").write_text(f"{ABSTRACT}\n\n{long}\n", encoding="utf-8")
    (tmp_path / "b.csv").write_text(f'abstract\n"{long}"\n"{ABSTRACT}"\n', encoding="utf-8")
    (tmp_path / "c.jsonl").write_text(json.dumps({"abstract": long}) + "\n", encoding="utf-8")
    status, _, err = run(capsys, "predict", tmp_path)
    message = one_line_error(err, status)
    assert message.startswith(f"tagger: {tmp_path / 'a.txt'}:3: an abstract of 5,0")
    assert message.endswith(
        f" characters, over the limit of {MAX_ABSTRACT_CHARS:,}. "
        "Split it (in .txt files, a blank line separates abstracts), or leave it out with --skip-bad.\n"
    )
    status, out, err = run(capsys, "predict", tmp_path, "--skip-bad")
    assert status == 3 and len(rows(out)) == 2
    assert [line.split(": ")[0].strip() for line in err.splitlines() if "over the limit" in line] == [
        f"{tmp_path / 'a.txt'}:3",
        f"{tmp_path / 'b.csv'}:2",
        f"{tmp_path / 'c.jsonl'}:1",
    ]


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("idf", 0.0, "idf holds numbers from 0 to"),
        ("idf", 1e-320, "idf holds numbers from 1e-320 to"),
        ("coef", 1e308, "coef holds numbers from"),
        ("coef", -1e308, "coef holds numbers from -1e+308"),
        ("intercept", 1e308, "intercept holds numbers from"),
    ],
)
def test_forged_weights_that_would_make_confidences_nan_are_refused(
    capsys, model_dir, seed_model, name, value, message
):
    array = getattr(seed_model, name).copy()
    array[0] = value
    forge(model_dir, **{name: array})
    status, out, err = run(capsys, "predict", *SEED_FILES, "--model", model_dir, "--format", "jsonl")
    assert out == "" and message in one_line_error(err, status)


def test_a_weights_file_that_is_a_fifo_is_refused_at_once(capsys, model_dir):
    weights = next(model_dir.glob("weights-*.npz"))
    weights.unlink()
    os.mkfifo(weights)
    result = {}
    reader = threading.Thread(
        target=lambda: result.update(
            zip(("status", "out", "err"), run(capsys, "predict", *SEED_FILES, "--model", model_dir))
        ),
        daemon=True,
    )
    reader.start()
    reader.join(10)
    if reader.is_alive():  # unblock the read it hangs on, then fail
        with open(os.open(weights, os.O_WRONLY | os.O_NONBLOCK), "wb"):
            pass
        pytest.fail("loading a model whose weights file is a FIFO hangs")
    assert "the weights file is not a regular file" in one_line_error(result["err"], result["status"])


def test_a_card_larger_than_any_tagger_writes_is_refused_without_reading_it(capsys, model_dir):
    card = model_dir / CARD_FILE
    with open(card, "r+b") as stream:  # a sparse file: 3 GB that take no disk
        stream.seek(3 * 2**30)
        stream.write(b" ")
    status, _, err = run(capsys, "predict", *SEED_FILES, "--model", model_dir)
    assert "the model card is 3,221,225,473 bytes, more than tagger ever writes" in one_line_error(
        err, status
    )


# -- what used to end in exit 70 ("internal error") -------------------------------------------------


@pytest.mark.slow  # over 5 s on 2 shared cores: in the slow run, with the other long tests
@given(st.lists(st.tuples(st.integers(8, 10_000), st.integers(0, 7)), min_size=1, max_size=4))
def test_a_damaged_zstandard_file_is_a_bad_record_never_an_internal_error(capsys, tmp_path_factory, flips):
    zstandard = pytest.importorskip("zstandard")
    folder = tmp_path_factory.mktemp("zst")
    data = "".join(json.dumps({"abstract": f"Robots grasp cup {i} with care."}) + "\n" for i in range(300))
    damaged = bytearray(zstandard.ZstdCompressor(write_checksum=True).compress(data.encode()))
    for at, bit in flips:
        damaged[at % len(damaged)] ^= 1 << bit
    (folder / "pile.jsonl.zst").write_bytes(bytes(damaged))
    status, _, err = run(capsys, "predict", folder / "pile.jsonl.zst", "--skip-bad")
    assert status in (0, 2, 3) and "internal error" not in err


def test_text_that_is_not_utf8_in_a_parquet_column_is_a_bad_row(capsys, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    column = pa.array([b"Robots grasp cups.", b"bad \xff\xfe text", b"Proteins fold."], type=pa.binary())
    pq.write_table(pa.table({"abstract": column.view(pa.string())}), tmp_path / "a.parquet")
    status, _, err = run(capsys, "predict", tmp_path / "a.parquet")
    assert "a.parquet:row 2: not valid UTF-8 text in column 'abstract' (byte 4)" in one_line_error(
        err, status
    )
    status, out, err = run(capsys, "predict", tmp_path / "a.parquet", "--skip-bad")
    assert status == 3 and [row["position"] for row in rows(out)] == ["1", "3"]  # positions kept


def test_a_card_number_too_large_for_any_float_is_a_clear_error(tmp_path, seed_model):
    seed_model.save(tmp_path)
    text = (tmp_path / CARD_FILE).read_text()
    data = json.loads(text)
    temperature = json.dumps(data["calibration"]["temperature"])
    (tmp_path / CARD_FILE).write_text(
        text.replace(f'"temperature": {temperature}', '"temperature": 1' + "0" * 400)
    )
    with pytest.raises(ModelError, match=r"calibration\.temperature is too large"):
        Model.load(tmp_path)


@pytest.mark.parametrize(
    "texts, message",
    [
        (["The of and.", "It is the.", "We are.", "They were."], "no labelled text has a word to learn from"),
        (["Robots walk.", "It is the.", "We are.", "They were."], "too few labelled texts have a word"),
    ],
)
def test_labelled_texts_of_stop_words_only_are_a_clear_error(capsys, tmp_path, texts, message):
    rows_ = "".join(f"{text},{area}\n" for text, area in zip(texts, "aabb"))
    (tmp_path / "stop.csv").write_text("abstract,area\n" + rows_)
    status, _, err = run(capsys, "train", "--data", tmp_path / "stop.csv", "--model", tmp_path / "m")
    assert message in one_line_error(err, status)


def test_a_settings_sample_with_more_areas_than_it_can_hold_takes_every_label():
    from tagger.labels import labelled_set
    from tagger.training import _stratified_sample

    texts = [f"word{a} sample{i}" for a in range(60) for i in range(2)]
    training = labelled_set(texts, [f"area{a}" for a in range(60) for _ in range(2)], "many.csv")
    assert (
        _stratified_sample(training, 50, random_state=0) is training
    )  # 60 areas: no sample of 50 holds each


def test_an_answer_the_disk_cannot_hold_is_said_on_the_page(shipped):
    import errno
    import http.client

    from tagger.labelling import Session, Suggestion
    from tagger.labels import Area
    from tagger.reading import Abstract
    from tagger.web import TOKEN_HEADER, LabellingApp, start

    def full_disk(abstract, area, topic, remark):
        raise OSError(errno.ENOSPC, "No space left on device")

    queue = [
        Suggestion(Abstract("a1", "Robots grasp cups.", "pile", 1, 1), shipped.predict("Robots grasp cups."))
    ]
    app = LabellingApp({"ana": Session(queue, full_disk)}, (Area("robotics", "Robotics"),), shipped, "pile")
    server = start(app)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        body = json.dumps({"area": "robotics", "at": 0})
        headers = {TOKEN_HEADER: next(iter(server.tokens)), "Content-Type": "application/json"}
        connection.request("POST", "/api/answer", body=body, headers=headers)
        response = connection.getresponse()
        answer = json.loads(response.read())
        assert response.status == 507 and "No space left on device" in answer["error"]
        assert answer["position"] == 0 and answer["item"]["id"] == "a1"  # still there, to answer again
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (
            "d.jsonl",
            '{"abstract": "We train legged robots to walk.", "abstract": "We study jailbreaks of LLMs."}\n',
        ),
        ("d.json", '[{"id": "a", "abstract": "We train legged robots.", "title": "x", "Title": "y"}]'),
        ("d.jsonl", '{"abstract": "We train legged robots to walk.", "id": "a", "id": "b"}\n'),
    ],
)
def test_a_json_field_written_twice_is_refused_as_two_names_alike_are(
    capsys, tmp_path, monkeypatch, name, text
):
    """JSON keeps the last of a key written twice: the record would be tagged by one of two
    abstracts (or ids) silently. One rule with two names alike but for case: refused."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(text)
    status, out, err = run(capsys, "predict", name)
    assert out == "" and status == 2
    assert f"tagger: {name}:1: 2 fields named " in err and "not told apart. Rename all but one." in err


@given(
    st.lists(
        st.sampled_from(["abstract", "Abstract", "id", "ID", "title", "Title", "note", "venue"]), max_size=6
    ),
    st.text(alphabet='ab \u00e9"\\', min_size=1, max_size=20),
)
def test_any_json_object_is_read_by_its_keys_as_written(tmp_path_factory, keys, text):
    """A JSON object whose keys name a role twice (written twice, in any case) is refused;
    one whose keys name each role at most once is read, its abstract the one written."""
    from tagger.errors import InputError
    from tagger.reading import read_abstracts

    folder = tmp_path_factory.mktemp("json")
    pairs = [("abstract", f"We train robots {text}")] + [(key, f"{key} {i}") for i, key in enumerate(keys)]
    line = "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in pairs) + "}\n"
    (folder / "d.jsonl").write_text(line, encoding="utf-8")
    roles = [k.lower() for k, _ in pairs if k.lower() in ("abstract", "id", "title")]
    if len(roles) != len(set(roles)):
        with pytest.raises(InputError, match="not told apart"):
            list(read_abstracts([folder / "d.jsonl"]))
    else:
        [abstract] = read_abstracts([folder / "d.jsonl"])
        assert abstract.text == " ".join(f"We train robots {text}".split())


@pytest.mark.parametrize(
    "encoding", ["UTF-32", "utf-7", "x-nonexistent", "mbcs", "rot13", "base64", "zlib", "idna", "punycode"]
)
def test_an_atom_feed_declaring_an_encoding_the_parser_cannot_read_is_one_clear_error(
    capsys, tmp_path, monkeypatch, encoding
):
    monkeypatch.chdir(tmp_path)
    feed = (
        f'<?xml version="1.0" encoding="{encoding}"?>\n<feed xmlns="http://www.w3.org/2005/Atom">'
        "<entry><id>x</id><summary>We train robots.</summary></entry></feed>\n"
    )
    (tmp_path / "f.atom").write_text(feed)
    status, out, err = run(capsys, "predict", "f.atom")
    assert out == "" and status == 2
    assert err.startswith("tagger: f.atom:1: an XML encoding the parser cannot read (") and "UTF-8" in err
    from tagger.errors import InputError
    from tagger.reading import read_abstracts

    with pytest.raises(InputError, match="an XML encoding the parser cannot read") as error:  # from stdin
        list(read_abstracts(["-"], stdin=io.BufferedReader(io.BytesIO(feed.encode()))))
    assert error.value.where == "<stdin>:1"


@given(
    st.sampled_from(sorted(set(__import__("encodings.aliases").aliases.aliases.values())))
    | st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=12)
)
def test_an_atom_feed_declaring_any_encoding_is_read_or_one_clear_error(encoding):
    """Whatever encoding a feed declares (every codec Python knows, and names it does not),
    its entries are read, or it is one InputError at its first line: never another exception."""
    from tagger.errors import InputError
    from tagger.reading import read_abstracts

    feed = (
        f'<?xml version="1.0" encoding="{encoding}"?>\n<feed xmlns="http://www.w3.org/2005/Atom">'
        "<entry><id>x</id><summary>We train robots.</summary></entry></feed>\n"
    )
    try:
        read = list(read_abstracts(["-"], stdin=io.BufferedReader(io.BytesIO(feed.encode()))))
    except InputError as error:
        assert error.where == "<stdin>:1", error
    else:
        assert [a.text for a in read] == ["We train robots."]


def test_bibtex_strings_that_double_each_other_are_bounded_as_they_expand(tmp_path):
    """@string s_i = s_{i-1} # s_{i-1}, 40 levels in a 2.9 KB file, grew to 22.5 GB: a value
    is refused once it passes an abstract's limit, as it expands (read under a 1 GB limit of
    memory, in a process of its own, so that a regression fails here and harms nothing)."""
    import resource

    lines = ['@string{s0 = "ab"}'] + [f"@string{{s{i} = s{i - 1} # s{i - 1}}}" for i in range(1, 41)]
    lines += ["@article{k, abstract = s40}", "@article{k2, abstract = {We train robots.}}"]
    (tmp_path / "d.bib").write_text("\n".join(lines) + "\n")
    code = (
        "from tagger.reading import ReadReport, read_abstracts\n"
        "report = ReadReport()\n"
        f"print([a.id for a in read_abstracts([{str(tmp_path / 'd.bib')!r}], skip_bad=True, report=report)])\n"
        "print(report.skipped[0])\n"
    )

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))

    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, preexec_fn=limit, timeout=120
    )
    assert done.returncode == 0, done.stderr[-500:]
    read, first = done.stdout.splitlines()
    assert read == "['k2']" and "@string s22 expands to more than 5,000,000 characters" in first


def test_a_huge_text_in_a_small_file_is_refused_before_it_is_held(tmp_path):
    """An Atom entry's text is refused as it arrives, once past twice an abstract's limit (a
    874 KB .atom.gz of 600 M characters took 1.8 GB to refuse, and the feed's text of every
    entry was held to its end); a Parquet row group declaring more bytes than its rows can
    hold within the limit is refused from its metadata, never decoded (1.2 G characters in a
    110 KB file: 4.8 GB). python tests/benchmarks/bench_hostile_memory.py measures both."""
    import gzip
    import re
    import tracemalloc

    import pyarrow as pa
    import pyarrow.parquet as parquet

    from tagger.reading import ReadReport, read_abstracts
    from tagger.text import MAX_ABSTRACT_CHARS

    piece = "We train legged robots to walk. " * 2048
    times = 2 * MAX_ABSTRACT_CHARS // len(piece) + 2
    with gzip.open(tmp_path / "big.atom.gz", "wt") as out:
        out.write('<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>a1</id><summary>')
        for _ in range(times):
            out.write(piece)
        out.write("</summary></entry><entry><id>a2</id><summary>Robots walk.</summary></entry>")
        for i in range(300):  # (the text of every entry read is let go: not held to the feed's end)
            out.write(f"<entry><id>b{i}</id><summary>{piece[:20_000]}</summary></entry>")
        out.write("</feed>")
    report = ReadReport()
    tracemalloc.start()
    read = list(read_abstracts([tmp_path / "big.atom.gz"], skip_bad=True, report=report))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert [a.id for a in read[:1]] == ["a2"] and len(read) == 301
    [bad] = report.skipped
    assert bad.startswith(f"{tmp_path / 'big.atom.gz'}:1: an entry of over 10,000,000 characters"), bad
    assert peak < 12 * 2**20 + 2 * len(piece) * 10, peak  # (below the 10 M characters refused)
    value = pa.array(["x" * (4 * MAX_ABSTRACT_CHARS + 100)], type=pa.large_string())
    parquet.write_table(pa.table({"abstract": value}), tmp_path / "one.parquet", compression="zstd")
    parquet.write_table(pa.table({"abstract": ["Robots walk."]}), tmp_path / "two.parquet")
    report = ReadReport()
    read = list(
        read_abstracts([tmp_path / "one.parquet", tmp_path / "two.parquet"], skip_bad=True, report=report)
    )
    assert [a.text for a in read] == ["Robots walk."] and (tmp_path / "one.parquet").stat().st_size < 2**20
    [bad] = report.skipped
    assert re.fullmatch(
        re.escape(f"{tmp_path / 'one.parquet'}: rows 1 to 1 (a row group): column 'abstract' declares ")
        + r"20,000,\d{3} bytes, more than 1 text\(s\) of at most 5,000,000 characters can hold: not read\. "
        + re.escape("Leave out the value over the limit, or the rows, with --skip-bad."),
        bad,
    ), bad
