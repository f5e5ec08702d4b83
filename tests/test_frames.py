"""pandas: a dataframe tagged like the same abstracts in a file; training from a dataframe or lists."""

import csv
import io
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from conftest import run

import tagger
from tagger.errors import TaggerError

FRAME = pd.DataFrame(
    {
        "Title": ["Grasping", None, "Bandits", "Empty"],
        "summary": [
            "Robots learn to grasp cups from human video.",
            "Diffusion models generate protein structures.",
            "A regret bound for bandits with delayed feedback.",
            None,
        ],
    }
)


def test_a_dataframe_is_tagged_like_the_same_rows_in_a_file(capsys, tmp_path):
    tagged = tagger.tag_dataframe(FRAME, column="summary", title_column="Title")
    assert len(tagged) == len(FRAME) and list(tagged.columns[:2]) == ["Title", "summary"]
    FRAME.iloc[:3].to_csv(tmp_path / "papers.csv", index=False)
    status, out, _ = run(
        capsys, "predict", tmp_path / "papers.csv", "--column", "summary", "--title-column", "title"
    )
    rows = list(csv.DictReader(io.StringIO(out)))
    assert status == 0
    assert list(tagged["area"][:3]) == [r["area"] for r in rows]
    assert list(tagged["confidence"][:3].round(4)) == [float(r["confidence"]) for r in rows]
    # In full precision: what tagger.predict says of the same title and abstract.
    same = tagger.predict(
        [
            tagger.reading.document(a, t if isinstance(t, str) else "")
            for a, t in zip(FRAME.summary[:3], FRAME.Title)
        ]
    )
    assert list(tagged["confidence"][:3]) == [p.confidence for p in same]
    assert list(tagged["runner_up_confidence"][:3]) == [p.runner_up_confidence for p in same]
    # A row without an abstract keeps its place: no area, no confidence, needs review.
    assert pd.isna(tagged["area"][3]) and np.isnan(tagged["confidence"][3]) and tagged["needs_review"][3]


def test_a_missing_column_is_named():
    with pytest.raises(TaggerError, match=r"no column 'abstract' \(columns: 'Title', 'summary'\)"):
        tagger.tag_dataframe(FRAME)


@pytest.mark.slow  # over 5 s on 2 shared cores: in the slow run, with the other long tests
def test_training_from_a_dataframe_or_lists_is_training_from_the_file(tmp_path, seed_set):
    training_set = seed_set
    counts = Counter(training_set.labels)
    keep = [i for i, label in enumerate(training_set.labels) if counts[label] >= 3]
    texts = [training_set.texts[i] for i in keep]
    areas = [training_set.labels[i] for i in keep]
    frame = pd.DataFrame({"abstract": texts, "area": areas})
    frame.to_csv(tmp_path / "mine.csv", index=False)
    from_file = tagger.train(tmp_path / "mine.csv")
    for model in (tagger.train(frame), tagger.train(texts, areas)):
        assert model.areas == from_file.areas
        assert np.allclose(model.predict_proba(texts[:5]), from_file.predict_proba(texts[:5]))
    with pytest.raises(TaggerError, match="a list of abstracts with a list of areas"):
        tagger.train(texts)


@pytest.mark.parametrize(
    ("value", "kind"), [(b"Robots grasp cups.", "bytes"), (3, "int"), ({"a": 1}, "dict"), (["x"], "list")]
)
def test_a_cell_that_is_not_text_is_refused_not_tagged_as_its_repr(value, kind):
    frame = pd.DataFrame({"abstract": ["Robots grasp cups.", value]}, index=["a", "b"])
    with pytest.raises(TaggerError, match=rf"column 'abstract' holds a {kind} at row 'b', not text"):
        tagger.tag_dataframe(frame)


def test_numbers_in_a_numeric_column_are_not_text():
    with pytest.raises(TaggerError, match=r"holds a float at row 0, not text"):
        tagger.tag_dataframe(pd.DataFrame({"abstract": [1.5, 2.0]}))


def test_a_column_the_tags_would_overwrite_is_kept():
    frame = pd.DataFrame({"abstract": ["Robots grasp cups."], "area": ["my own label"]})
    with pytest.raises(TaggerError, match=r"has a column 'area' already: tagging would overwrite it"):
        tagger.tag_dataframe(frame)
    tagged = tagger.tag_dataframe(frame, prefix="predicted_")
    assert tagged["area"].tolist() == ["my own label"] and tagged["predicted_area"].tolist() == ["robotics"]


def test_a_series_is_tagged_and_other_things_are_refused_clearly():
    series = pd.Series(["Robots grasp cups.", None])
    tagged = tagger.tag_dataframe(series)
    assert tagged["area"].tolist()[0] == "robotics" and tagged["needs_review"].tolist()[1]
    with pytest.raises(TaggerError, match=r"takes a pandas DataFrame \(or Series\), not a list"):
        tagger.tag_dataframe(["Robots grasp cups."])
    twice = pd.DataFrame([["a", "b"]], columns=["abstract", "abstract"])
    with pytest.raises(TaggerError, match=r"has 2 columns named 'abstract'"):
        tagger.tag_dataframe(twice)


def test_a_dataframe_is_tagged_as_the_same_rows_in_a_file(capsys, tmp_path):
    frame = pd.DataFrame(
        {
            "Title": ["Grasping", "Bandits"],
            "Abstract": ["Robots learn to grasp cups from video.", "We prove a regret bound."],
        }
    )
    frame.to_csv(tmp_path / "papers.csv", index=False)
    status, out, _ = run(capsys, "predict", tmp_path / "papers.csv")
    rows = pd.read_csv(io.StringIO(out))
    tagged = tagger.tag_dataframe(frame)  # titles read, columns matched without regard to case
    assert status == 0 and list(tagged["area"]) == list(rows["area"])
    np.testing.assert_array_equal(tagged["confidence"].round(4), rows["confidence"])
    untitled = tagger.tag_dataframe(frame.drop(columns="Title"))
    assert not np.allclose(untitled["confidence"], tagged["confidence"])  # the title counted


def test_a_dataframe_gets_the_ids_and_tags_the_command_line_writes(capsys, tmp_path, shipped):
    import csv
    import io

    from conftest import run

    texts = ["Robots learn to grasp cups from video.", "A regret bound for bandits with delayed feedback."]
    frame = pd.DataFrame({"abstract": texts})
    frame.to_csv(tmp_path / "a.csv", index=False)
    status, out, _ = run(capsys, "predict", tmp_path / "a.csv")
    written = list(csv.DictReader(io.StringIO(out)))
    tagged = tagger.tag_dataframe(frame)
    assert status == 0 and tagged["id"].tolist() == [row["id"] for row in written]
    assert [";".join(f"{a}:{p:.4f}".rstrip("0").rstrip(".") for a, p in tags) for tags in tagged["tags"]] == [
        ";".join(
            f"{a}:{float(p):.4f}".rstrip("0").rstrip(".")
            for a, p in (t.split(":") for t in row["tags"].split(";"))
        )
        for row in written
    ]
    own = tagger.tag_dataframe(frame.assign(ID=["x1", "x2"]))  # a frame with its own ids keeps them
    assert "id" not in own.columns and own["ID"].tolist() == ["x1", "x2"]
    status, out, _ = run(capsys, "predict", tmp_path / "a.csv", "--all-probabilities")
    written = pd.read_csv(io.StringIO(out)).filter(like="probability_")
    every = tagger.tag_dataframe(frame, all_probabilities=True).filter(like="probability_")
    assert list(every.columns) == [f"probability_{a}" for a in shipped.areas] == list(written.columns)
    assert np.allclose(every.to_numpy(), written.to_numpy(), atol=5e-5)  # (written to four decimals)


def test_one_tag_dataframe_for_pandas_and_dask():
    """The Dask helper takes what the pandas one takes (it tags each partition with it)."""
    import inspect

    from tagger import cluster, frames

    assert list(inspect.signature(cluster.tag_dataframe).parameters) == list(
        inspect.signature(frames.tag_dataframe).parameters
    )


def test_two_columns_alike_but_for_case_are_refused_as_in_a_file(shipped):
    frame = pd.DataFrame([["Robots grasp cups.", "Proteins fold."]], columns=["abstract", "Abstract"])
    with pytest.raises(
        TaggerError,
        match=r"the dataframe has 2 columns named 'abstract' \('abstract', 'Abstract'\), not told apart",
    ):
        tagger.tag_dataframe(frame, model=shipped)


@pytest.mark.parametrize(
    ("frame", "options", "message"),
    [
        (
            pd.DataFrame({"abstract": pd.Series(["Robots grasp cups.", "a\ud800b"], dtype=object)}),
            {},
            r"row 1 of column 'abstract': a lone surrogate \('\\ud800', at character 1\), which is no character",
        ),
        (
            pd.DataFrame({"abstract": ["Robots grasp cups.", "x" * 5_000_001]}),
            {},
            r"row 1 of column 'abstract': an abstract of 5,000,001 characters, over the limit of 5,000,000",
        ),
        (
            pd.DataFrame({"abstract": ["Robots grasp cups."]}),
            {"column": 0},
            "column= takes a column's name, a str, not an int",
        ),
        (
            pd.DataFrame({"abstract": ["Robots grasp cups."]}),
            {"title_column": 1.5},
            "title_column= takes a column's name, a str, not a float",
        ),
    ],
)
def test_a_dataframe_cell_or_option_predict_would_refuse_is_refused_as_predict_does(
    shipped, frame, options, message
):
    with pytest.raises(TaggerError, match=message):
        tagger.tag_dataframe(frame, model=shipped, **options)
