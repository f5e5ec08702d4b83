"""The label store: every hand label is read and written here, and nowhere else.

Labels live in one of two places:

- a project's ``labels.csv`` (``abstract_id``, ``area``, ``title`` and any column of your
  own), with the texts it names kept in ``labelled.jsonl`` of the abstracts folder
  (:class:`ProjectLabels`);
- a user's own labelled file, ``.csv``, ``.tsv`` or ``.jsonl``, one abstract and its area a
  record (:class:`LabelledFile`), the file ``tagger train --data`` reads.

What the store promises:

- A label names its abstract by the digest of its text (:func:`tagger.reading.abstract_id`):
  the same text is the same abstract whichever file or id it comes with, and two abstracts
  that share an id in two files are two abstracts.
- A file is read by its header (columns in any order, of any case, unknown ones kept) and in
  its own dialect (a CSV file's delimiter and line ends), by the readers that read abstracts
  (:func:`tagger.reading.table.read_table`): the store parses nothing itself.
- Each answer rewrites the file atomically under a lock on its folder, and every record but
  the one answered keeps its bytes: a record is cut at line ends only (never at U+2028 or
  U+0085), and rewritten only when it is the one answered.
- An answer returns an :class:`Answer`; undoing it puts back exactly what was there before
  (the earlier label, or nothing), unless another session has changed that record since. In
  ``labels.csv`` each answer has an id of its own (``answer_id``): two sessions of one
  annotator giving one abstract the same area a second apart are two answers, and an undo
  takes back its own only.
"""

from __future__ import annotations

import csv
import io
import json
import os
import secrets
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from .atomic import atomic_write
from .errors import ArgumentError, ArgumentTypeError, LabelError, TaggerWarning
from .formats import ANSWERS, list_of, split_name
from .locking import locked
from .prediction import NONE as NONE  # (an answer: kept, exported, counted; learnt from NO_AREA_MIN on)
from .reading import Abstract, Columns, abstract_id, field_names
from .reading.records import Record, named_twice
from .reading.table import read_table

LABELS_FILE = "labels.csv"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # an answer's labelled_at: UTC, to the second, ISO 8601
# who gave each label of labels.csv, when (UTC), and which answer it is (undo takes back its own)
WHO = ("annotator", "labelled_at", "answer_id")
TOPIC = "topic"  # the column of what such an abstract is about, where the annotator said
DATA_TOPIC = "none_topic"  # its column in a labelled file of one's own (whose topic column is the user's)
MAX_TOPIC = 200  # characters of a topic, at most
COMMENT, FLAG = "comment", "flag"  # an annotator's comment on an answer, and "yes" when they flagged it
DATA_COMMENT, DATA_FLAG = "label_comment", "label_flag"  # their columns in a labelled file of one's own
MAX_COMMENT = 500  # characters of a comment, at most
ROLE = "role"  # the column that marks a reviewer's final label (REVIEW); empty for an annotator's
REVIEW = "review"  # a final label, settling what annotators gave: training uses it, agreement does not
LABEL_COLUMNS = ("abstract_id", "area", "title", *WHO, TOPIC, ROLE, COMMENT, FLAG)
# why a column is added to a labels file that lacks it (the first answer that needs it)
_ADDED_FOR = {
    "annotator": "who gave each label",
    "labelled_at": "when",
    "answer_id": "which answer each is (an undo takes back its own alone)",
    TOPIC: "what abstracts that fit no area are about",
    DATA_TOPIC: "what abstracts that fit no area are about",
    ROLE: "which labels a review made final",
    COMMENT: "annotators' comments",
    DATA_COMMENT: "annotators' comments",
    FLAG: "which answers an annotator flagged",
    DATA_FLAG: "which answers an annotator flagged",
}


@dataclass(frozen=True)
class Remark:
    """What an annotator adds to an answer for whoever reads the labels next (a lead, a
    reviewer): a ``comment`` (one line of text, :data:`MAX_COMMENT` characters at most, as
    typed) and a ``flag`` (to look at again: unsure, a guideline question). Kept beside the
    answer (the ``comment`` and ``flag`` columns), listed by ``tagger labels --agreement``,
    exported; training does not read them."""

    comment: str = ""
    flagged: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.flagged, bool):
            raise ArgumentTypeError(
                f"a flag is True or False, not {type(self.flagged).__name__}",
                fix="Give flagged=True or False.",
            )
        object.__setattr__(self, "comment", plain_text(self.comment, "comment", MAX_COMMENT, lower=False))

    def columns(self, data: bool = False) -> dict[str, str]:
        """Its cells (none when it says nothing): ``comment``/``flag`` in labels.csv,
        ``label_comment``/``label_flag`` in a labelled file of one's own (``data``)."""
        comment, flag = (DATA_COMMENT, DATA_FLAG) if data else (COMMENT, FLAG)
        return {
            name: value for name, value in ((comment, self.comment), (flag, "yes" * self.flagged)) if value
        }


SKIPS_FILE = "skipped.csv"  # in labels/: who skipped which abstract, when (a lead's figures count them)
SKIP_COLUMNS = ("abstract_id", "annotator", "skipped_at")
LABELLED_ABSTRACTS_FILE = "labelled.jsonl"
TITLE_WORDS = 12  # of the abstract, in labels.csv's title column: for people reading the file


@dataclass(frozen=True)
class Answer:
    """What one answer changed, so that it can be undone: the abstract (by digest), the area
    given, the earlier area it replaced (None when there was none or it was the same), the
    record written and the records it took the place of."""

    digest: str
    area: str
    earlier: str | None
    written: str
    replaced: tuple[str, ...]
    width: int = 0  # the CSV file's columns when written (columns added since get empty cells)


# The command-line options that name the columns of a labelled file, by role.
OPTIONS = {"abstract": "--column", "area": "--label-column"}


class RecordFile:
    """A CSV, TSV or JSON-lines file as a list of records, read whole and written back with
    every record that was not changed byte for byte as it was."""

    def __init__(
        self,
        path: Path,
        kind: str,
        columns: Columns,
        header: tuple[str, ...] = (),
        optional: Sequence[str] = (),
    ) -> None:
        self.path, self.kind, self.columns, self.optional = path, kind, columns, tuple(optional)
        table = read_table(path, kind, columns, optional)  # the readers' one parse, and their rules
        self.bom, self.head, self.newline = table.bom, table.head, table.newline
        self.header, self.delimiter, self.records = table.header, table.delimiter, table.records
        if kind != "jsonl" and not self.head:  # an empty or new file
            self.header = list(header)
            self.head = _csv_line(self.header, self.delimiter, self.newline)
        self.roles = self._roles()

    def _roles(self) -> dict[str, str]:
        """Role (abstract, title, id, area) -> the name this file gives it (as a header's
        cell or the first record's key), matched without regard to case as the readers do;
        a role the file lacks gets the name ``columns`` gives it."""
        if self.kind == "jsonl":
            first = next((r.fields for r in self.records if r.fields is not None), {})
            names = field_names(list(first), self.columns)
        else:
            names = field_names(self.header, self.columns)
        return {**self.columns.roles(), **names}

    def require(self, *roles: str) -> None:
        """A clear error when the file's header lacks a column a role needs."""
        if self.kind != "jsonl":
            options = [OPTIONS[role] for role in roles if role in OPTIONS]
            self.require_columns([self.roles[role] for role in roles], options)

    def named(self, name: str) -> str:
        """The header's name of the column ``name``, matched without regard to case or spaces
        at either end, as the readers match columns (``Annotator`` is ``annotator``); else
        ``name`` itself."""
        return next((cell for cell in self.header if cell.strip().lower() == name.lower()), name)

    def require_columns(self, names: list[str], options: Sequence[str] = ()) -> None:
        """A clear error when the header lacks one of ``names`` (``options``: those that
        name the columns on the command line)."""
        if twice := named_twice(self.header, [*names, *self.optional]):
            raise LabelError(twice, where=f"{self.path}:1", fix="Keep one: delete or rename the rest.")
        missing = [name for name in names if self.named(name) not in self.header]
        if missing:
            named = f", or name yours with {' and '.join(options)}" if options else ""
            raise LabelError(
                f"missing column(s) {', '.join(missing)} (has: {', '.join(self.header)})",
                where=f"{self.path}:1",
                fix=f"The header row must name {', '.join(names)}{named}.",
            )

    def value(self, record: Record, role: str) -> str:
        """A record's value for a role, as text ('' when it has none)."""
        if record.fields is None:
            return ""
        value = record.fields.get(self.roles[role])
        if value is None:
            return ""
        return value.strip() if isinstance(value, str) else str(value)

    def digest(self, record: Record) -> str | None:
        """The digest of a record's abstract, None when it has none."""
        text = self.value(record, "abstract")
        return abstract_id(text) if text else None

    # -- writing -----------------------------------------------------------------------------

    def field(self, record: Record, name: str) -> str:
        """A record's value of the column ``name``, as text ('' when it has none)."""
        value = (record.fields or {}).get(self.named(name))
        return value.strip() if isinstance(value, str) else ""

    def add_columns(self, names: Sequence[str]) -> list[str]:
        """Add the columns of ``names`` a CSV file's header lacks, at its end, each record
        given an empty cell in each (every record is rewritten); the names added."""
        added = [name for name in names if self.named(name) not in self.header]
        if self.kind == "jsonl" or not added:
            return []
        self.header = [*self.header, *added]
        self.head = _csv_line(self.header, self.delimiter, self.newline)
        self.records = [
            record
            if record.fields is None
            else record._replace(
                raw=_csv_line(
                    [record.fields.get(name) or "" for name in self.header], self.delimiter, self.newline
                )
            )
            for record in self.records
        ]
        return added

    def render(
        self, values: dict[str, str], like: Record | None = None, columns: dict[str, str] | None = None
    ) -> str:
        """A record of ``values`` (role -> value; ``columns``: column -> value) in this file's
        dialect: ``like``'s fields with those values changed, or a new record of them."""
        named = {self.roles[role]: value for role, value in values.items()}
        named |= {self.named(name): value for name, value in (columns or {}).items()}
        if self.kind == "jsonl":
            fields = dict(like.fields) if like is not None and like.fields is not None else {}
            fields.update(named)
            return json.dumps(fields, ensure_ascii=False) + self.newline
        old = like.fields if like is not None and like.fields is not None else {}
        cells = [named.get(name, old.get(name, "")) for name in self.header]
        return _csv_line(cells, self.delimiter, self.newline)

    def text(self) -> str:
        parts = [self.bom, self.head]
        for k, record in enumerate(self.records):
            raw = record.raw
            if k < len(self.records) - 1 and not raw.endswith(("\n", "\r")):
                raw += self.newline  # a last line without its end, now followed by another
            parts.append(raw)
        if parts[1] and not parts[1].endswith(("\n", "\r")) and self.records:
            parts[1] += self.newline
        return "".join(parts)

    def save(self) -> None:
        with atomic_write(self.path) as stream:
            stream.write(self.text())

    def answer(self, matches: list[int], written: str, digest: str, area: str, earlier: str | None) -> Answer:
        """Put ``written`` in the place of the records at ``matches`` (at the first of them),
        or at the end when there are none; the :class:`Answer` that undoes it."""
        replaced = tuple(self.records[i].raw for i in matches)
        record = Record(None, 0, raw=written)
        if matches:
            self.records[matches[0]] = record
            for i in sorted(matches[1:], reverse=True):
                del self.records[i]
        else:
            self.records.append(record)
        width = len(self.header) if self.kind != "jsonl" else 0
        return Answer(digest, area, earlier if earlier != area else None, written, replaced, width)

    def undo(self, answer: Answer) -> bool:
        """Put back what ``answer`` replaced; False when its record is no longer there (another
        session changed it since), and nothing is changed. Columns added to the file since (a
        later answer's topic) are cells of their own in those records, empty."""
        grown = len(self.header) - answer.width if answer.width else 0
        written = _widened(answer.written, grown, self.delimiter)
        at = next((i for i, record in enumerate(self.records) if record.raw == written), None)
        if at is None:
            return False
        self.records[at : at + 1] = [
            Record(None, 0, raw=_widened(raw, grown, self.delimiter)) for raw in answer.replaced
        ]
        return True


def _widened(raw: str, cells: int, delimiter: str) -> str:
    """A CSV record with ``cells`` empty cells more at its end, as adding columns makes it."""
    if cells <= 0:
        return raw
    body = raw.rstrip("\r\n")
    return body + delimiter * cells + raw[len(body) :]


def _csv_line(cells: list[str], delimiter: str, newline: str) -> str:
    stream = io.StringIO()
    csv.writer(stream, delimiter=delimiter, lineterminator=newline).writerow(cells)
    return stream.getvalue()


# -- a project's labels.csv ------------------------------------------------------------------

LABELS_CSV = Columns(abstract="abstract_id", area="area", title="title", id="abstract_id")


def read_labels_file(path: str | os.PathLike) -> RecordFile:
    """``labels.csv`` as records (a missing file: no records, the usual header)."""
    return RecordFile(Path(path), "csv", LABELS_CSV, header=LABEL_COLUMNS, optional=LABEL_COLUMNS[3:])


def digests_of_ids(abstracts: list[Abstract]) -> dict[str, set[str]]:
    """Id -> the digests of the texts it names in ``abstracts``: a digest names its own
    text; a file's id (in labels written before labels named texts by digest) names the
    texts that came with it, one unless two files share it."""
    names: dict[str, set[str]] = {}
    for abstract in abstracts:
        digest = abstract.digest
        names.setdefault(digest, set()).add(digest)
        if abstract.id != digest:
            names.setdefault(abstract.id, set()).add(digest)
    return names


class ProjectLabels:
    """``labels.csv`` in ``labels_dir``, with the texts in ``abstracts_dir`` (see the module's
    promises). The text of an answer goes to ``abstracts_dir/labelled.jsonl`` first (unless a
    file there holds it already), then the label: an interruption never leaves a label
    without its text. Both folders are locked meanwhile."""

    def __init__(
        self,
        labels_dir: str | os.PathLike,
        abstracts_dir: str | os.PathLike,
        annotator: str | None = None,
        reviewing: bool = False,
    ) -> None:
        self.labels_dir, self.abstracts_dir = Path(labels_dir), Path(abstracts_dir)
        self.annotator = default_annotator() if annotator is None else annotator_name(annotator)
        self.reviewing = reviewing  # its answers are final labels (REVIEW), one an abstract
        self.where = self.labels_dir / LABELS_FILE
        self._names: dict[str, set[str]] | None = None  # of the texts in abstracts_dir, read once

    def _texts(self) -> dict[str, set[str]]:
        if self._names is None:
            from .reading import read_abstracts

            folder = self.abstracts_dir
            stored = list(read_abstracts([folder], skip_bad=True)) if folder.is_dir() else []
            self._names = digests_of_ids(stored)
            kept = (
                RecordFile(folder / LABELLED_ABSTRACTS_FILE, "jsonl", Columns()) if folder.is_dir() else None
            )
            for record in kept.records if kept is not None else ():
                assert kept is not None
                digest, own = kept.digest(record), (record.fields or {}).get("source_id")
                if digest and isinstance(own, str) and own:  # the id its pile gave it
                    self._names.setdefault(own, set()).add(digest)
        return self._names

    def names(self) -> dict[str, set[str]]:
        """Every name of a text among the abstracts (its digest, the ids files give it) ->
        the digests of the texts it names."""
        return {name: set(digests) for name, digests in self._texts().items()}

    def _digests(self, identifier: str) -> set[str]:
        return self._texts().get(identifier) or {identifier}

    def current(self) -> dict[str, str]:
        """Digest -> area of every abstract whose label counts (:func:`settle`: a review's
        that stands, or the annotators' when they agree): what training learns, the queue
        and the report judge by. An abstract annotators disagree on is not among them."""
        rows = self.rows()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TaggerWarning)  # (the disagreements: training says so)
            kept = settled(rows, [str(self.where)] * len(rows))
        return {rows[i]["abstract_id"]: rows[i]["area"] for i in kept}

    def labelled(self) -> set[str]:
        """The digests of every abstract that has a label, whoever gave it (one annotators
        disagree on too): what a first pass does not show again."""
        return {row["abstract_id"] for row in self.rows()}

    def source_ids(self) -> dict[str, str]:
        """Digest -> the id the abstract's own file gave it (``2505.03584``), where that id names
        it alone: how an abstract is named to people (``--agreement``, ``--review``, the export)."""
        found: dict[str, str] = {}
        for name, digests in self._texts().items():
            if len(digests) == 1 and (digest := next(iter(digests))) != name:
                found.setdefault(digest, name)
        return found

    def own(self) -> dict[str, str]:
        """Digest -> area of this store's annotator's own answers (a reviewer: every label that
        counts): what a page shows them of the labels, blind to the others' answers."""
        if self.reviewing:
            return self.current()
        return {
            row["abstract_id"]: row["area"]
            for row in self.rows()
            if row[ROLE] != REVIEW and row["annotator"] == self.annotator
        }

    def mine(self) -> set[str]:
        """The digests of the abstracts this store's annotator has labelled (as annotator,
        or as reviewer when reviewing)."""
        role = REVIEW if self.reviewing else ""
        return {
            row["abstract_id"]
            for row in self.rows()
            if row[ROLE] == role and (self.reviewing or row["annotator"] == self.annotator)
        }

    def by_name(self) -> dict[str, str]:
        """Every name of a labelled abstract -> its area: the digest of its text, and each id
        a file gave it (the ``id`` column of ``tagger predict``'s output for a pile with ids),
        where that id names one text only."""
        current = self.current()
        named = dict(current)
        for name, digests in self._texts().items():
            areas = {current[digest] for digest in digests if digest in current}
            if len(digests) == 1 and len(areas) == 1:
                named.setdefault(name, areas.pop())
        return named

    def add(self, abstract: Abstract, area: str, topic: str = "", remark: Remark | None = None) -> Answer:
        """Label ``abstract`` ``area`` (:data:`NONE` with a ``topic``, if any: it fits no area),
        with the annotator's ``remark`` if any."""
        topic = topic_of(topic)
        remarked = (remark or Remark()).columns()
        digest = abstract.digest
        self.abstracts_dir.mkdir(parents=True, exist_ok=True)
        with locked(self.labels_dir, self.abstracts_dir):
            if digest not in self._texts():
                self._store_text(abstract, digest)
            labels = read_labels_file(self.where)
            labels.require("abstract", "area")
            _add_columns(
                labels, (*WHO, *((TOPIC,) if topic else ()), *((ROLE,) if self.reviewing else ()), *remarked)
            )
            matches = [  # this abstract's label by this annotator (or nobody named), or its final one
                i
                for i, record in enumerate(labels.records)
                if record.fields is not None
                and digest in self._digests(labels.value(record, "abstract"))
                and self._replaces(record, labels)
            ]
            earlier = labels.value(labels.records[matches[-1]], "area") if matches else None
            title = " ".join(abstract.text.split()[:TITLE_WORDS])
            who = {
                "annotator": self.annotator,
                "labelled_at": _now(),
                "answer_id": secrets.token_hex(6),
                **({TOPIC: topic} if topic else {}),
                **remarked,
            }
            if self.reviewing:
                who[ROLE] = REVIEW
            written = labels.render({"abstract": digest, "area": area, "title": title}, columns=who)
            result = labels.answer(matches, written, digest, area, earlier)
            labels.save()
        return result

    def skip(self, abstract: Abstract) -> None:
        """Note that this store's annotator skipped ``abstract`` (``labels/skipped.csv``,
        beside the labels: a skip labels nothing, but a lead counts them); a reviewer's skip
        leaves a disagreement to review and is no annotator's."""
        if self.reviewing:
            return
        with locked(self.labels_dir):
            skips = RecordFile(self.labels_dir / SKIPS_FILE, "csv", LABELS_CSV, header=SKIP_COLUMNS)
            said = {"annotator": self.annotator, "skipped_at": _now()}
            skips.records.append(
                Record(None, 0, raw=skips.render({"abstract": abstract.digest}, columns=said))
            )
            skips.save()

    def skips(self) -> dict[str, set[str]]:
        """Annotator -> the abstracts (digests) they skipped, of ``labels/skipped.csv``."""
        path = self.labels_dir / SKIPS_FILE
        if not path.is_file():
            return {}
        skips = RecordFile(path, "csv", LABELS_CSV, header=SKIP_COLUMNS)
        found: dict[str, set[str]] = {}
        for record in skips.records:
            if record.fields is not None:
                found.setdefault(skips.field(record, "annotator"), set()).add(skips.value(record, "abstract"))
        return found

    def others_only(self) -> dict[str, str]:
        """Digest -> who labelled it (names joined by ", "), for each abstract labelled only
        by annotators other than this store's (and none by nobody named): an answer to it goes
        beside theirs (see :meth:`add`), where an answer to any other replaces a label."""
        names: dict[str, set[str]] = {}
        for row in self.rows():
            if row[ROLE] == REVIEW:
                continue
            names.setdefault(row["abstract_id"], set()).add(row.get("annotator") or "")
        return {
            digest: ", ".join(sorted(who))
            for digest, who in names.items()
            if not any(self._replaced_by_mine(name) for name in who)
        }

    def _replaces(self, record: Record, labels: RecordFile) -> bool:
        """Whether this store's answer replaces ``record`` (of the same abstract): a final
        label replaces the final one, an annotator's answer their own (see
        :meth:`_replaced_by_mine`), never a final one."""
        if (labels.field(record, ROLE) == REVIEW) != self.reviewing:
            return False
        return self.reviewing or self._replaced_by_mine(labels.field(record, "annotator"))

    def _replaced_by_mine(self, annotator: str) -> bool:
        """Whether this store's answer replaces a label by ``annotator`` (its own, or one by
        nobody named), rather than going beside it."""
        return annotator in ("", self.annotator)

    def rows(self) -> list[dict[str, str]]:
        """Every label of labels.csv in order: the digest of its text (each, for an id naming
        several), its area, title, annotator and time."""
        labels = read_labels_file(self.where)
        labels.require("abstract", "area")
        return [
            {
                "abstract_id": digest,
                "area": labels.value(record, "area"),
                "title": labels.value(record, "title"),
                **{name: labels.field(record, name) for name in (*WHO, TOPIC, ROLE, COMMENT, FLAG)},
            }
            for record in labels.records
            if record.fields is not None
            for digest in sorted(self._digests(labels.value(record, "abstract")))
        ]

    def _store_text(self, abstract: Abstract, digest: str) -> None:
        texts = RecordFile(self.abstracts_dir / LABELLED_ABSTRACTS_FILE, "jsonl", Columns())
        if not any(texts.digest(record) == digest for record in texts.records):
            record = {
                "id": digest,
                "title": abstract.title,
                "abstract": abstract.text,
                "source": abstract.source,
            }
            if abstract.id != digest:
                record["source_id"] = abstract.id
            texts.records.append(Record(None, 0, raw=json.dumps(record, ensure_ascii=False) + texts.newline))
            texts.save()
        self._texts().setdefault(digest, set()).add(digest)

    def undo(self, answer: Answer) -> bool:
        """Undo an answer: the earlier label is back, or none (the text stays: a text without
        a label is not trained on)."""
        with locked(self.labels_dir):
            labels = read_labels_file(self.where)
            if not labels.undo(answer):
                return False
            labels.save()
        return True


def _add_columns(labels: RecordFile, names: Sequence[str]) -> None:
    """Add the columns of ``names`` a labels file lacks, saying so (and why)."""
    before = sum(record.fields is not None for record in labels.records)
    if (added := labels.add_columns(names)) and before:  # (to a file without labels: nothing to say)
        warnings.warn(
            f"{labels.path}: added the columns {', '.join(added)} (empty for the {before:,} labels before), "
            f"to keep {' and '.join(_ADDED_FOR[name] for name in added)} from now on",
            TaggerWarning,
            stacklevel=3,
        )


class Given(NamedTuple):
    """Who gave a label, as a labels file says: its annotator (empty: nobody named), its role
    (:data:`~tagger.labelstore.REVIEW`: a review's final label) and its time (``labelled_at``,
    ISO 8601 in UTC; empty: not said)."""

    annotator: str = ""
    role: str = ""
    at: str = ""

    @classmethod
    def of(cls, fields: Mapping) -> Given:
        """The annotator, role and time of a row (a labels file's, or its export's)."""
        return cls(*(str(fields.get(name) or "").strip() for name in ("annotator", ROLE, "labelled_at")))


def settle(
    keys: Sequence[str], areas: Sequence[str], given: Sequence[Given], wheres: Sequence[str]
) -> list[int]:
    """The one rule of which label of an abstract counts (training from a project or from a
    labelled file, the export's final column, the queue and the report): of the rows of each
    abstract (``keys``), a review's final label while it stands (:func:`_review_of`); else
    each annotator's latest answer, the rows naming no annotator counting as one answer (two
    areas among them are refused: nobody can tell which is meant); if those answers agree, one
    label, else none (two annotators disagree: counted in a warning until a review settles
    it). Returns the indices of the rows kept, one an abstract, in order."""
    keep, disputed = [], 0
    for indices in _by_key(keys).values():
        if (review := _review_of(indices, given)) is not None:
            keep.append(review)
            continue
        answers: dict[str, int] = {}  # annotator -> their latest row ("": the first of nobody's)
        for i in (i for i in indices if given[i].role != REVIEW):
            annotator = given[i].annotator
            j = answers.setdefault(annotator, i)
            if annotator:
                answers[annotator] = i
            elif areas[j] != areas[i]:
                raise LabelError(
                    f"this abstract is labelled {areas[j]!r} at {wheres[j]} and {areas[i]!r} here",
                    where=wheres[i],
                    fix="Keep the one row you mean.",
                )
        if len({areas[i] for i in answers.values()}) == 1:
            keep.append(min(answers.values()))
        elif answers:
            disputed += 1
    _warn_unsettled(disputed)
    return sorted(keep)


def settled(rows: Sequence[Mapping[str, str]], wheres: Sequence[str]) -> list[int]:
    """:func:`settle` of label rows as :meth:`ProjectLabels.rows` gives them."""
    keys, areas = [row["abstract_id"] for row in rows], [row["area"] for row in rows]
    return settle(keys, areas, [Given.of(row) for row in rows], wheres)


def _by_key(keys: Sequence[str]) -> dict[str, list[int]]:
    rows: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        rows.setdefault(key, []).append(i)
    return rows


def _review_of(indices: list[int], given: Sequence[Given]) -> int | None:
    """Of one abstract's rows (``indices``), the row of its review's final label (the latest
    review) while it stands: a review settles the answers it saw, and an annotator's answer
    given after it (a later ``labelled_at``) sends the abstract back to the annotators' rule
    (their agreement, or a review again)."""
    reviews = [i for i in indices if given[i].role == REVIEW]
    if not reviews:
        return None
    at = given[reviews[-1]].at
    if at and any(given[i].role != REVIEW and given[i].at > at for i in indices):
        return None
    return reviews[-1]


def final_labels(rows: Sequence[Mapping[str, str]]) -> dict[str, tuple[str, str]]:
    """Abstract id -> (area, reviewer) of each abstract's review that stands (see
    :func:`_review_of`), of label rows as :meth:`~tagger.labelstore.ProjectLabels.rows`
    gives them."""
    given = [Given.of(row) for row in rows]
    by_abstract = _by_key([row["abstract_id"] for row in rows]).values()
    reviewed = [i for indices in by_abstract if (i := _review_of(indices, given)) is not None]
    return {rows[i]["abstract_id"]: (rows[i]["area"], rows[i]["annotator"]) for i in reviewed}


def _warn_unsettled(disagreed: int) -> None:
    if disagreed:
        warnings.warn(
            f"{disagreed} abstract(s) labelled differently by two annotators: left out of training "
            "until a review settles them ('tagger label --review'; 'tagger labels --agreement' lists them)",
            TaggerWarning,
            stacklevel=3,
        )


def topic_of(text: str) -> str:
    """A topic as it is kept (every door: the terminal, the page, the Python API): lower case,
    one line, one space between words; refused (an :class:`~tagger.errors.ArgumentError`)
    when longer than :data:`MAX_TOPIC` characters or holding a character no file can hold (a
    lone surrogate) or a control character: nothing is kept that the labels cannot read back."""
    return plain_text(text, "topic", MAX_TOPIC)


def plain_text(text: str, what: str, limit: int, lower: bool = True) -> str:
    """One line of an annotator's text as labels keep it (a topic, a comment): one space
    between words (lower case with ``lower``); refused when over ``limit`` characters or
    holding a lone surrogate or a control character."""
    if not isinstance(text, str):
        raise ArgumentError(f"the {what} is {type(text).__name__}, not text", fix=f"Give the {what} as text.")
    kept = " ".join((text.lower() if lower else text).split())
    bad = next((c for c in kept if "\ud800" <= c <= "\udfff" or (c < " " or "\x7f" <= c < "\xa0")), None)
    if len(kept) > limit or bad is not None:
        said = f"is {len(kept):,} characters" if bad is None else f"holds {bad!r}"
        raise ArgumentError(
            f"the {what} {kept[:40]!r}{'...' if len(kept) > 40 else ''} {said}",
            fix=f"Give a {what} of {limit} characters at most, of plain text (or none).",
        )
    return kept


NAME_CHARS = 64  # an annotator's name, at most


def annotator_name(text: str) -> str:
    """An annotator's name as labels keep it (every door: --annotator, --annotators, the
    Python API, the login name): spaces around it trimmed; refused (an
    :class:`~tagger.errors.ArgumentError`) when empty, longer than :data:`NAME_CHARS`, or
    holding a comma (which separates --annotators' names) or a character that is not printed
    (a line end would break the page's links and the terminal's lines)."""
    import unicodedata

    name = text.strip()
    bad = next((c for c in name if c == "," or (unicodedata.category(c)[0] in "CZ" and c != " ")), None)
    if not name:
        what = "is empty"
    elif len(name) > NAME_CHARS:
        what = f"is over {NAME_CHARS} characters"
    elif bad is not None:
        what = f"holds {bad!r}"
    else:
        return name
    raise ArgumentError(
        f"the annotator's name {text[:NAME_CHARS]!r} {what}",
        fix=f"Give a name of {NAME_CHARS} characters at most, on one line, without a comma.",
    )


def default_annotator() -> str:
    """Whose answers these are when nobody says: the user's login name ('' where none is
    known, or where it is no name :func:`annotator_name` accepts)."""
    import getpass

    try:
        return annotator_name(getpass.getuser())
    except Exception:  # (no name in the environment or the user database, or an odd one)
        return ""


def _now() -> str:
    """The time of an answer: UTC, to the second, ISO 8601."""
    import datetime

    return datetime.datetime.now(datetime.timezone.utc).strftime(TIME_FORMAT)


def seconds_of(labelled_at: str) -> int | None:
    """An answer's time (``labelled_at``, :data:`TIME_FORMAT`) in seconds since the epoch,
    None when it says no time (empty, or written otherwise)."""
    import calendar
    import time

    try:
        return calendar.timegm(time.strptime(labelled_at, TIME_FORMAT))
    except ValueError:
        return None


# -- a user's own labelled file (train --data) -----------------------------------------------


class LabelledFile:
    """A user's own labelled ``.csv``, ``.tsv`` or ``.jsonl`` file (made if missing): an
    answer replaces the record of the same text in place, or is added at the end."""

    def __init__(self, path: str | os.PathLike, columns: Columns | None = None) -> None:
        self.where = Path(path)
        self.columns = columns or Columns()
        form, compression = split_name(self.where)
        if form is None or not form.answers or compression:
            raise LabelError(
                f"answers can go to a {list_of(ANSWERS)} file only",
                where=str(self.where),
                fix="Convert it to one of those (uncompressed), or give another file with --data.",
            )
        self.kind: str = form.name

    def _read(self) -> RecordFile:
        header = (self.columns.abstract, self.columns.area, self.columns.title, self.columns.id)
        records = RecordFile(self.where, self.kind, self.columns, header=header)
        records.require("abstract", "area")
        return records

    reviewing = False  # (a review settles a project's annotators: a labelled file names none)

    def others_only(self) -> dict[str, str]:
        """None: a labelled file names no annotators (every answer replaces a label)."""
        return {}

    def mine(self) -> set[str]:
        """The digests of its labelled abstracts: every answer replaces a label (one annotator)."""
        return set(self.current())

    def own(self) -> dict[str, str]:
        """Its labels (one annotator: the file's)."""
        return self.current()

    labelled = mine  # (one annotator: what it labelled is every labelled abstract)

    def source_ids(self) -> dict[str, str]:
        """None known: a labelled file's records are named by their own id already."""
        return {}

    def skip(self, abstract: Abstract) -> None:
        """Nothing kept: a labelled file names no annotator whose skips a lead would count."""

    def skips(self) -> dict[str, set[str]]:
        """None kept (see :meth:`skip`)."""
        return {}

    def current(self) -> dict[str, str]:
        """Digest -> area of every record that has both."""
        if not self.where.exists():
            return {}
        records = self._read()
        return {
            digest: records.value(record, "area")
            for record in records.records
            if (digest := records.digest(record)) and records.value(record, "area")
        }

    def add(self, abstract: Abstract, area: str, topic: str = "", remark: Remark | None = None) -> Answer:
        digest = abstract.digest
        with locked(self.where.parent):
            records = self._read()
            topic = topic_of(topic)
            named = {**({DATA_TOPIC: topic} if topic else {}), **(remark or Remark()).columns(data=True)}
            _add_columns(records, tuple(named))
            matches = [i for i, record in enumerate(records.records) if records.digest(record) == digest]
            if matches:
                like = records.records[matches[0]]
                earlier = records.value(records.records[matches[-1]], "area") or None
                # (the earlier answer's comment and flag were about it: not this one's)
                cleared = {name: "" for name in (DATA_COMMENT, DATA_FLAG) if records.field(like, name)}
                written = records.render({"area": area}, like=like, columns={**cleared, **named} or None)
            else:
                earlier = None
                values = {"id": digest, "title": abstract.title, "abstract": abstract.text, "area": area}
                if not abstract.title:
                    del values["title"]
                written = records.render(values, columns=named or None)
            result = records.answer(matches, written, digest, area, earlier)
            records.save()
        return result

    def undo(self, answer: Answer) -> bool:
        with locked(self.where.parent):
            records = self._read()
            if not records.undo(answer):
                return False
            records.save()
        return True
