"""A project folder of your own (``tagger init``): the taxonomy and hand labels in ``labels/``,
the texts of labelled abstracts in ``seeds/``, models in ``models/``: the folders the commands
read and write by default, so that ``label``, ``train``, ``suggest`` and ``evaluate`` work in
any folder that has them, as in this repository.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .errors import UsageError
from .labels import AREAS_FILE
from .labelstore import LABEL_COLUMNS, LABELS_FILE

NOTE_FILE = "TAGGER.txt"
NOTE = """\
A tagger project (made by 'tagger init'). The commands read and write these by default:

labels/areas.csv   the taxonomy: one row per area (slug, name, description, keywords).
                   Edit it for your own areas; every area needs a name and a description.
labels/labels.csv  the hand labels (abstract_id, area, title): 'tagger label' adds to it.
{labels}
seeds/             the texts of the labelled abstracts ('tagger label' keeps them here).
models/            the model 'tagger train' writes and 'tagger predict' then uses.

Start: tagger label papers/ --n 20   (answers go to labels/)
       tagger train                  (a model in models/ from the labels and the areas)
       tagger predict papers/ -o tags.csv
"""
SHIPPED_LABELS = """\
                   It starts with the labels the shipped model learnt from (their texts
                   are in seeds/): yours add to them. For areas of your own, start a
                   project with 'tagger init --empty' instead."""
NO_LABELS = "                   It starts empty (tagger init --empty)."


def shipped(name: str) -> Path:
    """A file or folder of the shipped project (``labels/areas.csv``, ``labels/labels.csv``,
    ``seeds``): inside the installed package, or in the checkout it runs from."""
    package = Path(__file__).resolve().parent
    for candidate in (package / "taxonomy" / Path(name).name, package.parent / name):
        if candidate.exists():
            return candidate
    raise UsageError(f"the shipped {name} is missing from this install", fix="Reinstall tagger.")


def shipped_taxonomy() -> Path:
    """The default taxonomy."""
    return shipped(f"labels/{AREAS_FILE}")


def init(folder: str | Path = ".", empty: bool = False) -> list[Path]:
    """Make a project in ``folder`` (created if missing): the default taxonomy, the labels the
    shipped model learnt from with their texts in ``seeds/`` (none with ``empty``), and a
    note of what goes where. Refused where a project's taxonomy or labels are already
    (nothing is overwritten). Returns what it made."""
    folder = Path(folder)
    labels, seeds = folder / "labels", folder / "seeds"
    existing = [path for path in (labels / AREAS_FILE, labels / LABELS_FILE) if path.exists()]
    if existing:
        raise UsageError(
            f"{existing[0]} exists already: this folder is a project",
            fix="Use it as it is, or run 'tagger init' in another folder.",
        )
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder} is a file, not a folder", fix="Name a folder (made if missing).")
    texts = [] if empty else sorted(p for p in shipped("seeds").iterdir() if p.is_file())
    clash = [seeds / text.name for text in texts if (seeds / text.name).exists()]
    if clash:
        raise UsageError(
            f"{clash[0]} exists already", fix="Move it away, or start with no labels: tagger init --empty."
        )
    labels.mkdir(parents=True, exist_ok=True)
    seeds.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shipped_taxonomy(), labels / AREAS_FILE)
    made = [labels / AREAS_FILE]
    for text in texts:
        shutil.copyfile(text, seeds / text.name)
    if empty:
        (labels / LABELS_FILE).write_text(",".join(LABEL_COLUMNS) + "\n", encoding="utf-8")
    else:
        shutil.copyfile(shipped(f"labels/{LABELS_FILE}"), labels / LABELS_FILE)
    made += [labels / LABELS_FILE, seeds]
    note = folder / NOTE_FILE
    if not note.exists():
        note.write_text(NOTE.format(labels=NO_LABELS if empty else SHIPPED_LABELS), encoding="utf-8")
        made.append(note)
    return made
