"""Command-line parameter types shared by the commands."""

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
