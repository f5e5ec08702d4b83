import dataclasses
import json
import math
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from conftest import SEED_FILES, with_card
from hypothesis import given
from hypothesis import strategies as st

import tagger
from tagger import Prediction, load_model, predict
from tagger.card import FORMAT_VERSION, ModelCard
from tagger.errors import ModelError, TaggerError, UsageError
from tagger.model import CARD_FILE, Model, shipped_model_dir
from tagger.prediction import NO_AREA
from tagger.reading import read_abstracts

SEED_TEXTS = [a.text for a in read_abstracts(SEED_FILES)]


def check(prediction, areas):
    assert isinstance(prediction, Prediction)
    assert list(prediction.scores) == list(areas)
    assert math.isclose(sum(prediction.scores.values()), 1.0, rel_tol=1e-9)
    assert all(0.0 <= p <= 1.0 for p in prediction.scores.values())
    assert prediction.confidence == max(prediction.scores.values())
    if prediction.area == NO_AREA:  # a tie: no answer, flagged
        assert prediction.needs_review and prediction.confidence - prediction.runner_up_confidence <= 1e-12
        return
    assert prediction.confidence == prediction.scores[prediction.area]
    assert prediction.runner_up != prediction.area
    assert prediction.runner_up_confidence <= prediction.confidence


def blank(text: str) -> bool:
    return not text or text.isspace()


def test_predict_one_abstract_returns_a_prediction(shipped):
    prediction = predict("We propose a diffusion sampler that generates images in four denoising steps.")
    check(prediction, shipped.areas)
    assert prediction.area == "generative"
    assert isinstance(prediction.confidence, float)


def test_predict_many_keeps_order_and_equals_one_at_a_time(shipped):
    batch = predict(SEED_TEXTS)
    assert isinstance(batch, list) and len(batch) == len(SEED_TEXTS)
    for text, prediction in zip(SEED_TEXTS, batch, strict=True):
        check(prediction, shipped.areas)
        single = predict(text)
        assert single.area == prediction.area
        assert single.scores == pytest.approx(prediction.scores, abs=1e-12)
    assert [p.area for p in predict(SEED_TEXTS[::-1])] == [p.area for p in batch][::-1]
    assert predict([]) == []


def test_the_model_argument_is_used(shipped):
    text = "Robots grasp cups."
    temperature = 10 * shipped.card.calibration.temperature
    hotter = with_card(shipped, calibration=replace(shipped.card.calibration, temperature=temperature))
    mine, default = predict(text, model=hotter), predict(text)
    assert mine.scores == pytest.approx(hotter.predict(text).scores, abs=1e-15)
    assert mine.confidence < default.confidence - 0.2  # a cooler softmax: clearly another model
    assert [p.scores for p in predict(SEED_TEXTS[:3], model=hotter)] == [
        p.scores for p in hotter.predict(SEED_TEXTS[:3])
    ]


def test_a_model_never_changes_once_made(shipped):
    with pytest.raises(AttributeError, match="never changes"):
        shipped.card = None
    with pytest.raises(ValueError, match="read-only"):
        shipped.coef[0, 0] = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        shipped.card.review = None


def test_saving_a_copy_changes_no_loaded_model(shipped, tmp_path):
    """Saving writes files only: the cached shipped model and every other model stay as they were."""
    before = json.dumps(shipped.card.to_dict())
    copy = Model.load(shipped_model_dir())
    copy.save(tmp_path / "a")
    shipped.save(tmp_path / "b")
    assert json.dumps(load_model().card.to_dict()) == before
    assert json.dumps(shipped.card.to_dict()) == json.dumps(copy.card.to_dict()) == before
    assert not hasattr(shipped, "directory")


def test_the_shipped_model_saves_byte_for_byte_as_it_was_loaded(shipped, tmp_path):
    shipped.save(tmp_path)
    for original in shipped_model_dir().iterdir():
        assert (tmp_path / original.name).read_bytes() == original.read_bytes(), original.name


def test_non_text_input_is_a_usage_error():
    with pytest.raises(UsageError, match=r"texts\[1\] is an int, not a str"):
        predict(["fine", 3])


@given(st.text())
def test_any_unicode_text_gets_a_valid_prediction_or_is_refused_when_blank(shipped, text):
    if blank(text):  # no area, flagged (tests/test_api.py: the one rule of an empty abstract)
        assert predict(text).area == NO_AREA and predict(text).needs_review
        return
    check(predict(text), shipped.areas)


@given(st.lists(st.text(max_size=300), max_size=5))
def test_any_batch_of_unicode_text_gets_one_prediction_each(shipped, texts):
    predictions = predict(texts)
    assert len(predictions) == len(texts)
    for text, prediction in zip(texts, predictions):
        if blank(text):
            assert prediction.area == NO_AREA and prediction.needs_review and prediction.tags == []
        else:
            check(prediction, shipped.areas)


def test_text_without_known_words_gets_equal_scores_and_no_answer(shipped):
    prediction = predict("zzqx wvvt ppqr")
    assert prediction.confidence == pytest.approx(1 / len(shipped.areas))
    assert prediction.area == NO_AREA and prediction.needs_review


def test_save_then_load_gives_the_same_model(seed_model, tmp_path):
    seed_model.save(tmp_path)
    loaded = Model.load(tmp_path)
    assert loaded.card == seed_model.card
    assert loaded.vocabulary == seed_model.vocabulary
    np.testing.assert_array_equal(loaded.coef, seed_model.coef)
    assert predict(SEED_TEXTS, model=loaded) == predict(SEED_TEXTS, model=seed_model)
    weights = list(tmp_path.glob("weights-*.npz"))
    assert len(weights) == 1 and {p.name for p in tmp_path.iterdir()} == {CARD_FILE, weights[0].name}
    with np.load(weights[0], allow_pickle=False) as arrays:  # plain arrays, no pickled objects
        assert sorted(arrays.files) == ["coef", "idf", "intercept", "vocabulary"]


def test_saving_again_replaces_the_weights(seed_model, tmp_path):
    seed_model.save(tmp_path)
    with_card(seed_model, created="another time").save(tmp_path)
    assert len(list(tmp_path.glob("weights-*.npz"))) == 1
    assert Model.load(tmp_path).card.created == "another time"
    assert seed_model.card.created != "another time"
    assert np.shares_memory(
        with_card(seed_model, created="x").coef, seed_model.coef
    )  # a copy shares the arrays


def test_prediction_does_not_import_scikit_learn_nor_the_file_readers():
    """Tagging text from Python starts as fast as it can: neither scikit-learn nor the readers
    of every file format (a twentieth of a second) are imported for it."""
    code = (
        "import sys, tagger; tagger.predict('deep nets');"
        "print(sorted(m for m in ('sklearn', 'tagger.reading', 'pandas') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_a_large_batch_does_not_import_pandas():
    """Tagging thousands of abstracts reads the model's lookup tables into pyarrow without
    pandas (a quarter of a second to import: pyarrow imports it to check a numpy array it
    is given)."""
    code = (
        "import sys, tagger; text = 'deep neural networks for learning on graphs with attention %d';"
        "tagger.predict([text % i for i in range(20000)]);"
        "print(sorted(m for m in ('sklearn', 'pandas') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


@pytest.fixture
def saved(seed_model, tmp_path):
    """A model folder to damage and edit (the seeds' model: 1 MB to write, not 33)."""
    seed_model.save(tmp_path)
    return tmp_path


def edit_card(folder, **changes):
    card = json.loads((folder / CARD_FILE).read_text())
    card.update(changes)
    (folder / CARD_FILE).write_text(json.dumps(card))


def test_a_folder_without_a_model_is_a_clear_error(tmp_path):
    with pytest.raises(ModelError, match=r"no model here \(no model.json\). Point --model"):
        Model.load(tmp_path)


def test_a_folder_read_again_unchanged_gives_the_model_read_before(saved, tmp_path):
    """A model folder unchanged since it was read (each file by size, times and inode) gives
    the model already read, its lookup tables built, instead of parsing its terms again: one
    cache, by folder. A copy is another folder, read; any change is read (and checked) anew."""
    import shutil

    first = load_model(saved)
    first.predict_proba(["robots"] * 100)  # a large batch: its lookup tables are built
    assert load_model(saved) is first
    shutil.copytree(saved, tmp_path / "copy")
    copy = load_model(tmp_path / "copy")
    assert copy is not first and load_model(tmp_path / "copy") is copy
    assert copy.predict_proba(["robots"]).tolist() == first.predict_proba(["robots"]).tolist()
    edit_card(tmp_path / "copy", created="2020-01-01T00:00:00+00:00")
    changed = load_model(tmp_path / "copy")
    assert changed is not copy and changed.card.created == "2020-01-01T00:00:00+00:00"
    weights = next((tmp_path / "copy").glob("weights-*.npz"))
    weights.write_bytes(weights.read_bytes()[:-10])
    with pytest.raises(ModelError, match="does not match its model card"):
        load_model(tmp_path / "copy")


def test_edited_weights_are_detected(saved):
    weights = next(saved.glob("weights-*.npz"))
    weights.write_bytes(weights.read_bytes()[:-10])
    with pytest.raises(ModelError, match="does not match its model card"):
        Model.load(saved)


def test_a_newer_format_asks_for_an_upgrade(saved):
    edit_card(saved, format_version=FORMAT_VERSION + 1)
    # The upgrade names the distribution this project is installed by: 'tagger' on the public
    # index is another project (its 0.3.1 does not build).
    with pytest.raises(
        ModelError,
        match=r"written by a newer tagger.*Upgrade tagger \(pip install -U \. in the source folder of a newer tagger\)",
    ):
        Model.load(saved)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_a_card_of_an_earlier_format_asks_for_a_retrain(saved, version):
    """No reader of earlier formats: one clear error, mended by a retrain (whose previous
    model then does not load, so it trains with the defaults)."""
    edit_card(saved, format_version=version)
    with pytest.raises(
        ModelError, match=rf"model format {version} was written by an earlier tagger.*tagger train"
    ):
        Model.load(saved)


def test_the_distribution_is_named_as_every_hint_names_it():
    import tomllib
    from conftest import ROOT

    from tagger._version import DISTRIBUTION

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION == "abstract-tagger"
    assert f"distribution name is `{DISTRIBUTION}`" in (ROOT / "README.md").read_text()


def test_a_card_that_is_not_json_is_a_clear_error(saved):
    (saved / CARD_FILE).write_text("{not json")
    with pytest.raises(ModelError, match="unreadable model card"):
        Model.load(saved)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"review": {"threshold": "high"}}, r"garbles review.threshold \(expected a number\)"),
        ({"areas": "llm"}, r"garbles areas \(expected a list\)"),
        ({"classifier": {"C": -1}}, r"bad setting \(training setting C -1.0 is not valid"),
        ({"created": None}, r"garbles created \(expected text\)"),
    ],
)
def test_a_garbled_card_names_the_field(saved, changes, message):
    card = json.loads((saved / CARD_FILE).read_text())
    for key, value in changes.items():
        card[key] = {**card[key], **value} if isinstance(value, dict) else value
    (saved / CARD_FILE).write_text(json.dumps(card))
    with pytest.raises(ModelError, match=message):
        Model.load(saved)


def test_the_card_reads_back_what_it_writes(shipped):
    data = json.loads(json.dumps(shipped.card.to_dict()))
    assert ModelCard.from_dict(data) == shipped.card


def test_all_user_errors_share_one_type():
    assert issubclass(ModelError, TaggerError) and issubclass(UsageError, TaggerError)
    assert tagger.TaggerError is TaggerError


def test_needs_review_follows_the_threshold(shipped):
    texts = [*SEED_TEXTS[:5], "graph neural networks", "deep learning"]
    for prediction in predict(texts):
        tie = prediction.area == NO_AREA  # no answer: flagged whatever the threshold
        assert prediction.needs_review == (tie or prediction.confidence < shipped.review_threshold)
    assert all(p.needs_review for p in predict(texts, review_below=1.0))
    assert not any(p.needs_review for p in predict(texts, review_below=0.0) if p.area != NO_AREA)
    assert 0 < shipped.review_threshold <= 1


def test_top_terms_are_the_terms_pushing_toward_the_area(shipped):
    text = "Membership inference attacks reveal which records trained a differentially private model."
    prediction = predict(text, explain=True)
    assert predict(text).top_terms == ()  # only when asked for
    terms = [term for term, _ in prediction.top_terms]
    pushes = [push for _, push in prediction.top_terms]
    assert prediction.area == "safety" and 0 < len(terms) <= 10
    assert pushes == sorted(pushes, reverse=True) and min(pushes) > 0
    assert set(terms) <= set(shipped.card.settings.analyzer(text))
    # Each push is TF-IDF value x (the area's weight - the mean weight over areas).
    matrix = shipped.tfidf([text])
    k = shipped.areas.index("safety")
    expected = {
        shipped.vocabulary[j]: v * (shipped.coef[k, j] - shipped.coef[:, j].mean())
        for j, v in zip(matrix.indices, matrix.data)
    }
    for term, push in prediction.top_terms:
        assert push == pytest.approx(expected[term], abs=1e-4)
    assert max(expected.values()) == pytest.approx(pushes[0], abs=1e-4)


@given(st.text(max_size=300).filter(lambda text: not blank(text)))
def test_explaining_any_text_works(shipped, text):
    prediction = predict(text, explain=True)
    check(prediction, shipped.areas)
    assert all(push > 0 for _, push in prediction.top_terms)


def test_a_weights_file_larger_than_its_card_says_is_refused_before_it_is_read(tmp_path, seed_model, capsys):
    from conftest import run

    seed_model.save(tmp_path / "m")
    card = json.loads((tmp_path / "m" / CARD_FILE).read_text())
    weights = tmp_path / "m" / card["weights_file"]
    assert card["weights_bytes"] == weights.stat().st_size
    with open(weights, "r+b") as stream:  # 40 GB, sparse: nothing is written to the disk
        stream.truncate(40 * 2**30)
    status, _, err = run(capsys, "predict", "--model", tmp_path / "m", *SEED_FILES)
    assert status == 2 and "more than tagger ever writes" in err and "internal error" not in err
    del card["weights_bytes"]  # a card of an earlier version: the limit is the largest tagger writes
    (tmp_path / "m" / CARD_FILE).write_text(json.dumps(card))
    with pytest.raises(ModelError, match="more than tagger ever writes"):
        Model.load(tmp_path / "m")


@pytest.mark.parametrize("name, value", [("C", 1e12), ("max_iter", 10**9), ("abstract_weight", -1.0)])
def test_settings_read_back_from_a_card_are_checked_like_the_rest(tmp_path, seed_model, name, value):
    """A hand-edited setting in model.json is refused when the card is read, so a retrain
    never keeps it (it chooses its settings anew)."""
    from tagger.card import read_card
    from tagger.retraining import previous_model

    seed_model.save(tmp_path)
    data = json.loads((tmp_path / CARD_FILE).read_text())
    assert name in data["classifier"]
    data["classifier"][name] = value
    with pytest.raises(ModelError, match=rf"bad setting \(training setting {name} .* is not valid"):
        read_card(data, str(tmp_path / CARD_FILE))
    (tmp_path / CARD_FILE).write_text(json.dumps(data))
    assert previous_model(tmp_path) is None


def test_a_full_disk_while_saving_leaves_no_orphan_weights_and_says_what_to_do(
    capsys, tmp_path, monkeypatch, seed_model
):
    """The card's write failing (a full disk) left the new 14 MB weights file, named by no
    card, taking the space a retry needs; the error had no fix."""
    import errno

    from conftest import SIX_LABELS, run

    import tagger.model

    seed_model.save(tmp_path / "models")
    before = sorted(p.name for p in (tmp_path / "models").iterdir())
    other = Model(
        seed_model.card, seed_model.vocabulary, seed_model.idf, seed_model.coef * 2, seed_model.intercept
    )
    original = tagger.model.atomic_write

    def card_on_a_full_disk(path, *args, **kwargs):
        if str(path).endswith("model.json"):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return original(path, *args, **kwargs)

    monkeypatch.setattr(tagger.model, "atomic_write", card_on_a_full_disk)
    with pytest.raises(OSError) as error:
        other.save(tmp_path / "models")
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == before

    data = tmp_path / "mine.csv"  # tagger train itself, on a disk that fills as it saves
    data.write_text("abstract,area\n" + "".join(f'"{text}",{area}\n' for text, area in SIX_LABELS))
    status, _, err = run(capsys, "train", "--data", data, "--model", tmp_path / "models")
    assert status == 2 and err.endswith(
        f"tagger: {tmp_path / 'models' / 'model.json'}: No space left on device. Free some space and run it "
        "again (nothing was left half written).\n"
    )
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == before
    assert error.value.errno == errno.ENOSPC


@given(st.lists(st.integers(-3, 3), max_size=40), st.integers(0, 45))
def test_the_first_terms_of_an_area_are_those_a_full_stable_sort_gives(values, n):
    """Each area's terms of most weight are found without sorting every feature: the same
    terms, in the same order, ties by vocabulary order, as the first of a stable sort."""
    from tagger.model import _first

    array = np.array(values, dtype=np.float64)
    assert _first(array, n).tolist() == np.argsort(array, kind="stable")[:n].tolist()


def test_predict_tags_a_long_list_in_bounded_blocks_with_the_same_results(shipped, monkeypatch):
    """A Python list of any length is tagged a block at a time (200,000 texts peaked at 2.9 GB
    when the whole list was one matrix): the same predictions and probabilities as each alone."""
    from tagger.model import BLOCK

    distinct = [a.document for a in read_abstracts(SEED_FILES)][:11]
    texts = [distinct[i % len(distinct)] for i in range(2 * BLOCK + 3)]
    alone = {text: shipped.predict(text) for text in distinct}
    sizes = []
    transform = shipped.features.transform_with_evidence

    def counted(block):
        sizes.append(len(block))
        return transform(block)

    monkeypatch.setattr(shipped.features, "transform_with_evidence", counted)
    assert shipped.predict(texts) == [alone[text] for text in texts]
    assert sizes == [BLOCK, BLOCK, 3]
    proba = shipped.predict_proba(texts)
    assert sizes[3:] == [BLOCK, BLOCK, 3]
    np.testing.assert_allclose(proba[: len(distinct)], shipped.predict_proba(distinct))
    np.testing.assert_allclose(proba[BLOCK : BLOCK + 1], shipped.predict_proba(texts[BLOCK : BLOCK + 1]))
    assert shipped.predict([]) == [] and shipped.predict_proba([]).shape == (0, len(shipped.areas))
