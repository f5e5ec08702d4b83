"""Learning from the pile: self-training with class-balanced pseudo-labels (Yarowsky 1995;
Nigam et al. 2000 for the idea of learning from unlabelled text).

The model trained on the hand labels and area descriptions tags the unlabelled abstracts the
user is about to tag; the most confident half of each predicted area becomes pseudo-labelled
training documents (so no area swallows the rest), weighing a quarter of what hand labels
weigh (``TrainingSettings.pseudo_label_weight``); the model is trained again, and the pile
tagged again, for up to :data:`ROUNDS` rounds, stopping early when fewer than
:data:`STOP_CHANGE` of the pseudo-labels change. Pseudo-labels never count as hand labels:
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
from .prediction import decided
from .settings import TrainingSettings

ROUNDS = 3
SHARE = 0.5  # of each predicted area's abstracts, the most confident this share is kept
STOP_CHANGE = 0.01
# An abstract is pseudo-labelled only when the model knows enough of its words: at least this
# many, and at least this share of its words that are not stop words (random words: none).
PSEUDO_KNOWN_MIN = 2
PSEUDO_KNOWN_SHARE = 1 / 3
PILE_MAX = 20_000  # a larger pile is sampled down to this many abstracts (evenly, in order)
# A pile text is learnt from by its first this many characters (an abstract is a few thousand;
# a whole book in the pile would otherwise bring a vocabulary of its own into every fit).
TEXT_MAX = 20_000
METHOD = (
    f"self-training: the most confident {SHARE:.0%} of each predicted area, up to {ROUNDS} rounds "
    f"(stopping when under {STOP_CHANGE:.0%} of pseudo-labels change)"
)


def pile_fingerprint(texts: list[str]) -> str:
    """SHA-256 of the pile's texts, in order."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()


def self_train(
    training_set: TrainingSet, pile: list[str], settings: TrainingSettings, corpus: Corpus | None = None
) -> tuple[TrainingSet, Unlabelled | None]:
    """``training_set`` with pseudo-labelled abstracts of ``pile`` added (abstracts that are
    hand-labelled already are left out of the pile), and the record for the model card (None,
    and the training set as it was, when no abstract of the pile is left). ``corpus``: where
    the texts are analysed once for every round (and every fold)."""
    corpus = corpus if corpus is not None else Corpus()
    training_set = replace(training_set, pseudo_texts=(), pseudo_labels=(), pile=())  # (a fold's: anew)
    texts = _unlabelled(training_set, pile)
    if not texts:  # every abstract of the pile is labelled: nothing to learn from
        return training_set, None
    used = _sampled(texts)
    current = training_set
    previous: dict[str, str] = {}
    rounds = 0
    while rounds < ROUNDS:
        rounds += 1
        fitted = fit(current, settings, corpus)
        probabilities = fitted.classifier.predict_proba(fitted.matrix(used))
        classes = np.asarray(fitted.classifier.classes_)
        found, content = corpus.known_words(fitted.vocabulary, corpus.rows(used))
        known = (found >= PSEUDO_KNOWN_MIN) & (found >= PSEUDO_KNOWN_SHARE * content)
        chosen = _most_confident_per_area(probabilities, known)
        pseudo = {used[i]: str(classes[probabilities[i].argmax()]) for i in chosen}
        current = replace(
            training_set, pseudo_texts=tuple(pseudo), pseudo_labels=tuple(pseudo.values()), pile=tuple(used)
        )
        changed = sum(previous.get(text) != area for text, area in pseudo.items())
        changed += len(previous.keys() - pseudo.keys())
        if previous and changed < STOP_CHANGE * len(pseudo):
            break
        previous = pseudo
    record = Unlabelled(
        method=METHOD,
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


def pile_texts(training_set: TrainingSet, pile: list[str]) -> list[str]:
    """The texts self-training learns from: the pile's unlabelled abstracts, sampled down to
    PILE_MAX (evenly, in order), each cut to TEXT_MAX characters."""
    return _sampled(_unlabelled(training_set, pile))


def _sampled(texts: list[str]) -> list[str]:
    """Unlabelled texts sampled down to PILE_MAX (evenly, in order), each cut to TEXT_MAX."""
    if len(texts) > PILE_MAX:
        texts = [texts[i] for i in np.linspace(0, len(texts) - 1, PILE_MAX, dtype=int)]
    return [text[:TEXT_MAX] for text in texts]


def _most_confident_per_area(probabilities: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Row indices: of the ``known`` rows (enough evidence) predicted as each area (a tie is
    no prediction), the most confident SHARE (at least one), in row order."""
    predicted = decided(probabilities)
    confidence = probabilities.max(axis=1)
    chosen = []
    for area in np.unique(predicted[known & (predicted >= 0)]):
        rows = np.flatnonzero((predicted == area) & known)
        keep = max(1, int(np.ceil(SHARE * len(rows))))
        chosen.append(rows[np.argsort(-confidence[rows], kind="stable")[:keep]])
    return np.sort(np.concatenate(chosen)) if chosen else np.array([], dtype=int)
