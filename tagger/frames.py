"""pandas: tag a dataframe's abstracts, or train from one. The same documents (title and
abstract), the same model and the same prediction columns as ``tagger predict``; the Dask
helpers (:mod:`tagger.cluster`) apply :func:`tag_dataframe` to each partition.
"""

from __future__ import annotations

import os

import numpy as np

from .checks import a_kind
from .errors import ArgumentError
from .model import Model, resolve
from .output import prediction_table
from .prediction import default_tags
from .reading import Columns, abstract_id, document
from .reading.records import ambiguous_names, field_names
from .schema import PREDICTION_COLUMNS, probability_columns
from .schema import field as schema_field
from .text import abstract_problem, empty


def as_frame(frame, column: str = "abstract"):
    """A dataframe to tag: ``frame`` itself, or a Series of abstracts as a one-column frame."""
    import pandas as pd

    if isinstance(frame, pd.Series):
        return frame.to_frame(name=column)
    if not isinstance(frame, pd.DataFrame):
        raise ArgumentError(
            f"tag_dataframe takes a pandas DataFrame (or Series), not a {type(frame).__name__}",
            fix="For a list of texts, use tagger.predict(texts).",
        )
    return frame


def _text_column(frame, name: str):
    """The column ``name`` of ``frame``, checked to hold text (or nothing) in every row."""
    import pandas as pd

    if name not in frame.columns:
        raise ArgumentError(
            f"the dataframe has no column {name!r} (columns: {', '.join(map(repr, frame.columns))})",
            fix="Name the column with column= (and title_column=).",
        )
    values = frame[name]
    if isinstance(values, pd.DataFrame):
        raise ArgumentError(
            f"the dataframe has {values.shape[1]} columns named {name!r}", fix="Rename all but one."
        )
    if not (pd.api.types.is_string_dtype(values.dtype) and values.dtype != object):
        for index, value in values.items():
            if not isinstance(value, str) and not (pd.api.types.is_scalar(value) and pd.isna(value)):
                raise ArgumentError(
                    f"column {name!r} holds a {type(value).__name__} at row {index!r}, not text",
                    fix="Give abstracts (and titles) as strings; a missing one as None.",
                )
    return values


def _names_checked(column, title_column) -> None:
    """column= and title_column= are names (str), or a clear error."""
    for option, name in (("column", column), ("title_column", title_column)):
        if name is not None and not isinstance(name, str):
            raise ArgumentError(
                f"{option}= takes a column's name, a str, not {a_kind(name)}",
                fix="Name the columns with strings (frame.columns = frame.columns.astype(str)).",
            )


def matched_columns(
    frame, column: str = "abstract", title_column: str | None = None
) -> tuple[str, str | None]:
    """The frame's columns of abstracts and titles, matched as ``tagger predict`` matches a
    file's (without regard to case; a ``title`` column is read when there is one)."""
    _names_checked(column, title_column)
    names = [name for name in frame.columns if isinstance(name, str)]
    columns = Columns(abstract=column, title=title_column or "title")
    if twice := ambiguous_names(names, columns):
        raise ArgumentError(f"the dataframe has {twice}", fix="Rename all but one, or drop them.")
    found = field_names(names, columns)
    if title_column is not None and "title" not in found:
        _text_column(frame, title_column)  # (the error naming the columns)
    return found.get("abstract", column), found.get("title")


def documents(
    frame, column: str = "abstract", title_column: str | None = None
) -> tuple[list[str], np.ndarray, list[str]]:
    """What the classifier reads for each row that has an abstract (title and abstract, as
    ``tagger predict`` reads a file with a title column), which rows have one at all (missing
    or blank ones do not), and the text id of each of those (its abstract's, as when read from
    a file). Columns are matched as :func:`matched_columns` does."""
    column, title_column = matched_columns(frame, column, title_column)
    texts = _strings(_text_column(frame, column))
    titles = _strings(_text_column(frame, title_column)) if title_column else [""] * len(texts)
    present = np.array([not empty(text) for text in texts], dtype=bool)
    for index, text, ok in zip(frame.index, texts, present):
        if ok and (problem := abstract_problem(text)):  # (the one rule of files and predict)
            raise ArgumentError(f"row {index!r} of column {column!r}: {problem.what}", fix=problem.fix)
    kept = [(text, title) for text, title, ok in zip(texts, titles, present) if ok]
    return [document(text, title) for text, title in kept], present, [abstract_id(text) for text, _ in kept]


def _strings(values) -> list[str]:
    """A column's texts as Python strings, a missing one empty (as they are: pandas' string
    dtype cannot hold every Python string, such as a lone surrogate)."""
    return [value if isinstance(value, str) else "" for value in values.tolist()]


def tag_dataframe(  # noqa: PLR0913 (the public keyword options)
    frame,
    column: str = "abstract",
    title_column: str | None = None,
    model: Model | str | os.PathLike | None = None,
    *,
    review_below: float | None = None,
    prefix: str = "",
    all_probabilities: bool = False,
):
    """``frame`` with the columns ``tagger predict`` adds to each row (``id`` unless the frame
    has an id column of its own, ``area``, ``confidence``, ``runner_up``,
    ``runner_up_confidence``, ``needs_review``, ``tags``: a list of (area, probability), each
    name after ``prefix``), one per row, in order: the values ``tagger predict`` writes for
    the same rows in a file, in full
    precision (it writes four decimals), as :func:`tagger.predict` gives them (the
    abstracts' and titles' columns matched as it matches them: ``Abstract`` and ``Title`` too,
    a ``title`` column read when there is one). A row without an abstract (missing or
    blank) gets a missing area, NaN confidences and ``needs_review``; no row is dropped. A
    Series is tagged as a frame of one column of abstracts. With ``all_probabilities``, every
    area's probability too, a column each (``probability_AREA``, as ``tagger predict
    --all-probabilities`` writes them). A column the prediction would overwrite is an error:
    give a ``prefix``."""
    _names_checked(column, title_column)
    frame = as_frame(frame, column)
    own_id = "id" in field_names([c for c in frame.columns if isinstance(c, str)], Columns(abstract=column))
    model = resolve(model)
    every_area = probability_columns(model.areas) if all_probabilities else ()
    added = [*([] if own_id else ["id"]), *PREDICTION_COLUMNS, "tags", *every_area]
    clash = [name for name in added if prefix + name in frame.columns]
    if clash:
        raise ArgumentError(
            f"the dataframe has a column {prefix + clash[0]!r} already: tagging would overwrite it",
            fix="Pass prefix= (for example prefix='predicted_'), or rename that column.",
        )
    docs, present, ids = documents(frame, column, title_column)
    probabilities = model.predict_proba(docs)
    table = prediction_table(probabilities, model, review_below, digits=None)
    table["id"] = ids
    table["tags"] = default_tags(probabilities, model.areas)
    table.update({name: probabilities[:, i].tolist() for i, name in enumerate(every_area)})
    columns = {}
    for name in added:
        field = schema_field(name)
        assert field is not None  # (every added column is one of tagger's)
        columns[prefix + name] = np.full(len(frame), field.missing, dtype=field.dtype)
        columns[prefix + name][present] = _values(table[name])
    return frame.assign(**columns)


def _values(values: list) -> np.ndarray:
    """A list as a 1-D array of objects, even when its items are lists (the tags)."""
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array
