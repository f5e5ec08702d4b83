"""The taxonomy (``areas.csv``) and the hand labels (``labels.csv``): loading, checking, joining.

``areas.csv`` has one row per area: ``slug``, ``name``, ``description``, ``keywords``
(separated by ``;``). ``labels.csv`` has one row per labelled abstract: ``abstract_id``,
``area`` (a slug) and ``title`` (a snippet for people reading the file; not used).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .atomic import atomic_write
from .corpus import Abstract, abstract_id, read_abstracts
from .errors import LabelError
from .locking import locked

AREAS_FILE = "areas.csv"
LABELS_FILE = "labels.csv"
AREA_COLUMNS = ("slug", "name", "description", "keywords")
LABEL_COLUMNS = ("abstract_id", "area", "title")
_SLUG = re.compile(r"^[a-z][a-z0-9_-]*$")


@dataclass(frozen=True)
class Area:
    """A research area: its slug (the tag), display name, description and keywords."""

    slug: str
    name: str
    description: str = ""
    keywords: tuple[str, ...] = ()

    def document(self) -> str:
        """The area written out as one training document."""
        return " ".join([f"{self.name}.", self.description, ", ".join(self.keywords)]).strip()


@dataclass(frozen=True)
class Label:
    abstract_id: str
    area: str
    title: str
    where: str


@dataclass(frozen=True)
class TrainingSet:
    """Labelled abstracts plus the areas they may take. When ``use_descriptions`` is set,
    each area's description and keywords are a training document too. ``pseudo_texts`` and
    ``pseudo_labels`` are abstracts of an unlabelled pile with the areas self-training gave
    them (see :mod:`tagger.selftraining`): training documents that weigh less than hand labels
    and are never counted, evaluated or written as labels."""

    areas: tuple[Area, ...]
    texts: tuple[str, ...]
    labels: tuple[str, ...]
    ids: tuple[str, ...]
    use_descriptions: bool
    origin: str
    pseudo_texts: tuple[str, ...] = ()
    pseudo_labels: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not len(self.texts) == len(self.labels) == len(self.ids):
            raise ValueError("texts, labels and ids differ in length")

    @property
    def slugs(self) -> tuple[str, ...]:
        return tuple(area.slug for area in self.areas)

    def label_indices(self) -> np.ndarray:
        """Each label's area as its index in :attr:`slugs`."""
        index = {slug: k for k, slug in enumerate(self.slugs)}
        return np.asarray([index[label] for label in self.labels], dtype=np.int64)

    def subset(self, indices: Iterable[int]) -> TrainingSet:
        """The same areas with only the labelled abstracts at ``indices``, in that order."""
        indices = list(indices)
        return replace(
            self,
            texts=tuple(self.texts[i] for i in indices),
            labels=tuple(self.labels[i] for i in indices),
            ids=tuple(self.ids[i] for i in indices),
        )

    def counts(self) -> dict[str, int]:
        """Labelled abstracts per area, every area listed."""
        counts = dict.fromkeys(self.slugs, 0)
        for label in self.labels:
            counts[label] += 1
        return counts

    def fingerprint(self) -> str:
        """SHA-256 of everything training reads: areas, texts, labels."""
        payload = json.dumps(
            {
                "areas": [[a.slug, a.name, a.description, list(a.keywords)] for a in self.areas],
                "texts": list(self.texts),
                "labels": list(self.labels),
                "use_descriptions": self.use_descriptions,
            },
            ensure_ascii=False,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _rows(path: Path, columns: Sequence[str]) -> Iterable[tuple[str, dict[str, str]]]:
    """(file:line, row) for each data row of a CSV file that must have ``columns``."""
    if not path.is_file():
        raise LabelError("file not found", where=str(path), fix="Create it, or point to the right folder.")
    line = 1
    try:
        with open(path, encoding="utf-8-sig", newline="") as stream:
            reader = csv.DictReader(stream, strict=True)
            missing = [c for c in columns if c not in (reader.fieldnames or [])]
            if missing:
                raise LabelError(
                    f"missing column(s) {', '.join(missing)} (has: {', '.join(reader.fieldnames or [])})",
                    where=f"{path}:1",
                    fix=f"The header row must name {', '.join(columns)}.",
                )
            line = reader.line_num + 1
            for row in reader:
                yield f"{path}:{line}", {key: (value or "").strip() for key, value in row.items() if key}
                line = reader.line_num + 1
    except UnicodeDecodeError:
        offset = 0
        try:
            path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as error:
            offset = error.start
        raise LabelError(
            f"not valid UTF-8 (byte {offset})", where=str(path), fix="Save it as UTF-8."
        ) from None
    except csv.Error as error:
        raise LabelError(f"malformed CSV ({error})", where=f"{path}:{line}", fix="Fix its quoting.") from None


def load_areas(path: str | Path) -> tuple[Area, ...]:
    """The areas of ``areas.csv``, checked: valid unique slugs, names and descriptions."""
    areas: list[Area] = []
    seen: dict[str, str] = {}
    for where, row in _rows(Path(path), AREA_COLUMNS):
        slug = row["slug"]
        if not _SLUG.match(slug):
            raise LabelError(
                f"bad area slug {slug!r}", where=where, fix="Use lower-case letters, digits, '-' or '_'."
            )
        if slug in seen:
            raise LabelError(f"area {slug!r} is defined twice (first at {seen[slug]})", where=where)
        for column in ("name", "description"):
            if not row[column]:
                raise LabelError(
                    f"area {slug!r} has an empty {column}", where=where, fix=f"Write its {column}."
                )
        seen[slug] = where
        keywords = tuple(k.strip() for k in row["keywords"].split(";") if k.strip())
        areas.append(Area(slug, row["name"], row["description"], keywords))
    if len(areas) < 2:
        raise LabelError(
            "fewer than two areas", where=str(path), fix="A classifier needs at least two areas."
        )
    return tuple(areas)


def load_labels(path: str | Path, areas: Sequence[Area]) -> list[Label]:
    """The hand labels of ``labels.csv``, checked against ``areas``; one label per abstract."""
    slugs = {area.slug for area in areas}
    labels: dict[str, Label] = {}
    for where, row in _rows(Path(path), LABEL_COLUMNS[:2]):
        abstract_id, area = row["abstract_id"], row["area"]
        if not abstract_id:
            raise LabelError("empty abstract_id", where=where, fix="Fill it in or delete the row.")
        if area not in slugs:
            raise LabelError(
                f"unknown area {area!r}", where=where, fix=f"Use one of: {', '.join(sorted(slugs))}."
            )
        earlier = labels.get(abstract_id)
        if earlier and earlier.area != area:
            raise LabelError(
                f"abstract {abstract_id} is labelled {earlier.area!r} at {earlier.where} and {area!r} here",
                where=where,
                fix="Keep the one row you mean.",
            )
        labels[abstract_id] = Label(abstract_id, area, row.get("title", ""), where)
    return list(labels.values())


def load_training_set(
    labels_dir: str | Path = "labels", abstracts: Iterable[str | Path] = ("seeds",)
) -> TrainingSet:
    """The taxonomy and hand labels in ``labels_dir`` joined with the abstracts they label."""
    labels_dir = Path(labels_dir)
    areas = load_areas(labels_dir / AREAS_FILE)
    labels = load_labels(labels_dir / LABELS_FILE, areas)
    texts = {abstract.id: abstract.document for abstract in read_abstracts(abstracts)}
    missing = [label for label in labels if label.abstract_id not in texts]
    if missing:
        first = missing[0]
        raise LabelError(
            f"{len(missing)} label(s) name no abstract in {', '.join(map(str, abstracts))}, "
            f"first {first.abstract_id}",
            where=first.where,
            fix="Add the abstract's file there, or delete the label.",
        )
    return TrainingSet(
        areas=areas,
        texts=tuple(texts[label.abstract_id] for label in labels),
        labels=tuple(label.area for label in labels),
        ids=tuple(label.abstract_id for label in labels),
        use_descriptions=True,
        origin=str(labels_dir),
    )


def read_labelled_file(path: str | Path) -> TrainingSet:
    """A user's own labelled corpus: a .csv or .jsonl file with ``abstract`` and ``area``.
    The areas are the distinct values of ``area``; they have no descriptions."""
    abstracts = []
    for abstract in read_abstracts([path]):
        if not abstract.area:
            raise LabelError(
                "no area for this abstract",
                where=f"{abstract.source}:{abstract.line}",
                fix="Every row needs an 'area' value.",
            )
        abstracts.append(abstract)
    return labelled_set(
        [a.document for a in abstracts], [a.area for a in abstracts], str(path), ids=[a.id for a in abstracts]
    )


def labelled_set(
    documents: Sequence[str],
    areas: Sequence[str],
    origin: str,
    *,
    ids: Sequence[str] | None = None,
    order: Sequence[str] | None = None,
) -> TrainingSet:
    """A training set of labelled documents (title and abstract) without area descriptions:
    the areas are the distinct labels (sorted, or in ``order``)."""
    if len(documents) != len(areas):
        raise LabelError(
            f"{len(documents)} abstracts but {len(areas)} areas", where=origin, fix="Give one area each."
        )
    slugs = list(order) if order is not None else sorted(set(areas))
    if len(slugs) < 2:
        raise LabelError(
            f"{len(slugs)} distinct area(s)", where=origin, fix="A classifier needs at least two areas."
        )
    return TrainingSet(
        areas=tuple(Area(slug, slug) for slug in slugs),
        texts=tuple(documents),
        labels=tuple(areas),
        ids=tuple(ids) if ids is not None else tuple(abstract_id(text) for text in documents),
        use_descriptions=False,
        origin=origin,
    )


LABELLED_ABSTRACTS_FILE = "labelled.jsonl"


def _append(path: Path, old: str, line: str) -> None:
    """Write ``old`` with ``line`` added at the end to ``path``, in one atomic rename: a
    crash leaves the old file or the new one, never half a line."""
    if old and not old.endswith("\n"):
        old += "\n"
    with atomic_write(path) as stream:
        stream.write(old + line)


def _stored_ids(text: str) -> set[str]:
    """The ids of the abstracts in a ``labelled.jsonl`` text (a line that does not parse
    counts as no id; it is kept as it is)."""
    ids = set()
    for line in text.splitlines():
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            ids.add(str(json.loads(line).get("id")))
    return ids


def _without_label(text: str, abstract_id: str) -> tuple[str, list[str]]:
    """A ``labels.csv`` text without the rows of ``abstract_id``, and their areas. The text
    is returned unchanged when it has none."""
    rows = list(csv.reader(io.StringIO(text)))
    ours = [i for i, row in enumerate(rows) if i > 0 and row and row[0].strip() == abstract_id]
    if not ours:
        return text, []
    kept = io.StringIO()
    csv.writer(kept, lineterminator="\n").writerows(row for i, row in enumerate(rows) if i not in ours)
    return kept.getvalue(), [rows[i][1].strip() if len(rows[i]) > 1 else "" for i in ours]


def add_label(
    labels_dir: str | Path, abstracts_dir: str | Path, abstract: Abstract, area: str, *, stored: bool
) -> str | None:
    """Record a hand label: the abstract's text first (in ``abstracts_dir/labelled.jsonl``,
    unless it is ``stored`` there, or elsewhere in ``abstracts_dir``, already), then the row
    in ``labels.csv``. Both folders are locked meanwhile (see :mod:`tagger.locking`), so
    that two label sessions at once keep every answer; each write is atomic, and in this
    order an interruption never leaves a label without its abstract. An earlier label of
    the same abstract (another session's, or an answer changed) is replaced by this one;
    returns the earlier area it replaced, if it differed."""
    labels_dir, abstracts_dir = Path(labels_dir), Path(abstracts_dir)
    abstracts_dir.mkdir(parents=True, exist_ok=True)
    with locked(labels_dir, abstracts_dir):
        texts = abstracts_dir / LABELLED_ABSTRACTS_FILE
        old = texts.read_text(encoding="utf-8") if texts.exists() else ""
        if not stored and abstract.id not in _stored_ids(old):
            record = {
                "id": abstract.id,
                "title": abstract.title,
                "abstract": abstract.text,
                "source": abstract.source,
            }
            _append(texts, old, json.dumps(record, ensure_ascii=False) + "\n")
        labels = labels_dir / LABELS_FILE
        old = labels.read_text(encoding="utf-8") if labels.exists() else ",".join(LABEL_COLUMNS) + "\n"
        old, earlier = _without_label(old, abstract.id)
        row = io.StringIO()
        csv.writer(row, lineterminator="\n").writerow(
            [abstract.id, area, " ".join(abstract.text.split()[:12])]
        )
        _append(labels, old, row.getvalue())
    replaced = [a for a in earlier if a != area]
    return replaced[-1] if replaced else None


def remove_label(labels_dir: str | Path, abstract: Abstract) -> None:
    """Take back a hand label (``tagger label``'s undo): its row leaves ``labels.csv``; the
    abstract's text stays where it is kept (a text without a label is not trained on)."""
    labels = Path(labels_dir) / LABELS_FILE
    with locked(labels_dir):
        if labels.exists():
            text, removed = _without_label(labels.read_text(encoding="utf-8"), abstract.id)
            if removed:
                with atomic_write(labels) as stream:
                    stream.write(text)


# -- a user's own labelled file (train --data) --------------------------------------------


def add_to_labelled_file(path: str | Path, abstract: Abstract, area: str | None) -> str | None:
    """Add ``abstract`` with ``area`` to a user's labelled ``.csv`` or ``.jsonl`` file (made
    if missing), replacing an earlier record of the same abstract (same id or same text), under
    a lock on its folder and atomically; with ``area=None``, only remove it (undo). Returns the
    earlier area it replaced, if it differed."""
    path = Path(path)
    rewrite = {".jsonl": _rewrite_jsonl, ".csv": _rewrite_csv}.get(path.suffix.lower())
    if rewrite is None:
        raise LabelError("a labelled file must be .csv or .jsonl", where=str(path), fix="Rename it.")
    with locked(path.parent):
        old = path.read_text(encoding="utf-8-sig") if path.exists() else ""
        content, earlier = rewrite(old, abstract, area, str(path))
        with atomic_write(path) as out:
            out.write(content)
    replaced = [a for a in earlier if a and a != area]
    return replaced[-1] if replaced and area is not None else None


def _same(abstract: Abstract, identifier, text) -> bool:
    return str(identifier).strip() == abstract.id or abstract_id(str(text or "")) == abstract_id(
        abstract.text
    )


def _rewrite_jsonl(old: str, abstract: Abstract, area: str | None, where: str) -> tuple[str, list[str]]:
    kept, earlier = [], []
    for line in old.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict) and _same(abstract, record.get("id"), record.get("abstract")):
            earlier.append(str(record.get("area", "")))
        else:
            kept.append(line + "\n")
    if area is not None:
        record = {"id": abstract.id, "title": abstract.title, "abstract": abstract.text, "area": area}
        kept.append(json.dumps(record, ensure_ascii=False) + "\n")
    return "".join(kept), earlier


def _rewrite_csv(old: str, abstract: Abstract, area: str | None, where: str) -> tuple[str, list[str]]:
    rows = list(csv.reader(io.StringIO(old)))
    header = rows[0] if rows else ["abstract", "area", "title", "id"]
    column = {name.strip().lower(): i for i, name in reversed(list(enumerate(header)))}
    if "abstract" not in column or "area" not in column:
        raise LabelError("needs 'abstract' and 'area' columns", where=f"{where}:1", fix="Add them.")

    def cell(row: list[str], name: str) -> str:
        return row[column[name]] if name in column and column[name] < len(row) else ""

    kept, earlier = [header], []
    for row in rows[1:]:
        if _same(abstract, cell(row, "id"), cell(row, "abstract")):
            earlier.append(cell(row, "area").strip())
        else:
            kept.append(row)
    if area is not None:
        values = {"abstract": abstract.text, "area": area, "title": abstract.title, "id": abstract.id}
        kept.append([values.get(name.strip().lower(), "") for name in header])
    stream = io.StringIO()
    csv.writer(stream, lineterminator="\n").writerows(kept)
    return stream.getvalue(), earlier


class ProjectLabels:
    """Where ``tagger label`` saves answers by default: ``labels.csv`` in ``labels_dir``, the
    texts in ``abstracts_dir`` (see :func:`add_label`)."""

    def __init__(self, labels_dir: str | Path, abstracts_dir: str | Path) -> None:
        self.labels_dir, self.abstracts_dir = Path(labels_dir), Path(abstracts_dir)
        self.where = self.labels_dir / LABELS_FILE
        self._stored: set[str] | None = None  # ids of the texts in abstracts_dir, read once

    def add(self, abstract: Abstract, area: str) -> str | None:
        if self._stored is None:
            folder = self.abstracts_dir
            self._stored = {a.id for a in read_abstracts([folder])} if folder.is_dir() else set()
        earlier = add_label(
            self.labels_dir, self.abstracts_dir, abstract, area, stored=abstract.id in self._stored
        )
        self._stored.add(abstract.id)
        return earlier

    def remove(self, abstract: Abstract) -> None:
        remove_label(self.labels_dir, abstract)


class LabelledFile:
    """A user's own labelled file as the place answers go (see :func:`add_to_labelled_file`)."""

    def __init__(self, path: str | Path) -> None:
        self.where = Path(path)

    def add(self, abstract: Abstract, area: str) -> str | None:
        return add_to_labelled_file(self.where, abstract, area)

    def remove(self, abstract: Abstract) -> None:
        add_to_labelled_file(self.where, abstract, None)
