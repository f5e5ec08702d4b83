"""The project's labels as two annotation tools import them (``tagger labels --format``):

- ``prodigy``: JSON lines of annotated ``choice`` tasks, one per answer, which ``prodigy
  db-in DATASET FILE`` adds to a dataset: the ``text``, the areas as ``options`` (``id``: the
  slug, ``text``: its name), the answer in ``accept``, ``"answer": "accept"``, who gave it
  (``_annotator_id``, ``_session_id``) and when (``_timestamp``, seconds), ``"flagged": true``
  for a flagged answer, and in ``meta`` (shown with the task) the abstract's id, title, file
  and the annotator's comment;
- ``label-studio``: one JSON list of tasks, one per abstract, for Label Studio's import: the
  abstract in ``data`` (``text``, ``title``, ``abstract_id``, ``source_id``), and each answer
  as one of its ``annotations``: a ``choices`` result from the control ``area`` on ``text``,
  with the comment as a ``textarea`` result from ``comment`` and a flag as the choice
  ``flagged`` of ``flag``; a review's final label is the ``ground_truth`` one. The labelling
  interface that reads them is :func:`label_studio_config` (Label Studio's project settings,
  "Labeling Interface", "Code"). Label Studio names its annotators by its own user ids, so the
  annotators' names stay in tagger's own export.

A label whose abstract's text is not in the project (its file gone) cannot be a task: it is left
out and counted."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from xml.sax.saxutils import quoteattr

from .errors import TaggerWarning
from .labels import Area, load_areas
from .labelstore import NONE, REVIEW, seconds_of

TOOLS = ("prodigy", "label-studio")
NO_AREA = "fits no area"  # the name of the answer none among a tool's options


def _options(areas: Sequence[Area]) -> list[tuple[str, str]]:
    return [(area.slug, area.name) for area in areas] + [(NONE, NO_AREA)]


def prodigy_tasks(rows: Iterable[dict], areas: Sequence[Area]) -> list[dict]:
    """One annotated ``choice`` task per label row (``tagger labels`` rows, each with its
    text: see :func:`write`)."""
    options = [{"id": slug, "text": name} for slug, name in _options(areas)]
    tasks = []
    for row in rows:
        meta = {"id": row["source_id"] or row["abstract_id"], "title": row["title"], "source": row["source"]}
        if row.get("comment"):
            meta["comment"] = row["comment"]
        task = {
            "text": row["abstract"],
            "meta": meta,
            "options": options,
            "accept": [row["area"]],
            "answer": "accept",
            "_view_id": "choice",
            "config": {"choice_style": "single"},
        }
        if row["annotator"]:  # (the shipped labels name nobody)
            task["_annotator_id"] = task["_session_id"] = row["annotator"]
        if (seconds := seconds_of(row["labelled_at"])) is not None:
            task["_timestamp"] = seconds
        if row.get("flag"):
            task["flagged"] = True
        tasks.append(task)
    return tasks


def label_studio_tasks(rows: Iterable[dict]) -> list[dict]:
    """One task per abstract, each of its label rows (``tagger labels`` rows, each with its
    text: see :func:`write`) one of its annotations."""
    tasks: dict[str, dict] = {}
    for row in rows:
        task = tasks.setdefault(
            row["abstract_id"],
            {
                "data": {
                    "text": row["abstract"],
                    "title": row["title"],
                    "abstract_id": row["abstract_id"],
                    "source_id": row["source_id"],
                },
                "annotations": [],
            },
        )
        result: list[dict] = [_result("area", "choices", {"choices": [row["area"]]})]
        if row.get("comment"):
            result.append(_result("comment", "textarea", {"text": [row["comment"]]}))
        if row.get("flag"):
            result.append(_result("flag", "choices", {"choices": ["flagged"]}))
        annotation: dict = {"result": result, "ground_truth": row["role"] == REVIEW}
        if seconds_of(row["labelled_at"]) is not None:
            annotation["created_at"] = row["labelled_at"]
        task["annotations"].append(annotation)
    return list(tasks.values())


def _result(control: str, kind: str, value: dict) -> dict:
    return {"from_name": control, "to_name": "text", "type": kind, "value": value}


def label_studio_config(areas: Sequence[Area]) -> str:
    """Label Studio's labelling interface for :func:`label_studio_tasks`: the abstract's title
    and text, one choice per area (and none), a flag and a comment."""
    choices = "\n".join(
        f"    <Choice value={quoteattr(slug)} hint={quoteattr(name)}/>" for slug, name in _options(areas)
    )
    return (
        "<View>\n"
        '  <Header value="$title"/>\n'
        '  <Text name="text" value="$text"/>\n'
        '  <Choices name="area" toName="text" choice="single" showInline="true">\n'
        f"{choices}\n"
        "  </Choices>\n"
        '  <Choices name="flag" toName="text" choice="multiple">\n'
        '    <Choice value="flagged"/>\n'
        "  </Choices>\n"
        '  <TextArea name="comment" toName="text" maxSubmissions="1" placeholder="a comment (optional)"/>\n'
        "</View>"
    )


def write(rows: list[dict], taxonomy: Path, tool: str, path: str | None, protected=()) -> tuple[int, str]:
    """Write the labels (``tagger labels`` rows of the project whose areas are in the file
    ``taxonomy``) as ``tool`` imports them to ``path`` (stdout: None or ``-``; gzip when it ends
    ``.gz``), by :func:`tagger.output.open_output`'s rules; warns of labels left out (their
    abstract's text is not in the project). Returns how many were written, and what to tell
    the user after (Label Studio's labelling interface for them, or "")."""
    from .output import format_for, open_output

    areas = load_areas(taxonomy)
    kept = [row for row in rows if row["abstract"]]
    if tool == "prodigy":
        text = "".join(json.dumps(task, ensure_ascii=False) + "\n" for task in prodigy_tasks(kept, areas))
    else:
        text = json.dumps(label_studio_tasks(kept), ensure_ascii=False, indent=1) + "\n"
    with open_output(path, compress=format_for(path, "jsonl").gzip, protected=protected) as out:
        out.write(text)
    if len(kept) < len(rows):
        warnings.warn(
            f"{len(rows) - len(kept):,} label(s) left out: their abstract's text is not in the project",
            TaggerWarning,
            stacklevel=2,
        )
    if tool != "label-studio":
        return len(kept), ""
    said = "Label Studio reads them with this labelling interface (Settings, Labeling Interface, Code):"
    return len(kept), f"{said}\n{label_studio_config(areas)}"
