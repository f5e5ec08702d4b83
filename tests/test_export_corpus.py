"""Real-shaped exports of reference managers and databases (``tests/data/exports/``): for every
file, rows tagged + records reported without an abstract + bad records reported = the records in
the file, with their ids and titles carried; never a record lost in silence."""

import bisect
import io
import itertools
import json
import re
from pathlib import Path

import pytest
from conftest import ROOT, run
from hypothesis import example, given
from hypothesis import strategies as st

from tagger.reading import ReadReport, read_abstracts

EXPORTS = ROOT / "tests" / "data" / "exports"

# file -> the ids of its rows in order, the records without an abstract, the bad records, and
# the text some rows must hold (their abstract as a reader would read it)
CORPUS = {
    "zotero.bib": (
        ["mark2025", "diffusion2024", "muller2023", "sqrt2022", "mark2025"],
        1,
        2,
        {
            "mark2025": "paraphrasing with 92% recall. Code is here",
            "diffusion2024": "Error drops by 40% with our diffusion sampler, which needs 8 steps & no retraining",
            "muller2023": "Robots grasp cups with a tactile skin of 2,000 taxels",
            "sqrt2022": "at a rate of 1 over \\sqrt",
        },
    ),
    "savedrecs.txt": (  # Web of Science, "Plain text file"
        ["WOS:000123456700001", "WOS:000123456700003"],
        1,
        0,
        {
            "WOS:000123456700001": "alone. The policy transfers from simulation to a real arm",
            "WOS:000123456700003": "contextual bandits with linear rewards, matching the lower bound",
        },
    ),
    "savedrecs-tab.txt": (  # Web of Science, "Tab delimited file": BOM, CRLF, a tab ending each row
        ["WOS:000000000000001", "WOS:000000000000003"],
        1,
        0,
        {"WOS:000000000000001": "We train robots to grasp cups from tactile signals."},
    ),
    "endnote-crlf.ris": (  # CRLF, 'ER  -' with no space after it, the abstract in two AB lines
        ["p1", "p3"],
        1,
        0,
        {"p1": "We generate protein backbones with a diffusion model. Designed binders are validated"},
    ),
    "arxiv-query.atom": (  # the arXiv API's answer to a query
        ["2502.01234v1", "2502.09999v1"],
        1,
        0,
        {"2502.01234v1": "and a depth camera, trained in simulation & transferred"},
    ),
    "scopus.csv": (  # Scopus: a BOM, every cell quoted, "[No abstract available]"
        ["2-s2.0-85100000001", "2-s2.0-85100000003"],
        1,
        0,
        {"2-s2.0-85100000003": "95% of nodes are certified"},
    ),
    "zotero.csv": (  # Zotero: a BOM, CRLF, an abstract over two lines, ids from Key
        ["ABCD1234", "IJKL9012"],
        1,
        0,
        {"ABCD1234": "instead of tokens, matching a tokenized model"},
    ),
    "wos-export.xlsx": (  # Web of Science's Excel export, full column names
        ["WOS:001", "WOS:003"],
        1,
        0,
        {"WOS:003": "cutting the average completion time by a third"},
    ),
}
TITLES = {
    "2-s2.0-85100000001": "Sim-to-real transfer for legged robots",
    "IJKL9012": "Private federated learning with secure aggregation",
    "WOS:001": "Protein structure prediction with diffusion",
    "2502.01234v1": "Learning to Climb Stairs with a Quadruped Robot from Proprioception",
    "WOS:000123456700001": "Grasping unknown objects with tactile sensing",
    "WOS:000000000000003": "Regret of linear bandits",
    "p3": "Quantizing language models to four bits",
}


def _predict(capsys, tmp_path, name):
    status, _, err = run(capsys, "predict", EXPORTS / name, "--skip-bad", "-o", tmp_path / "out.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    return status, rows, err


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_every_record_of_an_export_is_tagged_or_reported(capsys, tmp_path, name):
    ids, without_abstract, bad, texts = CORPUS[name]
    status, rows, err = _predict(capsys, tmp_path, name)
    assert [row["id"] for row in rows] == ids
    assert status == (3 if bad else 0)
    assert (f"skipped {bad} bad record(s)" in err) == bool(bad), err
    assert (f"left out {without_abstract} record(s) without an abstract" in err) == bool(without_abstract), (
        err
    )
    assert all(row["title"] for row in rows)
    for row in rows:
        assert row["title"] == TITLES.get(row["id"], row["title"])
    report = ReadReport()
    found: dict[str, str] = {}
    for abstract in read_abstracts([EXPORTS / name], skip_bad=True, report=report):
        found.setdefault(abstract.id, abstract.text)
    assert (
        report.read + len(report.without_abstract) + len(report.skipped) == len(ids) + without_abstract + bad
    )
    for identifier, text in texts.items():
        assert text in found[identifier], found[identifier]


@pytest.mark.parametrize("name", sorted(set(CORPUS) - {"wos-export.xlsx"}))  # (a workbook needs its path)
def test_an_export_on_standard_input_is_read_as_its_file_is(name):
    """``cat refs.bib | tagger predict``: the same records, ids, titles and texts as the file."""
    data = (EXPORTS / name).read_bytes()
    by_path, by_stdin = ReadReport(), ReadReport()
    expected = list(read_abstracts([EXPORTS / name], skip_bad=True, report=by_path))
    found = list(
        read_abstracts(["-"], stdin=io.BufferedReader(io.BytesIO(data)), skip_bad=True, report=by_stdin)
    )
    assert [(a.id, a.title, a.text) for a in found] == [(a.id, a.title, a.text) for a in expected]
    assert len(by_stdin.skipped) == len(by_path.skipped)
    assert len(by_stdin.without_abstract) == len(by_path.without_abstract)
    assert any(note.startswith("<stdin>: read as") for note in by_stdin.notes), by_stdin.notes


def test_an_atom_feed_keeps_its_dates_authors_and_categories(capsys, tmp_path):
    status, _, _ = run(
        capsys, "predict", EXPORTS / "arxiv-query.atom", "--keep", "all", "-o", tmp_path / "out.jsonl"
    )
    first = json.loads((tmp_path / "out.jsonl").read_text().splitlines()[0])
    assert status == 0
    assert (first["published"], first["authors"], first["categories"], first["primary_category"]) == (
        "2025-02-03T18:00:00Z",
        "Ana Lima; Ben Ode",
        "cs.RO; cs.LG",
        "cs.RO",
    )


BOMB = """<?xml version="1.0"?>
<!DOCTYPE feed [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>
<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>1</id><summary>&b;</summary></entry></feed>
"""
EXTERNAL = """<?xml version="1.0"?>
<!DOCTYPE feed [<!ENTITY x SYSTEM "file:///etc/hostname">]>
<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>1</id><summary>&x;</summary></entry></feed>
"""


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (BOMB, "XML with a DTD or entities, not read: they could expand or fetch anything"),
        (EXTERNAL, "XML with a DTD or entities, not read: they could expand or fetch anything"),
        ("<rss><channel/></rss>", "an XML file that is not an Atom feed (its root is <rss>)"),
        ('<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>1</id><summary>cut', "not well-formed XML"),
    ],
)
def test_an_xml_file_that_is_not_a_plain_atom_feed_is_one_clear_error(capsys, tmp_path, content, message):
    (tmp_path / "feed.xml").write_text(content)
    status, out, err = run(capsys, "predict", tmp_path / "feed.xml")
    assert (status, out) == (2, "") and message in err and len(err.splitlines()) == 1, err
    assert "aaaaaaaaaa" not in err


def test_a_web_of_science_export_is_read_as_one_and_says_so(capsys, tmp_path):
    _, _, err = _predict(capsys, tmp_path, "savedrecs.txt")
    assert (
        "savedrecs.txt: read as a Web of Science plain-text export (field tags, each record ending ER)" in err
    )
    _, _, err = _predict(capsys, tmp_path, "savedrecs-tab.txt")
    assert "read as tab-separated values" in err and "ids from 'UT'" in err
    status, _, err = run(
        capsys, "predict", EXPORTS / "savedrecs-tab.txt", "--keep", "ID", "-o", tmp_path / "k.jsonl"
    )
    kept = [json.loads(line)["ID"] for line in (tmp_path / "k.jsonl").read_text().splitlines()]
    assert status == 0 and kept == ["DEEP LEARNING; ROBOTS", "BANDITS"]


def test_a_bibtex_field_that_cannot_be_decoded_is_kept_as_written_and_said(capsys, tmp_path):
    _, _, err = _predict(capsys, tmp_path, "zotero.bib")
    assert "note: " in err and "zotero.bib: 1 field(s) kept as written, their LaTeX not decoded" in err
    assert "the field 'url' is given twice: the first kept" in err
    assert "'noat2024' " not in err and "looks like an entry but is not one ('article{noat2024,'" in err
    assert "uses 'kernels', which no @string of the file defines" in err


LATEX = st.sampled_from(
    [
        "\\sqrt",
        "\\verb",
        "\\href{http://a.b/%7E}{x}",
        "\\emph{",
        "}",
        "{",
        "%",
        "&",
        "#",
        "$",
        "$x^2$",
        "\\\\",
        "\\%",
        "\\&",
        "~",
        "\\textbf{bold}",
        "\\cite{k}",
        "@",
        '"',
        "\\'e",
        '{\\"u}',
        "\\unknownmacro",
        "\\begin{itemize}",
        "\\end{",
        "\n",
    ]
)
WORDS = st.from_regex(r"[A-Za-z0-9 ,.;:()-]{1,20}", fullmatch=True)


@given(
    st.lists(st.lists(st.one_of(LATEX, WORDS), min_size=1, max_size=12).map("".join), min_size=1, max_size=6)
)
@example(["},@(", "fine text"])  # an '@' of the text reported on the broken entry's own lines (CI found it)
def test_every_bibtex_entry_is_tagged_or_reported_whatever_latex_its_abstract_holds(
    tmp_path_factory, abstracts
):
    """Each entry is tagged or reported (by its lines: an abstract that breaks its entry's
    braces may leave an '@' of its text reported as an entry of its own, on those lines)."""
    path = tmp_path_factory.mktemp("bib") / "refs.bib"
    entries = [
        f"@article{{k{i},\n  title = {{T{i}}},\n  abstract = {{{text}}},\n}}\n\n"
        for i, text in enumerate(abstracts)
    ]
    path.write_text("".join(entries))
    first_lines = list(itertools.accumulate((entry.count("\n") for entry in entries[:-1]), initial=1))
    report = ReadReport()
    found = list(read_abstracts([path], skip_bad=True, report=report))
    reported = {
        bisect.bisect_right(first_lines, int(line)) - 1
        for said in report.without_abstract + report.skipped
        for line in re.findall(r"refs\.bib:(\d+)", said)[:1]
    }
    tagged = {int(abstract.id[1:]) for abstract in found if re.fullmatch(r"k\d+", abstract.id)}
    assert tagged | reported == set(range(len(abstracts))), report
    assert len(found) + len(reported) == len(abstracts), report  # none both tagged and reported
    for abstract in found:
        assert re.fullmatch(r"k\d+", abstract.id) and abstract.title == f"T{abstract.id[1:]}"
        written = abstracts[int(abstract.id[1:])]
        after_percent = written.split("%")[-1].strip()
        if "%" in written and after_percent.isalnum() and "\\" not in written and "{" not in written:
            assert abstract.text.endswith(after_percent)  # a bare % is text, not a comment


def test_a_workbook_with_two_abstract_columns_is_refused_as_a_csv_file_is(capsys, tmp_path):
    from openpyxl import Workbook

    said = []
    for name in ("twins.xlsx", "twins.csv"):
        rows = [["title", "abstract", "abstract"], ["Grasping", "Robots grasp cups.", "Proteins fold."]]
        if name.endswith(".xlsx"):
            book = Workbook()
            for row in rows:
                book.active.append(row)
            book.save(tmp_path / name)
        else:
            (tmp_path / name).write_text("\n".join(",".join(row) for row in rows) + "\n")
        status, out, err = run(capsys, "predict", tmp_path / name)
        assert status == 2 and out == ""
        said.append(err.replace(name, "FILE"))
    assert said[0] == said[1] and "2 columns named 'abstract'" in said[0]


def test_a_workbook_is_closed_once_read(tmp_path):
    import pandas as pd

    pd.DataFrame({"abstract": ["Robots grasp cups."]}).to_excel(tmp_path / "a.xlsx", index=False)
    descriptors = Path("/proc/self/fd")
    before = len(list(descriptors.iterdir()))
    for _ in range(20):
        assert [a.text for a in read_abstracts([tmp_path / "a.xlsx"])] == ["Robots grasp cups."]
    assert len(list(descriptors.iterdir())) <= before


def test_the_libraries_own_warnings_never_reach_the_user(capfd, tmp_path):
    (tmp_path / "odd.bib").write_text("@article{k, title={T}, abstract={A rate of \\sqrt and \\verb}}\n")
    report = ReadReport()
    assert len(list(read_abstracts([tmp_path / "odd.bib"], report=report))) == 1
    out, err = capfd.readouterr()
    assert (out, err) == ("", "") and len(report.notes) == 1


@pytest.mark.slow
def test_a_workbook_is_read_a_row_at_a_time(tmp_path):
    """Memory does not grow with the workbook (a 6 MB one of repetitive cells took 2.7 GB)."""
    import tracemalloc

    from openpyxl import Workbook

    peaks = []
    for rows in (2_000, 8_000):
        book = Workbook(write_only=True)
        sheet = book.create_sheet("papers")
        sheet.append(["title", "abstract", "id"])
        for i in range(rows):
            sheet.append(["A title", "Robots grasp cups with tactile skins in simulation.", f"r{i}"])
        book.save(tmp_path / f"{rows}.xlsx")
        tracemalloc.start()
        assert sum(1 for _ in read_abstracts([tmp_path / f"{rows}.xlsx"])) == rows
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] < 1.3 * peaks[0] + 2**20, peaks


def test_a_reference_record_that_never_ends_is_a_bad_record_not_a_growing_one(tmp_path):
    """A TY line followed by megabytes of junk held the whole rest of the file (40 MB: 879 MB):
    past the bound it is a bad record at its first line, the rest noted as outside records."""
    from tagger.reading.readers.ris import MAX_RECORD_CHARS

    path = tmp_path / "junk.ris"
    junk = "x" * MAX_RECORD_CHARS + "\n" + "junk line of no record\n" * 3
    path.write_text("TY  - JOUR\nAB  - Robots grasp cups.\n" + junk + "ER  - \n")
    report = ReadReport()
    assert list(read_abstracts([path], skip_bad=True, report=report)) == []
    assert report.skipped == [
        f"{path}:1: a RIS record without its end (over {MAX_RECORD_CHARS:,} characters). "
        "Add the ER line, or leave the record out with --skip-bad."
    ]
    assert report.notes == [f"{path}: 5 line(s) outside any record (TY to ER) left out, the first at line 3"]


@pytest.mark.slow
def test_a_bibtex_file_is_parsed_an_entry_at_a_time(tmp_path):
    """Memory does not grow with a .bib file (52 MB took 705 MB: it was parsed whole)."""
    import tracemalloc

    peaks = []
    for entries in (1_000, 4_000):
        path = tmp_path / f"{entries}.bib"
        path.write_text(
            "".join(
                f"@article{{k{i},\n  title = {{Title {i}}},\n  abstract = {{Robots grasp cups {i}. {'word ' * 100}}},\n}}\n\n"
                for i in range(entries)
            )
        )
        tracemalloc.start()
        assert sum(1 for _ in read_abstracts([path])) == entries
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] < 1.3 * peaks[0] + 2**20, peaks
