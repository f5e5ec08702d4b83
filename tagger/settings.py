"""Every setting of training in one place: how text becomes features and how the classifier
is fitted. Values are checked when the settings are made; the model card records them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from .errors import UsageError
from .features import TextAnalyzer

# With enough labelled abstracts, training chooses among these values by cross-validation
# (see tagger.training); the names are fields of TrainingSettings. sublinear_tf and
# balance_areas are not searched: on the development abstracts' two real taxonomies (11 areas
# by our mapping, 105 conference categories), the best candidate without sublinear TF was
# never better than the best with it by more than the selection's tolerance, and the best
# without balanced areas was 0.04 to 0.12 macro-F1 worse (the 40-candidate search,
# tests/benchmarks/bench_speed.py --abstracts DEV --full-search); leaving them out makes the
# search four times cheaper.
SELECTION_GRID: dict[str, tuple] = {
    "C": (0.3, 1.0, 3.0, 10.0, 30.0),
    "ngram_max": (1, 2),
}

# With labelled abstracts and area descriptions, training chooses how much the labels weigh
# against the descriptions among these, by cross-validation on the labels (from WEIGHT_FROM
# labelled abstracts on): labels of the user's own pile deserve more weight than labels of
# abstracts unlike it.
WEIGHT_GRID: dict[str, tuple] = {"abstract_weight": (0.01, 0.03, 0.1, 0.3, 1.0)}
WEIGHT_FROM = 10

# The fields that decide which features come out of a text (the rest fit the classifier).
FEATURE_FIELDS = ("ngram_max", "sublinear_tf", "min_df")


@dataclass(frozen=True)
class TrainingSettings:
    """How features are made and the classifier is fitted.

    ``ngram_max``: 1 for single words, 2 for single words and neighbouring pairs.
    ``balance_areas``: every area's labelled abstracts together weigh the same, whatever
    its size, and the model has no intercept (no area is a priori more likely); otherwise
    every abstract weighs the same and an intercept learns how common each area is.
    ``abstract_weight`` weighs the labelled abstracts against the area descriptions: with
    balanced areas, each area's labelled abstracts together weigh ``abstract_weight * n / k``
    (n labelled abstracts, k areas with labels), so labels count for more as they grow;
    each description weighs ``description_weight``. Pseudo-labelled abstracts of a pile
    (self-training) weigh ``pseudo_label_weight`` times as much as hand-labelled ones, by the
    same rule. ``review_accuracy``: predictions at or above the review threshold were right
    this often in cross-validation.
    """

    ngram_max: int = 2
    sublinear_tf: bool = True
    min_df: int = 1
    C: float = 30.0
    balance_areas: bool = True
    abstract_weight: float = 0.03
    description_weight: float = 1.0
    pseudo_label_weight: float = 0.25
    review_accuracy: float = 0.9
    max_iter: int = 5000

    def __post_init__(self) -> None:
        checks = {
            "ngram_max": (self.ngram_max in (1, 2) and _is_int(self.ngram_max), "1 or 2"),
            "sublinear_tf": (isinstance(self.sublinear_tf, bool), "True or False"),
            "min_df": (_is_int(self.min_df) and self.min_df >= 1, "a whole number of at least 1"),
            "C": (_is_positive(self.C), "a positive number"),
            "balance_areas": (isinstance(self.balance_areas, bool), "True or False"),
            "abstract_weight": (_is_positive(self.abstract_weight), "a positive number"),
            "description_weight": (_is_positive(self.description_weight), "a positive number"),
            "pseudo_label_weight": (_is_positive(self.pseudo_label_weight), "a positive number"),
            "review_accuracy": (
                _is_number(self.review_accuracy) and 0 < self.review_accuracy <= 1,
                "a number in (0, 1]",
            ),
            "max_iter": (_is_int(self.max_iter) and self.max_iter >= 1, "a whole number of at least 1"),
        }
        for name, (ok, expected) in checks.items():
            if not ok:
                raise UsageError(
                    f"training setting {name}={getattr(self, name)!r} is not valid", fix=f"Use {expected}."
                )

    @property
    def analyzer(self) -> TextAnalyzer:
        """The text analyser these settings make features with."""
        return TextAnalyzer(ngram_max=self.ngram_max)

    @property
    def fit_intercept(self) -> bool:
        return not self.balance_areas

    def features(self) -> dict:
        """The feature settings (for grouping candidates that share one TF-IDF fit)."""
        return {name: getattr(self, name) for name in FEATURE_FIELDS}

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_positive(value) -> bool:
    return _is_number(value) and value > 0


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
