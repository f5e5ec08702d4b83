"""pandas: tag a dataframe's abstracts, or train from one. The same documents (title and
abstract), the same model and the same prediction columns as ``tagger predict``; the Dask
helpers (:mod:`tagger.cluster`) apply :func:`tag_dataframe` to each partition.
"""

from __future__ import annotations

import numpy as np

from .corpus import document
from .errors import UsageError
from .model import Model, load_model
from .output import prediction_table
from .prediction import COLUMNS as PREDICTION_COLUMNS

# The dtype of each prediction column in a dataframe, and its value in a row without an abstract.
DTYPES = {
    "area": object,
    "confidence": float,
    "runner_up": object,
    "runner_up_confidence": float,
    "needs_review": bool,
}
MISSING = {
    "area": None,
    "confidence": np.nan,
    "runner_up": None,
    "runner_up_confidence": np.nan,
    "needs_review": True,
}


def documents(
    frame, column: str = "abstract", title_column: str | None = None
) -> tuple[list[str], np.ndarray]:
    """Which rows have an abstract at all (missing or blank ones do not), and what the
    classifier reads for each of those (title and abstract, as for a file with a title column)."""
    for name in (column, title_column):
        if name is not None and name not in frame.columns:
            raise UsageError(
                f"the dataframe has no column {name!r} (columns: {', '.join(map(repr, frame.columns))})",
                fix="Name the column with column= (and title_column=).",
            )
    texts = frame[column].astype("string").fillna("")
    titles = frame[title_column].astype("string").fillna("") if title_column else None
    present = texts.str.strip().str.len().to_numpy() > 0
    title_list = titles.tolist() if titles is not None else [""] * len(texts)
    docs = [document(text, title) for text, title, ok in zip(texts.tolist(), title_list, present) if ok]
    return docs, present


def tag_dataframe(
    frame,
    column: str = "abstract",
    title_column: str | None = None,
    model: Model | None = None,
    *,
    review_below: float | None = None,
):
    """``frame`` with the prediction columns added (``area``, ``confidence``, ``runner_up``,
    ``runner_up_confidence``, ``needs_review``), one per row, in order: the same values
    ``tagger predict`` writes. A row without an abstract (missing or blank) gets a missing area, NaN
    confidences and ``needs_review``; no row is dropped."""
    model = model or load_model()
    docs, present = documents(frame, column, title_column)
    table = prediction_table(model.predict_proba(docs), model, review_below)
    columns = {}
    for name in PREDICTION_COLUMNS:
        columns[name] = np.full(len(frame), MISSING[name], dtype=DTYPES[name])
        columns[name][present] = table[name]
    return frame.assign(**columns)
