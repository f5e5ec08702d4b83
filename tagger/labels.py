"""The taxonomy (``areas.csv``) and the hand labels (``labels.csv``): loading, checking, joining.

``areas.csv`` has one row per area: ``slug``, ``name``, ``description``, ``keywords``
(separated by ``;``). ``labels.csv`` has one row per labelled abstract: ``abstract_id``,
``area`` (a slug) and ``title`` (a snippet for people reading the file; not used).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .errors import LabelError
from .labelstore import LABEL_COLUMNS, LABELS_FILE, NONE, Given, RecordFile, digests_of_ids, settle, settled
from .reading import KEEP_ALL, Columns, abstract_id, read_abstracts

AREAS_FILE = "areas.csv"
AREA_COLUMNS = ("slug", "name", "description", "keywords")
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


# The answer that an abstract fits no area, as the model learns it: from this many abstracts
# labelled so on, the model answers ``none`` itself (fewer: they set the review threshold).
NO_AREA_MIN = 10
NONE_AREA = Area(
    NONE,
    "Fits no area",
    "Fits none of the areas: research whose main contribution lies outside them all.",
)


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
    and are never counted, evaluated or written as labels; ``pile`` holds the abstracts they
    were chosen from, so that cross-validation can choose them again inside each fold."""

    areas: tuple[Area, ...]
    texts: tuple[str, ...]
    labels: tuple[str, ...]
    ids: tuple[str, ...]
    use_descriptions: bool
    origin: str
    pseudo_texts: tuple[str, ...] = ()
    pseudo_labels: tuple[str, ...] = ()
    pile: tuple[str, ...] = ()  # the unlabelled abstracts the pseudo-labels were chosen from
    weights: tuple[float, ...] = ()  # each label's weight (scikit-learn's sample_weight); none: 1 each
    # the abstracts labelled as fitting no area (labelstore.NONE): never a training document;
    # the review threshold counts the model's tag of each as wrong (see tagger.training.train)
    no_area_texts: tuple[str, ...] = ()
    no_area_ids: tuple[str, ...] = ()  # their ids (digests), where known
    # the name of the file each labelled text is from, by its id, where known
    files: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not len(self.texts) == len(self.labels) == len(self.ids):
            raise ValueError("texts, labels and ids differ in length")
        if self.weights and len(self.weights) != len(self.labels):
            raise ValueError("labels and weights differ in length")
        if self.no_area_ids and len(self.no_area_ids) != len(self.no_area_texts):
            raise ValueError("the texts that fit no area and their ids differ in length")

    @property
    def no_area(self) -> int:
        return len(self.no_area_texts)

    @property
    def slugs(self) -> tuple[str, ...]:
        return tuple(area.slug for area in self.areas)

    @property
    def learns_no_area(self) -> bool:
        """Whether :data:`~tagger.labelstore.NONE` is one of the answers the model learns."""
        return NONE in self.slugs

    def answering_no_area(self) -> TrainingSet:
        """The training set with the abstracts labelled as fitting no area as labels of an
        answer of their own, :data:`~tagger.labelstore.NONE` (the last area, described as
        :data:`NONE_AREA`), when there are :data:`NO_AREA_MIN` of them or more: the model then
        answers ``none`` itself. With fewer, it is the training set as it is (they set the
        review threshold instead, :func:`tagger.training.reviewed_with_no_area`)."""
        if len(self.no_area_texts) < NO_AREA_MIN or self.learns_no_area:
            return self
        ids = self.no_area_ids or tuple(abstract_id(text) for text in self.no_area_texts)
        return replace(
            self,
            areas=(*self.areas, NONE_AREA),
            texts=self.texts + self.no_area_texts,
            labels=self.labels + (NONE,) * len(self.no_area_texts),
            ids=self.ids + ids,
            weights=self.weights + (1.0,) * len(ids) if self.weights else (),
            no_area_texts=(),
            no_area_ids=(),
        )

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
            weights=tuple(self.weights[i] for i in indices) if self.weights else (),
        )

    def described(self) -> str:
        """The labelled abstracts as a card says where they are from: ``origin``, and where
        the texts' files are known, how many from each (most first), e.g. ``labels (texts:
        arxiv-2025.jsonl 1996, modern-2022-24-train.jsonl 1057)``."""
        named = Counter(self.files[i] for i in self.ids if i in self.files)
        if not named:
            return self.origin
        counts = sorted(named.items(), key=lambda item: (-item[1], item[0]))
        others = len(self.ids) - named.total()
        return f"{self.origin} (texts: {', '.join(f'{name} {n}' for name, n in counts)}" + (
            f"; {others} from elsewhere)" if others else ")"
        )

    def counts(self) -> dict[str, int]:
        """Labelled abstracts per area, every area listed."""
        counts = dict.fromkeys(self.slugs, 0)
        for label in self.labels:
            counts[label] += 1
        return counts

    def by_id(self) -> dict[str, str]:
        """The area of each labelled abstract by its id (the one text id: the digest of its
        cleaned text, :func:`tagger.reading.abstract_id`): what a model card records its labels
        by, as labels, output and the label-error list name them."""
        return dict(zip(self.ids, self.labels))

    def fingerprint(self) -> str:
        """SHA-256 of everything training reads: areas, texts, labels (the same whether the
        abstracts that fit no area are an answer learnt or not: :meth:`answering_no_area`)."""
        kept = [i for i, label in enumerate(self.labels) if label != NONE]
        outside = tuple(text for text, label in zip(self.texts, self.labels) if label == NONE)
        payload = json.dumps(
            {
                "areas": [
                    [a.slug, a.name, a.description, list(a.keywords)] for a in self.areas if a.slug != NONE
                ],
                "texts": [self.texts[i] for i in kept],
                "labels": [self.labels[i] for i in kept],
                "use_descriptions": self.use_descriptions,
                **({"weights": [self.weights[i] for i in kept]} if self.weights else {}),
                **({"no_area": list(self.no_area_texts + outside)} if self.no_area_texts or outside else {}),
            },
            ensure_ascii=False,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _rows(
    path: Path, columns: Sequence[str], optional: Sequence[str] = ()
) -> Iterable[tuple[str, dict[str, str]]]:
    """(file:line, row) for each data row of a CSV file (read by the label store's one
    reader) that must have ``columns`` (a row may lack trailing ``optional`` ones)."""
    if not path.is_file():
        raise LabelError("file not found", where=str(path), fix="Create it, or point to the right folder.")
    table = RecordFile(path, "csv", Columns(abstract=columns[0]), header=tuple(columns), optional=optional)
    table.require_columns(list(columns))
    known = {table.named(name): name for name in (*columns, *optional)}  # (a header of any case)
    for record in table.records:
        if record.fields is not None:
            yield (
                f"{path}:{record.line}",
                {known.get(k, k): (v or "").strip() for k, v in record.fields.items() if k},
            )


def load_areas(path: str | os.PathLike) -> tuple[Area, ...]:
    """The areas of ``areas.csv``, checked: valid unique slugs, names and descriptions."""
    if not Path(path).is_file():
        raise LabelError(
            "file not found",
            where=str(path),
            fix="Run 'tagger init' to make a project here (the default taxonomy and labels), "
            "or point --labels at the folder that holds areas.csv.",
        )
    areas: list[Area] = []
    seen: dict[str, str] = {}
    for where, row in _rows(Path(path), AREA_COLUMNS):
        slug = row["slug"]
        if not _SLUG.match(slug):
            raise LabelError(
                f"bad area slug {slug!r}", where=where, fix="Use lower-case letters, digits, '-' or '_'."
            )
        if slug == NONE:
            raise LabelError(
                f"{NONE!r} is the answer for an abstract that fits no area, not an area",
                where=where,
                fix="Name the area otherwise; label abstracts that fit no area 'none'.",
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


def load_labels(path: str | os.PathLike, areas: Sequence[Area]) -> list[Label]:
    """The hand labels of ``labels.csv``, checked against ``areas`` (or :data:`NONE`: the
    abstract fits no area); one label per abstract, by :func:`settle`."""
    slugs = {area.slug for area in areas} | {NONE}
    labels: list[Label] = []
    rows: list[dict] = []
    for where, row in _rows(Path(path), LABEL_COLUMNS[:2], optional=LABEL_COLUMNS[3:]):
        abstract_id, area = row["abstract_id"], row["area"]
        if not abstract_id:
            raise LabelError("empty abstract_id", where=where, fix="Fill it in or delete the row.")
        if area not in slugs:
            raise LabelError(
                f"unknown area {area!r}",
                where=where,
                fix=f"Use one of: {', '.join(sorted(slugs - {NONE}))}, or {NONE} (fits no area).",
            )
        labels.append(Label(abstract_id, area, row.get("title", ""), where))
        rows.append(row)
    return [labels[i] for i in settled(rows, [label.where for label in labels])]


def load_training_set(
    labels_dir: str | os.PathLike = "labels", abstracts: Iterable[str | os.PathLike] = ("seeds",)
) -> TrainingSet:
    """The taxonomy and hand labels in ``labels_dir`` joined with the abstracts they label
    (by the digest of the text; see :mod:`tagger.labelstore`)."""
    labels_dir = Path(labels_dir)
    abstracts = list(abstracts)
    areas = load_areas(labels_dir / AREAS_FILE)
    labels = load_labels(labels_dir / LABELS_FILE, areas)
    read = list(read_abstracts(abstracts))
    documents, files = {}, {}  # by the digest of the text: the document, its file's name
    for a in read:
        digest = a.digest
        documents[digest], files[digest] = a.document, Path(a.source).name
    names = digests_of_ids(read)
    joined: dict[str, Label] = {}
    missing = []
    for label in labels:
        digests = names.get(label.abstract_id, set())
        if len(digests) > 1:
            raise LabelError(
                f"abstract_id {label.abstract_id!r} names {len(digests)} different abstracts "
                f"in {', '.join(map(str, abstracts))}",
                where=label.where,
                fix="Label it again with 'tagger label' (labels now name an abstract by its text's digest).",
            )
        if not digests:
            missing.append(label)
            continue
        [digest] = digests
        earlier = joined.get(digest)
        if earlier and earlier.area != label.area:
            raise LabelError(
                f"abstract {digest} is labelled {earlier.area!r} at {earlier.where} and {label.area!r} here",
                where=label.where,
                fix="Keep the one row you mean.",
            )
        joined[digest] = label
    if missing:
        first = missing[0]
        raise LabelError(
            f"{len(missing)} label(s) name no abstract in {', '.join(map(str, abstracts))}, "
            f"first {first.abstract_id}",
            where=first.where,
            fix="Add the abstract's file there, or delete the label.",
        )
    trained = [digest for digest, label in joined.items() if label.area != NONE]
    outside = [digest for digest, label in joined.items() if label.area == NONE]
    return TrainingSet(
        areas=areas,
        texts=tuple(documents[digest] for digest in trained),
        labels=tuple(joined[digest].area for digest in trained),
        ids=tuple(trained),
        use_descriptions=True,
        origin=str(labels_dir),
        files={digest: files[digest] for digest in trained + outside},
        no_area_texts=tuple(documents[digest] for digest in outside),
        no_area_ids=tuple(outside),
    )


def read_labelled_file(path: str | os.PathLike, columns: Columns | None = None) -> TrainingSet:
    """A user's own labelled corpus: a .csv or .jsonl file with ``abstract`` and ``area``
    (or the columns ``columns`` names). The areas are the distinct values of the area
    column; they have no descriptions."""
    columns = columns or Columns()
    abstracts = []
    given: list[Given] = []  # who gave each label, where the file says (tagger labels' export)
    reading = columns if columns.keep else replace(columns, keep=KEEP_ALL)
    for abstract in read_abstracts([path], columns=reading):
        if not abstract.area:
            raise LabelError(
                f"no {columns.area!r} for this abstract",
                where=f"{abstract.source}:{abstract.line}",
                fix=f"Every row needs an area in its {columns.area!r} column; --label-column names another.",
            )
        abstracts.append(abstract)
        given.append(Given.of({str(name).strip().lower(): v for name, v in (abstract.extra or {}).items()}))
    return labelled_set(
        [a.document for a in abstracts],
        [a.area for a in abstracts],
        str(path),
        ids=[a.digest for a in abstracts],
        wheres=[f"{a.source}:{a.line}" for a in abstracts],
        given=given,
    )


def labelled(
    data,
    areas=None,
    columns: Columns | None = None,
    *,
    order: Sequence[str] | None = None,
    origin: str = "lists",
) -> TrainingSet:
    """The one door to a training set of one's own labels, without area descriptions:
    ``data`` a labelled ``.csv``/``.jsonl`` file (its columns named by ``columns``), a pandas
    dataframe (columns matched as the command line matches a file's: abstracts, areas,
    optional titles), or a list of abstracts with their ``areas`` in a second list. Every
    abstract gets the id it has when read from a file (:func:`tagger.reading.abstract_id`),
    whatever it came in, so labels, cards and output name it alike. Lists: ``order`` the
    areas in the order to keep (else sorted), ``origin`` where they came from, for messages."""
    import os

    from .errors import UsageError
    from .reading import abstract_id, document
    from .reading.records import field_names

    columns = columns or Columns()
    if isinstance(data, (str, os.PathLike)):
        return read_labelled_file(data, columns)
    if hasattr(data, "columns"):
        from .frames import documents

        found = field_names([c for c in data.columns if isinstance(c, str)], columns)
        if areas is not None or "area" not in found:
            raise UsageError(
                f"a dataframe to train on needs a {columns.area!r} column of areas",
                fix="Name the column of areas with label_column=.",
            )
        title = columns.title if columns.title != "title" else None
        docs, present, ids = documents(data, columns.abstract, title)
        if not present.all():
            raise UsageError(f"{(~present).sum()} row(s) have no abstract", fix="Fill them in or drop them.")
        labels = data[found["area"]].tolist()
        rows = [f"dataframe, row {index!r}" for index in data.index]
        return labelled_set(docs, labels, "dataframe", ids=ids, wheres=rows)
    if areas is None or isinstance(data, (str, bytes)):
        raise UsageError(
            "train takes a labelled file, a dataframe, or a list of abstracts with a list of areas",
            fix="For lists: tagger.train(abstracts, areas).",
        )
    texts, areas = list(data), list(areas)
    if not all(isinstance(text, str) for text in texts):
        raise UsageError("the abstracts must be strings", fix="Pass a list of str.")
    return labelled_set(
        [document(text) for text in texts],
        areas,
        origin,
        ids=[abstract_id(text) for text in texts],
        order=order,
    )


def area_names(values: Iterable, wheres: Sequence[str]) -> list[str]:
    """Labels as area names (text, spaces at either end taken off); refused, naming the row
    (``wheres``), a label no one gave (None, NaN, empty) and one holding ``;`` or ``:``, which
    separate areas and their probabilities in the ``tags`` column."""
    names = []
    for value, where in zip(values, wheres):
        missing = (
            value is None or (isinstance(value, float) and value != value) or type(value).__name__ == "NAType"
        )
        name = "" if missing else str(value).strip()
        if not name:
            raise LabelError(
                f"no area ({value!r})", where=where, fix="Give every abstract an area, or leave the row out."
            )
        if ";" in name or ":" in name:
            raise LabelError(
                f"the area {name!r} holds ';' or ':', which separate the areas of the tags column",
                where=where,
                fix="Name the area without them (robotics-manipulation, not robotics:manipulation).",
            )
        names.append(name)
    return names


def labelled_set(  # noqa: PLR0913 (the public keyword options)
    documents: Sequence[str],
    areas: Sequence,
    origin: str,
    *,
    ids: Sequence[str] | None = None,
    order: Sequence[str] | None = None,
    wheres: Sequence[str] | None = None,
    given: Sequence[Given] | None = None,
) -> TrainingSet:
    """A training set of labelled documents (title and abstract) without area descriptions:
    the areas are the distinct labels (sorted, or in ``order``). Refused: areas whose names
    differ only in case or spacing (``Clinical`` and ``clinical``), one text labelled with two
    areas, and a label that is no area name (see :func:`area_names`; ``wheres`` names each row
    in the messages). One label a text, by :func:`settle` (``given``: who gave each label, as
    ``tagger labels`` exports them), as the project's labels are."""
    if len(documents) != len(areas):
        raise LabelError(
            f"{len(documents)} abstracts but {len(areas)} areas", where=origin, fix="Give one area each."
        )
    wheres = wheres or [f"{origin}, row {i + 1}" for i in range(len(documents))]
    areas = area_names(areas, wheres)
    ids = tuple(ids) if ids is not None else tuple(abstract_id(text) for text in documents)
    keep = settle(ids, areas, given or [Given()] * len(ids), wheres)
    documents, areas, ids = ([values[i] for i in keep] for values in (documents, areas, ids))
    _refuse_areas_alike(areas, origin)
    trained = [i for i, area in enumerate(areas) if area != NONE]  # NONE: it fits no area
    no_area = tuple(text for text, area in zip(documents, areas) if area == NONE)
    no_area_ids = tuple(id_ for id_, area in zip(ids, areas) if area == NONE)
    documents, areas, ids = ([values[i] for i in trained] for values in (documents, areas, ids))
    slugs = [slug for slug in order if slug != NONE] if order is not None else sorted(set(areas))
    if len(slugs) < 2:
        raise LabelError(
            f"{len(slugs)} distinct area(s)", where=origin, fix="A classifier needs at least two areas."
        )
    return TrainingSet(
        areas=tuple(Area(slug, slug) for slug in slugs),
        texts=tuple(documents),
        labels=tuple(areas),
        ids=tuple(ids),
        use_descriptions=False,
        origin=origin,
        no_area_texts=no_area,
        no_area_ids=no_area_ids,
    )


def _refuse_areas_alike(areas: Sequence[str], origin: str) -> None:
    counts = Counter(areas)
    by_key: dict[str, list[str]] = {}
    for area in counts:
        by_key.setdefault(" ".join(str(area).split()).casefold(), []).append(area)
    for names in by_key.values():
        if len(names) > 1:
            listed = " and ".join(f"{name!r} ({counts[name]})" for name in names)
            raise LabelError(
                f"areas {listed} differ only in case or spacing",
                where=origin,
                fix="Write each area one way (one area), or give them names that differ (two).",
            )
