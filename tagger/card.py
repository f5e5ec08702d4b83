"""The model card: what a model tags, how it was trained, and how well it did.

The schema is defined once, here, as frozen dataclasses: training builds a card, saving
writes it as JSON (``model.json``), loading reads and checks it, and the command line and the
reports read its fields. The JSON nests the training settings as ``features`` and
``classifier``, as a person reading the file expects.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import Any

from ._version import install_hint
from .calibration import (
    EVIDENCE_SCALE_RANGE,
    TEMPERATURE_RANGE,
    TOP_OFFSET_RANGE,
    TOP_SLOPE_RANGE,
    TopLabelMap,
)
from .errors import ModelError, TaggerError
from .settings import FEATURE_FIELDS, TrainingSettings

# The card's format: a card of another version is refused, with how to mend it (retrain).
FORMAT_VERSION = 4


@dataclass(frozen=True)
class AreaEntry:
    slug: str
    name: str


@dataclass(frozen=True)
class TrainingData:
    origin: str
    sha256: str  # of the areas, texts and labels trained on
    labelled_abstracts: int
    uses_area_descriptions: bool
    # the area of each labelled abstract, by its text id (see TrainingSet.by_id):
    # what a retrain compares its labels with
    labels: dict


@dataclass(frozen=True)
class Unlabelled:
    """What self-training learnt from a pile of unlabelled abstracts (see
    :mod:`tagger.selftraining`)."""

    method: str
    sha256: str  # of the pile's texts, in order
    pile_abstracts: int
    used_abstracts: int
    rounds: int
    pseudo_labelled: int
    pseudo_labelled_per_area: dict
    pseudo_label_weight: float


@dataclass(frozen=True)
class SettingsSelection:
    """How the settings were chosen by cross-validation, with every candidate's figures."""

    scheme: str
    criterion: str
    grid: tuple[dict, ...]
    # when a retrain kept these settings from the model it replaced instead of searching,
    # saying so; None after a search (not written)
    reused: str | None = dataclasses.field(default=None, metadata={"omitted_when_none": True})


@dataclass(frozen=True)
class Calibration:
    """See :mod:`tagger.calibration`."""

    method: str
    temperature: float
    evidence_scale: float = 0.0
    top_slope: float = 1.0
    top_offset: float = 0.0
    top_evidence: float = 0.0
    # what the calibration was fitted on
    fitted_on: str | None = dataclasses.field(default=None, metadata={"omitted_when_none": True})
    # the most confidence the labels can back: (n + 1) / (n + k) for n labels of k areas
    # (a model of area descriptions without labels: each description one example)
    ceiling: float | None = dataclasses.field(default=None, metadata={"omitted_when_none": True})

    def __post_init__(self) -> None:
        low, high = TEMPERATURE_RANGE
        _require(low * (1 - 1e-9) <= self.temperature <= high * (1 + 1e-9), "calibration.temperature")
        _require(
            0.0 <= self.evidence_scale <= EVIDENCE_SCALE_RANGE[1] * (1 + 1e-9), "calibration.evidence_scale"
        )
        for name, (low, high) in (("top_slope", TOP_SLOPE_RANGE), ("top_offset", TOP_OFFSET_RANGE)):
            value = getattr(self, name)
            _require(low - 1e-9 * abs(low) <= value <= high + 1e-9 * abs(high), f"calibration.{name}")
        _require(0.0 <= self.top_evidence < float("inf"), "calibration.top_evidence")
        _require(self.ceiling is None or 0.0 < self.ceiling <= 1.0, "calibration.ceiling")

    @property
    def top_label(self) -> TopLabelMap:
        return TopLabelMap(self.top_slope, self.top_offset, self.top_evidence)


@dataclass(frozen=True)
class Review:
    """Predictions below ``threshold`` need review; at or above it, they were right
    ``accuracy_unflagged`` of the time in cross-validation (aimed at ``target_accuracy``),
    counting as wrong the ``no_area`` abstracts labelled as fitting no area, if any."""

    threshold: float
    target_accuracy: float
    share_flagged: float
    accuracy_unflagged: float
    no_area: int | None = dataclasses.field(default=None, metadata={"omitted_when_none": True})

    def __post_init__(self) -> None:
        _require(0.0 <= self.threshold <= 1.0, "review.threshold")


@dataclass(frozen=True)
class NewLabels:
    """The labelled abstracts new since the model this one replaced (or given another area),
    and how often the new model, cross-validated, tags them with their label."""

    labelled: int
    accuracy: float


@dataclass(frozen=True)
class Evaluation:
    """Cross-validated figures of the training recipe."""

    scheme: str
    labelled_abstracts: int
    accuracy: float
    macro_f1: float
    ece: float
    per_area: dict  # area -> {precision, recall, f1, support}
    confusion: dict  # {areas, counts}: labelled (rows) by predicted (columns)
    possible_label_errors: tuple[dict, ...]
    new_labels: NewLabels | None = dataclasses.field(default=None, metadata={"omitted_when_none": True})
    # areas trained on but not measured: one labelled abstract each, without area descriptions
    left_out: tuple[str, ...] | None = dataclasses.field(default=None, metadata={"omitted_when_none": True})
    # abstracts whose two likeliest areas were tied: no answer, counted wrong (none: not written)
    ties: int | None = dataclasses.field(default=None, metadata={"omitted_when_none": True})
    # top-k accuracy: k ("2", "3") -> how often the labelled area is among the k likeliest
    top_k: dict | None = dataclasses.field(default=None, metadata={"omitted_when_none": True})
    # when the model answers none (the abstract fits no area), the figures above count every
    # labelled abstract, none among them; these, those with an area ({labelled_abstracts,
    # accuracy, ece}), and the share of all answered none
    with_area: dict | None = dataclasses.field(default=None, metadata={"omitted_when_none": True})
    answered_none: float | None = dataclasses.field(default=None, metadata={"omitted_when_none": True})


@dataclass(frozen=True)
class ModelCard:
    format_version: int
    created: str
    areas: tuple[AreaEntry, ...]
    labelled_per_area: dict
    training_data: TrainingData
    settings: TrainingSettings
    n_features: int
    settings_selection: SettingsSelection | None
    calibration: Calibration
    review: Review
    evaluation: Evaluation
    versions: dict
    unlabelled: Unlabelled | None = None

    def __post_init__(self) -> None:
        _require(len(self.areas) >= 2, "areas (a model needs at least two)")
        _require(len(set(self.slugs)) == len(self.slugs), "areas (a slug is repeated)")
        _require(self.n_features >= 0, "features.n_features")

    @property
    def slugs(self) -> tuple[str, ...]:
        return tuple(area.slug for area in self.areas)

    def to_dict(self) -> dict:
        """The card as JSON data, in the order ``model.json`` shows it."""
        data = {field.name: plain(getattr(self, field.name)) for field in dataclasses.fields(self)}
        settings = data.pop("settings")
        n_features = data.pop("n_features")
        features = {
            "analyzer": {"ngram_max": settings["ngram_max"]},
            **{k: settings[k] for k in FEATURE_FIELDS if k != "ngram_max"},
            "n_features": n_features,
        }
        classifier = {
            "type": "LogisticRegression" + (" + ComplementNB" if self.settings.bayes_weight else ""),
            "fit_intercept": self.settings.fit_intercept,
            **{k: v for k, v in settings.items() if k not in FEATURE_FIELDS},
        }
        order = list(data)
        at = order.index("settings_selection")
        order[at:at] = ["features", "classifier"]
        data.update(features=features, classifier=classifier)
        return {key: data[key] for key in order}

    @classmethod
    def from_dict(cls, data: Any) -> ModelCard:
        """The card of JSON data; :class:`~tagger.errors.ModelError`-free checking is the
        caller's: this raises ``ValueError`` naming what is missing or garbled."""
        if not isinstance(data, dict):
            raise ValueError("the model card is not a JSON object")
        features, classifier = data.get("features"), data.get("classifier")
        if not isinstance(features, dict) or not isinstance(classifier, dict):
            raise ValueError("the model card lacks or garbles features, classifier")
        analyzer = features.get("analyzer")
        if not isinstance(analyzer, dict):
            raise ValueError("the model card lacks or garbles features.analyzer")
        settings = {
            "ngram_max": analyzer.get("ngram_max"),
            **{k: features.get(k) for k in FEATURE_FIELDS if k != "ngram_max"},
            **{k: classifier.get(k) for k in TrainingSettings.field_names() if k not in FEATURE_FIELDS},
        }
        fields = {**data, "settings": settings, "n_features": features.get("n_features")}
        return _build(cls, fields, "")


def plain(value):
    """Dataclasses and tuples as JSON data (dicts and lists)."""
    if dataclasses.is_dataclass(value):
        return {
            field.name: plain(getattr(value, field.name))
            for field in dataclasses.fields(value)
            if not (field.metadata.get("omitted_when_none") and getattr(value, field.name) is None)
        }
    if isinstance(value, (tuple, list)):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    return value


_SCALARS = {int: "a whole number", float: "a number", bool: "true or false", str: "text", dict: "an object"}


def _build(kind, value, where: str):
    """``value`` (JSON data) as ``kind`` (a dataclass, tuple, scalar or optional type),
    checked; ``ValueError`` naming the first field that does not fit."""
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        options = [option for option in typing.get_args(kind) if option is not type(None)]
        return None if value is None else _build(options[0], value, where)
    if origin is tuple:
        if not isinstance(value, list):
            raise ValueError(f"the model card lacks or garbles {where} (expected a list)")
        item_kind = typing.get_args(kind)[0]
        return tuple(_build(item_kind, item, f"{where}[{i}]") for i, item in enumerate(value))
    if dataclasses.is_dataclass(kind):
        if not isinstance(value, dict):
            raise ValueError(f"the model card lacks or garbles {where or 'its fields'} (expected an object)")
        hints = typing.get_type_hints(kind)
        built = {
            field.name: _build(hints[field.name], value.get(field.name), _join(where, field.name))
            for field in dataclasses.fields(kind)
            if field.name in value or field.default is dataclasses.MISSING
        }
        try:
            return typing.cast(typing.Any, kind)(**built)
        except TaggerError as error:  # a setting out of range
            raise ValueError(f"the model card holds a bad setting ({error.what})") from None
        except ValueError as error:  # a number out of range (see _require)
            raise ValueError(f"the model card holds an impossible value: {error}") from None
    expected = origin or kind
    ok = isinstance(value, expected) and (expected is bool or not isinstance(value, bool))
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        try:
            ok, value = True, float(value)
        except OverflowError:  # a whole number of hundreds of digits: no float holds it
            raise ValueError(f"the model card holds an impossible value: {where} is too large") from None
    if not ok:
        raise ValueError(f"the model card lacks or garbles {where} (expected {_SCALARS[expected]})")
    return value


def _require(holds: bool, what: str) -> None:
    """One check of a card's numbers: ``ValueError`` naming the field when it does not hold
    (NaN never holds)."""
    if not holds:
        raise ValueError(what)


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def read_card(data: Any, where: str) -> ModelCard:
    """The card of JSON ``data`` read from ``where``, or a clear :class:`ModelError`."""
    version = data.get("format_version") if isinstance(data, dict) else None
    if isinstance(version, int) and not isinstance(version, bool) and version != FORMAT_VERSION:
        newer = version > FORMAT_VERSION
        raise ModelError(
            f"model format {version} was written by {'a newer' if newer else 'an earlier'} tagger "
            f"(this one reads format {FORMAT_VERSION})",
            where=where,
            fix=(f"Upgrade tagger ({install_hint()}), or retrain" if newer else "Retrain")
            + " the model with this version: tagger train (the labels are unchanged).",
        )
    try:
        return ModelCard.from_dict(data)
    except ValueError as error:
        raise ModelError(str(error), where=where, fix="Retrain with 'tagger train'.") from None
