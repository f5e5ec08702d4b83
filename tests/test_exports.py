"""What reference managers, bibliographic databases and spreadsheets export, read as it comes:
BibTeX, RIS, Excel, Zotero's and Scopus's CSV, Web of Science's tab-delimited ``savedrecs.txt``;
a record without an abstract is left out and counted, never the run's end."""

import csv
import re
import string

import pytest
from conftest import SEEDS, run
from hypothesis import given
from hypothesis import strategies as st

from tagger.errors import InputError
from tagger.reading import Columns, ReadReport, abstract_id, read_abstracts

# 20 references: real abstracts (labelled ones of 2022-24 without LaTeX, which BibTeX would decode), two of
# them (the 6th and the 15th) without one.
SEED_TEXTS = [
    a for a in read_abstracts([SEEDS / "modern-2022-24.jsonl"]) if not any(c in a.text for c in "\\${}%~&_^#")
][:20]
REFERENCES = [
    {"key": f"ref{i:02d}", "title": f"Paper number {i}", "abstract": "" if i in (5, 14) else a.text}
    for i, a in enumerate(SEED_TEXTS)
]
WITH_ABSTRACT = [r for r in REFERENCES if r["abstract"]]


def write_bib(path, references):
    entries = []
    for r in references:
        abstract = f"  abstract = {{{r['abstract']}}},\n" if r["abstract"] else ""
        entries.append(f"@article{{{r['key']},\n  title = {{{r['title']}}},\n{abstract}  year = 2024\n}}\n")
    path.write_text("% Exported by Zotero\n\n" + "\n".join(entries), encoding="utf-8")


def write_ris(path, references):
    import rispy

    records = [
        {"type_of_reference": "JOUR", "id": r["key"], "title": r["title"]}
        | ({"abstract": r["abstract"]} if r["abstract"] else {})
        for r in references
    ]
    path.write_text(rispy.dumps(records), encoding="utf-8")


def write_xlsx(path, references, names=("Title", "Abstract", "EID")):
    import pandas as pd

    pd.DataFrame(
        {names[0]: [r["title"] for r in references], names[1]: [r["abstract"] for r in references]}
        | {names[2]: [r["key"] for r in references]}
    ).to_excel(path, index=False)


def write_zotero_csv(path, references):
    with open(path, "w", encoding="utf-8-sig", newline="") as stream:  # Zotero writes a BOM
        writer = csv.writer(stream)
        writer.writerow(["Key", "Item Type", "Publication Year", "Author", "Title", "Abstract Note", "DOI"])
        for r in references:
            writer.writerow([r["key"], "journalArticle", "2024", "Doe, J.", r["title"], r["abstract"], ""])


def write_wos_tab(path, references):
    """Web of Science's 'Tab delimited file' export: savedrecs.txt, field tags as the header."""
    header = ["PT", "AU", "TI", "SO", "AB", "PY", "UT"]
    lines = ["\t".join(header)]
    lines += [
        "\t".join(["J", "Doe, J", r["title"], "JMLR", r["abstract"], "2024", r["key"]]) for r in references
    ]
    path.write_text("\ufeff" + "\n".join(lines) + "\n", encoding="utf-8")


WRITERS = {
    "refs.bib": write_bib,
    "refs.ris": write_ris,
    "refs.xlsx": write_xlsx,
    "zotero.csv": write_zotero_csv,
    "savedrecs.txt": write_wos_tab,
}


@pytest.mark.parametrize("name", WRITERS)
def test_an_export_of_20_references_with_2_without_abstract_tags_as_it_comes(capsys, tmp_path, name):
    path = tmp_path / name
    WRITERS[name](path, REFERENCES)
    report = ReadReport()
    abstracts = list(read_abstracts([path], report=report))
    assert [(a.id, a.title, a.text) for a in abstracts] == [
        (r["key"], r["title"], r["abstract"]) for r in WITH_ABSTRACT
    ]
    assert [a.position for a in abstracts] == [i + 1 for i, r in enumerate(REFERENCES) if r["abstract"]]
    assert [w.rsplit(" ", 1)[1] for w in report.without_abstract] == ["(ref05)", "(ref14)"]
    status, out, err = run(capsys, "predict", path)  # no option beyond the file's name
    assert status == 0
    rows = list(csv.DictReader(out.splitlines()))
    assert [(row["id"], row["title"]) for row in rows] == [(r["key"], r["title"]) for r in WITH_ABSTRACT]
    assert err.startswith("tagged 18 abstract(s) from 1 file(s) (2 without an abstract left out)")
    assert "left out 2 record(s) without an abstract, nothing to tag: " in err


def test_export_names_are_noted_with_where_each_part_came_from(capsys, tmp_path):
    write_zotero_csv(tmp_path / "zotero.csv", REFERENCES)
    write_wos_tab(tmp_path / "savedrecs.txt", REFERENCES)
    write_xlsx(tmp_path / "scopus.xlsx", REFERENCES)
    status, _, err = run(capsys, "predict", tmp_path)
    assert status == 0
    assert f"note: {tmp_path / 'zotero.csv'}: abstracts from 'Abstract Note', ids from 'Key'\n" in err
    assert f"note: {tmp_path / 'scopus.xlsx'}: ids from 'EID'\n" in err
    assert (
        f"note: {tmp_path / 'savedrecs.txt'}: abstracts from 'AB', titles from 'TI', ids from 'UT'\n" in err
    )
    assert (
        f"note: {tmp_path / 'savedrecs.txt'}: read as tab-separated values, its first line a header "
        "of 7 columns (abstracts in 'AB': a Web of Science export?)\n"
    ) in err


def test_a_column_named_by_option_wins_over_the_export_names(tmp_path):
    write_zotero_csv(tmp_path / "zotero.csv", REFERENCES)
    from tagger.reading import Columns

    abstracts = list(read_abstracts([tmp_path / "zotero.csv"], columns=Columns.given(id="DOI")))
    # The DOI cells are empty: each abstract's id is its text's, not the Key column's.
    assert [a.id for a in abstracts[:2]] == [abstract_id(SEED_TEXTS[0].text), abstract_id(SEED_TEXTS[1].text)]


def test_bibtex_latex_is_decoded_and_a_broken_entry_names_its_line(capsys, tmp_path):
    path = tmp_path / "refs.bib"
    path.write_text(
        "@string{jmlr = {Journal of Machine Learning Research}}\n"
        "@article{muller2024,\n  title = {M{\\\"u}ller's {Q}-learning},\n"
        "  abstract = {Robots learn to grasp cups \\& mugs: 50\\% better.},\n  journal = jmlr\n}\n"
        "@article{broken,\n  title = {No end,\n  abstract = {never closed}\n\n"
        "@article{after,\n  abstract = {Another one.}\n}\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError, match=r"refs\.bib:7: not a readable BibTeX entry \("):
        list(read_abstracts([path]))
    report = ReadReport()
    abstracts = list(read_abstracts([path], skip_bad=True, report=report))
    assert abstracts[0].title == "Müller's Q-learning"
    assert abstracts[0].text == "Robots learn to grasp cups & mugs: 50% better."
    assert abstracts[0].id == "muller2024"
    assert [s.split(": ")[0] for s in report.skipped] == [f"{path}:7"]
    status, _, err = run(capsys, "predict", path)
    assert status == 2 and err.count("\n") == 1 and "refs.bib:7: not a readable BibTeX entry" in err


def test_a_bibtex_key_given_twice_is_read_twice(tmp_path):
    path = tmp_path / "refs.bib"
    path.write_text(
        "@article{a, abstract = {First {RL} text.}}\n@article{a, abstract = {Second {RL} text.}}\n"
    )
    assert [(a.id, a.text) for a in read_abstracts([path])] == [
        ("a", "First RL text."),
        ("a", "Second RL text."),
    ]


def test_a_ris_tag_nobody_names_is_kept_by_its_own_name(tmp_path, capsys):
    """A tag outside RIS's list (a database's own, ``ZZ``) is a field a user can keep: its name
    is the tag (the keywords, a value a line, keep their lines)."""
    path = tmp_path / "refs.ris"
    path.write_text(
        "TY  - JOUR\r\nAB  - We train a robot\r\nAB  - in simulation.\r\nZZ  - custom\r\n"
        "KW  - robots\r\nKW  - rl\r\nER  -\r\n"
    )
    [abstract] = read_abstracts([path], columns=Columns(keep=("ZZ", "keywords")))
    assert abstract.text == "We train a robot in simulation."
    assert abstract.extra == {"ZZ": "custom", "keywords": "robots\nrl"}


def test_a_ris_record_without_its_end_is_a_bad_record_and_stray_lines_are_noted(tmp_path):
    path = tmp_path / "refs.ris"
    path.write_text(
        "Provider: a database\n\n"
        "TY  - JOUR\nID  - r1\nAB  - Robots grasp cups.\nER  - \n\n"
        "TY  - JOUR\nID  - r2\nAB  - No end here.\n\n"
        "TY  - CONF\nT1  - Pretraining\nN2  - We pretrain a language model\n      on web text.\nDO  - 10.1/x\nER  - \n"
    )
    with pytest.raises(InputError, match=r"refs\.ris:8: a RIS record without its end"):
        list(read_abstracts([path]))
    report = ReadReport()
    abstracts = list(read_abstracts([path], skip_bad=True, report=report))
    assert [(a.id, a.title, a.text) for a in abstracts] == [
        ("r1", "", "Robots grasp cups."),
        ("10.1/x", "Pretraining", "We pretrain a language model on web text."),
    ]
    assert report.notes == [f"{path}: 1 line(s) outside any record (TY to ER) left out, the first at line 1"]


def test_a_damaged_workbook_is_one_clear_error_and_other_sheets_are_noted(capsys, tmp_path):
    import pandas as pd

    (tmp_path / "bad.xlsx").write_bytes(b"not a zip file at all")
    status, out, err = run(capsys, "predict", tmp_path / "bad.xlsx")
    assert status == 2 and out == ""
    assert err == (
        f"tagger: {tmp_path / 'bad.xlsx'}: not a readable Excel workbook (File is not a zip file). "
        "Save it again from Excel as .xlsx, or as CSV.\n"
    )
    with pd.ExcelWriter(tmp_path / "two.xlsx") as writer:
        pd.DataFrame({"abstract": ["We pretrain a language model."], "id": [12]}).to_excel(
            writer, sheet_name="papers", index=False
        )
        pd.DataFrame({"note": ["x"]}).to_excel(writer, sheet_name="notes", index=False)
    report = ReadReport()
    [abstract] = read_abstracts([tmp_path / "two.xlsx"], report=report)
    assert abstract.id == "12" and abstract.line == 2
    assert report.notes == [
        f"{tmp_path / 'two.xlsx'}: read its sheet 'papers' only (not 'notes'; --sheet names another)"
    ]
    pd.DataFrame({"Summary": ["x"]}).to_excel(tmp_path / "none.xlsx", index=False)
    status, _, err = run(capsys, "predict", tmp_path / "none.xlsx")
    assert status == 2 and "none.xlsx:1: no 'abstract' column (columns: 'Summary')" in err


def test_a_workbook_s_data_on_another_sheet_is_named_and_read_with_sheet(capsys, tmp_path):
    import pandas as pd
    from conftest import run

    book = tmp_path / "book.xlsx"
    with pd.ExcelWriter(book) as writer:
        pd.DataFrame({"About": ["This workbook lists papers."]}).to_excel(
            writer, sheet_name="Read me", index=False
        )
        pd.DataFrame({"Abstract": ["We train legged robots to walk."], "id": ["p1"]}).to_excel(
            writer, sheet_name="Papers", index=False
        )
    status, _, err = run(capsys, "predict", book)
    assert status == 2 and err == (
        f"tagger: {book}:1: no 'abstract' column (columns: 'About'), on its sheet 'Read me' "
        "(its sheets: 'Read me', 'Papers'). Name the column that holds the abstracts with --column "
        "(and --title-column, --id-column). Or name the sheet to read with --sheet.\n"
    )
    status, out, err = run(capsys, "predict", book, "--sheet", "Papers")
    assert status == 0 and out.splitlines()[1].startswith(f"{book},1,p1,,robotics,")
    assert f"note: {book}: read its sheet 'Papers' only (not 'Read me'; --sheet names another)" in err
    status, _, err = run(capsys, "predict", book, "--sheet", "papers")
    assert status == 2 and err == (
        f"tagger: {book}: no sheet 'papers' (its sheets: 'Read me', 'Papers'). Name one of them with --sheet.\n"
    )
    (tmp_path / "a.csv").write_text("abstract\nWe train legged robots to walk.\n")
    status, _, err = run(capsys, "predict", tmp_path / "a.csv", "--sheet", "Papers")
    assert status == 0 and "note: --sheet 'Papers' read no workbook: no input is an .xlsx file" in err


def test_a_workbook_or_parquet_file_is_not_read_from_stdin(capsys, monkeypatch):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"abc\n")))
    status, _, err = run(capsys, "predict", "-", "--input-format", "xlsx")
    assert (
        status == 2
        and err
        == "tagger: <stdin>: xlsx is not read from standard input. Give the .xlsx file's path instead of -.\n"
    )


# Text as references hold it: words of letters, digits and the punctuation BibTeX leaves as it is.
WORDS = st.text(alphabet=string.ascii_letters + string.digits + "éüß.,;:!?()", min_size=1, max_size=12)
TEXTS = st.lists(WORDS, min_size=1, max_size=30).map(" ".join)
RECORDS = st.lists(
    st.fixed_dictionaries({"title": TEXTS, "abstract": st.one_of(st.just(""), TEXTS)}),
    min_size=1,
    max_size=12,
)


@pytest.mark.parametrize("name", ["refs.bib", "refs.ris", "refs.xlsx"])
@given(records=RECORDS)
def test_every_reference_comes_back_in_order_or_is_counted(tmp_path, name, records):
    references = [r | {"key": f"k{i}"} for i, r in enumerate(records)]
    path = tmp_path / name
    WRITERS[name](path, references)
    report = ReadReport()
    abstracts = list(read_abstracts([path], report=report))
    expected = [r for r in references if r["abstract"].strip()]
    assert [(a.id, a.title, a.text) for a in abstracts] == [
        (r["key"], " ".join(r["title"].split()), " ".join(r["abstract"].split())) for r in expected
    ]
    assert len(abstracts) + len(report.without_abstract) == len(references)
    assert report.skipped == []


ENTRY_TYPES = st.text(alphabet=string.ascii_letters + "-.:/+ _2", min_size=1, max_size=10).filter(
    lambda t: t.strip().lower() not in ("comment", "string", "preamble")
)


@given(types=st.lists(ENTRY_TYPES, min_size=1, max_size=8), missing=st.integers(0, 8))
def test_every_bibtex_entry_of_any_type_is_read_or_a_bad_record_at_its_line(tmp_path_factory, types, missing):
    """An entry whose type BibTeX reads (letters) is read; one of another type (``@article-x{``,
    ``@my.type{``, ``@art icle{``), or whose ``@type{key,`` line is missing, is a bad record at
    its line: never dropped with the file read as if it were not there."""
    path = tmp_path_factory.mktemp("bib") / "refs.bib"
    entries, lines = [], []
    for i, kind in enumerate(types):
        lines.append(1 + sum(entry.count("\n") for entry in entries))
        head = "" if i == missing else f"@{kind}{{k{i},\n"
        entries.append(f"{head}  abstract = {{We train robots number {i}.}}\n}}\n")
    path.write_text("".join(entries), encoding="utf-8")
    report = ReadReport()
    read = [a.id for a in read_abstracts([path], skip_bad=True, report=report)]
    readable = [i for i, kind in enumerate(types) if i != missing and re.fullmatch(r"\w+", kind, re.ASCII)]
    assert set(readable) <= {int(key[1:]) for key in read}  # (a type of letters, digits, _: read)
    bad = {int(line.split(": ")[0].rsplit(":", 1)[1]) for line in report.skipped}
    for i in range(len(types)):  # each of the others read, or a bad record on its lines
        assert f"k{i}" in read or any(lines[i] <= b <= lines[i] + 2 for b in bad), (i, report.skipped, lines)
    assert len(read) + len(report.skipped) == len(types)


ATOM_HEAD = '<?xml version="1.0" encoding="utf-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom">\n'


def test_an_atom_summary_is_all_the_text_inside_it_and_a_doubtful_entry_is_a_bad_record(tmp_path):
    """A child element in a summary (<br/>, an xhtml <div>) keeps the text around it; two
    summaries in one entry, or an entry inside an entry, is a bad record at its line: the
    last summary won, and the inner entry was dropped, with exit 0."""
    path = tmp_path / "a.atom"
    path.write_text(
        ATOM_HEAD
        + "<entry><id>a</id><summary>Large language models<br/>for chemistry.</summary></entry>\n"
        + '<entry><id>b</id><summary type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml">'
        + "We train <b>legged</b> robots.</div></summary></entry>\n"
        + "<entry><id>c</id><summary>We study jailbreaks.</summary><summary>Proteins.</summary></entry>\n"
        + "<entry><id>d</id><summary>Robots.</summary><entry><id>e</id><summary>In.</summary></entry></entry>\n"
        + "</feed>\n"
    )
    report = ReadReport()
    read = [(a.id, a.text) for a in read_abstracts([path], skip_bad=True, report=report)]
    assert read == [("a", "Large language models for chemistry."), ("b", "We train legged robots.")]
    assert [line.split(": ", 1) for line in report.skipped] == [
        [
            f"{path}:5",
            "two <summary> elements in one entry, not told apart. Fix the entry, or leave it out with --skip-bad.",
        ],
        [
            f"{path}:6",
            "an <entry> inside this entry (line 6). Fix the entry, or leave it out with --skip-bad.",
        ],
    ]


MARKUP = st.sampled_from(["<br/>", "<b>", "</b>", "<i>x</i>", "<sub>2</sub>", ""])


@given(words=st.lists(st.text(alphabet=string.ascii_letters, min_size=1, max_size=8), min_size=1, max_size=12),
       marks=st.lists(MARKUP, min_size=12, max_size=12))  # fmt: skip
def test_any_markup_in_an_atom_summary_keeps_every_word(tmp_path_factory, words, marks):
    parts, opened = [], 0
    for word, mark in zip(words, marks):
        if mark == "</b>" and not opened:
            mark = ""
        opened += {"<b>": 1, "</b>": -1}.get(mark, 0)
        parts += [word, mark]
    summary = " ".join(parts) + "</b>" * opened
    path = tmp_path_factory.mktemp("atom") / "a.atom"
    path.write_text(ATOM_HEAD + f"<entry><id>a</id><summary>{summary}</summary></entry>\n</feed>\n")
    [abstract] = read_abstracts([path])
    expected = [w for part in parts if part for w in re.sub("<[^>]*>", " ", part).split()]
    assert abstract.text.split() == expected


def test_an_arxiv_entry_is_named_by_its_arxiv_id_and_a_feed_without_the_namespace_says_so(tmp_path, capsys):
    from conftest import run

    path = tmp_path / "a.atom"
    path.write_text(
        ATOM_HEAD
        + "<entry><id>http://arxiv.org/abs/2501.01234v1</id><summary>We train legged robots.</summary></entry>\n"
        + "</feed>\n"
    )
    status, out, _ = run(capsys, "predict", str(path), "--keep", "url")
    header, row = out.splitlines()
    assert status == 0 and dict(zip(header.split(","), row.split(",")))["id"] == "2501.01234v1"
    assert row.endswith(",http://arxiv.org/abs/2501.01234v1")
    path.write_text('<?xml version="1.0"?>\n<feed><entry><id>a</id><summary>x</summary></entry></feed>\n')
    status, out, err = run(capsys, "predict", str(path))
    assert status == 2 and "a <feed> without the Atom namespace: not read as an Atom feed" in err
    assert "its root is <feed>" not in err


@pytest.mark.parametrize(
    "head", [b"T Y  - JOUR\n", b"\xff\xfeTY  - JOUR\n", b""], ids=["damaged", "after FF FE", "missing"]
)
def test_a_ris_record_without_its_ty_line_is_a_bad_record_at_its_line(tmp_path, head):
    """Its tagged lines were 'outside any record', a note, exit 0: the record was dropped."""
    path = tmp_path / "d.ris"
    path.write_bytes(
        head + b"TI  - Robots\nAB  - We train legged robots to climb stairs.\nER  - \n"
        b"TY  - JOUR\nTI  - Jail\nAB  - We study jailbreaks of language models.\nER  - \n"
    )
    report = ReadReport()
    read = [a.title for a in read_abstracts([path], skip_bad=True, report=report)]
    assert read == ["Jail"]
    first = 2 if head else 1
    assert report.skipped == [
        f"{path}:{first}: a RIS record without its TY line (tagged lines outside any record). "
        "Mend or add its TY line, or leave the record out with --skip-bad."
    ]
