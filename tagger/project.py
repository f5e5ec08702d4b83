"""A project folder of your own (``tagger init``): the taxonomy and hand labels in ``labels/``,
the texts of labelled abstracts in ``seeds/``, models in ``models/``: the folders the commands
read and write by default, so that ``label``, ``train``, ``suggest`` and ``evaluate`` work in
any folder that has them, as in this repository. :class:`Project` holds where a command's
labels, texts and model are, and the decisions that follow from them (which model, which
store, which training set, which areas).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from .atomic import inside
from .errors import LabelError, UsageError
from .labels import AREAS_FILE
from .labelstore import LABEL_COLUMNS, LABELS_FILE, NONE
from .reading import Columns
from .shipped import CARD_FILE, DEFAULT_MODEL_DIR, default_model_folder, shipped_path

NOTE_FILE = "TAGGER.txt"
NOTE = """\
A tagger project (made by 'tagger init'). The commands read and write these by default:

labels/areas.csv   the taxonomy: one row per area (slug, name, description, keywords).
                   Edit it for your own areas; every area needs a name and a description.
labels/labels.csv  the hand labels (abstract_id, area, title, annotator, labelled_at, ...):
                   'tagger label' adds to it; 'tagger labels' lists them with their texts.
labels/skipped.csv the abstracts each annotator skipped ('tagger labels --agreement' counts them).
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


def init(folder: str | os.PathLike = ".", empty: bool = False) -> list[Path]:
    """Make a project in ``folder`` (created if missing): the default taxonomy, the labels the
    shipped model learnt from with their texts in ``seeds/`` (none with ``empty``), and a
    note of what goes where. Refused where a project's taxonomy or labels are already, or a
    name it would write is taken (by a file, a folder or a symlink, dangling or not: nothing
    is overwritten or written through). All or nothing: everything is made in a hidden
    folder first and moved into place by renames, so that a full disk or an interruption
    leaves no half project. Returns what it made."""
    folder = Path(folder)
    if found := inside(folder, Project().own_folders()):  # (the project of the folder run in)
        raise UsageError(
            f"{folder} is inside this project's {found[0].name}/ ({found[1]}): a project made there "
            "would be read with them",
            fix=f"Run 'tagger init' in a folder outside {found[0].name}/.",
        )
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
    planned: dict[Path, str | Path | None] = {
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


@dataclass(frozen=True)
class Project:
    """Where a command's taxonomy, labels, texts and model are, and the decisions that follow:
    which model tags (the one given, else ``./models`` when it holds one, else the shipped
    one), where answers are saved, what is trained on, which areas a labeller answers with.
    Either a project folder (``labels``: the taxonomy and hand labels, ``abstracts``: the
    files their texts are in) or a user's own labelled file (``data``, its columns named by
    ``columns``), which then is the labels."""

    labels: str = "labels"
    abstracts: tuple[str, ...] = ("seeds",)
    model_dir: str | None = None  # given (--model)
    data: str | None = None  # a labelled file of one's own (--data)
    columns: Columns = field(default_factory=Columns)

    # -- its files ---------------------------------------------------------------------------

    @property
    def taxonomy(self) -> Path:
        """The taxonomy's file (``labels/areas.csv``)."""
        return Path(self.labels) / AREAS_FILE

    @property
    def labels_file(self) -> Path:
        """The hand labels' file (``labels/labels.csv``)."""
        return Path(self.labels) / LABELS_FILE

    def areas(self) -> tuple:
        """The taxonomy's areas, checked; none where this folder has no taxonomy."""
        from .labels import load_areas

        return load_areas(self.taxonomy) if self.taxonomy.is_file() else ()

    # -- the model ---------------------------------------------------------------------------

    @property
    def model_folder(self) -> str | None:
        """The folder of the model that tags: the one given, else ``./models`` when it holds
        a model, else None (the shipped model)."""
        return self.model_dir if self.model_dir is not None else default_model_folder()

    @property
    def save_to(self) -> str:
        """Where a retrain saves its model."""
        return self.model_dir or DEFAULT_MODEL_DIR

    def model(self):
        """The model every verb uses here (predict, explain, report, suggest, label): the one
        given or in ``./models``; else the shipped one, where this folder has no taxonomy or
        its taxonomy is the shipped model's; else, in a project of its own areas that has not
        trained a model yet, a first model learnt from the areas' descriptions (not saved:
        its hand labels are learnt by 'tagger train')."""
        from .model import load_model

        model = load_model(self.model_folder)
        if self.model_dir is not None or self.data or not (areas := self.areas()):
            return model
        if (
            set(model.taxonomy) == {area.slug for area in areas}
            or not model.card.training_data.uses_area_descriptions
        ):
            return model  # (a model of a labelled file of one's own answers that file's areas)
        if self.model_folder is not None:
            raise UsageError(
                f"the model in {self.model_folder}/ answers other areas than {self.taxonomy} "
                "(changed since it was trained)",
                fix="Retrain it from the labels: tagger train.",
            )
        from .training import descriptions_model

        return descriptions_model(areas)

    def which_model(self, model) -> str:
        """One line saying which model made an output: where it was found and what it learnt."""
        if model.card.training_data.labelled_abstracts == 0:
            from .labelstore import read_labels_file

            labelled = len(read_labels_file(self.labels_file).records)
            waiting = f"{labelled} hand label(s) not learnt yet" if labelled else "no hand labels yet"
            return (
                f"model: a first one, learnt from the areas' descriptions alone ({waiting}: "
                "label some, then 'tagger train'); not saved"
            )
        if self.model_dir is not None:
            where = self.model_dir
        elif self.model_folder is not None:
            where = f"{DEFAULT_MODEL_DIR}/ of this folder (--model names another)"
        else:
            where = "the shipped model"
        data = model.card.training_data
        trained = f"trained {model.card.created[:10]} on {data.labelled_abstracts} labelled abstracts"
        return f"model: {where}, {trained} of {data.origin}"

    def own_folders(self) -> tuple[tuple[Path, str], ...]:
        """The folders of this project that no output may go into, each with what it holds:
        the taxonomy and hand labels, the labelled abstracts' texts (where a taxonomy or
        labels are), and a folder that holds a model (the one saved to, the one tagging)."""
        models = {self.save_to, self.model_folder or self.save_to}
        held = [(Path(m), "a model") for m in sorted(models) if (Path(m) / CARD_FILE).is_file()]
        return self._label_folders() + tuple(held)

    def _label_folders(self) -> tuple[tuple[Path, str], ...]:
        """The folders of this project's taxonomy and hand labels and of their texts (where a
        taxonomy or labels are), each with what it holds."""
        if not (self.taxonomy.is_file() or self.labels_file.is_file()):
            return ()
        texts = [(Path(a), "the labelled abstracts' texts") for a in self.abstracts if Path(a).is_dir()]
        return ((Path(self.labels), "the taxonomy and hand labels"), *texts)

    def check_writable(self) -> None:
        """Refuse a model folder that cannot be written, or that is (or is inside) the folder
        of the labels or of their texts, before the work of training."""
        from .errors import OutputError

        path = Path(self.save_to)
        if found := inside(path, self._label_folders()):
            folder, holds = found
            raise OutputError(
                f"is inside this project's {folder.name}/ ({holds}): a model there would be read "
                "with them next time",
                where=self.save_to,
                fix=f"Choose another --model, outside {folder.name}/ (models/ by default).",
            )
        existing = path if path.exists() else next((p for p in path.parents if p.exists()), Path("."))
        if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
            place = "there" if existing == path else f"in {existing}"
            raise OutputError(
                f"cannot write {place} (no permission, or read-only)",
                where=self.save_to,
                fix="Choose another --model, or check the folder's permissions.",
            )

    # -- the labels --------------------------------------------------------------------------

    def store(self, annotator: str | None = None, reviewing: bool = False):
        """Where answers are saved (see :mod:`tagger.labelstore`): the labelled file, or
        ``labels/`` with the texts in the first abstracts folder, each answer kept with its
        ``annotator`` (default: the user's login name) and time; ``reviewing``: each answer
        is a review's final label (a project's labels only)."""
        from .labelstore import LabelledFile, ProjectLabels

        if self.data:
            if reviewing:
                raise UsageError(
                    "--review settles the disagreements of a project's annotators, not a labelled file's",
                    fix="Leave --data out, or label the file's abstracts without --review.",
                )
            return LabelledFile(self.data, self.columns)
        return ProjectLabels(self.labels, self.abstracts[0], annotator, reviewing)

    def label_rows(self) -> list[dict]:
        """Every hand label of the project with its text (``tagger labels``): abstract_id,
        area, annotator, labelled_at, answer_id, topic, role, whether it is the abstract's ``final``
        label (the one training uses), and the abstract's title, text and file (empty where
        the text is not among the abstracts)."""
        from .labelstore import ProjectLabels, settled
        from .reading import Abstract, read_abstracts

        if not self.labels_file.is_file():
            raise LabelError(
                "file not found",
                where=str(self.labels_file),
                fix="Run 'tagger init' to make a project here, or point --labels at labels.csv's folder.",
            )
        texts: dict[str, Abstract] = {}
        for abstract in read_abstracts([a for a in self.abstracts if Path(a).exists()], skip_bad=True):
            texts.setdefault(abstract.digest, abstract)
        rows = []
        store = ProjectLabels(self.labels, self.abstracts[0])
        labels, sources = store.rows(), store.source_ids()
        wheres = [f"{self.labels_file}, label {k + 1}" for k in range(len(labels))]
        final = set(settled(labels, wheres))
        for k, row in enumerate(labels):
            found = texts.get(row["abstract_id"])
            rows.append(
                {
                    **row,
                    "source_id": sources.get(row["abstract_id"], ""),
                    "final": "yes" if k in final else "no",  # (every column of the export is text)
                    "title": found.title if found else "",
                    "abstract": found.text if found else "",
                    "source": found.source if found else "",
                }
            )
        return rows

    def training_set(self):
        """The labels as a training set: the labelled file, or the taxonomy and hand labels
        joined with their texts. A labelled file whose areas are this folder's taxonomy's (the
        project's own export, ``tagger labels -o``) learns from the areas' descriptions too, as
        the project's labels do (without them it made a worse model and did not say why)."""
        from dataclasses import replace

        from .labels import labelled, load_training_set

        if not self.data:
            return load_training_set(self.labels, self.abstracts)
        training_set = labelled(self.data, columns=self.columns)
        areas = self.areas()
        if areas and set(training_set.slugs) == {area.slug for area in areas}:
            return replace(training_set, areas=areas, use_descriptions=True)
        return training_set

    def labels_by_name(self) -> dict[str, str]:
        """The project's hand labels by every name an abstract has (its id, its file's id),
        for a report of tags; none outside a project."""
        from .labelstore import ProjectLabels

        if not self.labels_file.is_file():
            return {}
        return ProjectLabels(self.labels, self.abstracts[0]).by_name()

    def trained_names(self, model) -> set[str]:
        """The names by which a tags file can give the abstracts ``model`` was trained on:
        the digests of their texts, and the ids the project's files give those texts (an id
        naming texts that were all trained on)."""
        from .labelstore import ProjectLabels

        digests = set(model.card.training_data.labels)
        names = set(digests)
        if not self.data and self.labels_file.is_file():
            store = ProjectLabels(self.labels, self.abstracts[0])
            names |= {name for name, texts in store.names().items() if texts <= digests}
        return names

    def labelling_model(self, store, outside_a_project: bool = False):
        """The model that orders a labelling queue and guesses, and the areas to answer with:
        for a labelled file, the model's areas, which must be the file's; for a project, its
        taxonomy's areas, which must be the model's (:meth:`model`: a first model of the
        areas' descriptions until one is trained).
        ``outside_a_project``: with no taxonomy here, the model's own areas (for suggest)."""
        from .labels import Area, load_areas

        model = self.model()
        if self.data:  # the user's own areas and labelled file
            _refuse_other_areas(model, store.current(), self.data)
            return model, tuple(Area(slug, slug) for slug in model.taxonomy)
        if not model.card.training_data.uses_area_descriptions:
            raise UsageError(
                f"the model was trained on your own labelled file ({model.card.training_data.origin})",
                fix="Give that file with --data: answers are added to it.",
            )
        if outside_a_project and not self.taxonomy.exists():
            return model, tuple(Area(area.slug, area.name) for area in model.card.areas)
        areas = load_areas(self.taxonomy)
        if set(model.taxonomy) == {area.slug for area in areas}:
            return model, areas
        raise UsageError(  # (a model named with --model: the others are this project's, see model)
            f"the model's areas differ from {self.taxonomy}",
            fix="Retrain with 'tagger train', or give your own labelled file with --data.",
        )

    def queue(self, abstracts, model, store, n: int, relabel: bool = False, overlap: float = 0):
        """The abstracts to label, most useful first: those nobody labelled, or with
        ``overlap`` those the store's annotator did not (or, with ``relabel``, the labels the
        model doubts most, judged out of fold; for a reviewing store, the disagreements no
        review has settled)."""
        from .labelling import relabel_queue, review_queue, suggest

        if overlap and overlap < 1:  # (a share: see desks)
            raise UsageError(
                f"--overlap {overlap:g} shows a share of each one's abstracts to a second person of a page",
                fix="Give --web --annotators ana,ben with it (alone, --overlap shows what others labelled).",
            )
        if store.reviewing:
            from .agreement import to_settle

            return _named(review_queue(abstracts, model, to_settle(store.rows()), n), store)
        if relabel:
            queue = relabel_queue(
                abstracts, model, store.current(), n, self.training_set(), store.others_only()
            )
            return _named(queue, store)
        return suggest(abstracts, model, n, exclude=store.mine() if overlap else store.labelled())

    def desks(self, abstracts, model, store, n: int, names=(), relabel: bool = False, overlap: float = 0):  # noqa: PLR0913 (the labelling desk's choices)
        """Each annotator's queue and store for one labelling page, by name: ``names`` (else
        the one ``store``, as ""); with ``overlap`` each their own queue of what they did not
        label, else one queue dealt out in turn (each abstract to one of them), and with an
        ``overlap`` share below 1, that share of each one's abstracts dealt to the next one too
        (a second annotator, for agreement, on part of the queue)."""
        if overlap and len(names) > 1 and self.data:
            raise UsageError(
                "--overlap with --data: a labelled file keeps one answer an abstract and no annotator, "
                "so each person's answer would replace the other's",
                fix="Label into a project (tagger init) to compare annotators, or leave --overlap out "
                "(each abstract then goes to one of them).",
            )
        stores = {name: self.store(name, store.reviewing) for name in names} or {"": store}
        if overlap and (overlap >= 1 or len(stores) < 2):  # (each their own queue: one name's too)
            abstracts = list(abstracts)
            return {
                name: (self.queue(abstracts, model, mine, n, relabel, True), mine)
                for name, mine in stores.items()
            }
        queue = self.queue(abstracts, model, store, n, relabel, False)
        people = list(stores)
        dealt = {name: range(k, len(queue), len(people)) for k, name in enumerate(people)}
        given = {name: list(places) for name, places in dealt.items()}
        if overlap:  # a share of each one's own abstracts to the next one too, in the queue's order
            step = max(1, round(1 / overlap))
            for k, name in enumerate(people):
                given[people[(k + 1) % len(people)]] += dealt[name][::step]
        return {name: ([queue[i] for i in sorted(given[name])], stores[name]) for name in people}

    # -- training ----------------------------------------------------------------------------

    def recipe(self, unlabelled=None):
        """What train runs and evaluate measures: the training set, and the pile (the
        abstracts of ``unlabelled`` paths, or None)."""
        from .reading import read_abstracts

        pile = [a.document for a in read_abstracts(unlabelled)] if unlabelled else None
        return self.training_set(), pile

    def replaced(self, training_set):
        """The model a retrain here replaces: the one in :attr:`save_to` (the folder that tags
        when none is named, or the one named); with none there that loads, the shipped model
        when it has the same areas (a new project's first retrain replaces it); else None.
        Its searched settings are kept while the labels changed little."""
        from .model import shipped_model_dir
        from .retraining import previous_model

        previous = previous_model(self.save_to)
        if previous is None and not self.data:
            before = previous_model(shipped_model_dir())
            previous = before if before is not None and before.taxonomy == training_set.slugs else None
        return previous

    def run(self, previous=None, search: bool = False, corpus=None):
        """How a retrain or an evaluation here runs (:class:`tagger.training.Run`): the plan
        (searching anew with ``search``), the texts analysed already (``corpus``), and the
        card of the ``previous`` model (see :meth:`replaced`)."""
        from .corpus import Corpus
        from .plan import PLAN
        from .training import Run

        card = previous.card if previous is not None else None
        plan = replace(PLAN, search=search)
        return Run(plan=plan, corpus=corpus if corpus is not None else Corpus(), previous=card, since=card)

    def retrain(
        self, texts: list[str], *, unlabelled=None, search: bool = False, training_set=None, corpus=None
    ):
        """Train on the labels (``training_set``: read already), save into :attr:`save_to`,
        and compare with the model replaced (see :func:`tagger.retraining.retrain`); ``texts``:
        abstracts to count changes on; ``corpus``: the texts the last retrain analysed."""
        from .retraining import retrain

        if training_set is None:
            training_set = self.training_set()
        run = self.run(search=search, corpus=corpus)  # (retrain gives it the previous model's card)
        previous = self.replaced(training_set)
        return retrain(training_set, self.save_to, texts, unlabelled=unlabelled, run=run, previous=previous)


def _named(queue, store) -> list:
    """A queue of labelled abstracts with each one's id the one its own file gave it (where
    the store knows one), not the digest of its text: how people know it."""
    from dataclasses import replace

    sources = store.source_ids()
    return [
        replace(item, abstract=item.abstract._replace(id=sources[item.abstract.digest]))
        if item.abstract.digest in sources and item.abstract.id == item.abstract.digest
        else item
        for item in queue
    ]


def _refuse_other_areas(model, labels: dict[str, str], data: str) -> None:
    """A model that does not know the areas of the labelled file answers would go to: its
    areas would be offered, and written into the file (the shipped model's 'llm' in a file of
    one's own areas)."""
    theirs = set(labels.values()) - {NONE}  # (the answer that an abstract fits no area is no area)
    if not theirs <= set(model.areas):  # (a file of some of the model's areas is of its taxonomy)
        listed = ", ".join(sorted(theirs)[:8]) + (", ..." if len(theirs) > 8 else "")
        raise UsageError(
            f"the model's areas ({', '.join(model.areas[:8])}{', ...' if len(model.areas) > 8 else ''}) "
            f"are not those of {data} ({listed})",
            fix=f"Train a model on it first (tagger train --data {data} --model mine) and give --model mine.",
        )
