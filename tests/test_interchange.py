"""The labels as Prodigy and Label Studio import them (``tagger labels --format prodigy`` and
``--format label-studio``), checked against what each format's documentation asks: Prodigy's
annotated ``choice`` tasks (``text``, ``options`` of ``id`` and ``text``, ``accept``,
``answer``), one JSON object a line for ``prodigy db-in``; Label Studio's task list (``data``,
``annotations`` of ``result`` items naming ``from_name``, ``to_name``, ``type`` and ``value``),
each result read by a control of the labelling interface tagger prints, as Label Studio checks
on import."""

from __future__ import annotations

import gzip
import json
import xml.etree.ElementTree as ElementTree

import pytest
from conftest import copy_project, run

from tagger.labels import load_areas
from tagger.labelstore import NONE, ProjectLabels, Remark
from tagger.reading import read_abstracts

PILE = [
    "A quadruped robot learns to climb stairs from proprioception and a depth camera.",
    "We prove a regret bound for contextual bandits with linear rewards and heavy tails.",
]


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project whose labels hold two annotators' answers to two abstracts (one flagged
    with a comment), their disagreement settled by a review."""
    copy_project(tmp_path, ("labels", "seeds"))
    (tmp_path / "pile.jsonl").write_text(
        "".join(json.dumps({"id": f"p{i}", "abstract": t}) + "\n" for i, t in enumerate(PILE))
    )
    abstracts = list(read_abstracts([tmp_path / "pile.jsonl"]))
    ana = ProjectLabels(tmp_path / "labels", tmp_path / "seeds", "ana")
    ben = ProjectLabels(tmp_path / "labels", tmp_path / "seeds", "ben")
    ana.add(abstracts[0], "robotics", remark=Remark("stairs, not gaits", True))
    ben.add(abstracts[0], "rl")
    ana.add(abstracts[1], NONE, "bandits")
    ProjectLabels(tmp_path / "labels", tmp_path / "seeds", "rita", reviewing=True).add(
        abstracts[0], "robotics"
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_prodigy_gets_one_annotated_choice_task_per_answer(project, capsys):
    status, _, err = run(capsys, "labels", "--format", "prodigy", "-o", "labels.prodigy.jsonl")
    assert status == 0, err
    tasks = [
        json.loads(line)
        for line in (project / "labels.prodigy.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    areas = load_areas(project / "labels" / "areas.csv")
    labels = ProjectLabels(project / "labels", project / "seeds").rows()
    assert len(tasks) == len(labels) and f"wrote labels.prodigy.jsonl: {len(tasks):,} labels" in err
    ids = [area.slug for area in areas] + [NONE]
    for task in tasks:  # what a choice task holds (Prodigy's interfaces: choice; db-in)
        assert isinstance(task["text"], str) and task["text"]
        assert [option["id"] for option in task["options"]] == ids
        assert all(isinstance(option["text"], str) and option["text"] for option in task["options"])
        assert len(task["accept"]) == 1 and task["accept"][0] in ids
        assert task["answer"] == "accept" and task["_view_id"] == "choice"
    ours = [task for task in tasks if task.get("_annotator_id")]
    said = [
        (
            t["_annotator_id"],
            t["meta"]["id"],
            t["accept"][0],
            t.get("flagged", False),
            t["meta"].get("comment"),
        )
        for t in ours
    ]
    assert said == [
        ("ana", "p0", "robotics", True, "stairs, not gaits"),
        ("ben", "p0", "rl", False, None),
        ("ana", "p1", NONE, False, None),
        ("rita", "p0", "robotics", False, None),
    ]
    assert all(isinstance(task["_timestamp"], int) and task["_timestamp"] > 1.7e9 for task in ours)
    assert next(o["text"] for o in tasks[0]["options"] if o["id"] == "robotics") == next(
        a.name for a in areas if a.slug == "robotics"
    )


def test_label_studio_gets_one_task_per_abstract_that_its_printed_interface_reads(project, capsys):
    status, _, err = run(capsys, "labels", "--format", "label-studio", "-o", "tasks.json.gz")
    assert status == 0, err
    tasks = json.loads(gzip.decompress((project / "tasks.json.gz").read_bytes()))
    config = ElementTree.fromstring(err[err.index("<View>") : err.index("</View>") + len("</View>")])
    # the interface: controls by name, what each reads, its choices; the data it shows
    controls = {node.get("name"): node for node in config if node.tag in ("Choices", "TextArea")}
    shown = {node.get("value").removeprefix("$") for node in config if node.tag in ("Text", "Header")}
    text_names = {node.get("name") for node in config if node.tag == "Text"}
    labels = ProjectLabels(project / "labels", project / "seeds").rows()
    assert isinstance(tasks, list) and len(tasks) == len({row["abstract_id"] for row in labels})  # one each
    for task in tasks:
        assert shown <= set(task["data"]) and task["data"]["text"]
        for annotation in task["annotations"]:
            assert isinstance(annotation["ground_truth"], bool)
            for result in annotation["result"]:
                control = controls[result["from_name"]]
                assert result["to_name"] in text_names and control.get("toName") == result["to_name"]
                assert result["type"] == control.tag.lower()
                if result["type"] == "choices":
                    values = {choice.get("value") for choice in control}
                    assert set(result["value"]["choices"]) <= values
                else:
                    assert all(isinstance(text, str) for text in result["value"]["text"])
    p0 = next(task for task in tasks if task["data"]["source_id"] == "p0")
    given = [
        (
            {r["from_name"]: r["value"].get("choices", r["value"].get("text")) for r in a["result"]},
            a["ground_truth"],
        )
        for a in p0["annotations"]
    ]
    assert given == [
        ({"area": ["robotics"], "comment": ["stairs, not gaits"], "flag": ["flagged"]}, False),
        ({"area": ["rl"]}, False),
        ({"area": ["robotics"]}, True),  # the review's final label
    ]
    assert all(a["created_at"].endswith("Z") for a in p0["annotations"])


def test_a_label_without_its_text_is_left_out_and_said(project, capsys):
    (project / "seeds" / "labelled.jsonl").unlink()  # the texts of the answers above
    status, _, err = run(capsys, "labels", "--format", "prodigy", "-o", "p.jsonl")
    assert status == 0 and "4 label(s) left out: their abstract's text is not in the project" in err
    labels = ProjectLabels(project / "labels", project / "seeds").rows()
    assert len((project / "p.jsonl").read_text(encoding="utf-8").splitlines()) == len(labels) - 4


def test_a_tool_s_export_into_the_project_s_folders_is_refused(project, capsys):
    before = (project / "labels" / "labels.csv").read_bytes()
    status, _, err = run(capsys, "labels", "--format", "label-studio", "-o", "labels/labels.csv")
    assert status != 0 and "Traceback" not in err
    assert (project / "labels" / "labels.csv").read_bytes() == before
