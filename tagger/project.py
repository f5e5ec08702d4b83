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
labels/labels.csv  your hand labels (abstract_id, area, title): 'tagger label' adds to it.
seeds/             the texts of the abstracts you label ('tagger label' keeps them here).
models/            the model 'tagger train' writes and 'tagger predict' then uses.

Start: tagger label papers/ --n 20   (answers go to labels/)
       tagger train                  (a model in models/ from your labels and the areas)
       tagger predict papers/ -o tags.csv
"""


def shipped_taxonomy() -> Path:
    """The default taxonomy: inside the installed package, or ``labels/`` of a checkout."""
    package = Path(__file__).resolve().parent
    for candidate in (package / "taxonomy" / AREAS_FILE, package.parent / "labels" / AREAS_FILE):
        if candidate.is_file():
            return candidate
    raise UsageError("the default taxonomy is missing from this install", fix="Reinstall tagger.")


def init(folder: str | Path = ".") -> list[Path]:
    """Make a project in ``folder`` (created if missing): the default taxonomy, an empty label
    file, the folder for labelled texts and a note of what goes where. Refused where a
    project's taxonomy or labels are already (nothing is overwritten). Returns what it made."""
    folder = Path(folder)
    labels = folder / "labels"
    existing = [path for path in (labels / AREAS_FILE, labels / LABELS_FILE) if path.exists()]
    if existing:
        raise UsageError(
            f"{existing[0]} exists already: this folder is a project",
            fix="Use it as it is, or run 'tagger init' in another folder.",
        )
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder} is a file, not a folder", fix="Name a folder (made if missing).")
    made = []
    for path in (labels, folder / "seeds"):
        path.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shipped_taxonomy(), labels / AREAS_FILE)
    (labels / LABELS_FILE).write_text(",".join(LABEL_COLUMNS) + "\n", encoding="utf-8")
    made += [labels / AREAS_FILE, labels / LABELS_FILE, folder / "seeds"]
    note = folder / NOTE_FILE
    if not note.exists():
        note.write_text(NOTE, encoding="utf-8")
        made.append(note)
    return made
