"""How far annotators agree: for each pair of annotators, the abstracts both labelled, how
often their areas agree, and Cohen's kappa (agreement beyond what their label frequencies give
by chance); and the abstracts they disagree on, to review."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Pair:
    """Two annotators' agreement on the abstracts both labelled."""

    first: str
    second: str
    both: int  # abstracts labelled by both
    agreeing: int
    kappa: float

    @property
    def share(self) -> float:
        return self.agreeing / self.both if self.both else 0.0


@dataclass(frozen=True)
class Agreement:
    """Every pair of annotators who labelled an abstract in common, and each abstract whose
    annotators gave different areas (``disagreements``: abstract id -> annotator -> area)."""

    pairs: tuple[Pair, ...]
    disagreements: dict[str, dict[str, str]]


def agreement(labels: Iterable[tuple[str, str, str]]) -> Agreement:
    """The agreement of (abstract id, annotator, area) labels: an annotator's latest label of
    an abstract counts; labels without an annotator are left out (nobody to compare)."""
    from sklearn.metrics import cohen_kappa_score

    by_abstract = _by_abstract(labels)
    annotators = sorted({name for areas in by_abstract.values() for name in areas})
    pairs = []
    for first, second in itertools.combinations(annotators, 2):
        shared = [areas for areas in by_abstract.values() if first in areas and second in areas]
        if not shared:
            continue
        a, b = [areas[first] for areas in shared], [areas[second] for areas in shared]
        agreeing = sum(x == y for x, y in zip(a, b))
        # (one area for everything on both sides: agreement is perfect, kappa undefined; 1 here)
        kappa = 1.0 if len(set(a) | set(b)) == 1 else float(cohen_kappa_score(a, b))
        pairs.append(Pair(first, second, len(shared), agreeing, kappa))
    return Agreement(tuple(pairs), _disagreements(by_abstract))


def to_settle(rows: list[dict]) -> dict[str, tuple[dict[str, str], tuple[str, str] | None]]:
    """Abstract id -> (annotator -> area, and the final label and its reviewer, if any) of
    each abstract that annotators labelled differently, of a project's label rows
    (:meth:`tagger.labelstore.ProjectLabels.rows`): what a review settles."""
    given, finals = _given_and_finals(rows)
    return {
        abstract: (areas, finals.get(abstract))
        for abstract, areas in _disagreements(_by_abstract(given)).items()
    }


def _given_and_finals(rows: list[dict]):
    """The annotators' labels, as (abstract id, annotator, area), and a review's final labels
    (see :func:`tagger.labelstore.final_labels`: those that stand): a reviewer is no annotator."""
    from .labelstore import REVIEW, ROLE, final_labels

    given = [(row["abstract_id"], row["annotator"], row["area"]) for row in rows if row[ROLE] != REVIEW]
    return given, final_labels(rows)


def _by_abstract(labels: Iterable[tuple[str, str, str]]) -> dict[str, dict[str, str]]:
    """Abstract id -> annotator -> their latest area; labels without an annotator left out."""
    by_abstract: dict[str, dict[str, str]] = {}
    for abstract, annotator, area in labels:
        if annotator:
            by_abstract.setdefault(abstract, {})[annotator] = area
    return by_abstract


def _disagreements(by_abstract: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    return {
        abstract: dict(sorted(areas.items()))
        for abstract, areas in by_abstract.items()
        if len(set(areas.values())) > 1
    }


KAPPA_FROM = 20  # shared abstracts: with fewer, one answer swings kappa by a tenth or more


def describe(
    found: Agreement,
    snippets: dict[str, str],
    finals: dict[str, tuple[str, str]] | None = None,
    names: dict[str, str] | None = None,
) -> str:
    """The agreement as text: a line a pair of annotators, then each disagreement with its
    abstract's name (``names``: id -> the id its file gave it), each annotator's area, the
    final label a review gave it and by whom (``finals``: id -> (area, reviewer)), and a
    snippet (``snippets``: id -> title or words)."""
    finals = finals or {}
    if not found.pairs:
        return "no abstract is labelled by two annotators: nothing to compare"
    lines = [
        f"{p.first} and {p.second}: {p.both} abstracts labelled by both, agreeing on {p.agreeing} "
        f"({p.share:.0%}), Cohen's kappa {p.kappa:.2f}"
        + (
            f" (on {p.both}: too few to mean much yet; {KAPPA_FROM} or more shared abstracts measure it)"
            if p.both < KAPPA_FROM
            else ""
        )
        for p in found.pairs
    ]
    settled = sum(abstract in finals for abstract in found.disagreements)
    n = len(found.disagreements)
    if not n:
        lines.append("0 disagreement(s) to review")
    elif not settled:
        lines.append(
            f"{n} disagreement(s): none settled by review yet ('tagger label --review' settles them)"
        )
    else:
        lines.append(f"{n} disagreement(s): {settled} settled by review, {n - settled} to review")
    for abstract, areas in found.disagreements.items():
        given = ", ".join(f"{name} {area}" for name, area in areas.items())
        if abstract in finals:
            given += " -> {} ({})".format(*finals[abstract])
        lines.append(f"  {(names or {}).get(abstract, abstract)}  {given}  | {snippets.get(abstract, '')}")
    return "\n".join(lines)


def described_agreement(rows: list[dict]) -> str:
    """:func:`describe` of a project's labels (``tagger labels`` rows): the annotators'
    agreement (a review's final labels are no annotator's), with what the review settled."""
    given, finals = _given_and_finals(rows)
    found = agreement(given)
    snippets = {row["abstract_id"]: row["title"] or " ".join(row["abstract"].split()[:12]) for row in rows}
    names = {row["abstract_id"]: row.get("source_id") or row["abstract_id"] for row in rows}
    return describe(found, snippets, finals, names)
