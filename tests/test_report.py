"""tagger report: one self-contained HTML page of a tagged file, every text in it escaped."""

from __future__ import annotations

import csv
import io
from html.parser import HTMLParser

import numpy as np
import pytest
from conftest import ROOT, SEED_FILES, run
from hypothesis import given
from hypothesis import strategies as st

from tagger.model import shipped_model_dir
from tagger.report import Overview, build

# The only elements the report is made of: no script, no image, no frame, no form.
ELEMENTS = {
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "nav", "a", "section",
    "svg", "text", "rect", "line", "polyline", "circle", "table", "tr", "th", "td", "code",
}  # fmt: skip


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.links: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.links += [value for name, value in attrs if name in ("href", "src")]

    def handle_data(self, data):
        self.text.append(data)


def parsed(html: str) -> Elements:
    parser = Elements()
    parser.feed(html)
    return parser


def test_a_report_of_a_tagged_file_has_its_four_parts(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, _, _ = run(capsys, "predict", *SEED_FILES, "-o", "tags.csv")
    assert status == 0
    rows = list(csv.DictReader(io.StringIO((tmp_path / "tags.csv").read_text())))
    wrong = "theory" if rows[1]["area"] != "theory" else "vision"
    rows[0]["label"], rows[1]["label"] = rows[0]["area"], wrong  # one right, one wrong
    with open(tmp_path / "tags.csv", "w", newline="") as stream:
        writer = csv.DictWriter(stream, [*rows[0].keys()])
        writer.writeheader()
        writer.writerows({**row, "label": row.get("label", "")} for row in rows)
    status, _, err = run(capsys, "report", "tags.csv", "--label-column", "label")
    assert status == 0 and err.startswith("wrote report.html: 38 abstracts\n")
    status, _, err = run(capsys, "report", "tags.csv", "--label-column", "label")  # again: said
    assert status == 0 and err.startswith(
        "wrote report.html: 38 abstracts (it replaces the report that was there)\n"
    )
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    page = parsed(html)
    assert set(page.tags) <= ELEMENTS and all(link.startswith("#") for link in page.links)  # offline
    for section in ("Areas by count", "Confidence", "Worth a look", "Terms of each area"):
        assert f"<h2>{section}</h2>" in html
    assert "2 of these abstracts are labelled: the tag is right for 50% of them" in html
    assert "diffusion" in html.split("<h2>Terms of each area</h2>")[1]  # the generative area's terms


def test_what_is_not_a_tagged_file_is_one_clear_error(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "papers.csv").write_text("abstract\nRobots grasp cups.\n")
    status, out, err = run(capsys, "report", "papers.csv")
    assert (status, out) == (2, "")
    assert err.startswith("tagger: papers.csv: no 'source', 'position', 'id', 'area', 'confidence'")
    assert err.endswith("Give the output of tagger predict (with --keep for a column of labels).\n")
    assert run(capsys, "report", "missing.csv")[0] == 2
    status, _, err = run(capsys, "report", "papers.xls")
    assert status == 2 and "not a file tagger predict writes" in err
    status, _, err = run(capsys, "predict", *SEED_FILES, "-o", "tags.jsonl")
    status, _, err = run(capsys, "report", "tags.jsonl", "-o", "tags.jsonl")
    assert status == 1 and "the report would overwrite the tags it reads" in err
    assert not (tmp_path / "report.html").exists()


text = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)


@given(st.lists(st.tuples(text, text, text, text, st.floats(0, 1), st.booleans()), min_size=1, max_size=12))
def test_every_text_of_a_report_is_escaped(items):
    """Whatever a file's names, ids, titles and areas hold, the report is made of its own
    elements only, and shows each text as it was."""
    sources, ids, titles, areas, confidences, rights = (list(column) for column in zip(*items))
    overview = Overview()
    overview.add(
        {
            "source": np.array(sources, dtype=object),
            "position": np.arange(1, len(items) + 1),
            "id": np.array(ids, dtype=object),
            "title": np.array(titles, dtype=object),
            "area": np.array(areas, dtype=object),
            "confidence": np.array(confidences),
            "runner_up": np.full(len(items), "other", dtype=object),
            "runner_up_confidence": 1 - np.array(confidences),
            "needs_review": np.array(rights),
            "label": np.array([a if r else "x" for a, r in zip(areas, rights)], dtype=object),
        }
    )
    html = build(overview, None, "<script>alert(1)</script>")
    page = parsed(html)
    assert set(page.tags) <= ELEMENTS
    shown = "".join(page.text)
    assert "<script>alert(1)</script>" in shown
    assert all(title in shown for _, _, title, _, _, _ in items[:3] if title.strip())


@pytest.fixture(scope="module")
def tagged_lines(tmp_path_factory) -> list[str]:
    """The lines of ``tagger predict``'s CSV of the 38 seeds."""
    from tagger.cli import main

    path = tmp_path_factory.mktemp("tags") / "tags.csv"
    assert main(["predict", *map(str, SEED_FILES), "-o", str(path), "--quiet"]) == 0
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


@pytest.mark.slow  # over 5 s on 2 shared cores: in the slow run, with the other long tests
@given(
    value=st.sampled_from(["nan", "inf", "-inf", "-5", "7", "1.5", "x", ""]),
    column=st.sampled_from(["confidence", "runner_up_confidence"]),
    row=st.integers(1, 38),
)
def test_a_row_that_cannot_be_a_prediction_is_an_error_naming_its_line(
    capsys, tmp_path_factory, tagged_lines, value, column, row
):
    folder = tmp_path_factory.mktemp("report")
    lines = list(tagged_lines)
    header = lines[0].rstrip("\n").split(",")
    cells = lines[row].rstrip("\n").split(",")
    cells[header.index(column)] = value
    lines[row] = ",".join(cells) + "\n"
    (folder / "bad.csv").write_text("".join(lines), encoding="utf-8")
    status, _, err = run(capsys, "report", folder / "bad.csv", "-o", folder / "r.html")
    assert status == 2 and not (folder / "r.html").exists()
    assert f"bad.csv:{row + 1}: {column} " in err and "is not a probability from 0 to 1" in err


@pytest.mark.parametrize("value", ["yes", "", "2", "Truth"])
def test_a_review_flag_predict_never_writes_is_an_error_naming_its_line(
    capsys, tmp_path, tagged_lines, value
):
    """needs_review is True or False as predict writes it (read as JSON and Parquet booleans
    too); anything else is not read as False in silence."""
    lines = list(tagged_lines)
    header = lines[0].rstrip("\n").split(",")
    cells = lines[5].rstrip("\n").split(",")
    cells[header.index("needs_review")] = value
    lines[5] = ",".join(cells) + "\n"
    (tmp_path / "bad.csv").write_text("".join(lines), encoding="utf-8")
    status, _, err = run(capsys, "report", tmp_path / "bad.csv", "-o", tmp_path / "r.html")
    assert status == 2 and f"bad.csv:6: needs_review {value!r} is not true or false" in err


def test_a_position_past_any_file_and_a_cut_gzip_are_clear_errors(capsys, tmp_path, tagged_lines):
    import gzip

    lines = list(tagged_lines)
    lines[3] = lines[3].replace(",3,", ",100000000000000000000000,", 1)
    (tmp_path / "far.csv").write_text("".join(lines), encoding="utf-8")
    status, _, err = run(capsys, "report", tmp_path / "far.csv", "-o", tmp_path / "r.html")
    assert status == 2 and "far.csv:4: position" in err and "a whole number from 1" in err
    whole = gzip.compress("".join(tagged_lines).encode())
    (tmp_path / "cut.csv.gz").write_bytes(whole[: len(whole) // 2])
    status, _, err = run(capsys, "report", tmp_path / "cut.csv.gz", "-o", tmp_path / "r.html")
    assert status == 2 and "cut.csv.gz: unreadable" in err and "internal error" not in err


def test_report_writes_through_a_symlink_and_a_fifo_as_predict_does(capsys, tmp_path, tagged_lines):
    import os
    import stat
    import threading

    (tmp_path / "tags.csv").write_text("".join(tagged_lines), encoding="utf-8")
    (tmp_path / "real.html").write_text("old\n")
    (tmp_path / "link.html").symlink_to("real.html")
    status, _, err = run(capsys, "report", tmp_path / "tags.csv", "-o", tmp_path / "link.html")
    assert status == 0, err
    assert (tmp_path / "link.html").is_symlink() and "<html" in (tmp_path / "real.html").read_text()
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    status, _, err = run(capsys, "report", tmp_path / "tags.csv", "-o", fifo)
    reader.join(30)
    assert status == 0 and received and "<html" in received[0]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_a_label_column_named_as_the_tag_is_the_inputs_never_the_tag_itself(capsys, tmp_path):
    (tmp_path / "t.csv").write_text(
        "abstract,area\nA quadruped robot learns to climb stairs.,theory\nWe prove a regret bound for bandits.,theory\n"
    )
    assert run(capsys, "predict", tmp_path / "t.csv", "--keep", "area", "-o", tmp_path / "x.csv")[0] == 0
    for named in ("area", "AREA", "input_area"):  # as every column option, without regard to case
        status, _, err = run(
            capsys, "report", tmp_path / "x.csv", "--label-column", named, "-o", tmp_path / "r.html"
        )
        assert status == 0, err
        page = (tmp_path / "r.html").read_text()
        assert "the tag is right for 50% of them" in page  # robotics is tagged robotics, not theory
    assert run(capsys, "predict", tmp_path / "t.csv", "-o", tmp_path / "y.csv")[0] == 0
    status, _, err = run(
        capsys, "report", tmp_path / "y.csv", "--label-column", "area", "-o", tmp_path / "r.html"
    )
    assert status == 2 and "'area' is tagger's own column (the tag), not a column of hand labels" in err


def test_labels_that_are_not_the_model_s_areas_are_refused_as_evaluate_refuses_them(capsys, tmp_path):
    """LLM, Vision, None for llm, vision, none: the report said '3 labelled: right 0 %' where
    evaluate --data refuses the same file; one rule (evaluate.refuse_unknown_areas) for both."""
    (tmp_path / "t.csv").write_text(
        "abstract,gold\n"
        "We fine-tune a large language model with human feedback.,LLM\n"
        "Image segmentation with convolutional networks.,Vision\n"
        "Users rate films on a website.,None\n"
        "A quadruped robot learns to climb stairs.,robotics\n"
    )
    assert run(capsys, "predict", tmp_path / "t.csv", "--keep", "gold", "-o", tmp_path / "x.csv")[0] == 0
    status, _, err = run(
        capsys, "report", tmp_path / "x.csv", "--label-column", "gold", "-o", tmp_path / "r.html"
    )
    told = "3 area(s) the model does not know: 'LLM', 'None', 'Vision'"
    assert status == 2 and told in err and "Measure a model on labels of its areas (" in err, err
    assert not (tmp_path / "r.html").exists()
    status, _, err = run(
        capsys,
        "evaluate",
        "--model",
        shipped_model_dir(),
        "--data",
        tmp_path / "t.csv",
        "--label-column",
        "gold",
    )
    assert status == 2 and told in err, err


def test_an_abstract_annotators_disagree_on_counts_nowhere_in_the_report(capsys, tmp_path, monkeypatch):
    """ben safety, ana vision, no review: the abstract has no label yet (training leaves it
    out), so the report neither shows one of their answers as its label nor counts the tag
    right or wrong; once a review settles it, the final label counts."""
    import json

    from tagger.labelstore import ProjectLabels
    from tagger.reading import read_abstracts

    monkeypatch.chdir(tmp_path)
    assert run(capsys, "init", "--empty")[0] == 0
    texts = [
        "Membership inference attacks recover which records trained a model.",
        "We prove a regret bound for contextual bandits with linear rewards.",
    ]
    (tmp_path / "p.jsonl").write_text(
        "".join(json.dumps({"id": f"p{i}", "abstract": t}) + "\n" for i, t in enumerate(texts))
    )
    first, second = read_abstracts(["p.jsonl"])
    ProjectLabels("labels", "seeds", "ben").add(first, "safety")
    ProjectLabels("labels", "seeds", "ana").add(first, "vision")
    ProjectLabels("labels", "seeds", "ana").add(second, "theory")
    assert run(capsys, "predict", "p.jsonl", "-o", "t.csv")[0] == 0
    assert run(capsys, "report", "t.csv", "-o", "r.html")[0] == 0
    assert "1 of these abstracts are labelled: the tag is right for 100%" in (tmp_path / "r.html").read_text()
    ProjectLabels("labels", "seeds", "rita", reviewing=True).add(first, "safety")
    assert run(capsys, "report", "t.csv", "-o", "r.html")[0] == 0
    assert "2 of these abstracts are labelled: the tag is right for 100%" in (tmp_path / "r.html").read_text()


def test_labels_of_a_pile_with_its_own_ids_are_found_by_the_report(capsys, tmp_path, monkeypatch):
    """label, predict, report on records that carry their own id and title: the report joins
    the labels by those ids (it said 'None of these abstracts is labelled') and shows the
    titles (they were empty unless predict kept them)."""
    import io
    import json
    import sys

    monkeypatch.chdir(tmp_path)
    assert run(capsys, "init")[0] == 0
    records = [
        {
            "id": "p1",
            "title": "Stair climbing",
            "abstract": "A quadruped robot learns to climb stairs from proprioception.",
        },
        {
            "id": "p2",
            "title": "Linear bandits",
            "abstract": "We prove a regret bound for contextual bandits with linear rewards.",
        },
    ]
    (tmp_path / "papers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    monkeypatch.setattr(sys, "stdin", io.StringIO("robotics\ntheory\n"))
    assert run(capsys, "label", "papers.jsonl", "--n", "2")[0] == 0
    assert run(capsys, "predict", "papers.jsonl", "-o", "tags.csv")[0] == 0
    status, _, _ = run(capsys, "report", "tags.csv", "-o", "r.html")
    page = (tmp_path / "r.html").read_text()
    assert status == 0 and "2 of these abstracts are labelled" in page
    assert (
        "<td>Stair climbing</td>" in page and "<td>Linear bandits</td>" in page
    )  # the titles, without --keep


def _tags_file(path, n: int, least: int) -> None:
    """A tags file of ``n`` rows whose least confident is row ``least`` (from 1)."""
    with open(path, "w", encoding="utf-8") as stream:
        stream.write("source,position,id,area,confidence,runner_up,runner_up_confidence,needs_review,tags\n")
        for i in range(1, n + 1):
            confidence = 0.05 if i == least else 0.5 + (i % 50) / 100
            stream.write(
                f"pile.jsonl,{i},{i:016x},vision,{confidence},rl,0.1,{i % 3 == 0},vision:{confidence}\n"
            )


@pytest.mark.slow  # reads 22,000 rows twice under tracemalloc (2 s): in the slow run
def test_a_report_of_many_rows_streams_them(tmp_path):
    """A tags file is read a chunk at a time (a 3 M-row file read whole took 3.1 GB): ten
    times the rows take no more memory, and every row is counted, the least confident found
    wherever it is."""
    import tracemalloc

    import pandas  # noqa: F401  (imported before memory is traced)

    from tagger.report import read_tags

    peaks = {}
    for n in (2_000, 20_000):
        _tags_file(tmp_path / f"{n}.csv", n, least=n - 6)
        tracemalloc.start()
        try:
            overview = read_tags(str(tmp_path / f"{n}.csv"), {f"{5:016x}": "vision", f"{6:016x}": "rl"},
                                 chunk_rows=1_000)  # fmt: skip
            peaks[n] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert overview.rows == n and overview.areas == {"vision": n}
        assert sum(overview.review.values()) == n // 3
        assert overview.lowest[0][1].position == n - 6  # the least confident, near the end
        assert overview.labelled.count.sum() == 2 and overview.labelled.right.sum() == 1
    assert peaks[20_000] < 1.5 * peaks[2_000], peaks


@pytest.mark.slow  # over 5 s on 2 shared cores: in the slow run, with the other long tests
@given(
    kind=st.sampled_from(["csv", "jsonl", "csv.gz"]),
    edits=st.lists(
        st.tuples(st.floats(0, 1), st.integers(0, 40), st.binary(max_size=6)), min_size=1, max_size=3
    ),
)
def test_a_mutated_tags_file_is_reported_or_one_clear_error(
    capsys, tmp_path_factory, tagged_lines, kind, edits
):
    """Bytes replaced, cut or inserted anywhere in predict's output (inside the compression
    too): a report or one clear error, never an internal one (49 of 1,500 mutated files once
    ended in exit 70; tests/benchmarks/fuzz_report.py runs 1,500)."""
    import gzip

    folder = tmp_path_factory.mktemp("mutated")
    data = "".join(tagged_lines).encode()
    if kind == "jsonl":
        import csv as csv_module
        import json

        rows = list(csv_module.DictReader(io.StringIO("".join(tagged_lines))))
        data = "".join(json.dumps(row) + "\n" for row in rows).encode()
    for where, cut, inserted in edits:
        at = int(where * len(data))
        data = data[:at] + inserted + data[at + cut :]
    path = folder / f"tags.{kind}"
    path.write_bytes(gzip.compress(data) if kind.endswith(".gz") else data)
    status, _, err = run(capsys, "report", path, "-o", folder / "r.html")
    assert status in (0, 2), err
    assert "internal error" not in err and (status == 0 or err.count("\n") == 1)


def test_a_parquet_tags_file_with_text_that_is_not_utf8_is_a_clear_error(capsys, tmp_path):
    """(Found by tests/benchmarks/fuzz_report.py: an internal error in 1 of 1,500 files.)"""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = pa.array([b"a1", b"bad \xff\xfe id"], type=pa.binary()).view(pa.string())
    table = pa.table(
        {
            "source": ["p.jsonl", "p.jsonl"],
            "position": [1, 2],
            "id": ids,
            "area": ["vision", "rl"],
            "confidence": [0.9, 0.5],
            "runner_up": ["rl", "vision"],
            "runner_up_confidence": [0.05, 0.4],
            "needs_review": [False, True],
        }
    )
    pq.write_table(table, tmp_path / "tags.parquet")
    status, _, err = run(capsys, "report", tmp_path / "tags.parquet", "-o", tmp_path / "r.html")
    assert status == 2 and "tags.parquet: unreadable" in err and "Invalid UTF8" in err, err


def test_accuracy_on_abstracts_the_model_learnt_from_is_said_apart_from_the_rest(
    capsys, tmp_path, monkeypatch
):
    """The report's accuracy of labelled abstracts counts those the model was trained on; it
    says how many, gives the accuracy on the others, and the model's cross-validated figure."""
    import json
    import re

    from tagger.labelstore import ProjectLabels
    from tagger.model import load_model
    from tagger.reading import Abstract, read_abstracts

    monkeypatch.chdir(tmp_path)
    assert run(capsys, "init")[0] == 0
    pile = [
        json.loads(line)
        for line in (ROOT / "docs" / "example" / "papers.jsonl").read_text("utf-8").splitlines()
    ]
    read = [r for r in pile if r["area"] != "none"][:8]  # the readers' areas of 8 abstracts nobody trained on
    seeds = [{"abstract": a.text} for a in read_abstracts([SEED_FILES[0]])][:3]  # (no id: named by digest)
    (tmp_path / "pile.jsonl").write_text("".join(json.dumps(r) + "\n" for r in read + seeds))
    store = ProjectLabels("labels", "seeds", annotator="reader")
    for i, r in enumerate(read):
        store.add(Abstract(r["id"], r["abstract"], "pile.jsonl", i + 1, i + 1), r["area"])
    assert run(capsys, "predict", "pile.jsonl", "-o", "tags.csv")[0] == 0
    status, _, _ = run(capsys, "report", "tags.csv", "-o", "r.html")
    page = (tmp_path / "r.html").read_text()
    accuracy = load_model().card.evaluation.accuracy
    assert status == 0 and "11 of these abstracts are labelled" in page
    assert "The model was trained on 3 of them" in page, page
    assert f"its cross-validated accuracy is {accuracy:.2f}" in page
    assert re.search(r"on the other 8, which it did not learn from, the tag is right for \d+%", page), page
