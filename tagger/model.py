"""A fitted model: plain arrays plus a JSON model card. Prediction needs numpy and
scipy.sparse, never scikit-learn.

A model directory holds ``model.json`` (the card: areas, settings, training data, figures)
and the weights file the card names (``weights-<hash>.npz``: vocabulary, idf, coefficients,
intercepts). Loading reads data only, never code (``allow_pickle=False``), and checks the
weights against the hash in the card.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import itertools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import overload

import numpy as np

from .atomic import atomic_write
from .errors import ModelError, UsageError
from .features import STOP_WORDS, TextAnalyzer, words

FORMAT_VERSION = 1
CARD_FILE = "model.json"
ARRAYS = ("vocabulary", "idf", "coef", "intercept")
STOP = -2  # the feature of a stop word in the word lookup: left out before pairing


@dataclass(frozen=True)
class Prediction:
    """The area of one abstract and how sure the model is.

    ``confidence`` is the calibrated probability of ``area``; ``scores`` holds every area's
    probability (summing to 1); ``needs_review`` is true when the confidence is below the
    review threshold. ``top_terms`` (filled when asked for with ``explain=True``) lists the
    terms that pushed the abstract toward ``area``, strongest first, with their push.
    """

    area: str
    confidence: float
    scores: dict[str, float]
    needs_review: bool = False
    top_terms: tuple[tuple[str, float], ...] = ()

    @property
    def runner_up(self) -> str:
        """The second most likely area."""
        return self._runner_up[1]

    @property
    def runner_up_confidence(self) -> float:
        return self._runner_up[0]

    @functools.cached_property
    def _runner_up(self) -> tuple[float, str]:
        # max() keeps the first of equals: the earlier area, as Model.summarise does
        area, probability = max(
            ((a, p) for a, p in self.scores.items() if a != self.area), key=lambda x: x[1]
        )
        return probability, area


class Model:
    """TF-IDF features and a linear classifier, as arrays; see :func:`tagger.train`."""

    def __init__(
        self,
        card: dict,
        vocabulary: Sequence[str],
        idf: np.ndarray,
        coef: np.ndarray,
        intercept: np.ndarray,
    ) -> None:
        self.card = card
        self.directory: Path | None = None  # the folder it was loaded from or saved to
        self.vocabulary = list(vocabulary)
        self.idf = np.asarray(idf, dtype=np.float64)
        self.coef = np.asarray(coef, dtype=np.float64)
        self.intercept = np.asarray(intercept, dtype=np.float64)
        self.areas: tuple[str, ...] = tuple(area["slug"] for area in card["areas"])
        features = card["features"]
        self.analyzer = TextAnalyzer.from_settings(features["analyzer"])
        self.sublinear_tf = bool(features["sublinear_tf"])
        self.temperature = float(card["calibration"]["temperature"])
        self.review_threshold = float(card["review"]["threshold"])
        self._coef_by_feature = np.ascontiguousarray(self.coef.T)
        _check_shapes(self)
        self._build_lookup()

    def __getstate__(self) -> dict:
        """What a pickle (a Dask worker, a joblib process) gets: the arrays and the card; the
        word lookup is rebuilt on arrival rather than sent."""
        return {name: getattr(self, name) for name in ("card", "vocabulary", "idf", "coef", "intercept")}

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state)

    def _build_lookup(self) -> None:
        """Word -> feature for single words (stop words -> :data:`STOP`); for pairs of words,
        a sorted array of keys (first word's feature * n_features + second's) and the pair's
        feature."""
        n = len(self.vocabulary)
        self._word_feature: dict[str, int] = dict.fromkeys(STOP_WORDS, STOP)
        pairs: list[tuple[int, int]] = []
        for feature, term in enumerate(self.vocabulary):
            if " " not in term:
                self._word_feature[term] = feature
        for feature, term in enumerate(self.vocabulary):
            if " " in term:
                first, second = term.split(" ")
                if first not in self._word_feature or second not in self._word_feature:
                    raise ModelError(f"the pair {term!r} has a word that is not a feature", fix="Retrain.")
                pairs.append((self._word_feature[first] * n + self._word_feature[second], feature))
        pairs.sort()
        self._pair_keys = np.array([key for key, _ in pairs], dtype=np.int64)
        self._pair_features = np.array([feature for _, feature in pairs], dtype=np.int64)

    # -- prediction -------------------------------------------------------------------------

    def tfidf(self, texts: Sequence[str]):
        """The TF-IDF matrix of ``texts`` (a scipy CSR matrix, one row per text, sorted
        indices, l2-normed rows): the numbers of scikit-learn's ``TfidfVectorizer`` fitted at
        training time, computed for a whole batch at once. Each word becomes its feature (or
        -1: not a feature, which also separates pairs); stop words are left out; pairs of
        neighbouring words are looked up among the pair features; the terms of each text are
        counted."""
        from scipy.sparse import csr_matrix  # C speed for counting and products; loaded on first use

        get, missing = self._word_feature.get, itertools.repeat(-1)
        ids: list[int] = []
        lengths: list[int] = []
        for text in texts:
            found = words(text)
            lengths.append(len(found))
            ids.extend(map(get, found, missing))
        n = len(lengths)
        word_feature = np.array(ids, dtype=np.int64)
        row = np.repeat(np.arange(n, dtype=np.int64), lengths)
        kept = word_feature != STOP
        word_feature, row = word_feature[kept], row[kept]
        known = word_feature >= 0
        rows, features = [row[known]], [word_feature[known]]
        if len(self._pair_keys) and len(word_feature) > 1:
            first, second = word_feature[:-1], word_feature[1:]
            neighbours = (row[:-1] == row[1:]) & (first >= 0) & (second >= 0)
            keys = first[neighbours] * len(self.vocabulary) + second[neighbours]
            at = np.minimum(np.searchsorted(self._pair_keys, keys), len(self._pair_keys) - 1)
            found_pair = self._pair_keys[at] == keys
            rows.append(row[:-1][neighbours][found_pair])
            features.append(self._pair_features[at[found_pair]])
        row, feature = np.concatenate(rows), np.concatenate(features)
        order = np.argsort(row, kind="stable")  # pairs come after words: group terms by text
        counts = csr_matrix(
            (np.ones(len(row)), feature[order], np.searchsorted(row[order], np.arange(n + 1))),
            shape=(n, len(self.vocabulary)),
        )
        counts.sum_duplicates()  # counts per (text, term), indices sorted
        values = counts.data
        if self.sublinear_tf:
            values = 1.0 + np.log(values)
        values *= self.idf[counts.indices]
        row_of = np.repeat(np.arange(n), np.diff(counts.indptr))
        values /= np.sqrt(np.bincount(row_of, weights=values * values, minlength=n))[row_of]
        return csr_matrix((values, counts.indices, counts.indptr), shape=counts.shape)

    def decision_function(self, texts: Sequence[str]) -> np.ndarray:
        """Raw linear scores, one row per text, one column per area."""
        return self._scores(self.tfidf(_as_texts(texts)))

    def _scores(self, matrix) -> np.ndarray:
        return np.asarray(matrix @ self._coef_by_feature) + self.intercept

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """Calibrated probabilities, one row per text (summing to 1), one column per area."""
        return self._calibrated(self.tfidf(_as_texts(texts)))

    def _calibrated(self, matrix) -> np.ndarray:
        return softmax(self._scores(matrix) / self.temperature)

    @overload
    def predict(self, texts: str, *, review_below: float | None = ..., explain: bool = ...) -> Prediction: ...
    @overload
    def predict(
        self, texts: Iterable[str], *, review_below: float | None = ..., explain: bool = ...
    ) -> list[Prediction]: ...

    def predict(self, texts, *, review_below=None, explain=False):
        """The area and confidence of one text (a ``str``) or of each text in a list.

        ``review_below`` overrides the model's review threshold; ``explain=True`` fills
        :attr:`Prediction.top_terms`.
        """
        if isinstance(texts, str):
            return self.predict([texts], review_below=review_below, explain=explain)[0]
        texts = _as_texts(texts)
        matrix = self.tfidf(texts)
        probabilities = self._calibrated(matrix)
        predictions = self.predictions(probabilities, review_below=review_below)
        if explain:
            terms = self._top_terms(matrix, probabilities.argmax(axis=1))
            predictions = [dataclasses.replace(p, top_terms=t) for p, t in zip(predictions, terms)]
        return predictions

    def predictions(
        self, probabilities: np.ndarray, *, review_below: float | None = None
    ) -> list[Prediction]:
        """One :class:`Prediction` per row of calibrated probabilities (from :meth:`predict_proba`)."""
        best, confidence, _, _, needs_review = self.summarise(probabilities, review_below=review_below)
        return [
            Prediction(area=self.areas[k], confidence=c, scores=dict(zip(self.areas, row)), needs_review=flag)
            for k, c, row, flag in zip(
                best.tolist(), confidence.tolist(), probabilities.tolist(), needs_review.tolist()
            )
        ]

    def summarise(
        self, probabilities: np.ndarray, *, review_below: float | None = None
    ) -> tuple[np.ndarray, ...]:
        """Per row of calibrated probabilities: the best area's index and probability, the
        runner-up's index and probability, and whether it needs review (below the threshold).
        Of equal probabilities, the first area wins."""
        threshold = self.review_threshold if review_below is None else review_below
        rows = np.arange(len(probabilities))
        best = probabilities.argmax(axis=1)
        others = probabilities.copy()
        others[rows, best] = -1.0
        second = others.argmax(axis=1)
        confidence = probabilities[rows, best]
        return best, confidence, second, probabilities[rows, second], confidence < threshold

    def _top_terms(self, matrix, areas: np.ndarray, n: int = 10) -> list[tuple[tuple[str, float], ...]]:
        """Per text, the terms with the largest push toward its area: TF-IDF value times the
        area's weight minus the mean weight over areas (the softmax ignores what all areas
        share), largest first, positive only."""
        centred = self._coef_by_feature - self._coef_by_feature.mean(axis=1, keepdims=True)
        explanations = []
        for row, area in enumerate(areas):
            start, end = matrix.indptr[row], matrix.indptr[row + 1]
            features = matrix.indices[start:end]
            push = matrix.data[start:end] * centred[features, area]
            order = np.argsort(-push, kind="stable")[:n]
            explanations.append(
                tuple((self.vocabulary[features[i]], round(float(push[i]), 4)) for i in order if push[i] > 0)
            )
        return explanations

    # -- files ------------------------------------------------------------------------------

    def save(self, directory: str | Path) -> Path:
        """Write the weights, then the card that names them, each atomically; an interrupted
        save leaves the previous model loadable. Returns the directory."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        np.savez(
            buffer,
            vocabulary=np.frombuffer("\n".join(self.vocabulary).encode("utf-8"), dtype=np.uint8),
            idf=self.idf,
            coef=self.coef,
            intercept=self.intercept,
            card_sha256=np.frombuffer(_card_digest(self.card).encode("ascii"), dtype=np.uint8),
        )
        data = buffer.getvalue()
        digest = hashlib.sha256(data).hexdigest()
        weights_file = f"weights-{digest[:16]}.npz"
        with atomic_write(directory / weights_file, "wb") as stream:
            stream.write(data)
        self.card = {**self.card, "weights_file": weights_file, "weights_sha256": digest}
        with atomic_write(directory / CARD_FILE) as stream:
            json.dump(self.card, stream, indent=2, ensure_ascii=False)
            stream.write("\n")
        for old in directory.glob("weights-*.npz"):
            if old.name != weights_file:
                old.unlink()
        self.directory = directory
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> Model:
        """Read a model directory written by :meth:`save`. Runs no code from the files."""
        directory = Path(directory)
        card_path = directory / CARD_FILE
        if not card_path.is_file():
            raise ModelError(
                f"no model here (no {CARD_FILE})",
                where=str(directory),
                fix="Point --model at a folder written by 'tagger train'.",
            )
        card = _read_card(card_path)
        weights_path = directory / card["weights_file"]
        try:
            data = weights_path.read_bytes()
        except OSError as error:
            raise ModelError(
                f"cannot read the weights file ({error.strerror})",
                where=str(weights_path),
                fix="Retrain with 'tagger train'.",
            ) from None
        if hashlib.sha256(data).hexdigest() != card["weights_sha256"]:
            raise ModelError(
                "the weights file does not match its model card (edited, truncated or mixed up)",
                where=str(weights_path),
                fix="Restore the folder as it was written, or retrain with 'tagger train'.",
            )
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
                loaded = {name: arrays[name] for name in ARRAYS}
                card_digest = arrays["card_sha256"].tobytes().decode("ascii")
            vocabulary = loaded.pop("vocabulary").tobytes().decode("utf-8")
        except (ValueError, KeyError, OSError, UnicodeDecodeError, EOFError) as error:
            raise ModelError(
                f"damaged weights file ({error})", where=str(weights_path), fix="Retrain with 'tagger train'."
            ) from None
        if card_digest != _card_digest(card):
            raise ModelError(
                "model.json was edited: its areas, features, calibration or review settings no longer match "
                "the weights",
                where=str(card_path),
                fix="Restore it as written (--review-below sets another review threshold), or retrain.",
            )
        try:
            model = cls(card, vocabulary.split("\n") if vocabulary else [], **loaded)
            model.directory = directory
            return model
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ModelError(
                f"damaged model ({type(error).__name__}: {error})",
                where=str(directory),
                fix="Retrain with 'tagger train'.",
            ) from None


def _card_digest(card: dict) -> str:
    """SHA-256 of the parts of the card that prediction reads, stored in the weights file so
    that a hand-edited card is noticed."""
    parts = {key: card.get(key) for key in ("format_version", "areas", "features", "calibration", "review")}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8")).hexdigest()


def softmax(scores: np.ndarray) -> np.ndarray:
    shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def _as_texts(texts: Iterable[str]) -> list[str]:
    if isinstance(texts, str):
        return [texts]
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise UsageError(
                f"text {i} is a {type(text).__name__}, not a str", fix="Pass abstracts as strings."
            )
    return texts


def _read_card(path: Path) -> dict:
    try:
        card = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ModelError(
            f"unreadable model card ({error})", where=str(path), fix="Retrain with 'tagger train'."
        ) from None
    if not isinstance(card, dict):
        raise ModelError(
            "the model card is not a JSON object", where=str(path), fix="Retrain with 'tagger train'."
        )
    version = card.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ModelError(
            f"model format {version!r} is newer than this tagger reads ({FORMAT_VERSION})",
            where=str(path),
            fix="Upgrade tagger (pip install -U tagger), or retrain the model with this version.",
        )
    required = {"areas": list, "features": dict, "calibration": dict, "review": dict, "weights_file": str,
                "weights_sha256": str}  # fmt: skip
    wrong = [key for key, kind in required.items() if not isinstance(card.get(key), kind)]
    if wrong:
        raise ModelError(
            f"the model card lacks or garbles {', '.join(wrong)}",
            where=str(path),
            fix="Retrain with 'tagger train'.",
        )
    if Path(card["weights_file"]).name != card["weights_file"]:
        raise ModelError("the weights file must be in the model folder", where=str(path), fix="Retrain.")
    return card


def _check_shapes(model: Model) -> None:
    n_areas, n_features = len(model.areas), len(model.vocabulary)
    expected = {"idf": (n_features,), "coef": (n_areas, n_features), "intercept": (n_areas,)}
    for name, shape in expected.items():
        array = getattr(model, name)
        if array.shape != shape:
            raise ModelError(
                f"{name} has shape {array.shape}, expected {shape}", fix="Retrain with 'tagger train'."
            )
        if not np.isfinite(array).all():
            raise ModelError(f"{name} holds non-finite numbers", fix="Retrain with 'tagger train'.")
    if not model.temperature > 0:
        raise ModelError(
            f"bad calibration temperature {model.temperature}", fix="Retrain with 'tagger train'."
        )


def shipped_model_dir() -> Path:
    """The model that comes with tagger: inside the installed package, or ``models/`` beside
    the package in a source checkout."""
    package = Path(__file__).resolve().parent
    for candidate in (package / "models", package.parent / "models"):
        if (candidate / CARD_FILE).is_file():
            return candidate
    raise ModelError(
        "the shipped model is missing", fix="Reinstall tagger, or train one with 'tagger train'."
    )


@functools.lru_cache(maxsize=1)
def _shipped_model() -> Model:
    return Model.load(shipped_model_dir())


def load_model(directory: str | Path | None = None) -> Model:
    """The model in ``directory``; the shipped model (loaded once, then cached) by default."""
    return _shipped_model() if directory is None else Model.load(directory)
