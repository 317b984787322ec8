"""Checking that a value belongs to a judgment type: never clamp, say why not."""

from __future__ import annotations

import math
from typing import Any

from rubriclang.catalog.types import JType, fmt_num


def coerce(value: Any, t: JType) -> tuple[Any, str | None]:
    """(value as the type's canonical Python value, None) or (None, reason)."""
    if value is None:
        return None, f"no value, but `{t}` is not optional" if not t.optional else None
    if t.kind == "bool":
        if isinstance(value, bool):
            return value, None
        return None, f"{value!r} is not a bool"
    if t.kind == "label":
        if isinstance(value, str) and value in t.labels:
            return value, None
        return None, f"{value!r} is not one of the labels {', '.join(t.labels)}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None, f"{value!r} is not a number"
    if not math.isfinite(value):
        return None, f"{value!r} is not a finite number"
    if t.kind == "ordinal":
        if float(value).is_integer():
            value = int(value)
        else:
            return None, f"{fmt_num(value)} is not an integer, as `{t.as_optional(False)}` requires"
    if not (t.lo <= value <= t.hi):
        return None, f"{fmt_num(value)} lies outside `{t.as_optional(False)}`"
    return value, None
