"""Numbers, rates and verdicts as short text, the same way every time."""

from __future__ import annotations

import json
from typing import Any

from rubriclang.audit.figures import NOT_MEASURED

DASH = "\u2014"


def number(x: Any, places: int = 3) -> str:
    """An int as it is; a float to `places` decimals, trailing zeros cut."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    if isinstance(x, int) or float(x).is_integer():
        return str(int(x))
    text = f"{x:.{places}f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def percent(x: float | None) -> str:
    return DASH if x is None else f"{100 * x:.1f}%"


def measured(rate: dict | None) -> str:
    """A Rate's value as a percentage, or `not measured` (never a dash that
    could read as zero)."""
    return NOT_MEASURED if not rate or rate.get("value") is None else percent(rate["value"])


def points(x: float | None) -> str:
    """A difference of rates in percentage points, signed."""
    if x is None:
        return DASH
    text = f"{100 * x:+.1f}"
    return ("+0.0" if text == "-0.0" else text) + " pp"


def interval(block: dict | None, form=percent) -> str:
    """`[low, high]` of a Rate or Estimate, or a dash."""
    if not block or block.get("low") is None or block.get("high") is None:
        return DASH
    return f"[{form(block['low'])}, {form(block['high'])}]"


def fraction(rate: dict | None) -> str:
    """`count/total` of a Rate, and how many of them failed (schema /2):
    a failure is never shown as a non-flip."""
    if not rate:
        return DASH
    failed = f" ({rate['failed']} failed)" if rate.get("failed") else ""
    return f"{number(rate['count'])}/{number(rate['total'])}{failed}"


def coverage(rate: dict | None) -> str:
    """The share of a Rate's units that were measured."""
    return DASH if not rate or rate.get("coverage") is None else f"coverage {percent(rate['coverage'])}"


def value(x: Any) -> str:
    """A decision or a node's value: JSON spelling for booleans and null
    (a verdict reads `true`, not `True`), numbers trimmed, text as it is."""
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, (int, float)):
        return number(x)
    if isinstance(x, str):
        return x
    return json.dumps(x, sort_keys=True, ensure_ascii=False)


def decision(d: dict) -> str:
    """One judgment's verdict: its decision, `abstain` or `failed`."""
    return value(d.get("decision")) if d.get("status") == "ok" else str(d.get("status"))


def summary(s: dict) -> str:
    """An item's or a variant's verdict over its repeats; with failed
    repeats it says how many (the verdict alone would read as stable)."""
    if s.get("status") != "ok":
        return str(s.get("status"))
    decisions = s.get("decisions") or []
    failed = sum(d.get("status") == "failed" for d in decisions)
    return f"{value(s.get('value'))} with {failed}/{len(decisions)} repeats failed" if failed else value(s.get("value"))
