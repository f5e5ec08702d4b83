"""pandas: a dataframe tagged like the same abstracts in a file; training from a dataframe or lists."""

import csv
import io
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from conftest import LABELS, SEEDS, run

import tagger
from tagger.errors import TaggerError
from tagger.labels import load_training_set

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
    assert list(tagged["confidence"][:3]) == [float(r["confidence"]) for r in rows]
    # A row without an abstract keeps its place: no area, no confidence, needs review.
    assert pd.isna(tagged["area"][3]) and np.isnan(tagged["confidence"][3]) and tagged["needs_review"][3]


def test_a_missing_column_is_named():
    with pytest.raises(TaggerError, match=r"no column 'abstract' \(columns: 'Title', 'summary'\)"):
        tagger.tag_dataframe(FRAME)


def test_training_from_a_dataframe_or_lists_is_training_from_the_file(tmp_path):
    training_set = load_training_set(LABELS, [SEEDS])
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
