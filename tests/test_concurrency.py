"""Two things at once: label sessions, saves and loads of one folder by several processes."""

import dataclasses
import json
import multiprocessing

import pytest
from conftest import copy_project, with_card

from tagger import Model
from tagger.errors import TaggerError
from tagger.labels import load_training_set
from tagger.labelstore import ProjectLabels
from tagger.reading import Abstract, abstract_id

fork = multiprocessing.get_context("fork")
LABELS_PER_SESSION = 40


def _session(project, name: str, areas: list[str]) -> None:
    store = ProjectLabels(project / "labels", project / "seeds")
    for i, area in enumerate(areas):
        abstract = Abstract(
            f"{name}-{i}", f"Abstract {i} of session {name} about {area}.", "pile.jsonl", i, i
        )
        store.add(abstract, area)
    shared = Abstract("both", "An abstract both sessions label.", "pile.jsonl", 0, 0)
    store.add(shared, areas[0])


def test_two_label_sessions_at_once_keep_every_answer(tmp_path):
    copy_project(tmp_path, ("labels", "seeds"))
    sessions = [
        fork.Process(target=_session, args=(tmp_path, name, [area] * LABELS_PER_SESSION))
        for name, area in (("a", "robotics"), ("b", "vision"))
    ]
    for process in sessions:
        process.start()
    for process in sessions:
        process.join(60)
        assert process.exitcode == 0
    rows = (tmp_path / "labels" / "labels.csv").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 1 + 38 + 2 * LABELS_PER_SESSION + 1  # "both" once: the later answer
    training_set = load_training_set(tmp_path / "labels", [tmp_path / "seeds"])
    ids = set(training_set.ids)
    texts = {
        f"Abstract {i} of session {name} about {area}."
        for name, area in (("a", "robotics"), ("b", "vision"))
        for i in range(LABELS_PER_SESSION)
    }
    assert {abstract_id(text) for text in texts} <= ids
    assert len(training_set.ids) == 38 + 2 * LABELS_PER_SESSION + 1  # "both" once: the later answer
    stored = (tmp_path / "seeds" / "labelled.jsonl").read_text(encoding="utf-8").splitlines()
    assert sorted(json.loads(line)["id"] for line in stored) == sorted(ids - set(training_set.ids[:38]))
    assert not list(tmp_path.glob("*/.*.tmp-*"))


def test_a_second_label_of_an_abstract_replaces_the_first(tmp_path):
    copy_project(tmp_path, ("labels", "seeds"))
    abstract = Abstract("p1", "Robots grasp cups.", "pile.jsonl", 1, 1)
    store = ProjectLabels(tmp_path / "labels", tmp_path / "seeds")
    assert store.add(abstract, "vision").earlier is None
    assert store.add(abstract, "robotics").earlier == "vision"
    assert store.add(abstract, "robotics").earlier is None
    training_set = load_training_set(tmp_path / "labels", [tmp_path / "seeds"])
    assert (
        training_set.ids.count(abstract_id("Robots grasp cups.")) == 1
        and training_set.labels[-1] == "robotics"
    )
    assert len((tmp_path / "seeds" / "labelled.jsonl").read_text(encoding="utf-8").splitlines()) == 1


def small_models(shipped) -> list[Model]:
    """Two different small models (quick to save and load)."""
    keep = [i for i, term in enumerate(shipped.vocabulary) if " " not in term][:300]
    small = Model(
        shipped.card,
        [shipped.vocabulary[i] for i in keep],
        shipped.idf[keep],
        shipped.coef[:, keep],
        shipped.intercept,
    )
    other = with_card(small, review=dataclasses.replace(small.card.review, threshold=0.6))
    return [small, other]


def _save_repeatedly(model: Model, folder, times: int) -> None:
    for _ in range(times):
        model.save(folder)


def _load_repeatedly(folder, times: int, failures) -> None:
    for _ in range(times):
        try:
            Model.load(folder)
        except TaggerError as error:
            failures.put(str(error))
    failures.put(None)


@pytest.mark.slow  # over 5 s on 2 shared cores: in the slow run, with the other long tests
def test_loads_during_repeated_saves_never_fail_and_the_folder_stays_loadable(tmp_path, shipped):
    models = small_models(shipped)
    folder = tmp_path / "model"
    models[0].save(folder)
    failures = fork.Queue()
    reader = fork.Process(target=_load_repeatedly, args=(folder, 1000, failures))
    writers = [fork.Process(target=_save_repeatedly, args=(model, folder, 40)) for model in models]
    for process in [reader, *writers]:
        process.start()
    errors = []
    while (error := failures.get(timeout=60)) is not None:
        errors.append(error)
    for process in [reader, *writers]:
        process.join(60)
        assert process.exitcode == 0
    assert errors == []
    loaded = Model.load(folder)
    assert loaded.card.review.threshold in (0.6, models[0].card.review.threshold)
    assert len(list(folder.glob("weights-*.npz"))) == 1
