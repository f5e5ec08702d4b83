"""A comment or a flag on an answer (a lead's question, an unsure call): given in the terminal
(``llm ! # a survey``) and on the page, kept beside the answer in labels/labels.csv (or a
labelled file of one's own), exported by ``tagger labels``, listed by ``--agreement``, never
read by training; any text is kept as one line or refused, and the labels stay readable."""

from __future__ import annotations

import csv
import io
import sys

import pytest
from conftest import run
from hypothesis import given
from hypothesis import strategies as st
from test_no_area import answer as label
from test_no_area import own_labelled_file, pile_project

from tagger.errors import ArgumentError
from tagger.labelling import parse_remark
from tagger.labelstore import MAX_COMMENT, ProjectLabels, Remark
from tagger.reading import read_abstracts


@pytest.fixture
def project(tmp_path, monkeypatch):
    return pile_project(tmp_path, monkeypatch)


def rows_of(path) -> list[dict]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


def test_the_terminal_keeps_a_flag_and_a_comment_beside_the_answer(project, monkeypatch, capsys):
    before = len(rows_of(project / "labels" / "labels.csv"))
    status, out, err = label(
        monkeypatch, capsys, "robotics ! # a survey, not a method\nnone graphs # Mining, not learning\ntheory\n",
        "--n", "3", "--annotator", "ana",
    )  # fmt: skip
    assert status == 0, err
    assert "labelled robotics; flagged; with your comment" in out
    assert "labelled none (fits no area), about graphs; with your comment" in out
    rows = rows_of(project / "labels" / "labels.csv")[before:]
    assert [(r["area"], r["topic"], r["flag"], r["comment"]) for r in rows] == [
        ("robotics", "", "yes", "a survey, not a method"),
        ("none", "graphs", "", "Mining, not learning"),  # (a comment keeps its case)
        ("theory", "", "", ""),
    ]
    assert "added the columns comment, flag" in err  # (a file that lacked them says so)
    # exported with each label, and listed for a lead by --agreement
    assert run(capsys, "labels", "-o", "all.csv")[0] == 0
    exported = {r["area"]: r for r in rows_of(project / "all.csv") if r["annotator"] == "ana"}
    flagged = exported["robotics"]
    assert (flagged["flag"], flagged["comment"]) == ("yes", "a survey, not a method")
    status, out, _ = run(capsys, "labels", "--agreement")
    assert "2 answer(s) with a remark (1 flagged):" in out
    name = flagged["source_id"] or flagged["abstract_id"]
    said = f'  {name}  ana robotics (flagged) "a survey, not a method"  | {flagged["abstract"][:20]}'
    assert said in out, out
    # training reads the answer, not the remark
    from tagger.labels import load_training_set

    training_set = load_training_set("labels", ["seeds"])
    assert "robotics" in training_set.labels


def test_a_later_answer_of_the_same_annotator_carries_its_own_remark_only(project):
    abstract = next(iter(read_abstracts([project / "pile.jsonl"])))
    store = ProjectLabels(project / "labels", project / "seeds", "ana")
    store.add(abstract, "robotics", remark=Remark("unsure", True))
    store.add(abstract, "theory")
    mine = [r for r in store.rows() if r["annotator"] == "ana"]
    assert [(r["area"], r["flag"], r["comment"]) for r in mine] == [("theory", "", "")]


def test_a_labelled_file_of_ones_own_keeps_remarks_in_columns_of_their_own(tmp_path, monkeypatch, capsys):
    """A user's own file may have a comment column of its own: remarks go to label_comment
    and label_flag, and a later answer clears the earlier one's."""
    table = "abstract,area,comment\nRobots grasp cups.,bots,mine\nLegged robots walk.,bots,x\nProteins fold.,bio,y\nGenes encode.,bio,z\n"
    own_labelled_file(tmp_path, monkeypatch, capsys, table, "Robot arms stack blocks.\n")
    monkeypatch.setattr(sys, "stdin", io.StringIO("bots ! # arms, not legs\n"))
    status, _, err = run(capsys, "label", "pile.txt", "--data", "mine.csv", "--model", "own", "--n", "1")
    assert status == 0, err
    rows = rows_of(tmp_path / "mine.csv")
    assert [r["comment"] for r in rows] == ["mine", "x", "y", "z", ""]
    assert (rows[-1]["label_flag"], rows[-1]["label_comment"]) == ("yes", "arms, not legs")
    monkeypatch.setattr(sys, "stdin", io.StringIO("bio\n"))
    status, _, err = run(
        capsys, "label", "pile.txt", "--data", "mine.csv", "--model", "own", "--relabel", "--n", "1"
    )
    assert status == 0, err
    rows = rows_of(tmp_path / "mine.csv")
    assert (rows[-1]["area"], rows[-1]["label_flag"], rows[-1]["label_comment"]) == ("bio", "", "")


@given(comment=st.text(max_size=40) | st.text(min_size=490, max_size=530), flagged=st.booleans())
def test_any_comment_is_kept_as_one_line_or_refused(comment, flagged):
    typed = f"llm{' !' if flagged else ''} # {comment}"
    kept = " ".join(comment.split())
    unwritable = any("\ud800" <= c <= "\udfff" or c < " " or "\x7f" <= c < "\xa0" for c in kept)
    if len(kept) > MAX_COMMENT or unwritable:
        with pytest.raises(ArgumentError) as refused:
            parse_remark(typed)
        assert str(refused.value).startswith("the comment ")
        return
    answer, remark = parse_remark(typed)
    assert (answer, remark.flagged) == ("llm", flagged)
    assert remark.comment == kept.split("#", 0)[0] if "#" not in comment else remark.comment == kept


def test_a_flag_is_true_or_false():
    from tagger.errors import ArgumentTypeError

    with pytest.raises(ArgumentTypeError, match="a flag is True or False, not str"):
        Remark("", "yes")


def test_a_remark_s_text_is_written_and_read_back_as_given(project):
    """Quotes, commas, a formula's first character and words of any script: what the labels
    keep is what was said (the CSV cell is quoted, never a formula's)."""
    abstract = next(iter(read_abstracts([project / "pile.jsonl"])))
    store = ProjectLabels(project / "labels", project / "seeds", "ana")
    said = '=HYPERLINK("x"), "quoted", ; 雨 — ok'
    store.add(abstract, "robotics", remark=Remark(said, True))
    assert [(r["comment"], r["flag"]) for r in store.rows() if r["annotator"] == "ana"] == [(said, "yes")]
