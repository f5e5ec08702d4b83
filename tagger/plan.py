"""The recipe's policy as data: how training cross-validates the labelled abstracts and how it
chooses its settings, every threshold in one frozen :class:`Plan`. Training takes a plan (the
default :data:`PLAN` unless given one), so a benchmark or a test changes the policy by passing
another, never by changing a module's constants.
"""

from __future__ import annotations

from dataclasses import dataclass

# With enough labelled abstracts, training chooses among these values by cross-validation
# (Plan.grid); the names are fields of TrainingSettings. sublinear_tf and
# balance_areas are not searched: on the development abstracts' two real taxonomies (11 areas
# by our mapping, 105 conference categories), the best candidate without sublinear TF was
# never better than the best with it by more than the selection's tolerance, and the best
# without balanced areas was 0.04 to 0.12 macro-F1 worse (the 40-candidate search,
# tests/benchmarks/bench_speed.py --abstracts DEV --full-search); leaving them out makes the
# search four times cheaper. C 0.3 was never chosen, and without it every held-out year chose
# the same settings (tests/benchmarks/bench_modern.py --plan "grid=C:1.0/3.0/10.0/30.0;ngram_max:1/2").
# With word pairs of two abstracts or more (pair_min_df 2), C 100 is best held out by year
# and by fold (docs/evaluation.md, "A sixth of the features").
GRID: dict[str, tuple] = {
    "C": (1.0, 3.0, 10.0, 30.0, 100.0),
    "ngram_max": (1, 2),
}

# With labelled abstracts and area descriptions, training chooses how much the labels weigh
# against the descriptions among these, by cross-validation on the labels (from Plan.weight_from
# labelled abstracts on): labels of the user's own pile deserve more weight than labels of
# abstracts unlike it. (0.01 and 1 were never among the finalists, and without them the
# held-out years' accuracy stayed the same: tests/benchmarks/bench_modern.py --by-year --plan
# "weight_grid=abstract_weight:0.03/0.1/0.3"; a search a third cheaper.)
WEIGHT_GRID: dict[str, tuple] = {"abstract_weight": (0.03, 0.1, 0.3)}
WEIGHT_FROM = 10


@dataclass(frozen=True)
class SelfTrainingPlan:
    """How training learns from a pile (:mod:`tagger.selftraining`): up to ``rounds`` rounds,
    each keeping the most confident ``share`` of each predicted area as pseudo-labels, stopping
    early when under ``stop_change`` of them change; an abstract is pseudo-labelled only when
    the model knows at least ``known_min`` of its words and ``known_share`` of those that are
    not stop words (random words: none). A pile larger than ``pile_max`` abstracts is sampled
    down (evenly, in order), and each text is learnt from by its first ``text_max`` characters
    (an abstract is a few thousand; a whole book would bring a vocabulary of its own)."""

    rounds: int = 3
    share: float = 0.5
    stop_change: float = 0.01
    known_min: int = 2
    known_share: float = 1 / 3
    pile_max: int = 20_000
    text_max: int = 20_000

    @property
    def method(self) -> str:
        """How, in the words of the model card."""
        return (
            f"self-training: the most confident {self.share:.0%} of each predicted area, up to "
            f"{self.rounds} rounds (stopping when under {self.stop_change:.0%} of pseudo-labels change)"
        )


@dataclass(frozen=True)
class Plan:
    """How the labelled abstracts are cross-validated and the settings chosen.

    Cross-validation: leave-one-out up to ``leave_one_out_max`` labelled abstracts, stratified
    ``folds``-fold above (shuffled with ``random_state``); at most ``probes_max`` held-out
    abstracts are also scored cut short (for the calibration's evidence scale).

    Selection, with ``search`` only (``tagger train --search``; otherwise a first training has
    the defaults and a retrain keeps its previous model's settings): from ``select_from``
    labelled abstracts on, the settings are chosen among ``grid`` (names of
    :class:`~tagger.settings.TrainingSettings` and their values), every point cross-validated
    in full, by macro-F1, on a stratified sample of at most ``selection_sample`` of them (the
    choice is stable by then, and the search stays minutes on large corpora); with area
    descriptions, the labels' weight among ``weight_grid`` from ``weight_from`` labels on. The
    defaults stay unless another point is better by more than ``selection_tolerance``.

    Learning from a pile: ``self_training`` (:class:`SelfTrainingPlan`).
    """

    leave_one_out_max: int = 100
    folds: int = 5
    random_state: int = 0
    probes_max: int = 2000
    select_from: int = 200
    selection_sample: int = 5000
    grid: tuple[tuple[str, tuple], ...] = tuple(GRID.items())
    weight_from: int = WEIGHT_FROM
    weight_grid: tuple[tuple[str, tuple], ...] = tuple(WEIGHT_GRID.items())
    selection_tolerance: float = 0.01
    search: bool = False
    self_training: SelfTrainingPlan = SelfTrainingPlan()

    def with_grid(self, grid: dict[str, tuple]) -> Plan:
        """This plan searching ``grid`` instead (names of training settings, their values)."""
        from dataclasses import replace

        return replace(self, grid=tuple(grid.items()))


PLAN = Plan()
