"""The files users have: other column names, delimiters, JSON arrays, compression, stdin."""

import bz2
import csv
import gzip
import io
import json
import lzma
import textwrap

import pytest
from conftest import run
from hypothesis import example, given
from hypothesis import strategies as st

from tagger.errors import InputError
from tagger.reading import Columns, ReadReport, read_abstracts

RECORDS = [
    {"abstract": "Robots learn to grasp cups from video.", "title": "Grasping", "id": "r1"},
    {"abstract": "A regret bound for bandits with delays.", "title": "Bandits", "id": "r2"},
]

# Abstract text: printable, not blank, no line breaks (records on one line of JSON or CSV).
text = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=60).filter(
    lambda s: s.strip() and "\u00ad" not in s
)
records = st.lists(
    st.fixed_dictionaries({"abstract": text, "id": st.from_regex(r"[a-z0-9]{1,8}", fullmatch=True)}),
    min_size=1,
    max_size=6,
)


def read(path, **options):
    return [(a.id, a.text, a.title) for a in read_abstracts([path], **options)]


def write_csv(path, header, rows, delimiter=","):
    with open(path, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream, delimiter=delimiter)
        writer.writerow(header)
        writer.writerows(rows)


@pytest.mark.parametrize(
    ("name", "delimiter"), [("eu.csv", ";"), ("tabs.tsv", "\t"), ("tabs.csv", "\t"), ("pipes.csv", "|")]
)
def test_the_delimiter_is_the_one_the_header_splits_on(tmp_path, name, delimiter):
    path = tmp_path / name
    write_csv(
        path, ["Title", "Abstract", "ID"], [[r["title"], r["abstract"], r["id"]] for r in RECORDS], delimiter
    )
    assert read(path) == [(r["id"], r["abstract"], r["title"]) for r in RECORDS]


def test_columns_are_named_by_option_and_matched_without_case(tmp_path):
    path = tmp_path / "export.csv"
    write_csv(
        path, ["Paper Title", "Summary", "DOI"], [[r["title"], r["abstract"], r["id"]] for r in RECORDS], ";"
    )
    with pytest.raises(InputError) as error:
        read(path)
    assert str(error.value) == (
        f"{path}:1: no 'abstract' column (columns: 'Paper Title', 'Summary', 'DOI'); did you mean 'Summary'? "
        "Name the column that holds the abstracts with --column (and --title-column, --id-column)."
    )
    columns = Columns(abstract="summary", title="paper title", id="doi")
    assert read(path, columns=columns) == [(r["id"], r["abstract"], r["title"]) for r in RECORDS]


def test_the_command_line_takes_the_column_options(capsys, tmp_path):
    path = tmp_path / "export.jsonl"
    path.write_text(
        "".join(json.dumps({"Abstract_Text": r["abstract"], "Ref": r["id"]}) + "\n" for r in RECORDS)
    )
    status, out, _ = run(capsys, "predict", path, "--column", "abstract_text", "--id-column", "REF")
    assert status == 0 and [line.split(",")[2] for line in out.splitlines()[1:]] == ["r1", "r2"]


@given(records, st.sampled_from([None, 2]), st.booleans())
def test_a_json_array_reads_like_json_lines(tmp_path_factory, items, indent, upper):
    folder = tmp_path_factory.mktemp("json")
    shaped = [{("ABSTRACT" if upper else "abstract"): r["abstract"], "Id": r["id"]} for r in items]
    (folder / "a.json").write_text(json.dumps(shaped, indent=indent, ensure_ascii=False), encoding="utf-8")
    (folder / "b.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in shaped), encoding="utf-8"
    )
    assert (
        read(folder / "a.json")
        == read(folder / "b.jsonl")
        == [(r["id"], " ".join(r["abstract"].split()), "") for r in items]
    )


def test_bad_json_array_elements_are_bad_records(tmp_path):
    path = tmp_path / "a.json"
    path.write_text(
        '[\n  {"abstract": "First."},\n  42,\n  {"title": "no abstract"},\n  {"abstract": "Last."}\n]\n'
    )
    report = ReadReport()
    assert [a.text for a in read_abstracts([path], skip_bad=True, report=report)] == ["First.", "Last."]
    assert [line.split(": ")[0] for line in report.skipped] == [f"{path}:3"]
    assert report.without_abstract == [f"{path}:4"]  # a reference without its abstract: counted, not bad
    path.write_text('{"abstract": "an object, not an array"}')
    with pytest.raises(InputError, match=r"a.json:1: not a JSON array"):
        read(path)
    path.write_text('[{"abstract": "unclosed"}')
    with pytest.raises(InputError, match=r"the JSON array is not closed"):
        read(path)


def test_a_json_array_is_read_as_faithfully_as_json_lines(tmp_path):
    """What keeps the JSON array reader on Python's own decoder (not ijson, whose C backend
    turns a lone surrogate into "?" and refuses integers past 64 bits): a long number is an
    id like any other, and half a character is a bad record on its line, never a changed text."""
    path = tmp_path / "a.json"
    path.write_text('[\n  {"id": 123456789012345678901234567890, "abstract": "Robots grasp cups."}\n]\n')
    assert read(path) == [("123456789012345678901234567890", "Robots grasp cups.", "")]
    path.write_text('[\n  {"abstract": "Robots grasp cups."},\n  {"abstract": "A half \\ud800 here."}\n]\n')
    report = ReadReport()
    assert [a.text for a in read_abstracts([path], skip_bad=True, report=report)] == ["Robots grasp cups."]
    assert [line.split(": ")[0] for line in report.skipped] == [
        f"{path}:3"
    ] and "surrogate" in report.skipped[0]


COMPRESS = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}


@given(records, st.sampled_from(sorted(COMPRESS)), st.sampled_from([".jsonl", ".csv", ".txt"]))
def test_compressed_files_read_like_the_plain_ones(tmp_path_factory, items, compression, extension):
    folder = tmp_path_factory.mktemp("compressed")
    plain = folder / f"a{extension}"
    if extension == ".jsonl":
        plain.write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
    elif extension == ".csv":
        write_csv(plain, ["abstract", "id"], [[r["abstract"], r["id"]] for r in items])
    else:
        plain.write_text("\n\n".join(r["abstract"] + "." for r in items) + "\n", encoding="utf-8")
    packed = folder / f"b{extension}{compression}"
    packed.write_bytes(COMPRESS[compression](plain.read_bytes()))
    assert read(packed) == read(plain)


def test_a_damaged_compressed_file_is_a_bad_record(capsys, tmp_path):
    (tmp_path / "a.jsonl.gz").write_bytes(b"not gzip at all")
    (tmp_path / "b.jsonl").write_text(json.dumps(RECORDS[0]) + "\n")
    status, _, err = run(capsys, "predict", tmp_path)
    assert status == 2 and f"tagger: {tmp_path / 'a.jsonl.gz'}: damaged gzip data" in err
    status, out, err = run(capsys, "predict", tmp_path, "--skip-bad")
    assert status == 3 and len(out.splitlines()) == 2


@pytest.mark.parametrize(
    ("content", "fmt", "n"),
    [
        ("".join(json.dumps(r) + "\n" for r in RECORDS), "jsonl", 2),
        (json.dumps(RECORDS, indent=1), "json", 2),
        ("title;abstract\nA;Robots grasp cups.\nB;Bandits regret.\n", "csv", 2),
        ("Robots grasp cups.\n\nBandits have regret.\n", "text", 2),
    ],
)
def test_stdin_is_read_in_the_format_it_is_in(content, fmt, n):
    """Whatever format its start shows, plain text too, a note says how stdin was read."""
    report = ReadReport()
    abstracts = list(
        read_abstracts(["-"], stdin=io.BufferedReader(io.BytesIO(content.encode())), report=report)
    )
    assert len(abstracts) == n
    assert report.notes == [f"<stdin>: read as {fmt} (from its first line; --input-format says otherwise)"]


def test_zstandard_files_are_read(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    plain = tmp_path / "a.jsonl"
    plain.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    (tmp_path / "b.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    assert read(tmp_path / "b.jsonl.zst") == read(plain)


def test_parquet_files_are_read_a_batch_at_a_time(capsys, tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    frame = pd.DataFrame(
        {
            "Title": [r["title"] for r in RECORDS],
            "Summary": [r["abstract"] for r in RECORDS],
            "doi": ["d1", "d2"],
        }
    )
    frame.to_parquet(tmp_path / "papers.parquet")
    columns = Columns(abstract="summary", id="DOI")
    assert read(tmp_path / "papers.parquet", columns=columns) == [
        ("d1", RECORDS[0]["abstract"], "Grasping"),
        ("d2", RECORDS[1]["abstract"], "Bandits"),
    ]
    status, out, _ = run(capsys, "predict", tmp_path / "papers.parquet", "--column", "Summary")
    assert status == 0 and len(out.splitlines()) == 3
    with pytest.raises(
        InputError,
        match=r"no 'abstract' column \(columns: 'Title', 'Summary', 'doi'\); did you mean 'Summary'\?",
    ):
        read(tmp_path / "papers.parquet")
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(InputError, match="not a readable Parquet file"):
        read(tmp_path / "broken.parquet")


def test_an_empty_path_is_an_error_not_the_current_folder(capsys):
    status, out, err = run(capsys, "predict", "")
    assert (status, out) == (2, "") and err.startswith("tagger: an empty path. Give a file or a folder")


def test_predict_takes_a_series_and_any_iterable_of_strings():
    import pandas as pd

    import tagger

    texts = ["Robots grasp cups.", "A regret bound for bandits."]
    expected = tagger.predict(texts)
    assert tagger.predict(pd.Series(texts)) == expected
    assert tagger.predict(text for text in texts) == expected
    assert tagger.predict(tuple(texts)) == expected


def _zstd_frames(data: bytes) -> bytes:
    """Two zstandard frames (with a checksum, and without) and a skippable frame between."""
    zstandard = pytest.importorskip("zstandard")
    half = len(data) // 2
    skippable = (0x184D2A53).to_bytes(4, "little") + (5).to_bytes(4, "little") + b"12345"
    return (
        zstandard.ZstdCompressor(write_checksum=True).compress(data[:half])
        + skippable
        + zstandard.ZstdCompressor(write_content_size=False).compress(data[half:])
    )


PACK = {**COMPRESS, ".zst": _zstd_frames}


@given(st.sampled_from(sorted(PACK)), st.floats(0.05, 0.999))
@example(".zst", 0.5785894488475881)  # cut where the first frame ends (hypothesis found it)
def test_a_compressed_file_cut_short_is_damaged_never_read_as_complete(tmp_path_factory, compression, share):
    folder = tmp_path_factory.mktemp("cut")
    body = "".join(
        json.dumps({"abstract": f"Abstract {i}: robots grasp cups {i} times."}) + "\n" for i in range(2000)
    )
    whole = PACK[compression](body.encode())
    (folder / f"whole.jsonl{compression}").write_bytes(whole)
    assert len(read(folder / f"whole.jsonl{compression}")) == 2000
    cut = folder / f"cut.jsonl{compression}"
    size = max(1, int(len(whole) * share))
    cut.write_bytes(whole[:size])
    # Cut where a zstandard frame ends, the file is whole zstandard data (of the first half of
    # the text, ending inside a line): not damaged, but its last line is not a whole record.
    damaged = not (compression == ".zst" and size in _zstd_frame_ends(body.encode()))
    with pytest.raises(
        InputError, match=r"cut.jsonl.*: damaged .* data" if damaged else r":\d+: not valid JSON"
    ):
        read(cut)


def _zstd_frame_ends(data: bytes) -> set[int]:
    """Where the frames of :func:`_zstd_frames` end (the first, then the skippable one)."""
    zstandard = pytest.importorskip("zstandard")
    first = len(zstandard.ZstdCompressor(write_checksum=True).compress(data[: len(data) // 2]))
    return {first, first + 13}  # (a skippable frame: magic, size and its 5 bytes)


# -- memory bounded by design: no line, paragraph or JSON element is held past the limits -----


@pytest.mark.parametrize("compression", ["", ".gz", ".xz", ".zst"])
def test_a_line_over_the_limit_is_refused_without_being_held(capsys, tmp_path, compression):
    from tagger.reading.source import MAX_LINE_BYTES

    body = (
        "title,abstract\nA,Robots grasp cups.\nB,"
        + "word " * (MAX_LINE_BYTES // 5 + 10)
        + "\nC,Bandits have regret.\n"
    )
    path = tmp_path / f"papers.csv{compression}"
    path.write_bytes(PACK[compression](body.encode()) if compression else body.encode())
    status, _, err = run(capsys, "predict", path)
    assert status == 2 and f"{path}:3: a line of over {MAX_LINE_BYTES:,} bytes" in err
    status, out, err = run(capsys, "predict", path, "--skip-bad")
    assert status == 3 and len(out.splitlines()) == 3  # the header and the two other rows
    assert [line.split(",")[1] for line in out.splitlines()[1:]] == ["1", "2"]


def test_a_long_first_line_of_text_is_no_heading(capsys, tmp_path):
    from tagger.reading.source import MAX_LINE_BYTES

    (tmp_path / "a.txt").write_text("x" * (MAX_LINE_BYTES + 10) + "\n\nRobots grasp cups.\n")
    status, _, err = run(capsys, "predict", tmp_path / "a.txt")
    assert status == 2 and f"a.txt:1: a line of over {MAX_LINE_BYTES:,} bytes" in err


def test_a_paragraph_of_many_lines_over_the_abstract_limit_is_refused(capsys, tmp_path):
    from tagger.text import MAX_ABSTRACT_CHARS

    lines = MAX_ABSTRACT_CHARS // 22 + 1
    (tmp_path / "a.txt").write_text("Robots grasp cups.\n\n" + "a few words on a line\n" * lines)
    status, _, err = run(capsys, "predict", tmp_path / "a.txt")
    assert (
        status == 2
        and f"a.txt:3: an abstract of {lines * 22:,} characters, over the limit of {MAX_ABSTRACT_CHARS:,}"
        in err
    )


json_records = st.lists(
    st.fixed_dictionaries({"abstract": text, "title": text, "n": st.integers()}), min_size=1, max_size=8
)


@given(
    json_records,
    st.sampled_from([None, 0, 1, 3]),
    st.integers(1, 64),
    st.sampled_from(["utf-8", "utf-16", "utf-32"]),
)
def test_a_json_array_reads_the_same_in_pieces_of_any_size(tmp_path_factory, items, indent, piece, encoding):
    folder = tmp_path_factory.mktemp("pieces")
    path = folder / "a.json"
    path.write_bytes(json.dumps(items, indent=indent, ensure_ascii=False).encode(encoding))
    whole = read(path, encoding=encoding)
    import tagger.reading.source

    original = tagger.reading.source.PIECE_BYTES
    tagger.reading.source.PIECE_BYTES = piece
    try:
        assert read(path, encoding=encoding) == whole
    finally:
        tagger.reading.source.PIECE_BYTES = original
    assert [text for _, text, _ in whole] == [" ".join(r["abstract"].split()) for r in items]


@given(records, st.integers(1, 64), st.sampled_from(["utf-16", "utf-32", "utf-16-le"]))
def test_wide_encodings_are_decoded_a_piece_at_a_time(tmp_path_factory, items, piece, encoding):
    folder = tmp_path_factory.mktemp("wide")
    path = folder / "a.jsonl"
    path.write_bytes("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in items).encode(encoding))
    import tagger.reading.source

    original = tagger.reading.source.PIECE_BYTES
    tagger.reading.source.PIECE_BYTES = piece
    try:
        assert [text for _, text, _ in read(path, encoding=encoding)] == [
            " ".join(r["abstract"].split()) for r in items
        ]
    finally:
        tagger.reading.source.PIECE_BYTES = original


def test_a_text_file_of_one_abstract_per_line_is_read_so_and_said(capsys, tmp_path):
    from conftest import run

    abstracts = [
        "We study robots that grasp cups with a two-finger gripper and learn from human video. " * 3,
        "We prove a regret bound for contextual bandits with linear rewards and adversarial contexts. " * 3,
        "A diffusion model generates images of anime faces from text prompts with classifier-free guidance. "
        * 3,
    ]
    path = tmp_path / "one-per-line.txt"
    path.write_text("".join(a.strip() + "\n" for a in abstracts), encoding="utf-8")
    status, out, err = run(capsys, "predict", path)
    rows = out.splitlines()[1:]
    assert status == 0 and len(rows) == 3 and [row.split(",")[1] for row in rows] == ["1", "2", "3"]
    assert f"note: {path}:1: read one abstract per line (3 lines: each of 200 characters or more" in err
    wrapped = tmp_path / "wrapped.txt"  # an abstract wrapped at 80 columns stays one abstract
    wrapped.write_text("\n".join(textwrap.wrap(" ".join(abstracts), 80)) + "\n", encoding="utf-8")
    status, out, err = run(capsys, "predict", wrapped)
    assert status == 0 and len(out.splitlines()) == 2 and "one abstract per line" not in err


def test_a_zstandard_pipe_is_one_clear_error_with_a_command_that_works(capsys, tmp_path):
    """A .zst through a FIFO was called "damaged": it was read once to check its frames."""
    import os

    pipe = tmp_path / "feed.jsonl.zst"
    os.mkfifo(pipe)
    status, out, err = run(capsys, "predict", pipe)
    assert (status, out) == (2, "") and err == (
        f"tagger: {pipe}: a .zst that is not a regular file (a pipe?) cannot be checked whole before it is "
        f"read. Decompress it into tagger instead: zstd -dc {pipe} | tagger predict -\n"
    )


@given(
    entries=st.integers(1, 30),
    data=st.data(),
    one_line=st.booleans(),
    chunk=st.sampled_from([7, 64, 2**16]),
)
def test_a_syntax_error_that_ends_a_json_array_or_a_feed_says_how_many_records_were_not_read(
    tmp_path_factory, entries, data, one_line, chunk
):
    """--skip-bad: one syntax error drops every later entry of the file; the bad record says
    how many (by their abstract's key, or <entry> tags), so that read + unread = all."""
    import re

    from tagger.reading.source import Tally

    broken = data.draw(st.integers(0, entries - 1))
    folder = tmp_path_factory.mktemp("rest")
    end = "" if one_line else "\n"
    items = [json.dumps({"id": f"e{i}", "Abstract": f"Robots {i} walk."}) for i in range(entries)]
    items[broken] = '{"id": "bad", "abstract": "Robots" oops}'
    (folder / "a.json").write_text("[" + f",{end}".join(items) + "]")
    xml = [f"<entry><id>e{i}</id><summary>Robots {i} walk.</summary></entry>" for i in range(entries)]
    xml[broken] = "<entry><summary>Robots walk.</summry></entry>"
    head = '<?xml version="1.0"?>' + end + '<feed xmlns="http://www.w3.org/2005/Atom">'
    (folder / "a.atom").write_text(head + end.join(xml) + "</feed>")
    for name, said in (
        ("a.json", r"(\d+) record\(s\) from here on"),
        ("a.atom", rf"(\d+) of its {entries} entries"),
    ):
        report = ReadReport()
        read = list(read_abstracts([folder / name], skip_bad=True, report=report))
        assert [a.text for a in read] == [f"Robots {i} walk." for i in range(broken)]
        [bad] = report.skipped
        assert int(re.search(said, bad).group(1)) == entries - broken, bad
    # The count is the same in chunks of any size (a tag cut across two is counted once).
    text = b"<entry>" * 5 + b"x<atom:entry " * 3
    pieces = [text[i : i + chunk] for i in range(0, len(text), chunk)]
    assert Tally(re.compile(rb"<(?:[\w.-]+:)?entry[\s/>]"), reach=16).feed(pieces).count == 8
