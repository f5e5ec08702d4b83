"""Every number a user gives is checked, on the command line and in Python."""

import math

import pytest
from conftest import SEED_FILES, SEEDS, run
from hypothesis import given
from hypothesis import strategies as st

import tagger
from tagger.checks import number
from tagger.errors import TaggerError, UsageError


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["predict", *map(str, SEED_FILES), "--review-below", "nan"],
            "--review-below 'nan' is not valid. Use a number from 0 to 1.",
        ),
        (
            ["predict", *map(str, SEED_FILES), "--review-below", "1.5"],
            "--review-below '1.5' is not valid. Use a number from 0 to 1.",
        ),
        (
            ["predict", *map(str, SEED_FILES), "--review-below", "-3"],
            "--review-below '-3' is not valid. Use a number from 0 to 1.",
        ),
        (
            ["predict", *map(str, SEED_FILES), "--jobs", "0"],
            "--jobs '0' is not valid. Use a whole number of at least 1 or -1.",
        ),
        (
            ["predict", *map(str, SEED_FILES), "--jobs", "1.5"],
            "--jobs '1.5' is not valid. Use a whole number of at least 1 or -1.",
        ),
        (
            ["explain", "--text", "robots", "--terms", "-2"],
            "--terms '-2' is not valid. Use a whole number of at least 1.",
        ),
        (
            ["suggest", *map(str, SEED_FILES), "--n", "0"],
            "--n '0' is not valid. Use a whole number of at least 1.",
        ),
        (
            ["label", *map(str, SEED_FILES), "--n", "-1"],
            "--n '-1' is not valid. Use a whole number of at least 1.",
        ),
    ],
)
def test_a_number_out_of_range_is_one_clear_line(capsys, args, message):
    status, out, err = run(capsys, *args)
    assert (status, out, err) == (1, "", f"tagger: {message}\n")


def test_jobs_minus_one_means_every_core(capsys):
    status, out, _ = run(capsys, "predict", *SEED_FILES, "--jobs", "-1")
    assert status == 0 and len(out.splitlines()) == 39


def test_a_mistyped_path_is_not_explained_as_text(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(SEEDS.parent)
    status, out, err = run(capsys, "explain", "seedz/")
    assert (status, out) == (2, "")
    assert (
        err
        == "tagger: seedz/: no such file or directory. Did you mean seeds? To explain a text, use --text.\n"
    )
    status, out, _ = run(capsys, "explain", "robots grasp cups")  # words are a path too, unless --text
    assert status == 2 and out == ""
    status, out, _ = run(capsys, "explain", "--text", "robots grasp cups")
    assert status == 0 and out.startswith("<text>:1")


@pytest.mark.parametrize("texts", [{"abstract": "Robots grasp cups."}, None, 123, b"Robots grasp cups.", 1.5])
def test_predict_refuses_what_is_not_text(texts):
    with pytest.raises(UsageError, match=r"^predict takes text, not \w+\. Pass an abstract as a str"):
        tagger.predict(texts)


@pytest.mark.parametrize("review_below", ["0.5", float("nan"), -0.1, 1.01, True, [0.5]])
def test_predict_refuses_a_bad_review_threshold(review_below):
    with pytest.raises(TaggerError, match=r"review_below .* is not valid\. Use a number from 0 to 1\."):
        tagger.predict("Robots grasp cups.", review_below=review_below)


@given(
    st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(), st.text(max_size=8), st.none())
)
def test_number_accepts_exactly_the_values_in_range(value):
    inside = (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and not math.isnan(value)
        and 0 <= value <= 1
    )
    if inside:
        assert number(value, "x", "review_below") == float(value)
    else:
        with pytest.raises(UsageError, match=r"^x .* is not valid\. Use a number from 0 to 1\.$"):
            number(value, "x", "review_below")


@given(st.text(max_size=12))
def test_number_from_text_is_what_float_reads_or_an_error(text):
    try:
        expected = float(text)
    except ValueError:
        expected = None
    if expected is not None and 0 <= expected <= 1:
        assert number(text, "--x", "review_below", from_text=True) == expected
    else:
        with pytest.raises(UsageError):
            number(text, "--x", "review_below", from_text=True)


def test_port_without_web_is_an_error_not_ignored(capsys, tmp_path):
    from conftest import run

    (tmp_path / "pile.txt").write_text("Robots grasp cups.\n")
    status, _, err = run(capsys, "label", tmp_path / "pile.txt", "--port", "8765")
    assert status == 1 and "--port is for the labelling page. Add --web, or leave --port out." in err


def test_an_empty_unlabelled_pile_is_said_to_be_empty(capsys, tmp_path):
    from conftest import run

    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "mine.csv").write_text(
        "abstract,area\nRobots grasp cups.,bots\nArms move.,bots\nProteins fold.,bio\nCells divide.,bio\n"
    )
    status, _, err = run(
        capsys, "train", "--data", tmp_path / "mine.csv", "--unlabelled", tmp_path / "empty.jsonl",
        "--model", tmp_path / "m",
    )  # fmt: skip
    assert status == 0 and "no unlabelled abstract in --unlabelled (it holds no abstracts)" in err


def test_keep_given_twice_keeps_both_and_a_single_valued_option_twice_is_refused(capsys, tmp_path):
    import json

    pile = tmp_path / "pile.jsonl"
    pile.write_text(
        json.dumps({"abstract": "Robots grasp cups.", "title": "Cups", "area": "robotics", "venue": "X"})
        + "\n"
    )
    status, out, _ = run(capsys, "predict", pile, "--keep", "area", "--keep", "venue", "--format", "jsonl")
    row = json.loads(out)
    assert status == 0 and (row["area"], row["venue"]) == ("robotics", "X")
    for option, first, second in (
        ("--column", "abstract", "title"),
        ("--review-below", "0.5", "0.6"),
        ("-o", "a.csv", "b.csv"),
    ):
        status, out, err = run(capsys, "predict", pile, option, first, option, second)
        assert (status, out) == (1, "") and err == (
            f"tagger: {option} is given twice ({first!r}, then {second!r}). Give {option} once: it takes one value.\n"
        ), err
