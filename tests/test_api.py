"""The Python API behaves like the command line (see the README's Python section)."""

import inspect
import json

import pytest
from conftest import ROOT

import tagger
from tagger.errors import TaggerError


def test_predict_takes_a_model_folder_as_a_path(shipped):
    by_path = tagger.predict("Robots grasp cups.", model=ROOT / "models")
    assert by_path == tagger.predict("Robots grasp cups.", model=shipped)
    assert tagger.predict(["Robots grasp cups."], model=str(ROOT / "models")) == [by_path]


def test_a_model_that_is_not_one_is_a_clear_error():
    with pytest.raises(tagger.TaggerError, match="model must be a Model or the path of a model folder"):
        tagger.predict("x", model=3)


def test_every_public_name_is_listed():
    names = dir(tagger)
    for name in (
        "TaggerClassifier",
        "tag_dataframe",
        "load_model",
        "Model",
        "Prediction",
        "predict",
        "train",
    ):
        assert name in names and name in tagger.__all__
    assert "os" not in tagger.__all__
    members = dict(inspect.getmembers(tagger))
    assert members["tag_dataframe"] is tagger.tag_dataframe


def test_a_model_says_what_it_is(shipped):
    text = repr(shipped)
    assert text.startswith("<tagger Model: 12 areas (llm, vision, generative,") and "systems, none)" in text
    assert "trained on 6121 labelled abstracts of labels;" in text and shipped.card.created in text


def test_a_model_scores_labelled_abstracts_as_scikit_learn_does(shipped):
    texts = ["Robots grasp cups with a gripper.", "We prove a regret bound for bandits."]
    predicted = [p.area for p in shipped.predict(texts)]
    assert shipped.score(texts, predicted) == 1.0
    assert shipped.score(texts, [predicted[0], "nonsense"]) == 0.5
    with pytest.raises(tagger.TaggerError, match="2 abstracts and 1 areas"):
        shipped.score(texts, ["robotics"])


def test_labelled_data_with_other_column_names_trains_from_the_command_line_and_python(capsys, tmp_path):
    import pandas as pd
    from conftest import run

    words = {
        "bio": "protein gene cell enzyme",
        "robots": "robot grasp arm gripper",
        "games": "auction bidder payoff",
    }
    rows = [
        {
            "text": f"{' '.join(sorted(vocabulary.split(), key=lambda w: (w * k)[::-1]))} study {k}",
            "label": area,
        }
        for area, vocabulary in words.items()
        for k in range(4)
    ]
    frame = pd.DataFrame(rows)
    path = tmp_path / "mine.csv"
    frame.to_csv(path, index=False)
    status, _, err = run(capsys, "train", "--data", path, "--model", tmp_path / "m")
    assert status == 2 and "no 'abstract' column" in err and "--column" in err
    args = ("--data", path, "--column", "text", "--label-column", "label")
    status, _, err = run(capsys, "train", *args, "--model", tmp_path / "m")
    assert status == 0 and "trained on 12 labelled abstracts" in err
    from_python = tagger.train(frame, column="text", label_column="label")
    from_file = tagger.train(path, column="text", label_column="label")
    assert from_python.areas == from_file.areas == ("bio", "games", "robots")
    assert from_python.predict("robot arm gripper").area == "robots"
    status, out, _ = run(capsys, "evaluate", "--model", tmp_path / "m", *args)
    assert status == 0 and out.startswith(f"the model in {tmp_path / 'm'} tested on 12 labelled abstracts")


@pytest.mark.parametrize("text", ["", "   \n\t "])
def test_an_empty_abstract_has_no_area_in_python_as_in_a_frame_and_is_left_out_of_a_file_with_a_count(
    capsys, tmp_path, text
):
    import json
    import math

    import pandas as pd
    from conftest import run

    import tagger
    from tagger.prediction import NO_AREA

    # One rule: a text that is empty is never guessed, never an error in a batch, and keeps its
    # place: no area, no confidence, flagged (as tag_dataframe gives an empty cell).
    alone = tagger.predict(text)
    first, empty = tagger.predict(["Robots grasp cups.", text])
    frame = tagger.tag_dataframe(pd.DataFrame({"abstract": ["Robots grasp cups.", text]}))
    for prediction in (alone, empty):
        assert prediction.area == NO_AREA and prediction.runner_up == NO_AREA and prediction.needs_review
        assert math.isnan(prediction.confidence) and math.isnan(prediction.runner_up_confidence)
        assert prediction.tags == [] and prediction.top(3) == []
        assert all(math.isnan(p) for p in prediction.scores.values())
    assert first.area == "robotics" == frame["area"][0]
    assert pd.isna(frame["area"][1]) and math.isnan(frame["confidence"][1]) and frame["needs_review"][1]
    # In a file, one record of thousands without an abstract (a reference export's editorial)
    # does not stop the run: it is left out, counted and listed.
    (tmp_path / "a.jsonl").write_text(json.dumps({"abstract": text, "id": "e1"}) + "\n")
    status, out, err = run(capsys, "predict", tmp_path / "a.jsonl")
    assert status == 0 and out.count("\n") == 1  # the header alone
    assert "(1 without an abstract left out)" in err
    assert "left out 1 record(s) without an abstract, nothing to tag: " in err and "a.jsonl:1 (e1)" in err


def test_the_estimator_trains_with_the_one_set_of_default_settings():
    from tagger.estimator import TaggerClassifier
    from tagger.settings import default_settings

    # the estimator learns from texts and labels alone: the defaults without area descriptions
    defaults, params = default_settings(use_descriptions=False), TaggerClassifier().get_params()
    assert params and all(value == getattr(defaults, name) for name, value in params.items())
    assert params["bayes_weight"] == 0.0


def test_every_function_taking_a_model_takes_its_folder(tmp_path, shipped):
    import pandas as pd

    shipped.save(tmp_path / "my-model")
    frame = pd.DataFrame({"abstract": ["Robots grasp cups with a two-finger gripper."]})
    by_path = tagger.tag_dataframe(frame, model=str(tmp_path / "my-model"))
    assert by_path["area"].tolist() == [
        tagger.predict(frame["abstract"][0], model=tmp_path / "my-model").area
    ]
    with pytest.raises(tagger.TaggerError, match="model must be a Model or the path of a model folder"):
        tagger.tag_dataframe(frame, model=3)


def test_one_text_id_whatever_the_labels_came_in(tmp_path):
    """The same labelled rows as a file, a dataframe with titles, and two lists: the same ids
    (the digest of the abstract's text, as labels and output name it), and a card recording
    its labels by them; a title never changes an abstract's id."""
    import pandas as pd

    from tagger.labels import labelled
    from tagger.reading import Columns, abstract_id

    rows = [
        {"title": f"Paper {i}", "abstract": f"{text}  Study {i}.", "area": area}
        for i, (text, area) in enumerate(
            [("Robots grasp cups from video.", "robots"), ("Proteins fold into shapes.", "bio")] * 6
        )
    ]
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    expected = [abstract_id(row["abstract"]) for row in rows]
    from_file = labelled(path)
    from_frame = labelled(pd.DataFrame(rows), columns=Columns())
    from_lists = labelled([row["abstract"] for row in rows], [row["area"] for row in rows])
    assert list(from_file.ids) == list(from_frame.ids) == list(from_lists.ids) == expected
    assert expected[0] == abstract_id("Robots grasp cups from video. Study 0.")
    assert from_frame.texts[0].startswith("Paper 0. ")  # the title is read, not part of the id
    model = tagger.train(pd.DataFrame(rows), settings=tagger.TrainingSettings(ngram_max=1))
    assert set(model.card.training_data.labels) == set(expected)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda p: p.top(-1), "is not valid. Use a whole number of at least 1"),
        (lambda p: p.top(0), "is not valid. Use a whole number of at least 1"),
        (lambda p: p.top("2"), "is not valid. Use a whole number of at least 1"),
        (lambda p: p.top(2, min_confidence=2), "min_confidence 2 is not valid. Use a number from 0 to 1"),
    ],
)
def test_top_takes_a_count_of_areas_or_says_what_it_takes(shipped, call, message):
    prediction = shipped.predict(["Robots grasp cups."])[0]
    with pytest.raises(TaggerError, match=message):
        call(prediction)
    assert len(prediction.top(None)) == len(shipped.areas) and len(prediction.top(2)) == 2


def test_train_settings_of_another_kind_is_one_clear_error():
    with pytest.raises(
        TaggerError, match=r"settings takes a TrainingSettings, not a dict\. Pass tagger\.TrainingSettings"
    ):
        tagger.train(["a", "b"], ["x", "y"], settings={"C": 1.0})


def test_python_tags_with_the_model_the_command_line_uses(tmp_path, monkeypatch, capsys, seed_model, shipped):
    """One rule for which model tags, from the command line and from Python alike: the one
    given, else ./models of the folder you run in when it holds one (what tagger train writes
    there), else the shipped model. A model saved there later is the one the next call uses."""
    import pandas as pd
    from conftest import run

    text = "Robots learn to grasp cups from human video with a two-finger gripper."
    monkeypatch.chdir(tmp_path)
    assert tagger.predict(text) == shipped.predict(text)  # no ./models: the shipped model
    seed_model.save(tmp_path / "models")
    ours = seed_model.predict(text)
    assert ours.confidence != shipped.predict(text).confidence  # (two models told apart)
    assert tagger.predict(text) == ours and tagger.predict([text]) == [ours]
    assert tagger.tag_dataframe(pd.DataFrame({"abstract": [text]}))["confidence"].tolist() == [
        ours.confidence
    ]
    assert tagger.load_model().card == seed_model.card
    (tmp_path / "one.txt").write_text(text + "\n")
    status, out, err = run(capsys, "predict", "one.txt")
    assert status == 0 and f"{ours.confidence:.4f}" in out and "model: models/" in err
    shipped.save(tmp_path / "models")  # a retrain saved there
    assert tagger.predict(text) == shipped.predict(text)


def test_a_model_folder_changed_since_it_was_read_is_read_again(tmp_path, seed_model):
    """Tagging from Python gives a folder read before without reading it again only while
    none of its files changed: one edited in place after (same size) is checked, and refused."""
    seed_model.save(tmp_path / "m")
    text = "Robots grasp cups."
    assert tagger.predict(text, model=tmp_path / "m") == seed_model.predict(text)
    [weights] = (tmp_path / "m").glob("weights-*.npz")
    data = bytearray(weights.read_bytes())
    data[-100] ^= 0xFF
    with open(weights, "r+b") as stream:  # in place: the same file, the same size
        stream.write(bytes(data))
    with pytest.raises(TaggerError, match="does not match its model card"):
        tagger.predict(text, model=tmp_path / "m")


@pytest.mark.slow  # trains in a script of its own, twice
@pytest.mark.parametrize("where", ["a thread", "the main thread"])
def test_train_from_a_script_without_a_main_guard_just_works(tmp_path, where):
    """From a thread, training's workers come from the fork server, which imported the script
    again in each worker: without ``if __name__ == "__main__":`` it ran again and train raised
    RuntimeError. The workers need nothing of the script: it is not imported again."""
    import subprocess
    import sys

    body = (
        "import threading, tagger\n"
        "texts = ['Robots grasp cups with a gripper.', 'Robots walk on legs over rough ground.',\n"
        "         'Proteins fold into shapes.', 'Genes encode proteins in cells.'] * 60\n"
        "areas = ['bots', 'bots', 'bio', 'bio'] * 60\n"
        "print('script ran', flush=True)\n"
        "out = []\n"
    )
    body += (
        "t = threading.Thread(target=lambda: out.append(tagger.train(texts, areas).areas)); t.start(); t.join()\n"
        if where == "a thread"
        else "out.append(tagger.train(texts, areas).areas)\n"
    )
    body += "print(out)\n"
    (tmp_path / "script.py").write_text(body)
    done = subprocess.run(
        [sys.executable, "script.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0 and "RuntimeError" not in done.stderr, done.stderr[-800:]
    assert done.stdout == "script ran\n[('bio', 'bots')]\n"


@pytest.mark.parametrize(
    ("bad", "kind"),
    [
        (None, TypeError),
        (3.5, TypeError),
        ([1], TypeError),
        ("x" * 5_000_001, ValueError),
        (["\ud800"], ValueError),
    ],
)
def test_predict_s_bad_arguments_are_the_errors_python_code_expects(bad, kind):
    """A bad type is a TypeError, a bad value a ValueError, each a TaggerError too."""
    from tagger import predict
    from tagger.errors import TaggerError

    with pytest.raises(kind) as error:
        predict(bad)
    assert isinstance(error.value, TaggerError)
