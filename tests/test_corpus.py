import csv
import io
import json
import shutil

import pytest
from conftest import SEED_FILES, SEEDS
from hypothesis import given
from hypothesis import strategies as st

from tagger.errors import InputError
from tagger.formulas import unguarded
from tagger.reading import ReadReport, abstract_id, read_abstracts
from tagger.text import join_broken_words


def test_seed_files_hold_38_abstracts_after_their_headings():
    report = ReadReport()
    abstracts = list(read_abstracts(SEED_FILES, report=report))
    assert len(abstracts) == 38 == report.read
    assert [h.rsplit(":", 1)[1] for h in report.headings] == ["1", "1"]
    assert len({a.id for a in abstracts}) == 38
    assert not any(a.text.startswith("NeurIPS 2026 Papers") for a in abstracts)
    for source in {a.source for a in abstracts}:
        assert [a.position for a in abstracts if a.source == source] == list(range(1, 20))


def test_ids_survive_renaming_reordering_and_rewrapping(tmp_path):
    original = {a.id: a.text for a in read_abstracts(SEED_FILES)}
    files = sorted(SEEDS.glob("*.txt"))
    shutil.copy(files[0], tmp_path / "zz-renamed.txt")
    _heading, *paragraphs = files[1].read_text(encoding="utf-8").split("\n\n")
    rewrapped = [p.replace(". ", ".\n  ") for p in reversed(paragraphs)]  # other order and line breaks
    (tmp_path / "aa-reordered.txt").write_text("\r\n\r\n".join(rewrapped), encoding="utf-8")
    moved = {a.id: a.text for a in read_abstracts([tmp_path])}
    assert moved.keys() == original.keys()


def test_abstract_id_ignores_whitespace_only():
    assert abstract_id("Deep  nets\nlearn.") == abstract_id(" Deep nets learn. ")
    assert abstract_id("Deep nets learn.") != abstract_id("Deep nets learn!")
    assert len(abstract_id("x")) == 16


def test_a_single_short_line_is_an_abstract_not_a_heading():
    [abstract] = read_abstracts(["-"], stdin=io.StringIO("Diffusion models for proteins\n"))
    assert abstract.text == "Diffusion models for proteins"
    assert abstract.source == "<stdin>"


def test_byte_order_mark_and_windows_line_endings_change_nothing(tmp_path):
    text = "Papers\n\nFirst abstract about graphs.\nSecond line.\n\nSecond abstract about robots.\n"
    plain, windows = tmp_path / "plain.txt", tmp_path / "windows.txt"
    plain.write_text(text, encoding="utf-8")
    windows.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode("utf-8"))
    assert [a.id for a in read_abstracts([plain])] == [a.id for a in read_abstracts([windows])]
    assert next(a.text for a in read_abstracts([windows])) == "First abstract about graphs. Second line."


def test_csv_reads_abstract_id_title_and_quoted_newlines(tmp_path):
    path = tmp_path / "papers.csv"
    with open(path, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(["title", "Abstract", "id"])
        writer.writerow(["Nets", "Deep nets,\nwith commas, learn.", "p1"])
        writer.writerow(["Robots", "Robots grasp.", ""])
    first, second = read_abstracts([path])
    assert (first.id, first.title, first.text, first.line) == (
        "p1",
        "Nets",
        "Deep nets, with commas, learn.",
        2,
    )
    assert second.id == abstract_id("Robots grasp.") and second.line == 4 and second.position == 2
    assert first.document == "Nets. Deep nets, with commas, learn."


def test_csv_without_abstract_column_lists_its_columns(tmp_path):
    path = tmp_path / "papers.csv"
    path.write_text("title,text\nA,B\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"papers.csv:1: no 'abstract' column \(columns: 'title', 'text'\)"):
        list(read_abstracts([path]))


def test_jsonl_reads_fields_and_names_a_broken_line(tmp_path):
    path = tmp_path / "papers.jsonl"
    path.write_text('{"abstract": "A", "id": 7, "title": "T"}\n\n{"abstract": "B"\n', encoding="utf-8")
    reader = read_abstracts([path])
    first = next(reader)
    assert (first.id, first.title, first.text) == ("7", "T", "A")
    with pytest.raises(InputError, match=r"papers.jsonl:3: not valid JSON"):
        next(reader)


def test_directories_are_walked_in_order_skipping_other_files(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "two.txt").write_text("Second abstract here.", encoding="utf-8")
    (tmp_path / "a.jsonl").write_text('{"abstract": "First abstract here."}\n', encoding="utf-8")
    (tmp_path / "notes.md").write_text("not abstracts", encoding="utf-8")
    (tmp_path / ".hidden.txt").write_text("hidden", encoding="utf-8")
    report = ReadReport()
    texts = [a.text for a in read_abstracts([tmp_path], report=report)]
    assert texts == ["First abstract here.", "Second abstract here."]
    assert report.notes == [
        f"{tmp_path / '.hidden.txt'}: left out, hidden",
        f"{tmp_path / 'notes.md'}: ignored, not one of .txt, .csv, .tsv, .jsonl, .json, .parquet, .bib, .ris, .xlsx, .atom, .xml (compressed too)",
    ]


def test_symlinked_folders_are_read_once_and_every_special_file_is_noted(tmp_path):
    import os
    import socket

    pile, elsewhere = tmp_path / "pile", tmp_path / "elsewhere"
    pile.mkdir()
    elsewhere.mkdir()
    (elsewhere / "c.txt").write_text("Linked abstract here.", encoding="utf-8")
    (pile / "a.txt").write_text("First abstract here.", encoding="utf-8")
    (pile / "b-linked").symlink_to(elsewhere)  # a symlinked folder: read
    (pile / "d-again").symlink_to(elsewhere)  # the same folder again: once is enough
    (pile / "e-loop").symlink_to(pile)  # a link back up: a loop
    (pile / "f-broken.txt").symlink_to(tmp_path / "missing.txt")
    (pile / "g-self.txt").symlink_to(pile / "g-self.txt")  # a symlink to itself
    os.mkfifo(pile / "h.fifo.txt")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(pile / "i.sock"))
    (pile / ".j-hidden").mkdir()
    report = ReadReport()
    texts = [a.text for a in read_abstracts([pile], report=report)]
    server.close()
    assert texts == ["First abstract here.", "Linked abstract here."]
    assert report.notes == [
        f"{pile / '.j-hidden'}: left out, hidden",
        f"{pile / 'd-again'}: left out, a link to a folder already read",
        f"{pile / 'e-loop'}: left out, a link to a folder already read",
        f"{pile / 'f-broken.txt'}: left out, a broken symlink",
        f"{pile / 'g-self.txt'}: left out, a symlink loop",
        f"{pile / 'h.fifo.txt'}: left out, a FIFO",
        f"{pile / 'i.sock'}: left out, a socket",
    ]


def test_a_missing_path_is_an_error_before_anything_is_read(tmp_path):
    with pytest.raises(InputError, match=r"no-such.txt: no such file or directory"):
        read_abstracts([*SEED_FILES, tmp_path / "no-such.txt"])


# Paragraph text: printable, no line or paragraph separators, never blank (soft hyphens are
# dropped), never starting with U+FEFF (at the start of a file, that is a byte-order mark).
line = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=40).filter(
    lambda s: join_broken_words(s).strip() and not s.startswith("\ufeff")
)
paragraph = st.lists(line, min_size=1, max_size=4).map("\n".join)


@given(st.lists(paragraph, min_size=1, max_size=8), st.sampled_from(["\n\n", "\n \n", "\r\n\r\n", "\n\n\n"]))
def test_every_txt_paragraph_is_one_abstract_or_one_a_line_with_a_note(
    tmp_path_factory, paragraphs, separator
):
    """Each paragraph is one abstract, or (its lines ending their sentences, or titles) one
    abstract a line with a note; a leading heading is none. Nothing is lost or merged."""
    path = tmp_path_factory.mktemp("txt") / "abstracts.txt"
    path.write_text(separator.join(paragraphs), encoding="utf-8", newline="")
    report = ReadReport()
    texts = [a.text for a in read_abstracts([path], report=report)]
    assert report.headings in ([], [f"{path}:1"])
    clean = lambda text: " ".join(join_broken_words(text).split())  # noqa: E731
    at, split = 0, 0
    for paragraph in paragraphs[len(report.headings) :]:
        if texts[at : at + 1] == [clean(paragraph)]:
            at += 1
            continue
        lines = [clean(line) for line in paragraph.split("\n")]
        assert texts[at : at + len(lines)] == lines
        at, split = at + len(lines), split + 1
    assert at == len(texts)
    assert split == sum("read one abstract per line" in note for note in report.notes)


# NUL marks a binary file (see test_bad_input.py), so it is left out here.
texts = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=200
).filter(lambda t: t.strip())


@given(st.lists(texts, max_size=8))
def test_csv_and_jsonl_keep_every_record(tmp_path_factory, abstracts):
    folder = tmp_path_factory.mktemp("tabular")
    with open(folder / "a.csv", "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(["abstract"])
        writer.writerows([text] for text in abstracts)
    (folder / "b.jsonl").write_text(
        "".join(json.dumps({"abstract": text}) + "\n" for text in abstracts), encoding="utf-8"
    )
    expected = [" ".join(join_broken_words(text).split()) for text in abstracts]
    # (a CSV cell of quotes before a formula's first character loses one, with a note: it is
    # read as tagger writes it for spreadsheets, tagger.formulas)
    in_csv = [" ".join(join_broken_words(unguarded(text)).split()) for text in abstracts]
    assert [a.text for a in read_abstracts([folder / "a.csv"])] == in_csv
    assert [a.text for a in read_abstracts([folder / "b.jsonl"])] == expected


def test_a_pasted_pdf_abstract_is_the_same_abstract_as_the_clean_one(tmp_path):
    pasted, clean = tmp_path / "pasted.txt", tmp_path / "clean.txt"
    pasted.write_text(
        "We train a gen-\nerative adver\u00adsarial net-\nwork for state-of-the-\nart images.\n"
    )
    clean.write_text("We train a generative adversarial network for state-of-the- art images.\n")
    [a], [b] = read_abstracts([pasted]), read_abstracts([clean])
    assert a.text == b.text == "We train a generative adversarial network for state-of-the- art images."
    assert a.id == b.id


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@given(
    st.one_of(
        JSON_VALUES.map(json.dumps),
        st.tuples(JSON_VALUES.map(json.dumps), st.text(max_size=6)).map("".join),  # then anything
        st.tuples(st.text(" \t\r\n", max_size=3), JSON_VALUES.map(json.dumps)).map("".join),
        st.text(max_size=30),
    )
)
def test_a_json_line_is_read_as_json_loads_reads_it(line):
    from tagger.reading.readers.json import _json_line

    try:
        expected = json.loads(line)
    except (ValueError, RecursionError) as error:
        with pytest.raises(type(error)) as raised:
            _json_line(line)
        assert str(raised.value) == str(error)
    else:
        assert json.dumps(_json_line(line)) == json.dumps(expected)  # (NaN is not NaN)
