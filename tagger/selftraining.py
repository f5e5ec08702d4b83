"""Learning from the pile: self-training with class-balanced pseudo-labels (Yarowsky 1995;
Nigam et al. 2000 for the idea of learning from unlabelled text).

The model trained on the hand labels and area descriptions tags the unlabelled abstracts the
user is about to tag; the most confident half of each predicted area becomes pseudo-labelled
training documents (so no area swallows the rest), weighing a quarter of what hand labels
weigh (``TrainingSettings.pseudo_label_weight``); the model is trained again, and the pile
tagged again, for a few rounds, stopping early when few pseudo-labels change (how many, and
the rest of the policy: :class:`tagger.plan.SelfTrainingPlan`). Pseudo-labels never count as hand labels:
they are not cross-validated, not counted in the figures, and never written to ``labels/``.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import replace

import numpy as np

from .card import Unlabelled
from .corpus import Corpus
from .fitting import fit
from .labels import TrainingSet
from .plan import PLAN, SelfTrainingPlan
from .prediction import decided
from .settings import TrainingSettings


def pile_fingerprint(texts: list[str]) -> str:
    """SHA-256 of the pile's texts, in order."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()


def self_train(
    training_set: TrainingSet,
    pile: list[str],
    settings: TrainingSettings,
    corpus: Corpus | None = None,
    plan: SelfTrainingPlan = PLAN.self_training,
) -> tuple[TrainingSet, Unlabelled | None]:
    """``training_set`` with pseudo-labelled abstracts of ``pile`` added (abstracts that are
    hand-labelled already are left out of the pile) as ``plan`` says, and the record for the
    model card (None, and the training set as it was, when no abstract of the pile is left).
    ``corpus``: where the texts are analysed once for every round (and every fold)."""
    corpus = corpus if corpus is not None else Corpus()
    training_set = replace(training_set, pseudo_texts=(), pseudo_labels=(), pile=())  # (a fold's: anew)
    texts = _unlabelled(training_set, pile)
    if not texts:  # every abstract of the pile is labelled: nothing to learn from
        return training_set, None
    used = _sampled(texts, plan)
    current = training_set
    previous: dict[str, str] = {}
    rounds = 0
    while rounds < plan.rounds:
        rounds += 1
        fitted = fit(current, settings, corpus)
        probabilities = fitted.classifier.predict_proba(fitted.matrix(used))
        classes = np.asarray(fitted.classifier.classes_)
        found, content = corpus.known_words(fitted.vocabulary, corpus.rows(used))
        known = (found >= plan.known_min) & (found >= plan.known_share * content)
        chosen = _most_confident_per_area(probabilities, known, plan.share)
        pseudo = {used[i]: str(classes[probabilities[i].argmax()]) for i in chosen}
        current = replace(
            training_set, pseudo_texts=tuple(pseudo), pseudo_labels=tuple(pseudo.values()), pile=tuple(used)
        )
        changed = sum(previous.get(text) != area for text, area in pseudo.items())
        changed += len(previous.keys() - pseudo.keys())
        if previous and changed < plan.stop_change * len(pseudo):
            break
        previous = pseudo
    record = Unlabelled(
        method=plan.method,
        sha256=pile_fingerprint(texts),
        pile_abstracts=len(texts),
        used_abstracts=len(used),
        rounds=rounds,
        pseudo_labelled=len(current.pseudo_labels),
        pseudo_labelled_per_area=dict(Counter(current.pseudo_labels)),
        pseudo_label_weight=settings.pseudo_label_weight,
    )
    return current, record


def _unlabelled(training_set: TrainingSet, pile: list[str]) -> list[str]:
    """The pile's abstracts that are not labelled, once each, in order."""
    labelled = set(training_set.texts)
    return list(dict.fromkeys(text for text in pile if text not in labelled))


def pile_texts(training_set: TrainingSet, pile: list[str], plan: SelfTrainingPlan) -> list[str]:
    """The texts self-training learns from: the pile's unlabelled abstracts, sampled and cut
    as ``plan`` says."""
    return _sampled(_unlabelled(training_set, pile), plan)


def _sampled(texts: list[str], plan: SelfTrainingPlan) -> list[str]:
    """Unlabelled texts sampled down to ``plan.pile_max`` (evenly, in order), each cut to
    ``plan.text_max`` characters."""
    if len(texts) > plan.pile_max:
        texts = [texts[i] for i in np.linspace(0, len(texts) - 1, plan.pile_max, dtype=int)]
    return [text[: plan.text_max] for text in texts]


def _most_confident_per_area(probabilities: np.ndarray, known: np.ndarray, share: float) -> np.ndarray:
    """Row indices: of the ``known`` rows (enough evidence) predicted as each area (a tie is
    no prediction), the most confident ``share`` (at least one), in row order."""
    predicted = decided(probabilities)
    confidence = probabilities.max(axis=1)
    chosen = []
    for area in np.unique(predicted[known & (predicted >= 0)]):
        rows = np.flatnonzero((predicted == area) & known)
        keep = max(1, int(np.ceil(share * len(rows))))
        chosen.append(rows[np.argsort(-confidence[rows], kind="stable")[:keep]])
    return np.sort(np.concatenate(chosen)) if chosen else np.array([], dtype=int)
