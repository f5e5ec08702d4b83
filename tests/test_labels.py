import csv
import dataclasses
import json
from collections import Counter
from pathlib import Path

import pytest
from conftest import LABELS, ROOT, SEED_FILES, SEEDS
from hypothesis import given
from hypothesis import strategies as st

from tagger.errors import LabelError
from tagger.labels import labelled, load_areas, load_labels, load_training_set, read_labelled_file
from tagger.reading import abstract_id, read_abstracts

# The hand-labelled abstracts of 2022-24: the development set's and the 1,800 added to them, none
# included (40 of them drawn for the README's example pile, docs/example/papers.jsonl, which no
# model learns from).
MODERN = [SEEDS / "modern-2022-24.jsonl", SEEDS / "modern-2022-24-train.jsonl"]
# The hand-labelled arXiv abstracts of 2025: 3,671, none included (an eighth of the 4,200 held out
# for measuring: tests/benchmarks/import_labels.py).
PREPRINTS = [SEEDS / "arxiv-2025.jsonl"]
OLDER = [SEEDS / "conference-2015-16.jsonl"]  # ICML and NeurIPS 2015-16, labelled by reading

AREAS = ["llm", "vision", "generative", "rl", "robotics", "theory", "optimization", "probabilistic", "safety",
         "science", "systems"]  # fmt: skip


def test_the_taxonomy_has_the_eleven_areas_each_described():
    areas = load_areas(LABELS / "areas.csv")
    assert [a.slug for a in areas] == AREAS
    for area in areas:
        assert area.name and len(area.description.split()) >= 50 and len(area.keywords) >= 30


def test_every_labelled_abstract_has_exactly_one_hand_label_with_a_known_area():
    areas = load_areas(LABELS / "areas.csv")
    labels = load_labels(LABELS / "labels.csv", areas)
    seed_ids = {a.id for a in read_abstracts(SEED_FILES)}
    modern = list(read_abstracts(MODERN + PREPRINTS + OLDER))
    assert len(labels) == 38 + 344 + 1768 + 3671 + 300 == len(seed_ids) + len(modern)
    assert {label.abstract_id for label in labels} == seed_ids | {abstract_id(a.text) for a in modern}
    assert {label.area for label in labels} == {*AREAS, "none"}
    assert all(label.title for label in labels)
    # each abstract of 2022-24 keeps where it comes from
    records = [json.loads(line) for path in MODERN for line in path.read_text("utf-8").splitlines()]
    assert all(r["venue"] and r["year"] in (2022, 2023, 2024) for r in records) and len(records) == 344 + 1768
    preprints = [json.loads(line) for path in PREPRINTS for line in path.read_text("utf-8").splitlines()]
    assert all(r["venue"] == "arxiv" and r["year"] == 2025 and r["id"][:2] == "25" for r in preprints)


def test_training_set_joins_labels_to_their_texts(training_set, seed_set):
    assert len(training_set.texts) == 6121 - 820 and training_set.use_descriptions
    assert training_set.no_area == len(training_set.no_area_ids) == 820  # (the answer none: learnt)
    counts = training_set.answering_no_area().counts()
    assert list(counts) == [*AREAS, "none"] and sum(counts.values()) == 6121 and min(counts.values()) >= 50
    assert len(training_set.fingerprint()) == 64
    assert len(seed_set.texts) == 38 and seed_set.counts()["probabilistic"] == 0


def test_a_training_set_says_which_files_its_texts_are_from(training_set, seed_set):
    seeds = Counter(Path(a.source).name for a in read_abstracts(SEED_FILES))
    assert training_set.described() == (
        f"{LABELS} (texts: arxiv-2025.jsonl 3097, modern-2022-24-train.jsonl 1571, modern-2022-24.jsonl 318, "
        "conference-2015-16.jsonl 277, " + ", ".join(f"{name} {n}" for name, n in sorted(seeds.items())) + ")"
    )
    first_two = seed_set.subset([0, 1])
    assert first_two.described() == f"{first_two.origin} (texts: {first_two.files[first_two.ids[0]]} 2)"
    grown = dataclasses.replace(
        first_two,
        texts=(*first_two.texts, "x y"),
        labels=(*first_two.labels, "llm"),
        ids=(*first_two.ids, "0"),
    )
    assert grown.described().endswith("2; 1 from elsewhere)")  # a text added otherwise counts apart
    assert labelled(["a b", "c d"], ["x", "y"]).described() == "lists"  # files unknown: where they came from


def write_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.fixture
def areas(tmp_path):
    rows = [["a", "Area A", "About a.", "x; y"], ["b", "Area B", "About b.", ""]]
    return load_areas(write_csv(tmp_path / "areas.csv", ["slug", "name", "description", "keywords"], rows))


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            [["a", "A", "d", ""], ["a", "A2", "d", ""]],
            r"areas.csv:3: area 'a' is defined twice \(first at .*:2\)",
        ),
        ([["a", "A", "", ""], ["b", "B", "d", ""]], r"areas.csv:2: area 'a' has an empty description"),
        ([["A b", "A", "d", ""], ["b", "B", "d", ""]], r"areas.csv:2: bad area slug 'A b'"),
        ([["a", "A", "d", ""]], r"fewer than two areas"),
    ],
)
def test_bad_taxonomies_are_named_by_file_and_line(tmp_path, rows, message):
    path = write_csv(tmp_path / "areas.csv", ["slug", "name", "description", "keywords"], rows)
    with pytest.raises(LabelError, match=message):
        load_areas(path)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([["id1", "c", ""]], r"labels.csv:2: unknown area 'c'. Use one of: a, b."),
        (
            [["id1", "a", ""], ["id1", "b", ""]],
            r"labels.csv:3: this abstract is labelled 'a' at .*:2 and 'b' here",
        ),
        ([["", "a", ""]], r"labels.csv:2: empty abstract_id"),
    ],
)
def test_bad_labels_are_named_by_file_and_line(tmp_path, areas, rows, message):
    path = write_csv(tmp_path / "labels.csv", ["abstract_id", "area", "title"], rows)
    with pytest.raises(LabelError, match=message):
        load_labels(path, areas)


def test_missing_columns_and_files_are_errors(tmp_path, areas):
    path = write_csv(tmp_path / "labels.csv", ["id", "area"], [])
    with pytest.raises(LabelError, match=r"labels.csv:1: missing column\(s\) abstract_id \(has: id, area\)"):
        load_labels(path, areas)
    with pytest.raises(LabelError, match=r"nothing.csv: file not found"):
        load_labels(tmp_path / "nothing.csv", areas)


def test_a_label_naming_no_abstract_is_an_error(tmp_path, areas):
    write_csv(tmp_path / "areas.csv", ["slug", "name", "description", "keywords"],
              [["a", "A", "d", ""], ["b", "B", "d", ""]])  # fmt: skip
    write_csv(tmp_path / "labels.csv", ["abstract_id", "area", "title"], [["0123456789abcdef", "a", "t"]])
    (tmp_path / "abstracts.txt").write_text("Some other abstract.", encoding="utf-8")
    with pytest.raises(
        LabelError, match=r"labels.csv:2: 1 label\(s\) name no abstract in .*first 0123456789abcdef"
    ):
        load_training_set(tmp_path, [tmp_path / "abstracts.txt"])


def test_a_users_labelled_file_brings_its_own_areas(tmp_path):
    path = write_csv(
        tmp_path / "mine.csv",
        ["title", "abstract", "area"],
        [["T1", "Robots grasp cups.", "robots"], ["", "Proteins fold.", "bio"], ["", "Arms move.", "robots"]],
    )
    training_set = read_labelled_file(path)
    assert training_set.slugs == ("bio", "robots") and not training_set.use_descriptions
    assert training_set.texts[0] == "T1. Robots grasp cups."
    assert training_set.labels == ("robots", "bio", "robots")
    write_csv(path, ["abstract", "area"], [["Robots grasp cups.", "robots"], ["Proteins fold.", ""]])
    with pytest.raises(LabelError, match=r"mine.csv:3: no 'area' for this abstract"):
        read_labelled_file(path)


def test_areas_that_differ_only_in_case_are_refused_not_made_two(capsys, tmp_path):
    from conftest import run

    rows = [
        ("Clinical", "Patients in the trial."),
        ("clinical", "A cohort of patients."),
        ("physics", "Quarks."),
    ]
    path = tmp_path / "mine.csv"
    with open(path, "w", newline="") as stream:
        csv.writer(stream).writerows([("area", "abstract"), *rows, ("physics", "Gluons.")])
    with pytest.raises(LabelError, match=r"areas 'Clinical' \(1\) and 'clinical' \(1\) differ only in case"):
        read_labelled_file(path)
    status, _, err = run(capsys, "train", "--data", path, "--model", tmp_path / "model")
    assert status == 2 and "differ only in case or spacing" in err and not (tmp_path / "model").exists()


def test_one_text_labelled_with_two_areas_in_a_users_file_is_refused(tmp_path):
    path = tmp_path / "mine.jsonl"
    rows = [("physics", "Quarks."), ("biology", "Cells."), ("biology", "Quarks."), ("physics", "Gluons.")]
    path.write_text("".join(json.dumps({"area": a, "abstract": t}) + "\n" for a, t in rows))
    with pytest.raises(LabelError) as raised:
        read_labelled_file(path)
    message = str(raised.value)
    assert "mine.jsonl:3: this abstract is labelled 'physics' at " in message
    assert "mine.jsonl:1 and 'biology' here. Keep the one row you mean." in message


def test_an_area_seen_once_is_warned_of_with_the_area_it_may_mean():
    from tagger.errors import TaggerWarning
    from tagger.labels import labelled_set
    from tagger.training import measurable

    texts = [f"text {i}" for i in range(7)]
    training = labelled_set(texts, ["proteins"] * 3 + ["physics"] * 3 + ["Protien"], "mine.csv")
    with pytest.warns(
        TaggerWarning, match=r"only one labelled abstract of 'Protien' \(did you mean 'proteins'\?\)"
    ):
        measurable(training)


def test_the_example_pile_is_hand_labelled_and_unseen_by_the_shipped_model():
    """The README's pile: 40 abstracts of 2022-24, each with its reader's area (4 fit none),
    none of them a label of the project, so the shipped model has not learnt from them."""
    from tagger.model import load_model

    records = [
        json.loads(line)
        for line in (ROOT / "docs" / "example" / "papers.jsonl").read_text("utf-8").splitlines()
    ]
    assert len(records) == 40 and sum(r["area"] == "none" for r in records) == 4
    assert {r["area"] for r in records} <= {*AREAS, "none"} and all(
        r["year"] in (2022, 2023, 2024) for r in records
    )
    digests = {abstract_id(r["abstract"]) for r in records}
    areas = load_areas(LABELS / "areas.csv")
    assert not digests & {label.abstract_id for label in load_labels(LABELS / "labels.csv", areas)}
    assert not digests & set(load_model(ROOT / "models").card.training_data.labels)


@given(st.text(alphabet="ab -\n\u00ad\t", max_size=30))
def test_an_abstract_has_one_id_however_its_text_reaches_tagger(raw):
    """Read from a file, passed from Python or named in a label: the same text, the same id
    (one digest of the cleaned text; a word broken at a line end and the word whole were two)."""
    from tagger.reading import document

    assert abstract_id(raw) == abstract_id(document(raw))  # (the cleaned text the model reads)
    assert abstract_id("a gen-\nerative model") == abstract_id("a generative model")


@given(st.text(alphabet="ab -\n\u00ad\t", min_size=1, max_size=30))
def test_an_abstract_read_from_a_file_carries_the_digest_labels_name_it_by(raw):
    """Read from a file with ids of its own or without: ``Abstract.digest`` is the one digest
    of its text (what a label names it by), whatever its id."""
    import io
    import json

    from tagger.reading import read_abstracts

    lines = [json.dumps({"id": "mine", "abstract": raw}), json.dumps({"abstract": raw})]
    if not raw.strip():
        return
    read = list(
        read_abstracts(["-"], stdin=io.BytesIO(("\n".join(lines) + "\n").encode()), input_format="jsonl")
    )
    assert [a.digest for a in read] == [abstract_id(raw)] * 2
    assert read[0].id == "mine" and read[1].id == abstract_id(raw)


@pytest.mark.parametrize("column", ["area", "Area", "annotator"])
def test_a_labels_file_with_a_column_twice_is_refused_not_read_one_way(tmp_path, column):
    """labels.csv naming a column twice (any case) is refused with its place: training took
    the last 'area' column while the label store read the first."""
    (tmp_path / "labels.csv").write_text(
        f"abstract_id,area,title,annotator,labelled_at,{column}\nabc,llm,t,ana,2026-01-01T00:00:00Z,vision\n"
    )
    areas = load_areas(LABELS / "areas.csv")
    with pytest.raises(LabelError, match=rf"2 columns named '{column.lower()}' .*not told apart") as error:
        load_labels(tmp_path / "labels.csv", areas)
    assert error.value.where.endswith("labels.csv:1")


def _project_of(tmp_path, texts, rows):
    """A project of two areas whose labels.csv holds ``rows`` (abstract index, annotator,
    role, area) over ``texts`` in seeds/."""
    from tagger.labelstore import LABEL_COLUMNS

    (tmp_path / "labels").mkdir()
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "texts.jsonl").write_text(
        "".join(json.dumps({"abstract": t}) + "\n" for t in texts)
    )
    areas = "slug,name,description,keywords\na,Alpha,first area,\nb,Beta,second area,\n"
    (tmp_path / "labels" / "areas.csv").write_text(areas)
    with open(tmp_path / "labels" / "labels.csv", "w", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=LABEL_COLUMNS, restval="")
        writer.writeheader()
        for k, annotator, role, area in rows:
            at = "2026-01-01T00:00:00Z"
            writer.writerow(
                {
                    "abstract_id": abstract_id(texts[k]),
                    "area": area,
                    "annotator": annotator,
                    "labelled_at": at,
                    "role": role,
                }
            )


@pytest.mark.parametrize(
    "rows",
    [
        [(0, "ana", "", "a"), (0, "ben", "", "b"), (0, "ana", "", "b")],  # ana changed her mind: they agree
        [(0, "ana", "", "a"), (0, "ben", "", "b")],  # disputed: left out, with a warning
        [(0, "ana", "", "a"), (0, "ben", "", "b"), (0, "rev", "review", "b")],  # a review settles it
        [(0, "ana", "", "b"), (0, "ben", "", "b")],  # alike: one label
    ],
)
def test_the_same_label_rows_give_one_training_set_through_the_project_and_its_export(tmp_path, rows):
    """Which label of an abstract counts is one rule: the project's labels.csv refused ana's
    changed answer beside ben's, while the same rows exported and read by train --data were a
    disagreement, left out."""
    import warnings

    from tagger.project import Project

    texts = [f"Abstract number {i} about a topic of its own." for i in range(6)]
    rest = [(k, "ana", "", "ab"[k % 2]) for k in range(1, 6)]
    _project_of(tmp_path, texts, rows + rest)
    project = Project(labels=tmp_path / "labels", abstracts=[tmp_path / "seeds"])
    export = tmp_path / "export.csv"
    with open(export, "w", newline="") as stream:
        exported = project.label_rows()
        writer = csv.DictWriter(stream, fieldnames=list(exported[0]))
        writer.writeheader()
        writer.writerows(exported)
    with warnings.catch_warnings(record=True) as said_project:
        warnings.simplefilter("always")
        own = load_training_set(tmp_path / "labels", [tmp_path / "seeds"])
    with warnings.catch_warnings(record=True) as said_export:
        warnings.simplefilter("always")
        data = read_labelled_file(export)
    assert sorted(zip(own.ids, own.labels)) == sorted(zip(data.ids, data.labels))
    assert [str(w.message) for w in said_project] == [str(w.message) for w in said_export]
    disputed = {(0, "ana", "", "a"), (0, "ben", "", "b")} == set(rows)
    assert (abstract_id(texts[0]) in own.ids) is not disputed


def test_a_text_labelled_twice_alike_in_a_users_file_is_one_label(tmp_path):
    """30 abstracts with 10 of them twice trained on 40 labels: one text on both sides of a fold."""
    texts = [
        f"Abstract {i}: {'quarks and gluons' if i % 2 else 'cells and proteins'} of kind {i}."
        for i in range(30)
    ]
    rows = [(("physics" if i % 2 else "biology"), texts[i]) for i in [*range(30), *range(10)]]
    path = tmp_path / "mine.csv"
    with open(path, "w", newline="") as stream:
        csv.writer(stream).writerows([("area", "abstract"), *rows])
    training = read_labelled_file(path)
    assert len(training.texts) == 30 and len(set(training.ids)) == 30
    assert Counter(training.labels) == {"physics": 15, "biology": 15}
