"""Every number the viewer shows, by one rule (docs/view.md "Numbers"),
on its pages, in its plots and in a static export's rows:

- a value (a decision, gold, a criterion's value, a margin, a shift, a
  bin's bounds or mean) to 4 significant digits, as the language spells
  it (`catalog.types.fmt_short`: 4.6666666667 -> 4.667, 2.0 -> 2), as
  `rbg replay` and `rbg diff` print decisions;
- a figure (a metric, a rate, an interval's bounds) to 3 decimals, as
  `rbg eval` prints them, and a difference of figures signed (+0.012).

Counts are integers as they are; a missing number is a dash, never 0."""

from __future__ import annotations

import math
from typing import Any

from rubriclang.catalog.types import fmt_short

DASH = "\u2014"
KINDS = ("value", "figure", "difference")


def readable(x: Any, kind: str = "value") -> str:
    """`x` as the viewer shows it; `kind` is `value`, `figure` or
    `difference` (module docstring). Text passes as it is (a label is a
    decision too); None is a dash."""
    if kind not in KINDS:
        raise ValueError(f"no number kind `{kind}`: one of {', '.join(KINDS)}")
    if x is None:
        return DASH
    if isinstance(x, bool):
        return "true" if x else "false"
    if not isinstance(x, (int, float)):
        return str(x)
    if not math.isfinite(x):
        return "n/a" if math.isnan(x) else ("\u221e" if x > 0 else "\u2212\u221e")
    if kind == "value":
        return fmt_short(x)
    text = format(x, "+.3f" if kind == "difference" else ".3f")
    # Rounded to zero, a figure has no sign to show (-0.000 read as a loss).
    if float(text) == 0:
        text = "+0.000" if kind == "difference" else "0.000"
    return text


def interval(estimate: dict, kind: str = "figure") -> str:
    """An estimate's 95% interval as `[low, high]`; `[n/a]` where it has a
    value but no interval (not certainty), nothing where it has no value."""
    if estimate.get("value") is None:
        return ""
    if estimate.get("low") is None or estimate.get("high") is None:
        return "[n/a]"
    return f"[{readable(estimate['low'], kind)}, {readable(estimate['high'], kind)}]"
