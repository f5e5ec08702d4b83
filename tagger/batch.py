"""Batch tagging: abstracts from files in, (abstract, prediction) pairs out, in input order,
a chunk at a time so that input of any size streams through in constant memory."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from pathlib import Path

from .corpus import Abstract, read_abstracts
from .model import Model, Prediction

CHUNK_SIZE = 2000


def tag_abstracts(
    abstracts: Iterable[Abstract],
    model: Model,
    *,
    review_below: float | None = None,
    chunk_size: int = CHUNK_SIZE,
) -> Iterator[tuple[Abstract, Prediction]]:
    iterator = iter(abstracts)
    while chunk := list(itertools.islice(iterator, chunk_size)):
        yield from zip(
            chunk, model.predict([abstract.document for abstract in chunk], review_below=review_below)
        )


def tag_files(
    paths: Iterable[str | Path], model: Model, *, review_below: float | None = None, **read_options
) -> Iterator[tuple[Abstract, Prediction]]:
    """Tag every abstract in ``paths`` (files, directories, ``-`` for stdin);
    ``read_options`` go to :func:`tagger.corpus.read_abstracts`."""
    return tag_abstracts(read_abstracts(paths, **read_options), model, review_below=review_below)
