"""The labelling loop: which unlabelled abstracts to label next, and labelling them by hand.

:func:`suggest` ranks abstracts by the margin between the model's top two areas (the
smallest margins teach the model most) and drops near-duplicates of abstracts already in
the queue. :func:`label_session` shows the queue one abstract at a time and saves each
answer at once (see :func:`tagger.labels.add_label`).
"""

from __future__ import annotations

import heapq
import itertools
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .batch import tag_abstracts
from .corpus import Abstract
from .labels import Area
from .model import Model
from .prediction import Prediction

NEAR_DUPLICATE = 0.8  # cosine similarity of TF-IDF vectors
GUESSES = 3


@dataclass(frozen=True)
class Suggestion:
    abstract: Abstract
    prediction: Prediction

    @property
    def margin(self) -> float:
        return self.prediction.confidence - self.prediction.runner_up_confidence

    def guesses(self, n: int = GUESSES) -> list[tuple[str, float]]:
        return sorted(self.prediction.scores.items(), key=lambda item: -item[1])[:n]


def suggest(
    abstracts: Iterable[Abstract], model: Model, n: int = 10, exclude: Iterable[str] = ()
) -> list[Suggestion]:
    """The ``n`` abstracts (not in ``exclude``, by id) whose labels would teach the model
    most: smallest margin between the top two areas first, no near-duplicates."""
    excluded = set(exclude)
    pool_size = max(5 * n, n + 50)
    pool: list[tuple[float, int, Suggestion]] = []  # max-heap on margin via negation
    counter = itertools.count()
    for abstract, prediction in tag_abstracts((a for a in abstracts if a.id not in excluded), model):
        item = Suggestion(abstract, prediction)
        entry = (-item.margin, next(counter), item)
        if len(pool) < pool_size:
            heapq.heappush(pool, entry)
        elif entry > pool[0]:
            heapq.heapreplace(pool, entry)
    ranked = [item for _, _, item in sorted(pool, key=lambda e: (-e[0], e[1]))]
    return _without_near_duplicates(ranked, model, n)


def _without_near_duplicates(ranked: list[Suggestion], model: Model, n: int) -> list[Suggestion]:
    matrix = model.tfidf([s.abstract.document for s in ranked])
    similarity = (matrix @ matrix.T).toarray()  # cosine: the rows are l2-normed
    chosen: list[int] = []
    seen_ids: set[str] = set()
    for i, item in enumerate(ranked):
        if item.abstract.id in seen_ids:
            continue
        if any(similarity[i, j] > NEAR_DUPLICATE for j in chosen):
            continue
        chosen.append(i)
        seen_ids.add(item.abstract.id)
        if len(chosen) == n:
            break
    return [ranked[i] for i in chosen]


@dataclass
class SessionResult:
    labelled: list[tuple[str, str]] = field(default_factory=list)  # (abstract id, area)
    skipped: int = 0
    quit: bool = False


HELP = (
    "  {keys}: accept that guess · a slug (or its start): that area · a: list all areas · s: skip · q: quit"
)


def label_session(
    queue: list[Suggestion],
    areas: tuple[Area, ...],
    save: Callable[[Abstract, str], None],
    ask: Callable[[str], str],
    say: Callable[[str], None],
    width: int = 88,
) -> SessionResult:
    """Show each abstract in ``queue`` with its numbered guesses and ask for its area;
    ``save`` is called at once with every answer. ``ask`` returns the answer typed (raising
    EOFError at the end of input, which ends the session like ``q``)."""
    result = SessionResult()
    slugs = [area.slug for area in areas]
    for number, item in enumerate(queue, start=1):
        guesses = item.guesses()
        abstract = item.abstract
        say("")
        say(f"[{number}/{len(queue)}] {abstract.source}:{abstract.line}  id {abstract.id}")
        if abstract.title:
            say(textwrap.fill(abstract.title, width))
        say(textwrap.fill(abstract.text, width))
        say("   ".join(f"{i}) {slug} {p:.2f}" for i, (slug, p) in enumerate(guesses, start=1)))
        keys = f"1-{len(guesses)}"
        while True:
            try:
                answer = ask("area? ").strip()
            except EOFError:
                result.quit = True
                return result
            if answer == "q":
                result.quit = True
                return result
            if answer == "s":
                result.skipped += 1
                break
            if answer == "a":
                say("  " + "  ".join(f"{area.slug} ({area.name})" for area in areas))
                continue
            choice = _choice(answer, guesses, slugs)
            if choice is None:
                if answer and answer != "?":
                    say(f"  not understood: {answer!r}")
                say(HELP.format(keys=keys))
                continue
            save(abstract, choice)
            result.labelled.append((abstract.id, choice))
            say(f"  labelled {choice}")
            break
    return result


def _choice(answer: str, guesses: list[tuple[str, float]], slugs: list[str]) -> str | None:
    """The area an answer names: a guess number, a slug, or the unique start of a slug."""
    if answer.isdigit() and 1 <= int(answer) <= len(guesses):
        return guesses[int(answer) - 1][0]
    if answer in slugs:
        return answer
    starting = [slug for slug in slugs if answer and slug.startswith(answer)]
    return starting[0] if len(starting) == 1 else None
