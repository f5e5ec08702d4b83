"""A fitted model: plain arrays plus a model card. Prediction needs numpy (large batches also
use pyarrow, when installed, and scipy), never scikit-learn.

A model directory holds ``model.json`` (the card: areas, settings, training data, figures)
and the weights file the card names (``weights-<hash>.npz``: vocabulary, idf, coefficients,
intercepts). Loading reads data only, never code (``allow_pickle=False``), and checks the
weights against the hash in the card. A model never changes once made: saving writes files
and leaves the model as it was.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import stat
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import overload
from zipfile import BadZipFile

import numpy as np

from .atomic import atomic_write
from .calibration import Scores, calibrated
from .card import ModelCard, read_card
from .checks import a_kind, number
from .errors import ArgumentError, ArgumentTypeError, ModelError, UsageError
from .features import LARGE_BATCH, SparseRows, TfidfFeatures
from .locking import locked
from .prediction import NONE, UNSCORED, Prediction, predictions
from .shipped import CARD_FILE, default_model_folder, shipped_path

ARRAYS = ("vocabulary", "idf", "coef", "intercept")


# Python's predict and predict_proba tag this many texts at a time: a list of any length is
# tagged in bounded memory (the command line reads and tags files in chunks of its own).
BLOCK = 5_000


class Model:
    """TF-IDF features and a linear classifier, as read-only arrays, with their card; see
    :func:`tagger.train`. Learned state: ``vocabulary``, ``idf``, ``coef`` (areas x
    features), ``intercept``; everything else is in ``card``."""

    __slots__ = ("_coef_by_feature", "card", "coef", "features", "idf", "intercept", "vocabulary")
    card: ModelCard
    vocabulary: tuple[str, ...]
    idf: np.ndarray
    coef: np.ndarray
    intercept: np.ndarray
    features: TfidfFeatures
    _coef_by_feature: np.ndarray | None

    def __init__(
        self,
        card: ModelCard,
        vocabulary: Sequence[str],
        idf: np.ndarray,
        coef: np.ndarray,
        intercept: np.ndarray,
    ) -> None:
        setattr_ = super().__setattr__
        setattr_("card", card)
        setattr_("vocabulary", tuple(vocabulary))
        for name, array in (("idf", idf), ("coef", coef), ("intercept", intercept)):
            setattr_(name, _read_only(array))
        _check_shapes(self)
        setattr_("_coef_by_feature", None)  # (made for the first large batch: see _by_feature)
        settings = card.settings
        features = TfidfFeatures(settings.analyzer, self.vocabulary, self.idf, settings.sublinear_tf)
        setattr_("features", features)

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError(f"a Model never changes once made (setting {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"a Model never changes once made (deleting {name!r})")

    def __reduce__(self):
        """What a pickle (a Dask worker, a process pool) gets: the card and the arrays; the
        word lookup is rebuilt on arrival rather than sent."""
        return (Model, (self.card, self.vocabulary, self.idf, self.coef, self.intercept))

    def __repr__(self) -> str:
        data = self.card.training_data
        return (
            f"<tagger Model: {len(self.areas)} areas ({', '.join(self.areas)}); trained on "
            f"{data.labelled_abstracts} labelled abstracts of {data.origin}; {self.card.created}>"
        )

    @property
    def areas(self) -> tuple[str, ...]:
        """Every answer the model gives: its taxonomy's areas and, when it learnt it, ``none``."""
        return self.card.slugs

    @property
    def taxonomy(self) -> tuple[str, ...]:
        """The areas of the model's taxonomy: its answers but ``none`` (fits no area)."""
        return tuple(slug for slug in self.areas if slug != NONE)

    @property
    def temperature(self) -> float:
        return self.card.calibration.temperature

    @property
    def review_threshold(self) -> float:
        """Predictions with a confidence below this need review (from cross-validation)."""
        return self.card.review.threshold

    def threshold(self, review_below: float | None = None) -> float:
        """The review threshold in force: ``review_below`` if given (from 0 to 1), else the
        model's."""
        if review_below is None:
            return self.review_threshold
        return number(review_below, "review_below")

    # -- prediction -------------------------------------------------------------------------

    def tfidf(self, texts: Sequence[str]):
        """The TF-IDF matrix of ``texts`` (a scipy CSR matrix, one l2-normed row per text)."""
        return self.features.transform(_as_texts(texts))

    def decision_function(self, texts: Sequence[str]) -> np.ndarray:
        """Raw linear scores (uncalibrated), one row per text, one column per area."""
        return self._scores(*self.features.transform_with_evidence(_as_texts(texts))).raw

    def _by_feature(self) -> np.ndarray:
        """The weights one row per feature (contiguous): what a large batch is multiplied by,
        and what explanations read. Made on first use (a tenth of a second for 300,000 terms,
        which one abstract in a new process need not pay), then kept."""
        if self._coef_by_feature is None:
            by_feature = np.ascontiguousarray(self.coef.T)
            by_feature.flags.writeable = False
            super().__setattr__("_coef_by_feature", by_feature)
        return self._coef_by_feature  # type: ignore[return-value]  # (set just above)

    def _centred(self) -> np.ndarray:
        """The weights by feature less their mean over areas: each term's push toward an area
        (the softmax ignores what all areas share)."""
        by_feature = self._by_feature()
        return by_feature - by_feature.mean(axis=1, keepdims=True)

    def ready_for_large_batches(self) -> None:
        """Make now what large batches use (before worker processes are forked, which then
        share it): the weights by feature and the features' lookup tables."""
        self._by_feature()
        self.features.ready_for_large_batches()

    def _scores(self, matrix, evidence: np.ndarray) -> Scores:
        small = isinstance(matrix, SparseRows) and matrix.shape[0] < LARGE_BATCH
        linear = matrix.dot_transposed(self.coef) if small else matrix.dot(self._by_feature())
        return Scores(linear, np.broadcast_to(self.intercept, linear.shape), evidence)

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """Calibrated probabilities, one row per text (summing to 1), one column per area
        (computed :data:`BLOCK` texts at a time: memory bounded whatever their number)."""
        texts = _as_texts(texts)
        return np.concatenate(
            [
                self._calibrated(*self.features.transform_with_evidence(texts[at : at + BLOCK]))
                for at in range(0, max(len(texts), 1), BLOCK)
            ]
        )

    def _calibrated(self, matrix, evidence: np.ndarray) -> np.ndarray:
        calibration = self.card.calibration
        scores = self._scores(matrix, evidence)
        return calibrated(
            scores,
            calibration.temperature,
            calibration.evidence_scale,
            calibration.top_label,
            calibration.ceiling,
        )

    @overload
    def predict(  # type: ignore[overload-overlap]  # a str is an iterable of str: this one wins
        self, texts: str, *, review_below: float | None = ..., explain: bool = ...
    ) -> Prediction: ...
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
        texts, no_abstract = _as_abstracts(texts)
        threshold = self.threshold(review_below)
        results: list[Prediction] = []
        for at in range(0, max(len(texts), 1), BLOCK):  # (memory bounded whatever their number)
            matrix, evidence = self.features.transform_with_evidence(texts[at : at + BLOCK])
            probabilities = self._calibrated(matrix, evidence)
            probabilities[no_abstract[at : at + BLOCK]] = UNSCORED
            found = predictions(probabilities, self.areas, threshold)
            if explain:
                terms = self._top_terms(matrix, probabilities.argmax(axis=1))
                found = [replace(p, top_terms=t) for p, t in zip(found, terms)]
            results += found
        return results

    def score(self, texts: Iterable[str], areas: Iterable[str]) -> float:
        """Accuracy on labelled abstracts (as scikit-learn's ``score``); every figure of
        ``tagger evaluate --model`` is in :func:`tagger.evaluate.test_model`."""
        texts, areas = _as_texts(texts), [str(area) for area in areas]
        if len(texts) != len(areas) or not texts:
            raise UsageError(
                f"{len(texts)} abstracts and {len(areas)} areas",
                fix="Give one area per abstract, at least one.",
            )
        return float(np.mean([p.area == area for p, area in zip(self.predict(texts), areas)]))

    def area_terms(self, n: int = 12) -> dict[str, tuple[str, ...]]:
        """Each area's ``n`` terms of most weight toward it (its weight less the mean weight
        over areas, as :meth:`_top_terms` weighs them, without a text's TF-IDF)."""
        centred = self._centred()
        return {
            area: tuple(self.vocabulary[i] for i in _first(-centred[:, k], n))
            for k, area in enumerate(self.areas)
        }

    def terms_toward(self, text: str, k: int = 2, n: int = 8) -> dict[str, tuple[tuple[str, float], ...]]:
        """The terms of ``text`` that push it toward each of its ``k`` most likely areas, ``n``
        at most each, by area (for the first area, what ``predict(explain=True)`` gives)."""
        matrix, evidence = self.features.transform_with_evidence(_as_texts([text]))
        probabilities = self._calibrated(matrix, evidence)[0]
        top = np.argsort(-probabilities, kind="stable")[:k]
        return {self.areas[area]: self._top_terms(matrix, np.array([area]), n)[0] for area in top}

    def _top_terms(self, matrix, areas: np.ndarray, n: int = 10) -> list[tuple[tuple[str, float], ...]]:
        """Per text, the terms with the largest push toward its area: TF-IDF value times the
        area's weight minus the mean weight over areas (the softmax ignores what all areas
        share), largest first, positive only."""
        centred = self._centred()
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

    def save(self, directory: str | os.PathLike) -> Path:
        """Write the weights, then the card that names them, each atomically, into
        ``directory``; an interrupted save leaves the previous model loadable. The model
        itself is left as it was. Returns the directory."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        np.savez(
            buffer,
            vocabulary=np.frombuffer("\n".join(self.vocabulary).encode("utf-8"), dtype=np.uint8),
            idf=self.idf,
            coef=self.coef,
            intercept=self.intercept,
        )
        data = buffer.getvalue()
        digest = hashlib.sha256(data).hexdigest()
        weights_file = f"weights-{digest[:16]}.npz"
        card = {
            **self.card.to_dict(),
            "weights_file": weights_file,
            "weights_sha256": digest,
            "weights_bytes": len(data),
        }
        with locked(directory):  # one save at a time; loads wait until the folder is consistent
            new_weights = not (directory / weights_file).exists()
            with atomic_write(directory / weights_file, "wb") as stream:
                stream.write(data)
            try:
                with atomic_write(directory / CARD_FILE) as stream:
                    json.dump(card, stream, indent=2, ensure_ascii=False)
                    stream.write("\n")
            except BaseException:
                if new_weights:  # named by no card: it would only take the space a retry needs
                    with contextlib.suppress(FileNotFoundError):
                        (directory / weights_file).unlink()
                raise
            for old in directory.glob("weights-*.npz"):
                if old.name != weights_file:
                    with contextlib.suppress(FileNotFoundError):
                        old.unlink()
        return directory

    @classmethod
    def load(cls, directory: str | os.PathLike) -> Model:
        """Read a model directory written by :meth:`save`. Runs no code from the files."""
        directory = Path(directory)
        card_path = directory / CARD_FILE
        if not card_path.is_file():
            raise ModelError(
                f"no model here (no {CARD_FILE})",
                where=str(directory),
                fix="Point --model at a folder written by 'tagger train'.",
            )
        with locked(directory, shared=True):  # a save in progress finishes first
            data = _read_json(card_path)
            weights_path = directory / _weights_file(data, card_path)
            try:
                _require_regular_file(weights_path, "weights file", _weights_limit(data))
                weights = weights_path.read_bytes()
            except OSError as error:
                raise ModelError(
                    f"cannot read the weights file ({error.strerror})",
                    where=str(weights_path),
                    fix="Retrain with 'tagger train'.",
                ) from None
        card = read_card(data, str(card_path))
        if hashlib.sha256(weights).hexdigest() != data.get("weights_sha256"):
            raise ModelError(
                "the weights file does not match its model card (edited, truncated or mixed up)",
                where=str(weights_path),
                fix="Restore the folder as it was written, or retrain with 'tagger train'.",
            )
        return cls._parse(card, weights, directory, weights_path)

    @classmethod
    def _parse(cls, card: ModelCard, weights: bytes, directory: Path, weights_path: Path) -> Model:
        """The model of a card and the weights it was checked to describe (by their SHA-256):
        plain arrays of real numbers (no pickled objects), of the shapes the card says."""
        try:
            with np.load(io.BytesIO(weights), allow_pickle=False) as arrays:
                loaded = {name: arrays[name] for name in ARRAYS}
            for name, array in loaded.items():
                if array.dtype.kind not in "fiu":
                    raise ValueError(f"{name} holds {array.dtype}, not real numbers")
                array.flags.writeable = False  # (read here, ours alone: kept, not copied)
            vocabulary = loaded.pop("vocabulary").tobytes().decode("utf-8")
        except (
            ValueError,
            KeyError,
            OSError,
            UnicodeDecodeError,
            EOFError,
            MemoryError,
            BadZipFile,
        ) as error:
            raise ModelError(
                f"damaged weights file ({error})", where=str(weights_path), fix="Retrain with 'tagger train'."
            ) from None
        try:
            return cls(card, vocabulary.split("\n") if vocabulary else [], **loaded)
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ModelError(
                f"damaged model ({type(error).__name__}: {error})",
                where=str(directory),
                fix="Retrain with 'tagger train'.",
            ) from None


def _first(values: np.ndarray, n: int) -> np.ndarray:
    """``np.argsort(values, kind="stable")[:n]`` without sorting them all: the ``n`` smallest
    (and those tied with the last of them) found first, then only they are sorted."""
    if n >= len(values):
        return np.argsort(values, kind="stable")
    if n <= 0:
        return np.zeros(0, dtype=np.intp)
    candidates = np.flatnonzero(values <= np.partition(values, n - 1)[n - 1])  # in index order
    return candidates[np.argsort(values[candidates], kind="stable")][:n]


def _as_texts(texts: Iterable[str]) -> list[str]:
    if isinstance(texts, str):
        return [texts]
    if isinstance(texts, (bytes, bytearray, Mapping)) or not isinstance(texts, Iterable):
        raise ArgumentTypeError(
            f"predict takes text, not {'None' if texts is None else type(texts).__name__}",
            fix="Pass an abstract as a str, or several as a list (or any iterable) of str.",
        )
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ArgumentTypeError(f"texts[{i}] is {a_kind(text)}, not a str", fix="Pass strings.")
    return texts


def _as_abstracts(texts: Iterable[str]) -> tuple[list[str], np.ndarray]:
    """Texts to tag, each checked as an abstract read from a file is (too long, no text): the
    one rule of :func:`tagger.text.abstract_problem` for the command line and
    :meth:`Model.predict`, and which of them are empty (no abstract: no area,
    :data:`tagger.prediction.UNSCORED`). (``predict_proba`` takes any text, as
    scikit-learn's does.)"""
    from .text import abstract_problem, empty

    texts = _as_texts(texts)
    for i, text in enumerate(texts):
        if not empty(text) and (problem := abstract_problem(text)):
            raise ArgumentError(f"texts[{i}]: {problem.what}", fix=problem.fix)
    return texts, np.array([empty(text) for text in texts], dtype=bool)


def _require_regular_file(path: Path, what: str, limit: int | None = None) -> None:
    """Refuse a model's file that is not a regular file (a FIFO would hang the read) or is
    larger than any tagger writes."""
    status = path.stat()
    if not stat.S_ISREG(status.st_mode):
        raise ModelError(
            f"the {what} is not a regular file", where=str(path), fix="Retrain with 'tagger train'."
        )
    if limit is not None and status.st_size > limit:
        raise ModelError(
            f"the {what} is {status.st_size:,} bytes, more than tagger ever writes ({limit:,})",
            where=str(path),
            fix="Retrain with 'tagger train'.",
        )


# Models read in this process, by folder (see load_model). A few, as each holds its arrays.
RECENT_MODELS = 3
_loaded: dict[str, tuple[tuple, Model]] = {}  # real folder -> its signature when read, the model
_loaded_lock = threading.Lock()


def _read_json(path: Path) -> dict:
    try:
        _require_regular_file(path, "model card", MAX_CARD_BYTES)
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:
        reason = "nested too deeply" if isinstance(error, RecursionError) else str(error)
        raise ModelError(
            f"unreadable model card ({reason})", where=str(path), fix="Retrain with 'tagger train'."
        ) from None
    if not isinstance(data, dict):
        raise ModelError(
            "the model card is not a JSON object", where=str(path), fix="Retrain with 'tagger train'."
        )
    return data


# The most a weights file of a card that does not record its size may hold (cards written
# before they did): 2 GiB is a vocabulary of millions of terms over hundreds of areas.
MAX_WEIGHTS_BYTES = 2 * 2**30


def resolve(model: Model | str | os.PathLike | None) -> Model:
    """The model a caller means: a :class:`Model` as it is, the path of a model folder
    loaded, ``None`` the shipped one. The one rule of every function that takes ``model=``."""
    if model is None or isinstance(model, (str, os.PathLike)):
        return load_model(model)
    if not isinstance(model, Model):
        raise UsageError(
            f"model must be a Model or the path of a model folder, not {type(model).__name__}",
            fix="Pass tagger.load_model(PATH), or the path itself.",
        )
    return model


def _weights_limit(data: dict) -> int:
    """The size a card's weights file may have: what the card records (it is written with
    them), else :data:`MAX_WEIGHTS_BYTES`; checked before the file is read."""
    size = data.get("weights_bytes")
    return size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else MAX_WEIGHTS_BYTES


def _weights_file(data: dict, path: Path) -> str:
    """The name of the weights file a card names: a file in the model folder."""
    name = data.get("weights_file")
    if not isinstance(name, str) or not isinstance(data.get("weights_sha256"), str):
        raise ModelError(
            "the model card lacks or garbles weights_file, weights_sha256",
            where=str(path),
            fix="Retrain with 'tagger train'.",
        )
    if Path(name).name != name or not name:
        raise ModelError("the weights file must be in the model folder", where=str(path), fix="Retrain.")
    return name


def _read_only(array) -> np.ndarray:
    """``array`` as read-only float64: itself when it is so already (another model's, which
    never changes), else a copy of our own."""
    if isinstance(array, np.ndarray) and array.dtype == np.float64 and not array.flags.writeable:
        return array
    array = np.array(array, dtype=np.float64)
    array.flags.writeable = False
    return array


MAX_CARD_BYTES = 64 * 2**20  # a card records a few dozen bytes per labelled abstract

# What trained weights can hold: an idf is ln((1 + n) / (1 + df)) + 1 for n documents (at least
# 1, and under 1000 for any corpus there can be), and a logistic regression's coefficients on
# l2-normed TF-IDF rows stay far inside the bound here, which keeps every score finite.
WEIGHT_RANGES = {"idf": (1.0, 1e3), "coef": (-1e6, 1e6), "intercept": (-1e6, 1e6)}


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
        low, high = WEIGHT_RANGES[name]
        if array.size and not (low <= array.min() and array.max() <= high):
            raise ModelError(
                f"{name} holds numbers from {array.min():.3g} to {array.max():.3g}, "
                f"outside [{low:g}, {high:g}] (no trained model has them; they would make confidences NaN)",
                fix="Retrain with 'tagger train'.",
            )


def shipped_model_dir() -> Path:
    """The model that comes with tagger: inside the installed package, or ``models/`` beside
    the package in a source checkout."""
    folder = shipped_path("models", "models")
    if folder is not None and (folder / CARD_FILE).is_file():
        return folder
    raise ModelError(
        "the shipped model is missing", fix="Reinstall tagger, or train one with 'tagger train'."
    )


def load_model(directory: str | os.PathLike | None = None) -> Model:
    """The model in ``directory``; without one, the model in ``./models`` when it holds one,
    else the shipped model (:func:`default_model_folder`: the command line's rule). A folder
    read before and unchanged since (each of its files the same by size, time and inode)
    gives the model read then (the one cache of models: each ``tagger.predict(texts,
    model=FOLDER)`` and each command run in one process reads no weights again, its lookup
    tables built); :meth:`Model.load` always reads."""
    if directory is None:
        directory = default_model_folder() or shipped_model_dir()
    real, signature = os.path.realpath(directory), _folder_signature(directory)
    with _loaded_lock:
        seen = _loaded.get(real)
    if seen is not None and signature is not None and seen[0] == signature:
        return seen[1]
    model = Model.load(directory)
    if signature is not None:
        with _loaded_lock:
            _loaded[real] = (signature, model)
            while len(_loaded) > RECENT_MODELS:
                _loaded.pop(next(iter(_loaded)))
    return model


def _folder_signature(directory: str | os.PathLike) -> tuple | None:
    """What changes when any file of a folder is written, replaced, added or removed."""
    try:
        with os.scandir(os.fspath(directory)) as entries:
            found = [(e.name, e.inode(), e.stat(follow_symlinks=False)) for e in entries]
    except OSError:
        return None
    return tuple(
        sorted((name, inode, st.st_size, st.st_mtime_ns, st.st_ctime_ns) for name, inode, st in found)
    )
