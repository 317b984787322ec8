"""The one definition of every figure an audit reports: its name (the key
in report.json and compare.json), the label the text, the page and the
viewer show, its formula, its denominator and its kind. docs/audit.md
("Figures") prints this table; a test checks that every figure name in a
report is here and there.

Kinds: `rate`, a proportion of the units measured with its Wilson interval
(a Rate in report.json); `difference`, one rate minus another with
Newcombe's hybrid score interval (an Estimate), whose label says what it
subtracts from what; `mean`, a mean with the percentile bootstrap interval
(an Estimate).
"""

from __future__ import annotations

import attrs

from rubriclang.evaluation.metrics import DEFINITIONS, METRICS


@attrs.frozen
class Figure:
    """One figure: `name` as report.json spells it, `label` as people read
    it, `formula` and `denominator` as docs/audit.md prints them."""

    name: str
    label: str
    kind: str  # rate, difference, mean
    formula: str
    denominator: str


_MEASURED = "measured: a failed judgment (or a variant or item with one) measured nothing and is left out"

FIGURES: dict[str, Figure] = {
    f.name: f
    for f in (
        Figure(
            "repeat_flip_rate",
            "repeat flip rate",
            "rate",
            "repeats of an original item that differ from the summary of its other repeats / repeats compared",
            f"repeats of the original items {_MEASURED}; with 1 repeat there is none (not measured)",
        ),
        Figure(
            "flip_rate",
            "invariant flip rate",
            "rate",
            "invariant variants flipped / invariant variants measured",
            f"invariant variants {_MEASURED}",
        ),
        Figure(
            "flip_rate_stable_baseline",
            "invariant flip rate, stable baselines",
            "rate",
            "flip_rate over the items whose baseline is stable",
            "invariant variants measured, of items with a stable baseline",
        ),
        Figure(
            "judgment_flip_rate",
            "judgment flip rate",
            "rate",
            "judgments of invariant variants that differ from their item's baseline / those judgments measured",
            f"judgments of invariant variants {_MEASURED}",
        ),
        Figure(
            "excess_over_noise",
            "excess over noise (variant flips - repeat flips)",
            "difference",
            "(variant judgments that differ from each leave-one-out baseline / such pairs) - repeat_flip_rate, "
            "over the items both measured",
            "pairs (variant judgment, leave-one-out baseline) measured, and repeats measured, on the same items",
        ),
        Figure(
            "detection_rate",
            "detection rate",
            "rate",
            "eligible degraded variants detected / eligible degraded variants measured",
            f"eligible directional variants {_MEASURED}",
        ),
        Figure(
            "detection_rate_stable_baseline",
            "detection rate, stable baselines",
            "rate",
            "detection_rate over the items whose baseline is stable",
            "eligible directional variants measured, of items with a stable baseline",
        ),
        Figure(
            "detection_over_noise",
            "detection over noise (variant falls - repeat falls)",
            "difference",
            "(variant judgments below each leave-one-out baseline / such pairs) - (repeats below the summary of "
            "their other repeats / repeats compared), over the eligible items both measured",
            "pairs measured on eligible items, and repeats measured on the same items",
        ),
        Figure(
            "contradiction_rate",
            "contradiction rate",
            "rate",
            "degraded variants whose score rose / degraded variants with room to rise, measured",
            f"directional variants whose baseline has room to rise, {_MEASURED}",
        ),
        Figure(
            "score_shift",
            "score shift",
            "mean",
            "mean of (variant's score - its item's baseline score)",
            "variants whose summary and baseline are both decided",
        ),
        Figure(
            "score_fell",
            "score fell",
            "rate",
            "eligible degraded variants whose threshold's score fell / those measured",
            f"eligible directional variants {_MEASURED}",
        ),
        Figure(
            "fell_without_crossing",
            "fell without crossing",
            "rate",
            "eligible degraded variants whose score fell and whose verdict stayed / those measured",
            f"eligible directional variants {_MEASURED}",
        ),
        Figure(
            "margin",
            "margin above the threshold",
            "mean",
            "mean of (baseline score - the threshold's `at`)",
            "eligible directional variants measured",
        ),
        Figure(
            "accuracy",
            "accuracy vs gold",
            "rate",
            "items whose verdict (ordinal: modal decision) equals gold / items measured",
            f"items with gold, {_MEASURED}",
        ),
        Figure(
            "within_tolerance",
            "within tolerance of gold",
            "rate",
            "items whose mean verdict is within `tolerance` of gold / items measured",
            "items with gold and a decided verdict (ordinal judges)",
        ),
        Figure(
            "mae",
            "MAE vs gold",
            "mean",
            "mean of abs(mean verdict - gold)",
            "items with gold and a decided verdict (ordinal judges)",
        ),
        Figure(
            "rank_correlation",
            "rank correlation vs gold",
            "mean",
            "Spearman's rho of the mean verdict and gold (rbg eval's `spearman`)",
            "items with gold and a decided verdict (ordinal judges)",
        ),
        Figure(
            "tie_rate",
            "tie rate",
            "rate",
            f"rbg eval's `tie_rate`, {DEFINITIONS['tie_rate'].formula}, over the judgments measured (against "
            "gold: the items' verdicts)",
            f"judgments (items) {_MEASURED}",
        ),
        Figure(
            "abstain_rate",
            "abstain rate",
            "rate",
            f"rbg eval's `abstain_rate`, {DEFINITIONS['abstain_rate'].formula}, over the judgments measured "
            "(against gold: the items' verdicts)",
            f"judgments (items) {_MEASURED}",
        ),
        Figure(
            "tie_rate_change",
            "tie rate change (variants - originals)",
            "difference",
            "variants' tie_rate - the tie_rate of their items' original judgments",
            "judgments measured of the variants, and of the same items' originals",
        ),
        Figure(
            "abstain_rate_change",
            "abstain rate change (variants - originals)",
            "difference",
            "variants' abstain_rate - the abstain_rate of their items' original judgments",
            "judgments measured of the variants, and of the same items' originals",
        ),
        Figure(
            "repeat_move_rate",
            "moved across repeats",
            "rate",
            "a criterion's judgments of an original item that differ from its summary / those judgments",
            "the criterion's judgments of the original items, of runs that did not fail",
        ),
        Figure(
            "invariant_move_rate",
            "moved, invariant variants",
            "rate",
            "invariant variants on which the criterion's summary moved / invariant variants measured",
            f"invariant variants of items whose graph has the criterion, {_MEASURED}",
        ),
        Figure(
            "directional_move_rate",
            "moved, directional variants",
            "rate",
            "directional variants on which the criterion's summary moved / directional variants measured",
            f"directional variants of items whose graph has the criterion, {_MEASURED}",
        ),
        Figure(
            "b_minus_a",
            "B - A",
            "difference",
            "(the figure in audit B) - (the same figure in audit A), over the shared units",
            "the units both audits measured (variants; for the repeat flip rate, repeats)",
        ),
    )
}

# A pairwise judge's figures against gold are `rbg eval`'s own, computed by
# its functions: their formulas are its (docs/evaluation.md). Its `coverage`
# (the decided share, 1 - tie_rate - abstain_rate) is left out: in an audit,
# `coverage` is the measured share beside every rate.
PAIRWISE_GOLD = tuple(name for name in METRICS["pairwise"] if name != "coverage")


def _eval_figure(name: str) -> Figure:
    m = DEFINITIONS[name]
    return Figure(name, f"{name.replace('_', ' ')} vs gold", "rate", f"rbg eval's `{name}`: {m.formula}", m.denominator)


FIGURES.update({name: _eval_figure(name) for name in PAIRWISE_GOLD if name not in FIGURES})

# The gold block's figures, in the order every renderer shows them.
GOLD_FIGURES = ("accuracy", "within_tolerance", "mae", "rank_correlation", *PAIRWISE_GOLD)

# Fields of every Rate beside its value (report.json, compare.json).
RATE_FIELDS = {
    "count": "the units counted (the numerator)",
    "total": "the units measured (the denominator)",
    "failed": "the units that failed: they measured nothing, and are in neither count nor total",
    "coverage": "total / (total + failed): the share of the units that were measured; null when there were none",
    "n": "the items the figure rests on (the clusters of its interval)",
}

NOT_MEASURED = "not measured"


def label(name: str) -> str:
    """The label of a figure, as every renderer shows it."""
    return FIGURES[name].label


def markdown_table() -> str:
    """The table docs/audit.md prints under "Figures"."""
    rows = ["| figure | label | kind | formula | denominator |", "|---|---|---|---|---|"]
    rows += [f"| `{f.name}` | {f.label} | {f.kind} | {f.formula} | {f.denominator} |" for f in FIGURES.values()]
    return "\n".join(rows) + "\n"
