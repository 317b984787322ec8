"""Command-line parameter types and options shared by the commands."""

from __future__ import annotations

import math

import click


class FiniteFloat(click.FloatRange):
    """A float range that also refuses `nan` and `inf`, which a plain range
    lets through (no comparison with nan fails, and `inf` has no upper bound)."""

    name = "finite float"

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


# Options shared by the commands that judge items.
fallback_option = click.option(
    "--fallback",
    metavar="GRAPH.rbg|abstain",
    default=None,
    help=(
        "With a folder of compiled graphs: judge the items whose graph did not compile with this graph (e.g. a "
        "direct judge), or abstain on them. Default: record them as compile failures."
    ),
)
mode_option = click.option(
    "--mode",
    type=click.Choice(["pointwise", "pairwise"]),
    default=None,
    help="Which readout to use (default: from each item's shape).",
)
annotations_option = click.option(
    "--annotations",
    type=click.Path(dir_okay=False),
    help="JSON Lines of human annotations (item, candidate, key, value).",
)
recorded_option = click.option(
    "--recorded",
    type=click.Path(dir_okay=False),
    help="JSON Lines of recorded judgments (item, candidate, key, value).",
)
concurrency_option = click.option(
    "--concurrency",
    type=click.IntRange(1, 4096),
    default=8,
    show_default=True,
    help="Criterion calls in flight at once.",
)
