"""Tagging on a Dask cluster: the same model and the same output rows as ``tagger predict``,
with the work spread over the cluster's workers. Needs the ``dask`` extra:
``pip install 'abstract-tagger[dask]'``.

The model travels to the workers once: it is one node of the task graph (``dask.delayed``),
computed once and handed to every partition's task on whichever worker runs it.

>>> from dask.distributed import Client
>>> client = Client("scheduler-address:8786")          # or LocalCluster() for one machine
>>> rows = tagger.cluster.tag_files(["s3-or-shared/papers-*.jsonl"])   # a dask bag of rows
>>> rows.to_dataframe().to_csv("tags-*.csv")
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from . import output, reading
from ._version import install_hint
from .errors import UsageError
from .model import Model, resolve


def _dask():
    try:
        import dask
        import dask.bag
    except ImportError:
        raise UsageError(
            "tagging on a cluster needs dask", fix=f"Install it: {install_hint('dask')}."
        ) from None
    return dask


def tag_files(
    paths: Sequence[str | os.PathLike],
    model: Model | str | os.PathLike | None = None,
    *,
    review_below: float | None = None,
    **read_options,
):
    """A dask bag of the output rows of every abstract in ``paths`` (files the workers can
    read; folders are expanded here), one partition per file, in input order: the rows
    ``tagger predict`` writes for the same files. ``read_options`` go to
    :func:`tagger.reading.read_abstracts`."""
    dask = _dask()
    files = [str(path) for path in reading.find_files(paths, reading.ReadReport())]
    shared = dask.delayed(resolve(model), pure=True)
    return dask.bag.from_sequence(files, npartitions=max(len(files), 1)).map_partitions(
        _tag_file_partition, shared, review_below, read_options
    )


def _tag_file_partition(
    files: list[str], model: Model, review_below: float | None, read_options: dict
) -> list[dict]:
    return _rows(list(reading.read_abstracts(files, **read_options)), model, review_below)


def tag_bag(texts, model: Model | str | os.PathLike | None = None, *, review_below: float | None = None):
    """A dask bag of abstracts (strings) -> a dask bag of rows (dicts with the predicted area,
    confidence, runner-up and review flag), partition by partition."""
    dask = _dask()
    shared = dask.delayed(resolve(model), pure=True)
    return texts.map_partitions(_tag_text_partition, shared, review_below)


def _tag_text_partition(texts, model: Model, review_below: float | None) -> list[dict]:
    table = _table(list(texts), model, review_below)
    return [dict(zip(table, values)) for values in zip(*table.values())]


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
    """A dask dataframe with a text column (and optionally a title column) -> the same
    dataframe with the prediction columns added, partition by partition, by
    :func:`tagger.frames.tag_dataframe` (the same arguments, and the same values as with
    pandas and the command line)."""
    from . import frames

    dask = _dask()
    model = resolve(model)
    shared = dask.delayed(model, pure=True)
    options: dict[str, Any] = {
        "review_below": review_below,
        "prefix": prefix,
        "all_probabilities": all_probabilities,
    }
    meta = frames.tag_dataframe(frame._meta, column, title_column, model, **options)  # (its columns)
    return frame.map_partitions(_tag_frame_partition, column, title_column, shared, options, meta=meta)


def _tag_frame_partition(frame, column: str, title_column: str | None, model: Model, options: dict):
    from .frames import tag_dataframe as tag_pandas

    return tag_pandas(frame, column, title_column, model, **options)


def _table(texts: list[str], model: Model, review_below: float | None) -> dict[str, list]:
    """The prediction columns ``tagger predict`` writes for ``texts``."""
    return output.prediction_table(model.predict_proba(texts), model, review_below)


def _rows(abstracts: list[reading.Abstract], model: Model, review_below: float | None) -> list[dict]:
    """The output rows of ``abstracts``: what ``tagger predict`` writes for them."""
    probabilities = model.predict_proba([a.document for a in abstracts])
    return list(output.rows(abstracts, probabilities, model, review_below))
