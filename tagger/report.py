"""An overview of a tagged pile as one self-contained HTML page (``tagger report``, and the
labelling page's report link): the areas by count, confidence against accuracy where labels
exist, the abstracts most worth a look, and the terms of each area. No script, no fonts, no
request of its own: it opens offline, and every text in it is escaped.
"""

from __future__ import annotations

import datetime
import html
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .evaluate import CALIBRATION_BINS, calibration_bins, expected_calibration_error
from .model import Model

WORTH_A_LOOK = 15  # abstracts in each list
TERMS = 12  # terms shown per area


@dataclass(frozen=True)
class Row:
    """One tagged abstract: where it is, what it was tagged, and (when labelled) its area."""

    source: str
    position: int
    id: str
    title: str
    area: str
    confidence: float
    runner_up: str
    runner_up_confidence: float
    label: str | None = None
    needs_review: bool = False


def rows_of(abstracts, predictions, labels: dict[str, str] | None = None) -> list[Row]:
    """The rows of tagged abstracts (:class:`tagger.reading.Abstract` and their predictions);
    ``labels`` maps the digest of a text to its hand label."""
    from .reading import abstract_id

    labels = labels or {}
    return [
        Row(
            a.source,
            a.position,
            a.id,
            a.title or "",
            p.area,
            p.confidence,
            p.runner_up,
            p.runner_up_confidence,
            labels.get(abstract_id(a.text)),
            p.needs_review,
        )
        for a, p in zip(abstracts, predictions)
    ]


TAG_COLUMNS = ("source", "position", "id", "area", "confidence", "runner_up", "runner_up_confidence")


def read_tags(path: str, labels: dict[str, str] | None = None, label_column: str | None = None) -> list[Row]:
    """The rows of a file ``tagger predict`` wrote (CSV, JSON lines or Parquet, by its name;
    ``.gz`` too). Each row's hand label: its ``label_column`` (kept with ``--keep``), or
    ``labels`` (digest of the text to area) by its ``id`` (a digest when the input had no ids)."""
    import pandas as pd

    from .errors import InputError

    name = path.lower().removesuffix(".gz")
    readers = {
        ".csv": lambda: pd.read_csv(path, dtype=str, keep_default_na=False),
        ".jsonl": lambda: pd.read_json(path, lines=True, dtype=False),
        ".parquet": lambda: pd.read_parquet(path),
    }
    kind = next((reader for suffix, reader in readers.items() if name.endswith(suffix)), None)
    if kind is None:
        raise InputError(
            "not a file tagger predict writes", where=path, fix="Give its .csv, .jsonl or .parquet output."
        )
    try:
        frame = kind()
    except FileNotFoundError:
        raise InputError("file not found", where=path, fix="Give the output of tagger predict.") from None
    except (ValueError, OSError, EOFError, zlib.error, UnicodeDecodeError) as error:
        raise InputError(f"unreadable ({str(error).splitlines()[0]})", where=path,
                         fix="Give the output of tagger predict.") from None  # fmt: skip
    missing = [column for column in TAG_COLUMNS if column not in frame.columns]
    if label_column is not None:
        label_column = _label_column(list(frame.columns), label_column, path)
    if missing:
        raise InputError(
            f"no {', '.join(map(repr, missing))} column (columns: {', '.join(map(str, frame.columns))})",
            where=path,
            fix="Give the output of tagger predict (with --keep for a column of labels).",
        )
    labels = labels or {}
    confidence = _numbers(frame, "confidence", path, name)
    runner_up = _numbers(frame, "runner_up_confidence", path, name)
    position = _numbers(frame, "position", path, name)
    titles = frame["title"].fillna("").astype(str) if "title" in frame.columns else [""] * len(frame)
    given = frame[label_column].fillna("").astype(str) if label_column else None
    flags = frame["needs_review"] if "needs_review" in frame.columns else [False] * len(frame)
    review = [str(flag).lower() == "true" for flag in flags]
    rows = []
    for i, (source, id_, area, runner) in enumerate(
        zip(frame["source"].astype(str), frame["id"].astype(str), frame["area"].fillna("").astype(str),
            frame["runner_up"].fillna("").astype(str))
    ):  # fmt: skip
        label = (given.iloc[i] or None) if given is not None else labels.get(id_)
        title = titles[i] if isinstance(titles, list) else titles.iloc[i]
        row = (source, int(position.iloc[i]), id_, title, area, float(confidence.iloc[i]), runner)
        rows.append(Row(*row, float(runner_up.iloc[i]), label, review[i]))
    return rows


def _label_column(columns: list, named: str, path: str) -> str:
    """The column of hand labels that ``--label-column NAME`` names in a tags file: the input
    column kept under that name, matched without regard to case as every column option is;
    an input column named as one of tagger's own (``area``) is kept as ``input_area``, and a
    name that only matches the tag itself is refused: labels compared with the tags they are
    would be right 100% of the time."""
    from .errors import InputError
    from .output import RESERVED, kept_name

    by_lower = {str(column).lower(): str(column) for column in columns}
    kept = kept_name(named.lower())
    if kept in by_lower:
        return by_lower[kept]
    if named.lower() in RESERVED:
        raise InputError(
            f"{named!r} is tagger's own column (the tag), not a column of hand labels",
            where=path,
            fix=f"Keep the input's column with predict --keep {named} (it is written as {kept_name(named)}).",
        )
    listed = ", ".join(map(str, columns))
    raise InputError(
        f"no {named!r} column (columns: {listed})",
        where=path,
        fix="Give the output of tagger predict (with --keep for a column of labels).",
    )


def _numbers(frame, column: str, path: str, name: str):
    """A column of a tags file as numbers, each checked: a probability in [0, 1], a position
    a whole number from 1; the first that is not is an error naming its line."""
    import pandas as pd

    from .errors import InputError

    values = pd.to_numeric(frame[column], errors="coerce").astype(float).to_numpy()
    if column == "position":
        bad = ~np.isfinite(values) | (values < 1) | (values != np.floor(values)) | (values > 2**53)
        what = "a whole number from 1"
    else:
        bad = ~np.isfinite(values) | (values < 0) | (values > 1)
        what = "a probability from 0 to 1"
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        line = row + (2 if name.endswith(".csv") else 1)  # (CSV: after the header)
        where = f"{path}:{line}" if not name.endswith(".parquet") else f"{path}:row {row + 1}"
        raise InputError(
            f"{column} {frame[column].iloc[row]!r} is not {what}",
            where=where,
            fix="Give the output of tagger predict as it wrote it.",
        )
    return pd.Series(values.astype(int) if column == "position" else values)


def build(rows: Sequence[Row], model: Model | None, title: str) -> str:
    """The report as HTML text."""
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        f"<h1>{_e(title)}</h1>",
        f"<p class=muted>{len(rows):,} abstracts, tagged; made {when}"
        + (f" with the model trained {_e(model.card.created[:10])}" if model is not None else "")
        + "</p>",
        _nav(),
        _areas(rows),
        _confidence(rows),
        _worth_a_look(rows),
        _terms(model),
    ]
    return PAGE.format(title=_e(title), body="\n".join(parts))


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _svg(tag: str, cls: str, **attributes: float) -> str:
    """One SVG shape, its numbers to a tenth of a pixel."""
    values = " ".join(f'{name}="{value:.1f}"' for name, value in attributes.items())
    return f'<{tag} {values} class="{cls}"/>'


def _nav() -> str:
    links = [("areas", "Areas by count"), ("confidence", "Confidence"), ("look", "Worth a look"),
             ("terms", "Terms of each area")]  # fmt: skip
    return "<nav>" + " · ".join(f'<a href="#{anchor}">{name}</a>' for anchor, name in links) + "</nav>"


def _areas(rows: Sequence[Row]) -> str:
    counts = Counter(row.area for row in rows).most_common()
    review = Counter(row.area for row in rows if row.needs_review)
    if not counts:
        return "<section id=areas><h2>Areas by count</h2><p>No abstracts.</p></section>"
    top = counts[0][1]
    bar_width, height = 420, 22
    svg = [f'<svg width="{bar_width + 260}" height="{height * len(counts) + 4}" role="img" '
           'aria-label="abstracts per area">']  # fmt: skip
    for i, (area, n) in enumerate(counts):
        y = i * height + 2
        width = max(1.0, bar_width * n / top)
        svg.append(f'<text x="0" y="{y + 15}" class="label">{_e(area)}</text>')
        svg.append(f'<rect x="120" y="{y + 3}" width="{width:.1f}" height="{height - 7}" class="bar"/>')
        svg.append(
            f'<text x="{126 + width:.1f}" y="{y + 15}" class="count">{n:,} ({n / len(rows):.0%})</text>'
        )
    svg.append("</svg>")
    table = "".join(
        f"<tr><td>{_e(area)}</td><td>{n:,}</td><td>{n / len(rows):.1%}</td><td>{review[area]:,}</td></tr>"
        for area, n in counts
    )
    return (
        "<section id=areas><h2>Areas by count</h2>" + "".join(svg)
        + "<table><tr><th>area</th><th>abstracts</th><th>share</th><th>need review</th></tr>"
        + table + "</table></section>"
    )  # fmt: skip


def _confidence(rows: Sequence[Row]) -> str:
    confidence = np.array([row.confidence for row in rows], dtype=float)
    correct = np.array([row.area == row.label for row in rows], dtype=bool)
    labelled = np.array([bool(row.label) for row in rows], dtype=bool)
    edges = np.linspace(0.0, 1.0, CALIBRATION_BINS + 1)

    def by_bin(chosen: np.ndarray) -> dict[int, dict]:
        """The confidence bins (count, accuracy) of the rows ``chosen``, by bin number."""
        return {
            round(b["low"] * CALIBRATION_BINS): b
            for b in calibration_bins(confidence[chosen], correct[chosen])
        }

    every = by_bin(np.ones(len(rows), dtype=bool))
    counts = np.array([every[b]["count"] if b in every else 0 for b in range(CALIBRATION_BINS)])
    right = {b: (found["count"], found["accuracy"]) for b, found in by_bin(labelled).items()}
    width, height, left, bottom = 600, 220, 40, 30
    plot_w, plot_h = width - left - 90, height - bottom - 10
    top = max(int(counts.max()) if len(counts) else 1, 1) * 1.12  # room for the count above
    step = plot_w / CALIBRATION_BINS
    svg = [
        f'<svg width="{width}" height="{height}" role="img" aria-label="confidence histogram">',
        _svg("line", x1=left, y1=10 + plot_h, x2=left + plot_w, y2=10 + plot_h, cls="axis"),
    ]
    for b in range(CALIBRATION_BINS):
        h = plot_h * counts[b] / top
        x = left + b * step
        svg.append(_svg("rect", x=x + 2, y=10 + plot_h - h, width=step - 4, height=h, cls="bar"))
        svg.append(f'<text x="{x + step / 2:.1f}" y="{height - 12}" class="tick">{edges[b]:.1f}</text>')
        if counts[b]:
            svg.append(
                f'<text x="{x + step / 2:.1f}" y="{6 + plot_h - h:.1f}" class="tick">{counts[b]:,}</text>'
            )
    if right:  # accuracy of the labelled abstracts per bin, on a 0-1 scale of the same height
        points = " ".join(
            f"{left + (b + 0.5) * step:.1f},{10 + plot_h * (1 - acc):.1f}" for b, (_, acc) in right.items()
        )
        svg.append(f'<polyline points="{points}" class="accuracy"/>')
        for b, (_, acc) in right.items():
            svg.append(
                _svg("circle", cx=left + (b + 0.5) * step, cy=10 + plot_h * (1 - acc), r=3.5, cls="dot")
            )
        svg.append(f'<line x1="{left}" y1="{10 + plot_h}" x2="{left + plot_w}" y2="10" class="diagonal"/>')
        svg.append(f'<text x="{left + plot_w + 2}" y="14" class="scale">accuracy 1</text>')
        svg.append(f'<text x="{left + plot_w + 2}" y="{10 + plot_h}" class="scale">0</text>')
    svg.append(f'<text x="{left + plot_w / 2:.1f}" y="{height}" class="tick">confidence</text></svg>')
    rows_html = "".join(
        f"<tr><td>{edges[b]:.1f}-{edges[b + 1]:.1f}</td><td>{counts[b]:,}</td>"
        + (f"<td>{right[b][0]:,}</td><td>{right[b][1]:.2f}</td>" if b in right else "<td>0</td><td></td>")
        + "</tr>"
        for b in range(CALIBRATION_BINS)
    )
    if labelled.any():
        l_conf, l_right = confidence[labelled], correct[labelled]
        summary = (
            f"<p>{labelled.sum():,} of these abstracts are labelled: the tag is right for "
            f"{l_right.mean():.0%} of them, at a mean confidence of {l_conf.mean():.2f} "
            f"(expected calibration error {expected_calibration_error(l_conf, l_right):.3f}). The dots are "
            "their accuracy in each bin, the dashed line where accuracy equals confidence.</p>"
        )
    else:
        summary = "<p>None of these abstracts is labelled: no accuracy to set against the confidence.</p>"
    return (
        "<section id=confidence><h2>Confidence</h2>"
        f"<p>Mean confidence {confidence.mean() if len(rows) else 0:.2f}; "
        f"{sum(row.needs_review for row in rows):,} of {len(rows):,} need review (below the model's "
        "review threshold). The bars count the abstracts in each confidence bin.</p>"
        + "".join(svg) + summary
        + "<table><tr><th>confidence</th><th>abstracts</th><th>labelled</th><th>right</th></tr>"
        + rows_html + "</table></section>"
    )  # fmt: skip


def _worth_a_look(rows: Sequence[Row]) -> str:
    lowest = sorted(rows, key=lambda r: (r.confidence, r.source, r.position))[:WORTH_A_LOOK]
    closest = sorted(rows, key=lambda r: (r.confidence - r.runner_up_confidence, r.source, r.position))[
        :WORTH_A_LOOK
    ]

    def table(chosen: list[Row]) -> str:
        body = "".join(
            f"<tr><td>{_e(r.source)} #{r.position}</td><td>{_e(r.id)}</td><td>{_e(r.title)}</td>"
            f"<td>{_e(r.area)} {r.confidence:.2f}</td><td>{_e(r.runner_up)} {r.runner_up_confidence:.2f}</td>"
            f"<td>{_e(r.label or '')}</td></tr>"
            for r in chosen
        )
        return ("<table><tr><th>where</th><th>id</th><th>title</th><th>area</th><th>runner-up</th>"
                "<th>label</th></tr>" + body + "</table>")  # fmt: skip

    return (
        "<section id=look><h2>Worth a look</h2>"
        "<p>The abstracts the model is least sure of, and those whose two best areas are closest: "
        "label these first (<code>tagger label</code> asks for such abstracts).</p>"
        f"<h3>Lowest confidence</h3>{table(lowest)}<h3>Closest runner-up</h3>{table(closest)}</section>"
    )


def _terms(model: Model | None) -> str:
    if model is None:
        return "<section id=terms><h2>Terms of each area</h2><p>No model given.</p></section>"
    terms = model.area_terms(TERMS)
    body = "".join(
        f"<tr><td>{_e(area)}</td><td>{_e(', '.join(found))}</td></tr>" for area, found in terms.items()
    )
    return (
        "<section id=terms><h2>Terms of each area</h2><p>The terms that weigh most toward each area "
        "in the model (its weight for the term less the mean over areas).</p>"
        f"<table><tr><th>area</th><th>terms</th></tr>{body}</table></section>"
    )


PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ margin: 0 auto; max-width: 60rem; padding: 1rem 1.5rem 3rem; color: #1d1d1f;
       font: 15px/1.5 system-ui, sans-serif; }}
h1 {{ font-size: 1.5rem; margin-bottom: .2rem; }}
h2 {{ font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #d9dce1; }}
.muted {{ color: #5f6368; margin-top: 0; }}
nav a {{ color: #1a5fb4; }}
table {{ border-collapse: collapse; margin: .6rem 0; font-variant-numeric: tabular-nums; }}
td, th {{ padding: .2rem .7rem .2rem 0; text-align: left; vertical-align: top;
          border-bottom: 1px solid #eef0f2; }}
svg text {{ font: 12px system-ui, sans-serif; fill: #1d1d1f; }}
svg .tick {{ text-anchor: middle; fill: #5f6368; }}
svg .bar {{ fill: #8fb8ef; }}
svg .axis {{ stroke: #5f6368; }}
svg .accuracy {{ fill: none; stroke: #b35c00; stroke-width: 2; }}
svg .dot {{ fill: #b35c00; }}
svg .diagonal {{ stroke: #9aa0a6; stroke-dasharray: 4 3; }}
svg .scale {{ fill: #b35c00; }}
</style>
</head>
<body>
{body}
</body>
</html>
"""
