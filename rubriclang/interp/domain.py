"""Checking that a value belongs to a judgment type: never clamp, say why not."""

from __future__ import annotations

import math
from typing import Any

from rubriclang.catalog.types import JType, fmt_num


def coerce(value: Any, t: JType) -> tuple[Any, str | None]:
    """(value as the type's canonical Python value, None) or (None, reason)."""
    if t.many:
        return _coerce_list(value, t)
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


def _coerce_list(value: Any, t: JType) -> tuple[Any, str | None]:
    """A list of element values, each coerced to the element type (a tuple)."""
    if not isinstance(value, (list, tuple)):
        return None, f"{value!r} is not a list, as `{t}` requires"
    out = []
    for i, v in enumerate(value):
        got, problem = coerce(v, t.element)
        if problem:
            return None, f"element {i}: {problem}"
        out.append(got)
    return tuple(out), None


def canonical_test(t: JType, var: str, prefix: str) -> tuple[str, dict[str, Any]]:
    """A Python expression over `var`, true for the common values that
    `coerce` would return unchanged for `t` (and false for None), and the
    constants it names (each `prefix + ...`): compiled plans test a value
    with it and leave anything else to `coerce`, which also explains."""
    if t.many:
        return "False", {}  # lists are coerced element by element, by `coerce`
    if t.kind == "bool":
        return f"{var} is True or {var} is False", {}
    if t.kind == "label":
        return f"{var}.__class__ is str and {var} in {prefix}labels", {prefix + "labels": frozenset(t.labels)}
    bounds = {prefix + "lo": t.lo, prefix + "hi": t.hi}
    if t.kind == "ordinal":
        return f"{var}.__class__ is int and {prefix}lo <= {var} <= {prefix}hi", bounds
    return f"({var}.__class__ is float or {var}.__class__ is int) and {prefix}lo <= {var} <= {prefix}hi", bounds
