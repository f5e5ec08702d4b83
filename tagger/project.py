"""A project folder of your own (``tagger init``): the taxonomy and hand labels in ``labels/``,
the texts of labelled abstracts in ``seeds/``, models in ``models/``: the folders the commands
read and write by default, so that ``label``, ``train``, ``suggest`` and ``evaluate`` work in
any folder that has them, as in this repository.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from .errors import UsageError
from .labels import AREAS_FILE
from .labelstore import LABEL_COLUMNS, LABELS_FILE
from .shipped import shipped_path

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
    found = shipped_path(name, f"taxonomy/{Path(name).name}")
    if found is not None:
        return found
    raise UsageError(f"the shipped {name} is missing from this install", fix="Reinstall tagger.")


def shipped_taxonomy() -> Path:
    """The default taxonomy."""
    return shipped(f"labels/{AREAS_FILE}")


def init(folder: str | Path = ".", empty: bool = False) -> list[Path]:
    """Make a project in ``folder`` (created if missing): the default taxonomy, the labels the
    shipped model learnt from with their texts in ``seeds/`` (none with ``empty``), and a
    note of what goes where. Refused where a project's taxonomy or labels are already, or a
    name it would write is taken (by a file, a folder or a symlink, dangling or not: nothing
    is overwritten or written through). All or nothing: everything is made in a hidden
    folder first and moved into place by renames, so that a full disk or an interruption
    leaves no half project. Returns what it made."""
    folder = Path(folder)
    labels, seeds = folder / "labels", folder / "seeds"
    existing = [path for path in (labels / AREAS_FILE, labels / LABELS_FILE) if os.path.lexists(path)]
    if existing:
        raise UsageError(
            f"{existing[0]} exists already: this folder is a project",
            fix="Use it as it is, or run 'tagger init' in another folder.",
        )
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder} is a file, not a folder", fix="Name a folder (made if missing).")
    for place in (labels, seeds):
        if os.path.lexists(place) and (place.is_symlink() or not place.is_dir()):
            raise UsageError(
                f"{place} exists and is not a folder", fix="Move it away, or init another folder."
            )
    texts = [] if empty else sorted(p for p in shipped("seeds").iterdir() if p.is_file())
    clash = [seeds / text.name for text in texts if os.path.lexists(seeds / text.name)]
    if clash:
        raise UsageError(
            f"{clash[0]} exists already", fix="Move it away, or start with no labels: tagger init --empty."
        )
    note = folder / NOTE_FILE
    planned = {
        Path("labels") / AREAS_FILE: shipped_taxonomy(),
        Path("labels") / LABELS_FILE: None if empty else shipped(f"labels/{LABELS_FILE}"),
        **{Path("seeds") / text.name: text for text in texts},
    }
    if not os.path.lexists(note):
        planned[Path(NOTE_FILE)] = NOTE.format(labels=NO_LABELS if empty else SHIPPED_LABELS)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".tagger-init-", dir=folder))
    except OSError as error:
        raise _cannot(error, folder) from None
    try:
        for name, source in planned.items():
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            if isinstance(source, Path):
                shutil.copyfile(source, staging / name)
            else:
                content = source if source is not None else ",".join(LABEL_COLUMNS) + "\n"
                (staging / name).write_text(content, encoding="utf-8")
        labels.mkdir(exist_ok=True)
        seeds.mkdir(exist_ok=True)
        for name in planned:  # renames within one folder: no space needed, nothing half written
            os.replace(staging / name, folder / name)
    except OSError as error:
        for name in planned:
            with contextlib.suppress(OSError):
                if (folder / name).is_file() and not (staging / name).exists():
                    (folder / name).unlink()
        raise _cannot(error, folder / next(iter(planned))) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    made = [labels / AREAS_FILE, labels / LABELS_FILE, seeds]
    return made + ([note] if Path(NOTE_FILE) in planned else [])


def _cannot(error: OSError, where: Path) -> UsageError:
    """A write that failed, said about the project (never a file of the installed package)."""
    return UsageError(
        f"cannot make the project ({error.strerror or error})",
        where=str(where),
        fix="Free some space or choose a folder you can write to; nothing was left half made.",
    )
