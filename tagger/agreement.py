"""How far annotators agree: for each pair of annotators, the abstracts both labelled, how
often their areas agree, and Cohen's kappa (agreement beyond what their label frequencies give
by chance); for all of them at once, Krippendorff's alpha (nominal: any number of annotators,
each abstract labelled by any two or more) and each area's specific agreement; what each
annotator did (labels, none, time a label); and the abstracts they disagree on, to review."""

from __future__ import annotations

import itertools
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
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


def krippendorff_alpha(units: Iterable[Sequence[str]]) -> float | None:
    """Krippendorff's alpha of nominal labels: ``units`` holds each abstract's areas, one an
    annotator (those of fewer than two annotators count for nothing). 1 - observed / expected
    disagreement over the coincidences of values within units; None when it is undefined (no
    unit of two values, or one area only). Krippendorff's own nominal example gives 0.743."""
    coincidences: defaultdict[tuple[str, str], float] = defaultdict(float)
    for unit in units:
        if len(unit) < 2:
            continue
        for first, second in itertools.permutations(unit, 2):
            coincidences[first, second] += 1 / (len(unit) - 1)
    totals: defaultdict[str, float] = defaultdict(float)
    for (value, _), weight in coincidences.items():
        totals[value] += weight
    n = sum(totals.values())
    expected = sum(totals[a] * totals[b] for a in totals for b in totals if a != b) / (n - 1) if n > 1 else 0
    if not expected:
        return None
    observed = sum(weight for (a, b), weight in coincidences.items() if a != b)
    return 1 - observed / expected


def specific_agreement(units: Iterable[Sequence[str]]) -> dict[str, tuple[float, int]]:
    """Each area's specific agreement over the units of two or more annotators: of the
    annotators' pairs in which one said that area, the share in which the other said it too
    (sum of n_c (n_c - 1) over sum of n_c (n - 1)), with the units where someone said it."""
    agreeing: Counter = Counter()
    possible: Counter = Counter()
    units_with: Counter = Counter()
    for unit in units:
        if len(unit) < 2:
            continue
        for area, count in Counter(unit).items():
            agreeing[area] += count * (count - 1)
            possible[area] += count * (len(unit) - 1)
            units_with[area] += 1
    return {area: (agreeing[area] / possible[area], units_with[area]) for area in sorted(possible)}


BREAK = 600  # seconds: a longer gap between two answers of one annotator is a pause, not a label's time


def annotator_figures(
    rows: list[dict], skips: dict[str, set[str]] | None = None
) -> dict[str, tuple[int, int, float | None, int]]:
    """Per annotator (of rows as ``tagger labels`` gives them; a reviewer is no annotator): the
    abstracts labelled, those of them answered none, the median seconds between two of their
    answers in a row (gaps over :data:`BREAK` left out as pauses; None when unknown), and the
    abstracts they skipped and have not labelled since (``skips``: annotator -> digests)."""
    from .labelstore import NONE, REVIEW, ROLE, seconds_of

    figures = {}
    mine: dict[str, list[dict]] = {}
    for row in rows:
        if row[ROLE] != REVIEW and row["annotator"]:
            mine.setdefault(row["annotator"], []).append(row)
    skips = {name: digests for name, digests in (skips or {}).items() if name}
    for name in sorted(mine.keys() | skips.keys()):
        given = mine.get(name, [])
        times = sorted(t for row in given if (t := seconds_of(row.get("labelled_at", ""))) is not None)
        gaps = [b - a for a, b in itertools.pairwise(times) if 0 <= b - a <= BREAK]
        median = statistics.median(gaps) if gaps else None
        skipped = len(skips.get(name, set()) - {row["abstract_id"] for row in given})
        figures[name] = (len(given), sum(row["area"] == NONE for row in given), median, skipped)
    return figures


KAPPA_FROM = 20  # shared abstracts: with fewer, one answer swings kappa by a tenth or more


def describe(
    found: Agreement,
    snippets: dict[str, str],
    finals: dict[str, tuple[str, str]] | None = None,
    names: dict[str, str] | None = None,
    figures: Sequence[str] = (),
) -> str:
    """The agreement as text: a line a pair of annotators, then each disagreement with its
    abstract's name (``names``: id -> the id its file gave it), each annotator's area, the
    final label a review gave it and by whom (``finals``: id -> (area, reviewer)), and a
    snippet (``snippets``: id -> title or words); ``figures``: lines after the pairs' (what
    each annotator did, the agreement of all)."""
    finals = finals or {}
    if not found.pairs:
        return "\n".join(["no abstract is labelled by two annotators: nothing to compare", *figures])
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
    lines += figures
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


def described_agreement(rows: list[dict], skips: dict[str, set[str]] | None = None) -> str:
    """:func:`describe` of a project's labels (``tagger labels`` rows): the annotators'
    agreement (a review's final labels are no annotator's), with what the review settled and
    what each annotator did (``skips``: annotator -> the abstracts they skipped)."""
    given, finals = _given_and_finals(rows)
    found = agreement(given)
    snippets = {row["abstract_id"]: row["title"] or " ".join(row["abstract"].split()[:12]) for row in rows}
    names = {row["abstract_id"]: row.get("source_id") or row["abstract_id"] for row in rows}
    lines = [
        f"{name}: {n} labelled, {none} of them none"
        + (f", {skipped} skipped (not labelled since)" if skipped else "")
        + (
            ""
            if median is None
            else f", {median:.0f} s a label (median)"
            if median >= 1
            else ", < 1 s a label"
        )
        for name, (n, none, median, skipped) in annotator_figures(rows, skips).items()
    ]
    units = [list(areas.values()) for areas in _by_abstract(given).values()]
    shared = sum(len(unit) >= 2 for unit in units)
    if found.pairs and len({name for _, name, _ in given if name}) >= 3:
        alpha = krippendorff_alpha(units)
        lines.append(
            f"Krippendorff's alpha (nominal) over the {shared} abstracts two or more annotators labelled: "
            + ("undefined (one area only)" if alpha is None else f"{alpha:.2f}")
        )
    if found.pairs:
        lines.append(
            "agreement by area (of the pairs where one said it, the share where the other did too): "
            + ", ".join(
                f"{area} {share:.2f} of {n}" for area, (share, n) in specific_agreement(units).items()
            )
        )
    return "\n".join([describe(found, snippets, finals, names, lines), *remarks(rows, names, snippets)])


def remarks(rows: list[dict], names: dict[str, str], snippets: dict[str, str]) -> list[str]:
    """The answers annotators flagged or commented on, each with its abstract, area, who,
    and the comment: what a lead reads before the next round of guidelines."""
    noted = [row for row in rows if row.get("flag") or row.get("comment")]
    if not noted:
        return []
    flagged = sum(bool(row.get("flag")) for row in noted)
    lines = [f"{len(noted)} answer(s) with a remark ({flagged} flagged):"]
    for row in noted:
        abstract, who = row["abstract_id"], row["annotator"] or "(nobody named)"
        said = row["area"] + (" (flagged)" if row.get("flag") else "")
        comment = f' "{row["comment"]}"' if row.get("comment") else ""
        lines.append(
            f"  {names.get(abstract, abstract)}  {who} {said}{comment}  | {snippets.get(abstract, '')}"
        )
    return lines
