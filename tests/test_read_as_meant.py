"""Input is read as its name or header says, or a note says how it was read; an option given
is never ignored; one rule for columns whose names differ only in case."""

import io
import json
import textwrap

import pytest
from conftest import run
from hypothesis import given
from hypothesis import strategies as st

from tagger.reading import Columns, ReadReport, read_abstracts

ZOTERO = "Key,Item Type,Title,Abstract Note\n" + "".join(
    f'K{i},journalArticle,Paper {i},"We teach a robot arm to fold towels, case {i}."\n' for i in range(10)
)


def read_stdin(text: str, **options):
    report = ReadReport()
    abstracts = list(
        read_abstracts(["-"], stdin=io.BufferedReader(io.BytesIO(text.encode())), report=report, **options)
    )
    return abstracts, report


def test_csv_on_stdin_with_another_abstract_column_is_csv_not_one_text(capsys, monkeypatch):
    abstracts, report = read_stdin(ZOTERO)  # Zotero's column names, read as they come
    assert len(abstracts) == 10 and abstracts[3].title == "Paper 3"
    assert report.notes == [
        "<stdin>: read as csv (from its first line; --input-format says otherwise)",
        "<stdin>: abstracts from 'Abstract Note', ids from 'Key'",
    ]
    abstracts, report = read_stdin(ZOTERO, columns=Columns(abstract="Abstract Note"))
    assert len(abstracts) == 10 and abstracts[3].title == "Paper 3"
    assert report.notes[0] == "<stdin>: read as csv (from its first line; --input-format says otherwise)"


@pytest.mark.parametrize(
    "first_line",
    [
        "We study robots, bandits, and language models.",  # a sentence with commas
        "Robots grasp cups",  # one cell
    ],
)
def test_text_on_stdin_with_commas_stays_text(first_line):
    abstracts, report = read_stdin(first_line + "\nThey do so well, and fast.\n")
    assert len(abstracts) == 1
    assert report.notes == ["<stdin>: read as text (from its first line; --input-format says otherwise)"]


ONE_A_LINE = "".join(  # 32 abstracts of two or three sentences, all under 200 characters
    f"We study problem {i} of reinforcement learning with {'many ' * (i % 7)}agents. "
    f"It converges{' fast' * (i % 3)}.{' Experiments agree.' * (i % 2)}\n"
    for i in range(32)
)
ONE_SENTENCE_A_LINE = "".join(  # one abstract written a sentence a line, as in LaTeX sources
    f"{sentence}.\n"
    for sentence in (
        "We study robots that fold towels",
        "Our method learns from twenty human demonstrations",
        "It generalises to unseen cloth",
        "Experiments on two robot arms show gains over strong baselines",
    )
)
TITLES = (
    "Deep Learning for Robots\nA Theory of Bandits\nScaling Laws of Language Models\nDiffusion for Images\n"
)
WRAPPED = textwrap.dedent(
    """\
    We propose a new method for learning representations of
    graphs that scales to millions of nodes. The method uses a
    sampling scheme that reduces the variance of the gradient,
    and we prove that it converges. Experiments on five data
    sets show gains over strong baselines.
    """
)


@pytest.mark.parametrize(
    "text, n, note",
    [
        (ONE_A_LINE, 32, "each line ending where its last sentence ends"),
        (TITLES, 4, "none ending a sentence or going on to the next (titles?)"),
        (WRAPPED, 1, None),
        (ONE_SENTENCE_A_LINE, 1, None),
    ],
)
def test_a_text_file_without_blank_lines_is_read_as_its_text_says_with_a_note(tmp_path, text, n, note):
    path = tmp_path / "pile.txt"
    path.write_text(text)
    report = ReadReport()
    assert len(list(read_abstracts([path], report=report))) == n
    if note is None:
        assert report.notes == []
    else:
        [said] = report.notes
        assert f"pile.txt:1: read one abstract per line ({n} lines" in said and note in said


@pytest.mark.slow  # over 5 s on 2 shared cores: in the slow run, with the other long tests
@given(st.lists(st.from_regex(r"[a-z]{2,9}( [a-z]{2,9}){3,12}", fullmatch=True), min_size=3, max_size=30))
def test_any_text_wrapped_at_one_width_is_one_abstract(words):
    wrapped = textwrap.fill(" ".join(words).capitalize() + ".", width=60) + "\n"
    abstracts, report = read_stdin(wrapped)
    assert len(abstracts) == 1
    assert report.notes == ["<stdin>: read as text (from its first line; --input-format says otherwise)"]


BIB = textwrap.dedent(
    """\
    @article{smith2024,
      title = {Robots},
      abstract = {We teach a robot arm to fold towels.},
    }
    @article{jones2024,
      title = {Bandits},
      abstract = {We prove a regret bound.},
    }
    """
)


def test_a_file_read_as_another_format_than_its_name_says_is_noted(capsys, tmp_path):
    (tmp_path / "refs.bib").write_text(BIB)
    status, _, err = run(capsys, "predict", tmp_path / "refs.bib", "--input-format", "txt")
    assert status == 0
    assert "refs.bib: read as txt (--input-format), though its name says BibTeX\n" in err
    (tmp_path / "a.csv").write_text("abstract\nRobots grasp cups.\n")
    status, _, err = run(capsys, "predict", tmp_path / "a.csv", "--input-format", "txt")
    assert "a.csv: read as txt (--input-format), though its name says csv\n" in err


@pytest.mark.parametrize(
    "option, name, role",
    [("--title-column", "nosuch", "titles"), ("--id-column", "DOI", "ids")],
)
@pytest.mark.parametrize("suffix", ["csv", "jsonl", "parquet"])
def test_a_column_named_by_an_option_must_be_there(capsys, tmp_path, option, name, role, suffix):
    import pandas as pd

    frame = pd.DataFrame(
        {"title": ["Robots"], "id": ["r1"], "abstract": ["We teach a robot arm to fold towels."]}
    )
    path = tmp_path / f"a.{suffix}"
    if suffix == "csv":
        frame.to_csv(path, index=False)
    elif suffix == "jsonl":
        frame.to_json(path, orient="records", lines=True)
    else:
        frame.to_parquet(path)
    status, out, err = run(capsys, "predict", path, option, name)
    assert status == 2 and out == ""
    assert f"no {'field' if suffix == 'jsonl' else 'column'} {name!r} for the {role}" in err
    assert f"Name one the file has with {option}, or leave the option out." in err
    status, out, _ = run(capsys, "predict", path, option, option[2:].split("-")[0])  # its real name
    assert status == 0 and out.count("\n") == 2


@pytest.mark.parametrize(
    "order", [["Abstract", "abstract", "abstract"], ["abstract", "Abstract", "abstract"]]
)
def test_columns_named_alike_but_for_case_are_refused_whatever_their_order(capsys, tmp_path, order):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_arrays([pa.array([f"Robots grasp cup {i}."]) for i in range(3)], names=order)
    pq.write_table(table, tmp_path / "a.parquet")
    (tmp_path / "a.csv").write_text(",".join(order) + "\nRobots grasp cups.,b,c\n")
    for name in ("a.parquet", "a.csv"):
        for keep in ([], ["--keep", "all"]):
            status, _, err = run(capsys, "predict", tmp_path / name, *keep)
            assert status == 2, err
            assert "3 columns named 'abstract'" in err and "Rename all but one" in err
    (tmp_path / "a.jsonl").write_text(json.dumps({"Abstract": "Robots grasp cups.", "abstract": "b"}) + "\n")
    status, _, err = run(capsys, "predict", tmp_path / "a.jsonl")
    assert status == 2 and "2 fields named 'abstract'" in err


LONG = [
    "We train legged robots to climb stairs from proprioception and a depth camera, " * 7,
    "Large language models are jailbroken by prompts that hide a harmful request in a story, " * 7,
    "A diffusion model generates images of faces from text prompts with classifier-free guidance, " * 7,
]


@pytest.mark.parametrize("short", ["Session 2: Robotics", "We propose a new benchmark for robot grasping"])
def test_long_lines_with_a_short_one_among_them_are_one_abstract_a_line_and_said_so(tmp_path, short):
    """Ten long abstracts a line with a session's name (or a one-sentence abstract without its
    full stop) among them were read as one abstract, with no note: each line is one, the
    short one too, and the note names it."""
    lines = [*LONG[:2], short, *LONG, *LONG[:2]]
    (tmp_path / "p.txt").write_text("\n".join(line.strip() for line in lines) + "\n")
    report = ReadReport()
    abstracts = list(read_abstracts([tmp_path / "p.txt"], report=report))
    assert [a.text for a in abstracts] == [" ".join(line.split()) for line in lines]
    assert report.notes == [
        f"{tmp_path / 'p.txt'}:1: read one abstract per line (8 lines: most of 500 characters or more; "
        "the shorter ones tagged as abstracts too (a heading?): line(s) 3 of the paragraph)"
    ]


def test_a_paragraph_read_as_one_abstract_with_long_lines_in_it_says_so(tmp_path):
    lines = [LONG[0], "and then it goes on", "for a while", LONG[1], "and ends here"]
    (tmp_path / "p.txt").write_text("\n".join(line.strip() for line in lines) + "\n")
    report = ReadReport()
    assert len(list(read_abstracts([tmp_path / "p.txt"], report=report))) == 1
    assert report.notes == [
        f"{tmp_path / 'p.txt'}:1: read as one abstract over 5 lines, 2 of them of 500 characters or more "
        "(one abstract a line? a blank line between them says so)"
    ]


@pytest.mark.parametrize("name", ["arxiv_id", "DOI", "doi"])
@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_an_arxiv_id_or_a_doi_is_the_id_in_every_format(tmp_path, name, suffix):
    path = tmp_path / f"p{suffix}"
    rows = [("2501.01234v1", "We train legged robots."), ("2502.00002", "We study jailbreaks of LLMs.")]
    if suffix == ".jsonl":
        path.write_text("".join(json.dumps({name: i, "abstract": a}) + "\n" for i, a in rows))
    else:
        path.write_text(f"{name},abstract\n" + "".join(f"{i},{a}\n" for i, a in rows))
    report = ReadReport()
    assert [a.id for a in read_abstracts([path], report=report)] == [i for i, _ in rows]
    assert f"{path}: ids from '{name}'" in report.notes
