"""A fitted model: plain arrays plus a JSON model card. Prediction needs numpy only.

A model directory holds ``model.json`` (the card: areas, settings, training data, figures)
and the weights file the card names (``weights-<hash>.npz``: vocabulary, idf, coefficients,
intercepts). Loading reads data only, never code (``allow_pickle=False``), and checks the
weights against the hash in the card.
"""

from __future__ import annotations

import functools
import hashlib
import io
import itertools
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import overload

import numpy as np

from .atomic import atomic_write
from .errors import ModelError, UsageError
from .features import TextAnalyzer

FORMAT_VERSION = 1
CARD_FILE = "model.json"
ARRAYS = ("vocabulary", "idf", "coef", "intercept")


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
        return self._ranked()[1][0]

    @property
    def runner_up_confidence(self) -> float:
        return self._ranked()[1][1]

    def _ranked(self) -> list[tuple[str, float]]:
        return sorted(self.scores.items(), key=lambda item: -item[1])


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
        self._index = {term: i for i, term in enumerate(self.vocabulary)}
        self._coef_by_feature = np.ascontiguousarray(self.coef.T)
        _check_shapes(self)

    # -- prediction -------------------------------------------------------------------------

    def tfidf(self, texts: Iterable[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sparse TF-IDF rows as (row of each value, feature of each value, value), l2-normed,
        the same numbers as scikit-learn's ``TfidfVectorizer`` fitted at training time."""
        index, analyzer = self._index, self.analyzer
        rows: list[int] = []
        features: list[int] = []
        counts: list[int] = []
        for row, text in enumerate(texts):
            found = Counter(j for j in map(index.get, analyzer(text)) if j is not None)
            rows.extend([row] * len(found))
            features.extend(found.keys())
            counts.extend(found.values())
        row_of = np.asarray(rows, dtype=np.int64)
        feature_of = np.asarray(features, dtype=np.int64)
        values = np.asarray(counts, dtype=np.float64)
        if self.sublinear_tf:
            values = 1.0 + np.log(values)
        values *= self.idf[feature_of]
        norms = np.sqrt(np.bincount(row_of, weights=values * values)) if len(values) else np.zeros(0)
        values /= norms[row_of]
        return row_of, feature_of, values

    def decision_function(self, texts: Sequence[str]) -> np.ndarray:
        """Raw linear scores, one row per text, one column per area."""
        texts = _as_texts(texts)
        return self._scores(*self.tfidf(texts), len(texts))

    def _scores(self, row_of: np.ndarray, feature_of: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
        contributions = self._coef_by_feature[feature_of] * values[:, None]
        scores = np.zeros((n, len(self.areas)))
        np.add.at(scores, row_of, contributions)
        return scores + self.intercept

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """Calibrated probabilities, one row per text (summing to 1), one column per area."""
        return softmax(self.decision_function(texts) / self.temperature)

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
        threshold = self.review_threshold if review_below is None else review_below
        tfidf = self.tfidf(texts)
        probabilities = softmax(self._scores(*tfidf, len(texts)) / self.temperature)
        best = probabilities.argmax(axis=1)
        terms = self._top_terms(*tfidf, best) if explain else [()] * len(texts)
        return [
            Prediction(
                area=self.areas[k],
                confidence=float(row[k]),
                scores=dict(zip(self.areas, map(float, row))),
                needs_review=bool(row[k] < threshold),
                top_terms=top,
            )
            for k, row, top in zip(best, probabilities, terms)
        ]

    def _top_terms(
        self, row_of: np.ndarray, feature_of: np.ndarray, values: np.ndarray, areas: np.ndarray, n: int = 10
    ) -> list[tuple[tuple[str, float], ...]]:
        """Per text, the terms with the largest push toward its area: TF-IDF value times the
        area's weight minus the mean weight over areas (the softmax ignores what all areas
        share), largest first, positive only."""
        centred = self._coef_by_feature - self._coef_by_feature.mean(axis=1, keepdims=True)
        push = values * centred[feature_of, areas[row_of]]
        starts = np.searchsorted(row_of, np.arange(len(areas) + 1))
        explanations = []
        for start, end in itertools.pairwise(starts):
            order = start + np.argsort(-push[start:end], kind="stable")[:n]
            explanations.append(
                tuple(
                    (self.vocabulary[feature_of[i]], round(float(push[i]), 4)) for i in order if push[i] > 0
                )
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
            return cls(card, vocabulary.split("\n") if vocabulary else [], **loaded)
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
