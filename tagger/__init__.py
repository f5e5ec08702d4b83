"""tagger: tag research abstracts with a research area and a calibrated confidence.

>>> from tagger import predict
>>> predict("We propose a diffusion sampler ...").area
'generative'
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, overload

from ._version import __version__

__all__ = [
    "Model",
    "Prediction",
    "TaggerClassifier",
    "TaggerError",
    "TaggerWarning",
    "TrainingSettings",
    "__version__",
    "load_model",
    "predict",
    "tag_dataframe",
    "train",
]

if TYPE_CHECKING:
    import pandas as pd

    from .errors import TaggerError, TaggerWarning
    from .estimator import TaggerClassifier
    from .frames import tag_dataframe
    from .model import Model, load_model
    from .prediction import Prediction
    from .settings import TrainingSettings

_LAZY = {
    "Model": "model",
    "Prediction": "prediction",
    "load_model": "model",
    "TaggerError": "errors",
    "TaggerWarning": "errors",
    "TaggerClassifier": "estimator",
    "TrainingSettings": "settings",
    "tag_dataframe": "frames",
}


def __getattr__(name: str):
    """The public names load their modules on first use, so ``import tagger`` (and the
    ``tagger`` command's start-up, see :mod:`tagger.entry`) stays light."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'tagger' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names, the lazy ones too (for completion and ``inspect.getmembers``)."""
    return sorted(set(globals()) | set(__all__))


@overload
def predict(  # type: ignore[overload-overlap]  # a str is an iterable of str: this one wins
    texts: str,
    *,
    model: Model | str | os.PathLike | None = ...,
    review_below: float | None = ...,
    explain: bool = ...,
) -> Prediction: ...
@overload
def predict(
    texts: Iterable[str],
    *,
    model: Model | str | os.PathLike | None = ...,
    review_below: float | None = ...,
    explain: bool = ...,
) -> list[Prediction]: ...


def predict(
    texts: str | Iterable[str],
    *,
    model: Model | str | os.PathLike | None = None,
    review_below: float | None = None,
    explain: bool = False,
) -> Prediction | list[Prediction]:
    """Tag one abstract (a ``str``: returns a :class:`Prediction`) or many (a list of ``str``:
    returns a list of predictions, in the same order) with the shipped model, or ``model``
    (a :class:`Model`, or the path of a model folder).

    ``review_below`` overrides the model's review threshold (``Prediction.needs_review``);
    ``explain=True`` fills ``Prediction.top_terms``."""
    from .model import resolve

    return resolve(model).predict(texts, review_below=review_below, explain=explain)


def train(  # noqa: PLR0913 (the public keyword options)
    data: str | os.PathLike | pd.DataFrame | Sequence[str] | None = None,
    areas: Sequence[str] | None = None,
    *,
    labels: str | os.PathLike = "labels",
    abstracts: Sequence[str | os.PathLike] = ("seeds",),
    settings: TrainingSettings | None = None,
    unlabelled: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
    column: str = "abstract",
    title_column: str | None = None,
    label_column: str = "area",
) -> Model:
    """Train a model: on the taxonomy and hand labels in ``labels`` joined with the abstract
    files in ``abstracts`` (the default, as in this repository), or on ``data``: a user's own
    labelled ``.csv`` / ``.jsonl`` file with ``abstract`` and ``area`` columns, a pandas
    dataframe with those columns (and optionally ``title``), or a list of abstracts with
    their ``areas`` in a second list.
    ``unlabelled``: abstract files or folders (a path or a list of them) without labels, such
    as the pile you are about to tag, to learn from as well (self-training). ``column``,
    ``title_column`` and ``label_column`` name a file's or dataframe's columns of abstracts,
    titles (``title`` when there is one) and areas. An area ``none`` says that an abstract
    fits no area: it is no area of the model, and sets the review threshold (see the README,
    "Abstracts that fit no area"; the card's ``review.no_area`` counts them).
    Save it with ``model.save("models")``."""
    from .checks import a_kind
    from .errors import UsageError
    from .labels import labelled, load_training_set
    from .reading import Columns, read_abstracts
    from .settings import TrainingSettings
    from .training import train as fit

    if settings is not None and not isinstance(settings, TrainingSettings):
        raise UsageError(
            f"settings takes a TrainingSettings, not {a_kind(settings)}",
            fix="Pass tagger.TrainingSettings(C=3.0, ...) (its fields are the recipe's settings).",
        )
    if data is None:
        training_set = load_training_set(labels, abstracts)
    else:
        named = Columns(abstract=column, title=title_column or "title", area=label_column)
        training_set = labelled(data, areas, named)
    if isinstance(unlabelled, (str, os.PathLike)):
        unlabelled = [unlabelled]
    pile = [a.document for a in read_abstracts(unlabelled)] if unlabelled else None
    return fit(training_set, settings, pile)
