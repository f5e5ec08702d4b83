"""Every setting of training in one place: how text becomes features and how the classifier
is fitted. Values are checked when the settings are made; the model card records them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from .checks import number
from .errors import ArgumentError, UsageError
from .features import TextAnalyzer

# The fields that decide which features come out of a text (the rest fit the classifier).
FEATURE_FIELDS = ("ngram_max", "sublinear_tf", "min_df", "pair_min_df")


@dataclass(frozen=True)
class TrainingSettings:
    """How features are made and the classifier is fitted.

    ``ngram_max``: 1 for single words, 2 for single words and neighbouring pairs.
    ``min_df``: a term is a feature when at least this many training documents hold it;
    ``pair_min_df``: a word pair, when at least this many do (and ``min_df``): a pair of one
    or two abstracts says little of the next one. On the 6,121 shipped labels, 3 keeps 53,000
    features (2: 89,000) and fits a third faster, within half a
    point of 2 held out by year and by fold (docs/evaluation.md).
    ``balance_areas``: every area's labelled abstracts together weigh the same, whatever
    its size, and the model has no intercept (no area is a priori more likely); otherwise
    every abstract weighs the same and an intercept learns how common each area is.
    ``abstract_weight`` weighs the labelled abstracts against the area descriptions: with
    balanced areas, each area's labelled abstracts together weigh ``abstract_weight * n / k``
    (n labelled abstracts, k areas with labels), so labels count for more as they grow;
    each description weighs ``description_weight``. Pseudo-labelled abstracts of a pile
    (self-training) weigh ``pseudo_label_weight`` times as much as hand-labelled ones, by the
    same rule. ``bayes_weight``: how much a complement naive Bayes fitted on the same weighted
    documents adds to the logistic regression's scores (0: the regression alone), and
    ``bayes_smoothing`` its additive smoothing (see :class:`tagger.fitting.BlendedClassifier`;
    the defaults are those with area descriptions: :func:`default_settings`).
    ``no_area_weight``: how much the labels of the answer ``none`` (the abstract fits no area,
    when the model learns it: :data:`tagger.labels.NO_AREA_MIN`) weigh, as a multiple of an area's.
    ``review_accuracy``: predictions at or above the review threshold were right
    this often in cross-validation.
    """

    ngram_max: int = 2
    sublinear_tf: bool = True
    min_df: int = 1
    pair_min_df: int = 3
    C: float = 100.0
    balance_areas: bool = True
    abstract_weight: float = 0.1
    description_weight: float = 1.0
    pseudo_label_weight: float = 0.25
    bayes_weight: float = 2.0
    bayes_smoothing: float = 0.01
    no_area_weight: float = 1.5
    review_accuracy: float = 0.93
    max_iter: int = 5000

    def __post_init__(self) -> None:
        """Each setting checked: a bad one is an :class:`~tagger.errors.ArgumentError` (a
        ``ValueError`` too, as scikit-learn's estimators refuse a bad parameter)."""
        try:
            for name in NUMBERS:  # (each has its row in tagger.checks.RANGES, one table for every number)
                number(getattr(self, name), f"training setting {name}", name)
        except UsageError as error:
            raise ArgumentError(error.what, fix=error.fix) from None
        for name in ("sublinear_tf", "balance_areas"):
            if not isinstance(getattr(self, name), bool):
                raise ArgumentError(
                    f"training setting {name} {getattr(self, name)!r} is not valid", fix="Use True or False."
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


# The settings that are numbers (the rest are switches): their fields of type int or float.
NUMBERS = tuple(f.name for f in fields(TrainingSettings) if f.type in ("int", "float"))


def default_settings(use_descriptions: bool) -> TrainingSettings:
    """The settings training starts from (and keeps, below the search's sizes). With area
    descriptions, naive Bayes is blended in: it keeps the descriptions' words in play on
    abstracts of other years and sources. Without them, the regression alone: on a labelled
    corpus of its own categories the blend was 2 to 8 points less accurate (docs/evaluation.md)."""
    return TrainingSettings() if use_descriptions else TrainingSettings(bayes_weight=0.0)
