"""An overview of a tagged pile as one self-contained HTML page (``tagger report``, and the
labelling page's report link): the areas by count, confidence against accuracy where labels
exist, the abstracts most worth a look, and the terms of each area. No script, no fonts, no
request of its own: it opens offline, and every text in it is escaped.
"""

from __future__ import annotations

import datetime
import html
import logging
import zlib
from collections import Counter
from collections.abc import Container, Sequence
from dataclasses import dataclass
from itertools import islice

import numpy as np

from .evaluate import CALIBRATION_BINS, Bins
from .formats import GZIP, TAGS, list_of, split_name
from .labelstore import NONE
from .model import Model
from .schema import BY_NAME, PREDICTION_COLUMNS, RESERVED, Field

WORTH_A_LOOK = 15  # abstracts in each list
TERMS = 12  # terms shown per area


@dataclass(frozen=True)
class Row:
    """One tagged abstract of the lists worth a look: where it is, what it was tagged, and
    (when labelled) its area."""

    source: str
    position: int
    id: str
    title: str
    area: str
    confidence: float
    runner_up: str
    runner_up_confidence: float
    label: str


log = logging.getLogger("tagger.report")  # what it is doing (shown on a terminal: tagger.feedback)

# The columns of a tags file the report needs (tagger.schema); it reads title and needs_review
# too where they are.
NEEDED = ("source", "position", "id", "area", "confidence", "runner_up", "runner_up_confidence")
CHUNK_ROWS = 50_000  # a tags file is read this many rows at a time: millions of rows stream


class Overview:
    """What the report shows of a tagged pile, gathered a chunk of rows at a time (a chunk:
    arrays by column name, :data:`NEEDED` and ``title``, ``needs_review``, ``label``), so
    that a file of millions of rows needs the memory of one chunk."""

    def __init__(self, answers_none: bool = False) -> None:
        # whether the model answers none: then a none label is one like any other (right when
        # the tag is none); otherwise such abstracts are never right, and counted apart
        self.answers_none = answers_none
        self.rows = 0
        self.areas: Counter = Counter()
        self.review: Counter = Counter()
        self.confidence_sum = 0.0
        self.every = Bins()
        self.labelled = Bins()
        self.unseen = Bins()  # the labelled abstracts the model was not trained on
        self.no_area = 0  # abstracts labelled as fitting no area
        self.no_area_answered = 0  # of them, those tagged none
        self.no_area_flagged = 0  # and of the others, those that need review
        self.lowest: list[tuple] = []  # (key, Row), the WORTH_A_LOOK least confident
        self.closest: list[tuple] = []  # the WORTH_A_LOOK with the closest runner-up

    def add(self, chunk: dict[str, np.ndarray]) -> None:
        n = len(chunk["area"])
        confidence, labels = chunk["confidence"], chunk["label"]
        self.areas.update(chunk["area"].tolist())
        self.review.update(chunk["area"][chunk["needs_review"]].tolist())
        self.confidence_sum += float(confidence.sum())
        self.every.add(confidence, np.zeros(n, dtype=bool))
        none = labels == NONE
        self.no_area += int(none.sum())
        answered = none & (chunk["area"] == NONE)
        self.no_area_answered += int(answered.sum())
        self.no_area_flagged += int((none & ~answered & chunk["needs_review"]).sum())
        labelled = (labels != "") & (~none | self.answers_none)
        self.labelled.add(confidence[labelled], (chunk["area"] == labels)[labelled])
        unseen = labelled & ~chunk["trained"] if "trained" in chunk else labelled
        self.unseen.add(confidence[unseen], (chunk["area"] == labels)[unseen])
        order = np.arange(self.rows, self.rows + n)
        self.lowest = self._least(self.lowest, chunk, confidence, order)
        self.closest = self._least(self.closest, chunk, confidence - chunk["runner_up_confidence"], order)
        self.rows += n

    @staticmethod
    def _least(kept: list[tuple], chunk: dict[str, np.ndarray], key: np.ndarray, order: np.ndarray):
        """The WORTH_A_LOOK rows of least ``key`` among ``kept`` and the chunk (then by
        source, position and order read)."""
        sources, positions = chunk["source"], chunk["position"]
        if len(key) > WORTH_A_LOOK:  # the chunk's own least first, without a Row for each
            below = np.partition(key, WORTH_A_LOOK - 1)[WORTH_A_LOOK - 1]
            candidates = np.flatnonzero(key <= below)
        else:
            candidates = np.arange(len(key))
        fields: list[str] = [name for name in Row.__dataclass_fields__ if name != "label"]
        found = [
            (
                (float(key[i]), str(sources[i]), int(positions[i]), int(order[i])),
                Row(**{name: chunk[name][i].item() if hasattr(chunk[name][i], "item") else chunk[name][i]
                       for name in fields}, label=str(chunk["label"][i])),
            )
            for i in candidates
        ]  # fmt: skip
        return sorted(kept + found, key=lambda pair: pair[0])[:WORTH_A_LOOK]

    @property
    def mean_confidence(self) -> float:
        return self.confidence_sum / self.rows if self.rows else 0.0


def overview_of(
    abstracts,
    predictions,
    labels: dict[str, str] | None = None,
    trained: Container[str] = (),
    answers_none: bool = False,
) -> Overview:
    """The overview of tagged abstracts (:class:`tagger.reading.Abstract` and their
    predictions); ``labels`` maps the digest of a text to its hand label; ``trained``: the
    digests of the texts the model was trained on; ``answers_none``: whether the model
    answers none (see :class:`Overview`)."""

    labels = labels or {}
    digests = [a.digest for a in abstracts]
    columns = {
        "source": [a.source for a in abstracts],
        "position": [a.position for a in abstracts],
        "id": [a.id for a in abstracts],
        "title": [a.title or "" for a in abstracts],
        **{name: [getattr(p, name) for p in predictions] for name in PREDICTION_COLUMNS},
        "label": [labels.get(digest, "") for digest in digests],
        "trained": [digest in trained for digest in digests],
    }
    overview = Overview(answers_none)
    types = {name: field.dtype for name, field in BY_NAME.items()} | {"trained": bool}
    overview.add({name: np.array(values, dtype=types.get(name, object)) for name, values in columns.items()})
    return overview


def read_tags(
    path: str,
    labels: dict[str, str] | None = None,
    label_column: str | None = None,
    chunk_rows: int = CHUNK_ROWS,
    trained: Container[str] = (),
    areas: Sequence[str] = (),
) -> Overview:
    """The overview of a file ``tagger predict`` wrote (CSV, JSON lines or Parquet, by its
    name; ``.gz`` too), read ``chunk_rows`` rows at a time. Each row's hand label: its
    ``label_column`` (kept with ``--keep``), or ``labels`` (digest of the text to area) by its
    ``id`` (a digest when the input had no ids). Every cell is checked as the tagged row's
    schema says (:mod:`tagger.schema`); the first that is not what predict writes is an error
    naming its line. ``trained``: the ids of the abstracts the model was trained on (the
    digests of its training texts, and ids naming them), whose accuracy is said apart;
    ``areas``: the model's, which a label column's labels must be
    (:func:`tagger.evaluate.refuse_unknown_areas`), and whether it answers none (see
    :class:`Overview`)."""
    from .evaluate import refuse_unknown_areas

    overview = Overview(NONE in areas)
    labels = labels or {}
    for start, frame, kind, label_name in _chunks(path, label_column, chunk_rows):
        line = start + (2 if kind == "csv" else 1)  # (CSV: after the header)

        def where(row: int, line: int = line, rows: bool = kind == "parquet") -> str:
            return f"{path}:row {line + row}" if rows else f"{path}:{line + row}"

        chunk = {column: BY_NAME[column].read(frame[column].tolist(), where) for column in NEEDED}
        n = len(frame)
        chunk["title"] = _text(frame, "title", n)
        chunk["needs_review"] = (
            BY_NAME["needs_review"].read(frame["needs_review"].tolist(), where)
            if "needs_review" in frame.columns
            else np.zeros(n, dtype=bool)
        )
        if label_name is not None:
            chunk["label"] = _text(frame, label_name, n)
            if areas:
                refuse_unknown_areas(chunk["label"].tolist(), areas, f"{path}: column {label_name!r}")
        else:
            chunk["label"] = np.array([labels.get(i, "") for i in chunk["id"].tolist()], dtype=object)
        chunk["trained"] = np.array([i in trained for i in chunk["id"].tolist()], dtype=bool)
        overview.add(chunk)
        log.info("read %s rows of %s", f"{overview.rows:,}", path)
    return overview


def _text(frame, column: str, n: int) -> np.ndarray:
    """A column of text of a tags file, read as the schema reads text; empty where it is not."""
    if column not in frame.columns:
        return np.full(n, "", dtype=object)
    return Field(column, "text").read(frame[column].tolist(), where=None)


def _chunks(path: str, label_column: str | None, chunk_rows: int):
    """``(row number of the first, frame, format, label column)`` of each chunk of
    a tags file, after its columns are checked (the label column: the real name of the one
    ``label_column`` names)."""
    from .errors import InputError

    form, compression = split_name(path)
    kinds = {"csv": _csv_chunks, "jsonl": _jsonl_chunks, "parquet": _parquet_chunks, "xlsx": _xlsx_chunks}
    if form is None or not form.tags or compression not in (None, GZIP):
        raise InputError(
            "not a file tagger predict writes", where=path, fix=f"Give its {list_of(TAGS)} output."
        )
    kind = kinds[form.name]
    start, checked, renamed = 0, False, None
    try:
        for frame in kind(path, chunk_rows):
            if not checked:
                columns = [str(column) for column in frame.columns]
                renamed = _label_column(columns, label_column, path) if label_column is not None else None
                _check_columns(columns, path)
                checked = True
            yield start, frame, form.name, renamed
            start += len(frame)
    except FileNotFoundError:
        raise InputError("file not found", where=path, fix="Give the output of tagger predict.") from None
    except (ValueError, OSError, EOFError, zlib.error, UnicodeDecodeError) as error:
        raise InputError(f"unreadable ({str(error).splitlines()[0]})", where=path,
                         fix="Give the output of tagger predict.") from None  # fmt: skip
    if not checked:
        _check_columns([], path)


def _check_columns(columns: list[str], path: str) -> None:
    from .errors import InputError

    missing = [column for column in NEEDED if column not in columns]
    if missing:
        raise InputError(
            f"no {', '.join(map(repr, missing))} column (columns: {', '.join(columns)})",
            where=path,
            fix="Give the output of tagger predict (with --keep for a column of labels).",
        )


def _csv_chunks(path: str, rows: int):
    import pandas as pd

    from .formulas import unguarded

    with pd.read_csv(path, dtype=str, keep_default_na=False, chunksize=rows) as reader:
        for chunk in reader:  # (cells as predict wrote them: a formula's guard read back)
            yield chunk.rename(columns=unguarded).apply(lambda cells: cells.map(unguarded))


def _xlsx_chunks(path: str, rows: int):
    """A workbook's first sheet in frames of ``rows`` rows, every cell as the text CSV holds."""
    import pandas as pd
    from openpyxl import load_workbook

    book = load_workbook(path, read_only=True, data_only=True)
    try:
        cells = book.worksheets[0].iter_rows(values_only=True)
        header = ["" if name is None else str(name) for name in next(cells, ())]
        width, none = len(header), True
        while chunk := [[_cell_text(value) for value in row[:width]] for row in islice(cells, rows)]:
            none = False
            yield pd.DataFrame(
                [row + [""] * (width - len(row)) for row in chunk], columns=header, dtype=object
            )
        if none:
            yield pd.DataFrame(columns=header, dtype=object)
    finally:
        book.close()


def _cell_text(value) -> str:
    return "" if value is None else str(value)


def _jsonl_chunks(path: str, rows: int):
    import pandas as pd

    with pd.read_json(path, lines=True, dtype=False, chunksize=rows) as reader:
        yield from reader


def _parquet_chunks(path: str, rows: int):
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as parquet:
        for batch in parquet.iter_batches(batch_size=rows):
            batch.validate(full=True)  # text that is not UTF-8: ArrowInvalid (a ValueError), said
            yield batch.to_pandas()
        if parquet.metadata.num_rows == 0:
            yield parquet.schema_arrow.empty_table().to_pandas()


def _label_column(columns: list, named: str, path: str) -> str:
    """The column of hand labels that ``--label-column NAME`` names in a tags file: the input
    column kept under that name, matched without regard to case as every column option is;
    an input column named as one of tagger's own (``area``) is kept as ``input_area``, and a
    name that only matches the tag itself is refused: labels compared with the tags they are
    would be right 100% of the time."""
    from .errors import InputError
    from .output import kept_name

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


def build(overview: Overview, model: Model | None, title: str) -> str:
    """The report as HTML text."""
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        f"<h1>{_e(title)}</h1>",
        f"<p class=muted>{overview.rows:,} abstracts, tagged; made {when}"
        + (f" with the model trained {_e(model.card.created[:10])}" if model is not None else "")
        + "</p>",
        _nav(),
        _areas(overview),
        _confidence(overview, model),
        _worth_a_look(overview),
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


def _areas(overview: Overview) -> str:
    counts, review, total = overview.areas.most_common(), overview.review, overview.rows
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
        svg.append(f'<text x="{126 + width:.1f}" y="{y + 15}" class="count">{n:,} ({n / total:.0%})</text>')
    svg.append("</svg>")
    table = "".join(
        f"<tr><td>{_e(area)}</td><td>{n:,}</td><td>{n / total:.1%}</td><td>{review[area]:,}</td></tr>"
        for area, n in counts
    )
    return (
        "<section id=areas><h2>Areas by count</h2>" + "".join(svg)
        + "<table><tr><th>area</th><th>abstracts</th><th>share</th><th>need review</th></tr>"
        + table + "</table></section>"
    )  # fmt: skip


def _confidence(overview: Overview, model: Model | None = None) -> str:
    edges = overview.every.edges
    counts = overview.every.count
    right = {
        round(b["low"] * CALIBRATION_BINS): (b["count"], b["accuracy"]) for b in overview.labelled.table()
    }
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
        x = left + plot_w
        svg.append(_svg("line", x1=x, y1=10, x2=x, y2=10 + plot_h, cls="axis"))
        for value in (0.0, 0.5, 1.0):  # the accuracy scale, on the right
            y = 10 + plot_h * (1 - value)
            svg.append(f'<text x="{x + 4}" y="{y + 4:.1f}" class="scale">{value:.1f}</text>')
        svg.append(
            f'<text x="{x + 28}" y="{10 + plot_h / 2:.1f}" class="scale">accuracy</text>'
            f'<text x="{x + 28}" y="{24 + plot_h / 2:.1f}" class="scale">(dots)</text>'
        )
    svg.append(f'<text x="{left + plot_w / 2:.1f}" y="{height}" class="tick">confidence</text></svg>')
    rows_html = "".join(
        f"<tr><td>{edges[b]:.1f}-{edges[b + 1]:.1f}</td><td>{counts[b]:,}</td>"
        + (f"<td>{right[b][0]:,}</td><td>{right[b][1]:.2f}</td>" if b in right else "<td>0</td><td></td>")
        + "</tr>"
        for b in range(CALIBRATION_BINS)
    )
    labelled = overview.labelled
    if (n_labelled := int(labelled.count.sum())) > 0:
        summary = (
            f"<p>{n_labelled:,} of these abstracts are labelled: the tag is right for "
            f"{labelled.right.sum() / n_labelled:.0%} of them, at a mean confidence of "
            f"{labelled.confidence.sum() / n_labelled:.2f} "
            f"(expected calibration error {labelled.ece():.3f}). The dots are "
            "their accuracy in each bin (the scale on the right), the dashed line where accuracy "
            "equals confidence.</p>" + _trained_on(overview, model)
        )
    else:
        summary = "<p>None of these abstracts is labelled: no accuracy to set against the confidence.</p>"
    if overview.no_area:
        others = overview.no_area - overview.no_area_answered
        summary += (
            f"<p>{overview.no_area:,} {'is' if overview.no_area == 1 else 'are'} labelled as fitting no "
            f"area{' (counted above)' if overview.answers_none else ''}: {overview.no_area_answered:,} "
            f"tagged {NONE}"
            + (f"; of the {others:,} others, {overview.no_area_flagged:,} need review" if others else "")
            + ".</p>"
        )
    return (
        "<section id=confidence><h2>Confidence</h2>"
        f"<p>Mean confidence {overview.mean_confidence:.2f}; "
        f"{sum(overview.review.values()):,} of {overview.rows:,} need review (below the model's "
        "review threshold). The bars count the abstracts in each confidence bin.</p>"
        + "".join(svg) + summary
        + "<table><tr><th>confidence</th><th>abstracts</th><th>labelled</th><th>right</th></tr>"
        + rows_html + "</table></section>"
    )  # fmt: skip


def _trained_on(overview: Overview, model: Model | None) -> str:
    """What the accuracy of labelled abstracts is worth when the model learnt from some of
    them: how many, the accuracy on the others, and the model's cross-validated accuracy."""
    seen = int(overview.labelled.count.sum() - overview.unseen.count.sum())
    if not seen:
        return ""
    unseen = int(overview.unseen.count.sum())
    rest = (
        f"; on the other {unseen:,}, which it did not learn from, the tag is right for "
        f"{overview.unseen.right.sum() / unseen:.0%}"
        if unseen
        else ""
    )
    validated = (
        f"; its cross-validated accuracy is {model.card.evaluation.accuracy:.2f} (each labelled "
        "abstract tagged by a model trained without it)"
        if model is not None
        else ""
    )
    return (
        f"<p>The model was trained on {seen:,} of them: it is right more often on what it learnt "
        f"from than on new abstracts, so the figure above flatters it{rest}{validated}.</p>"
    )


def _worth_a_look(overview: Overview) -> str:
    lowest = [row for _, row in overview.lowest]
    closest = [row for _, row in overview.closest]

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
