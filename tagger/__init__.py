"""tagger: tag research abstracts with a research area and a calibrated confidence.

>>> from tagger import predict
>>> predict("We propose a diffusion sampler ...").area
'generative'
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

__version__ = "0.1.0"

__all__ = ["Model", "Prediction", "TaggerError", "__version__", "load_model", "predict", "train"]

if TYPE_CHECKING:
    from .errors import TaggerError
    from .model import Model, load_model
    from .prediction import Prediction

_LAZY = {"Model": "model", "Prediction": "prediction", "load_model": "model", "TaggerError": "errors"}


def __getattr__(name: str):
    """The public names load their modules on first use, so ``import tagger`` (and the
    ``tagger`` command's start-up, see :mod:`tagger.entry`) stays light."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'tagger' has no attribute {name!r}")


def predict(texts, *, model: Model | None = None, review_below: float | None = None, explain: bool = False):
    """Tag one abstract (a ``str``: returns a :class:`Prediction`) or many (a list of ``str``:
    returns a list of predictions, in the same order) with the shipped model, or ``model``.

    ``review_below`` overrides the model's review threshold (``Prediction.needs_review``);
    ``explain=True`` fills ``Prediction.top_terms``."""
    from .model import load_model

    return (model or load_model()).predict(texts, review_below=review_below, explain=explain)


def train(data=None, *, labels="labels", abstracts=("seeds",), settings=None, unlabelled=None) -> Model:
    """Train a model: on the taxonomy and hand labels in ``labels`` joined with the abstract
    files in ``abstracts`` (the default, as in this repository), or on ``data``, a user's own
    labelled ``.csv`` / ``.jsonl`` file with ``abstract`` and ``area`` columns.
    ``unlabelled``: abstract files or folders (a path or a list of them) without labels, such
    as the pile you are about to tag, to learn from as well (self-training).
    Save it with ``model.save("models")``."""
    from .corpus import read_abstracts
    from .labels import load_training_set, read_labelled_file
    from .training import train as fit

    training_set = read_labelled_file(data) if data is not None else load_training_set(labels, abstracts)
    if isinstance(unlabelled, (str, os.PathLike)):
        unlabelled = [unlabelled]
    pile = [a.document for a in read_abstracts(unlabelled)] if unlabelled else None
    return fit(training_set, settings, pile)
