"""A retrain in place: train on the labels, save over the model folder, and say what changed:
each figure before and after, how many of some abstracts changed area, and how the old and the
new model do on the labels new since the old one. The one retrain of ``tagger train`` and of
the labelling page's retrain button (:mod:`tagger.web`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from . import training
from .errors import TaggerError
from .evaluate import compare
from .labels import TrainingSet
from .model import Model


@dataclass(frozen=True)
class NewLabelsFigures:
    """The labels new since the previous model: how many, how many of them the previous model
    tagged right, and the new model's cross-validated accuracy on them."""

    labelled: int
    previous_right: int
    accuracy: float


@dataclass(frozen=True)
class Retrained:
    model: Model
    previous: Model | None
    comparison: dict  # see tagger.evaluate.compare
    new_labels: NewLabelsFigures | None


def previous_model(folder: str | os.PathLike) -> Model | None:
    """The model in ``folder``, or None when there is none (or none that loads)."""
    try:
        return Model.load(folder)
    except TaggerError:
        return None


def retrain(
    training_set: TrainingSet,
    folder: str | os.PathLike,
    texts: list[str],
    *,
    unlabelled: list[str] | None = None,
    run: training.Run | None = None,
    previous: Model | None = None,
) -> Retrained:
    """Train on ``training_set`` (with the pile ``unlabelled``) as ``run`` says (its plan; the
    card of the ``previous`` model, whose searched settings are kept unless the plan searches
    anew; the texts analysed by the last retrain: :class:`tagger.training.Run`), save the new
    model in ``folder``, and compare it with ``previous`` (the model it replaces: see
    :meth:`tagger.project.Project.replaced`), on its figures and on how many of ``texts``
    change area."""
    card = previous.card if previous is not None else None
    run = replace(run if run is not None else training.Run(), previous=card, since=card)
    model = training.train(training_set, unlabelled=unlabelled, run=run)
    model.save(folder)
    old_areas = (
        [p.area for p in previous.predict(texts)] if previous and previous.areas == model.areas else []
    )
    comparison = compare(
        previous.card.evaluation if previous else None,
        model.card.evaluation,
        old_areas,
        [p.area for p in model.predict(texts)],
    )
    return Retrained(model, previous, comparison, _new_labels(training_set, previous, model))


def _new_labels(training_set: TrainingSet, previous: Model | None, model: Model) -> NewLabelsFigures | None:
    added = model.card.evaluation.new_labels
    if previous is None or added is None:
        return None
    new = training.new_since(training_set, previous.card)
    guesses = previous.predict([training_set.texts[i] for i in new])
    right = sum(p.area == training_set.labels[i] for p, i in zip(guesses, new))
    return NewLabelsFigures(added.labelled, right, added.accuracy)
