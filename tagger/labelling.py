"""The labelling loop: which unlabelled abstracts to label next, and labelling them by hand.

:func:`suggest` ranks abstracts by the margin between the model's top two areas (the
smallest margins teach the model most) and drops near-duplicates of abstracts already in
the queue. :func:`label_session` shows the queue one abstract at a time and saves each
answer at once through the label store (see :mod:`tagger.labelstore`).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import textwrap
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .batch import chunked, tag_blocks
from .labels import Area
from .labelstore import NONE, Remark, topic_of
from .model import Model
from .prediction import Prediction, predictions
from .reading import Abstract
from .schema import located

log = logging.getLogger("tagger.labelling")  # what it is doing (shown on a terminal: tagger.feedback)

NEAR_DUPLICATE = 0.8  # cosine similarity of TF-IDF vectors
GUESSES = 3
POOL_PER_SUGGESTION = 50  # the unsure abstracts considered, per suggestion asked for
POOL_MIN = 1000  # and at least this many, so that a longer queue starts like a shorter one
POOL_MAX = 20_000  # and at most this many (memory: a long queue of a large pile stays bounded)
DENSITY = 1.0  # see suggest(); chosen with tests/benchmarks/bench_loop.py
DIVERSITY = 0.5
BALANCE = 1.0


@dataclass(frozen=True)
class Suggestion:
    abstract: Abstract
    prediction: Prediction
    current: str = ""  # the area it is labelled with now (when labels are reviewed)
    current_by: str = ""  # who gave it, when only other annotators did (an answer goes beside theirs)
    answers: tuple[tuple[str, str], ...] = ()  # (annotator, area) of a disagreement to settle

    def current_note(self) -> str:
        """What an answer does to the label it has now (when labels are reviewed), or ""."""
        if self.answers:
            said = ", ".join(f"{name} {area}" for name, area in self.answers)
            return f"annotators said {said}; your answer is the final label"
        if not self.current:
            return ""
        if self.current_by:  # (blind: what they said shows after the answer, see others_said)
            return f"labelled by {self.current_by} too; your answer is kept beside theirs"
        return f"labelled {self.current} now; your answer replaces yours"

    def others_said(self) -> str:
        """What other annotators said of it, shown once this one has answered ("" if none)."""
        return f"{self.current_by} said {self.current}" if self.current_by else ""

    @property
    def margin(self) -> float:
        return self.prediction.confidence - self.prediction.runner_up_confidence

    def guesses(self, n: int = GUESSES) -> list[tuple[str, float]]:
        return sorted(self.prediction.scores.items(), key=lambda item: -item[1])[:n]

    def record(self) -> dict:
        """The suggestion as plain data (``tagger suggest --format jsonl``)."""
        abstract = self.abstract
        return {
            **located(abstract),
            "margin": round(self.margin, 4),
            "guesses": [{"area": area, "probability": round(p, 4)} for area, p in self.guesses()],
            "snippet": " ".join(abstract.text.split()[:30]),
        }


def suggest(  # noqa: PLR0913 (a session's choices)
    abstracts: Iterable[Abstract],
    model: Model,
    n: int = 10,
    exclude: Iterable[str] = (),
    *,
    density: float = DENSITY,
    diversity: float = DIVERSITY,
    balance: float = BALANCE,
) -> list[Suggestion]:
    """The ``n`` abstracts (not in ``exclude``, by the digest of their text) whose labels
    would teach the model most, best first.

    The unsure abstracts (smallest margins, :data:`POOL_PER_SUGGESTION` per suggestion, at
    least :data:`POOL_MIN` and at most :data:`POOL_MAX`) are the candidates; each scores
    ``(1 - margin) * typicality ** density``, where typicality is its TF-IDF cosine with the
    candidates' centroid (scaled to at most 1).
    Suggestions are then chosen greedily: a candidate's score is cut by ``diversity`` times
    its largest cosine with those already chosen, and divided by ``1 + balance * m * k / n``
    when ``m`` of those chosen share its predicted area (k areas), so that rare areas are not
    starved. Near-duplicates (cosine above :data:`NEAR_DUPLICATE`) of a chosen abstract are
    dropped. ``density=0, diversity=0, balance=0`` is plain margin sampling."""
    excluded = set(exclude)
    pool_size = min(max(POOL_PER_SUGGESTION * n, POOL_MIN), POOL_MAX)
    # A max-heap on margin (negated) of the candidates, each as (abstract, probabilities):
    # their Predictions are made for the suggestions chosen only.
    pool: list[tuple[float, int, Abstract, np.ndarray]] = []
    counter = itertools.count()
    log.info("scoring the abstracts to choose from")
    for chunk, probabilities in tag_blocks(_once_each(abstracts, excluded), model):
        top_two = np.sort(probabilities, axis=1)[:, -2:]
        for abstract, margin, row in zip(chunk, (top_two[:, 1] - top_two[:, 0]).tolist(), probabilities):
            entry = (-margin, next(counter), abstract, row)
            if len(pool) < pool_size:
                heapq.heappush(pool, entry)
            elif entry[:2] > pool[0][:2]:
                heapq.heapreplace(pool, entry)
    if not pool:
        return []
    log.info("scored %s abstracts; choosing %s among the %s least sure", f"{next(counter):,}", n, len(pool))
    pool.sort(key=lambda e: (-e[0], e[1]))
    candidates = [abstract for _, _, abstract, _ in pool]
    probabilities = np.array([row for _, _, _, row in pool])
    margins = np.array([-negated for negated, _, _, _ in pool])
    del pool
    matrix = _tfidf_rows(candidates, model)
    centroid = np.asarray(matrix.mean(axis=0)).ravel()
    typicality = matrix @ centroid
    typicality = typicality / typicality.max() if typicality.max() > 0 else np.ones(len(candidates))
    score = (1 - margins) * typicality**density
    per_area_share = max(n / len(model.areas), 1.0)
    chosen: list[int] = []
    nearest = np.zeros(len(candidates))  # largest cosine with a chosen abstract
    open_ = np.ones(len(candidates), dtype=bool)
    area_index = probabilities.argmax(axis=1)  # the predicted area (of equal ones, the first)
    taken = np.zeros(len(model.areas))  # chosen so far, per predicted area
    while len(chosen) < n and open_.any():
        crowding = 1 + balance * taken[area_index] / per_area_share
        value = np.where(open_, score * (1 - diversity * nearest) / crowding, -np.inf)
        best = int(np.argmax(value))
        open_[best] = False
        if nearest[best] > NEAR_DUPLICATE:  # (each id is a candidate once: see _once_each)
            continue
        chosen.append(best)
        taken[area_index[best]] += 1
        similarity = (matrix @ matrix[best].T).toarray().ravel()  # cosine: the rows are l2-normed
        nearest = np.maximum(nearest, similarity)
    made = predictions(probabilities[chosen], model.areas, model.threshold())
    return [Suggestion(candidates[i], prediction) for i, prediction in zip(chosen, made)]


def _tfidf_rows(abstracts: list[Abstract], model: Model):
    """The TF-IDF rows of ``abstracts`` (CSR, float32: cosines to a few digits are plenty),
    made a chunk at a time so that the peak stays near the matrix's own size."""
    from scipy.sparse import csr_matrix

    data, indices, lengths = [], [], [np.zeros(1, dtype=np.int64)]
    for chunk in chunked(abstracts):
        rows = model.tfidf([abstract.document for abstract in chunk])
        data.append(rows.data.astype(np.float32))
        indices.append(rows.indices.astype(np.int32))
        lengths.append(np.diff(rows.indptr))
    indptr = np.cumsum(np.concatenate(lengths))
    shape = (len(abstracts), rows.shape[1])
    return csr_matrix((np.concatenate(data), np.concatenate(indices), indptr), shape)


def relabel_queue(
    abstracts: Iterable[Abstract],
    model: Model,
    current: dict[str, str],
    n: int,
    training_set,
    others: dict[str, str] | None = None,
) -> list[Suggestion]:
    """The ``n`` labelled abstracts whose labels the model doubts most, to review by hand:
    ``current`` maps the digest of a text (:func:`tagger.reading.abstract_id`) to its area
    now, ``others`` to who labelled it where only other annotators did (see
    :attr:`Suggestion.current_by`). Each label is judged by a model that never saw it: the
    out-of-fold probabilities of ``training_set`` (the labels and texts, cross-validated with
    the settings ``model`` chose), as ``tagger evaluate`` finds possible label errors; a
    model's guess about an abstract it was trained on agrees with its label whether the label
    is right or not. The abstracts whose current area gets the lowest probability come first.
    (An area with one label cannot be measured out of fold: its abstracts are not in the
    queue.)"""
    from .training import cross_validate

    validation = cross_validate(training_set, model.card.settings)
    rows = validation.rows if validation.rows is not None else np.arange(len(training_set.labels))
    areas = [area.slug for area in training_set.areas]
    out_of_fold = {training_set.ids[i]: validation.probabilities[k] for k, i in enumerate(rows.tolist())}
    others = others or {}
    labelled = [
        (a, area, out_of_fold[digest], others.get(digest, ""))
        for a in _once_each(abstracts, set())
        if (area := current.get(digest := a.digest)) and digest in out_of_fold
    ]
    if not labelled:
        return []
    guesses = predictions(np.array([row for _, _, row, _ in labelled]), areas, model.threshold(None))
    items = [Suggestion(a, guess, area, by) for (a, area, _, by), guess in zip(labelled, guesses)]
    items.sort(key=lambda item: item.prediction.scores.get(item.current, 0.0))
    return items[:n]


def review_queue(
    abstracts: Iterable[Abstract],
    model: Model,
    disagreements: dict[str, tuple[dict[str, str], tuple[str, str] | None]],
    n: int,
) -> list[Suggestion]:
    """The first ``n`` abstracts (in the order read) that annotators labelled differently and
    no review has settled yet (``disagreements``: see
    :func:`tagger.agreement.to_settle`), each with their answers."""
    unsettled = [
        (a, given)
        for a in _once_each(abstracts, set())
        if (found := disagreements.get(a.digest)) and (given := found[0]) and found[1] is None
    ][:n]
    guesses = model.predict([a.document for a, _ in unsettled]) if unsettled else []
    return [
        Suggestion(a, guess, answers=tuple(given.items())) for (a, given), guess in zip(unsettled, guesses)
    ]


def _once_each(abstracts: Iterable[Abstract], excluded: set[str]) -> Iterator[Abstract]:
    """Each abstract once, the ones in ``excluded`` left out, both by the digest of the
    text: an abstract is the same whichever file or id it comes with, and two abstracts that
    share an id (in two files) are two abstracts."""
    texts: set[str] = set()
    for abstract in abstracts:
        content = abstract.digest
        if content in excluded or content in texts:
            continue
        texts.add(content)
        yield abstract


@dataclass
class SessionResult:
    labelled: list[tuple[str, str]] = field(default_factory=list)  # (abstract id, area)
    skipped_at: set[int] = field(default_factory=set)  # queue places skipped (not gone back over)
    quit: bool = False

    @property
    def skipped(self) -> int:
        return len(self.skipped_at)

    @property
    def no_area(self) -> int:
        """The answers that the abstract fits no area (:data:`~tagger.labelstore.NONE`)."""
        return sum(area == NONE for _, area in self.labelled)

    def described(self) -> str:
        """``labelled 3 (1 fits no area), skipped 2``."""
        none = f" ({self.no_area} {'fits' if self.no_area == 1 else 'fit'} no area)" if self.no_area else ""
        return f"labelled {len(self.labelled)}{none}, skipped {self.skipped}"


class Session:
    """Where a labelling session is in its queue, and what it answered: the one bookkeeping
    of the terminal labeller (:func:`label_session`) and the labelling page
    (:mod:`tagger.web`). ``save(abstract, area, topic, remark)`` is called at once with every
    answer (``topic``: what an abstract that fits no area is about, or ""; ``remark``: the
    annotator's comment and flag, a :class:`~tagger.labelstore.Remark`) and returns a
    receipt; ``unsave(receipt)`` takes the answer back (see
    :meth:`tagger.labelstore.ProjectLabels.undo`) and returns whether it could."""

    def __init__(
        self,
        queue: list[Suggestion],
        save: Callable[[Abstract, str, str, Remark], Any],
        unsave: Callable[[Any], Any] | None = None,
        passed: Callable[[Abstract], Any] | None = None,
    ) -> None:
        self.queue = queue
        self.save = save
        self.unsave = unsave
        self.passed = passed  # told of each skip (the store keeps them for a lead's figures)
        self.index = 0
        self.result = SessionResult()
        self.answered: list[tuple[int, Any, str]] = []  # (queue index, receipt, area), in order

    @property
    def current(self) -> Suggestion | None:
        return self.queue[self.index] if self.index < len(self.queue) else None

    @property
    def can_undo(self) -> bool:
        return bool(self.answered) and self.unsave is not None

    def answer(self, area: str, topic: str = "", remark: Remark | None = None) -> Suggestion:
        """Label the current abstract ``area`` (saved at once; :data:`~tagger.labelstore.NONE`
        with a ``topic`` if any: it fits no area), with the annotator's ``remark`` if any, and
        move on; returns it."""
        item = self._item()
        receipt = self.save(item.abstract, area, topic, remark or Remark())
        self.result.labelled.append((item.abstract.id, area))
        self.answered.append((self.index, receipt, area))
        self.index += 1
        return item

    def skip(self) -> Suggestion:
        item = self._item()
        if self.passed is not None:
            self.passed(item.abstract)
        self.result.skipped_at.add(self.index)
        self.index += 1
        return item

    def undo(self) -> tuple[bool, str, str] | None:
        """Take the last answer back and go back to its abstract: (undone, its id, its area);
        None when there is nothing to undo. Not undone when someone else changed that label
        since."""
        if not self.can_undo or self.unsave is None:
            return None
        self.index, receipt, area = self.answered.pop()
        abstract_id_, _ = self.result.labelled.pop()
        # the abstracts skipped after it come again: skipped no longer, until skipped again
        self.result.skipped_at -= {index for index in self.result.skipped_at if index >= self.index}
        return self.unsave(receipt) is not False, abstract_id_, area

    def _item(self) -> Suggestion:
        item = self.current
        if item is None:
            raise IndexError("the queue is done")
        return item


# The keys of labelling, one set for the terminal and the page (tagger.web): a letter means the
# same in both, and no area's key on the page is one of them (the terminal's a and q, the page's
# r, do nothing in the other). The terminal takes a guess's number or a slug besides.
KEYS = {"none": "n", "skip": "s", "undo": "u", "areas": "a", "quit": "q", "retrain": "r", "flag": "!"}
COMMENT_MARK = "#"  # in the terminal, what follows it on an answer's line is a comment
AREA_KEYS = "".join(key for key in "1234567890abcdefghijklmnopqrstuvwxyz" if key not in KEYS.values())

HELP = (
    f"  {{keys}}: accept that guess · a slug (or its start): that area · {KEYS['areas']}: list all areas · "
    f"{KEYS['none']} or {NONE} (and a topic if you like: '{NONE} graphs'): fits no area · "
    f"{KEYS['skip']}: skip · {KEYS['undo']}: undo the last answer · {KEYS['quit']}: quit · after an "
    f"answer, {KEYS['flag']} flags it and {COMMENT_MARK} starts a comment ('llm ! {COMMENT_MARK} a survey')"
)


def parse_remark(typed: str) -> tuple[str, Remark]:
    """An answer's line apart from its remark: ``llm ! # a survey, not a method`` is the
    answer ``llm``, flagged (``!`` after the answer), with a comment (after ``#``); refused
    (a ``ValueError``) when the comment is one the labels cannot keep."""
    answer, marked, comment = typed.partition(COMMENT_MARK)
    answer = answer.strip()
    flagged = answer.endswith(KEYS["flag"])
    if flagged:
        answer = answer.removesuffix(KEYS["flag"]).rstrip()
    return answer, Remark(comment if marked else "", flagged)


def parse_no_area(answer: str) -> str | None:
    """The topic of an answer that the abstract fits no area (``none``, or its key, alone or
    followed by a topic: ``none graphs``), lower-cased with its spaces collapsed ("" when
    none is given); None when the answer is not that."""
    word, *topic = answer.split(None, 1) or [""]
    if word.lower() not in (NONE, KEYS["none"]):
        return None
    return topic_of("".join(topic))


def label_session(  # noqa: PLR0913 (a session's choices)
    queue: list[Suggestion],
    areas: tuple[Area, ...],
    save: Callable[[Abstract, str, str, Remark], Any],
    ask: Callable[[str], str],
    say: Callable[[str], None],
    width: int = 88,
    unsave: Callable[[Any], Any] | None = None,
    blind: bool = False,
    passed: Callable[[Abstract], Any] | None = None,
) -> SessionResult:
    """Show each abstract in ``queue`` with its numbered guesses and ask for its area;
    ``save`` is called at once with every answer, and ``unsave`` with what ``save`` returned
    for an answer undone (``u``: the session goes back to it; see :class:`Session`).
    ``ask`` returns the answer typed (raising EOFError at the end of input, which ends the
    session like ``q``). Each abstract is shown with its file and its position there, as
    ``tagger predict`` numbers it. ``blind`` (a second pass: ``--overlap``, ``--relabel``): the
    model's guesses show after the answer (or on request, ``?``), as on the page, so that
    they do not lead the answer. ``passed`` is told of each abstract skipped."""
    session = Session(queue, save, unsave, passed)
    slugs = [area.slug for area in areas]
    while (item := session.current) is not None:
        guesses = item.guesses()
        abstract = item.abstract
        say("")
        where = f"{abstract.source} #{abstract.position} (line {abstract.line})"
        say(f"[{session.index + 1}/{len(queue)}] {where}  id {abstract.id}")
        if abstract.title:
            say(textwrap.fill(abstract.title, width))
        say(textwrap.fill(abstract.text, width))
        if note := item.current_note():
            say(f"  {note}, s leaves it")
        shown = "   ".join(f"{i}) {slug} {p:.2f}" for i, (slug, p) in enumerate(guesses, start=1))
        if not blind:
            say(shown)
        keys = f"1-{len(guesses)}"

        said = [f"the model said {guesses[0][0]} {guesses[0][1]:.2f}"] if blind and guesses else []
        after = "".join(f"; {part}" for part in [*said, item.others_said()] if part)  # (after the answer)

        while True:
            try:
                answer = ask("area? ").strip()
            except EOFError:
                answer = "q"
            typed, answer = answer, answer.lower()  # slugs are lower-case: any case names them
            if answer == KEYS["quit"]:
                session.result.quit = True
                return session.result
            if answer == KEYS["skip"]:
                session.skip()
                break
            if answer == KEYS["undo"]:
                undone = session.undo()
                if undone is None:
                    say("  nothing to undo")
                    continue
                ok, which, area = undone
                say(
                    f"  undone: {area} for {which}"
                    if ok
                    else f"  not undone: the label of {which} was changed by someone else since"
                )
                break
            if answer == KEYS["areas"]:
                say("  " + "  ".join(f"{area.slug} ({area.name})" for area in areas))
                continue
            try:
                typed, remark = parse_remark(typed)
                topic = parse_no_area(typed)
            except ValueError as error:  # (a topic or comment the labels could not keep: say so, ask again)
                say(f"  {error}")
                continue
            answer = typed.lower()
            noted = "; flagged" if remark.flagged else ""
            noted += "; with your comment" if remark.comment else ""
            if topic is not None:
                session.answer(NONE, topic, remark)
                about = f", about {topic}" if topic else ""
                say(f"  labelled {NONE} (fits no area){about}{noted}{after}")
                break
            choice, could_be = _choice(answer, guesses, slugs)
            if could_be:
                say(f"  {typed!r} starts {' and '.join(could_be)}: type more of it")
                continue
            if choice is None:
                if answer and answer != "?":
                    say(f"  not understood: {typed!r}")
                say(HELP.format(keys=keys))
                if blind and answer == "?":  # (on request)
                    say(f"  the model's guesses: {shown}")
                continue
            session.answer(choice, remark=remark)
            say(f"  labelled {choice}{noted}{after}")
            break
    return session.result


def _choice(answer: str, guesses: list[tuple[str, float]], slugs: list[str]) -> tuple[str | None, list[str]]:
    """The area an answer names (a guess number, a slug, or the unique start of a slug, in any
    case), and, when it is the start of several slugs and names none, those slugs."""
    answer = answer.lower()
    if answer.isdigit() and 1 <= int(answer) <= len(guesses):
        return guesses[int(answer) - 1][0], []
    if answer in slugs:
        return answer, []
    starting = [slug for slug in slugs if answer and slug.startswith(answer)]
    return (starting[0], []) if len(starting) == 1 else (None, starting)
