"""Readouts: the sink's values -> the task's answer.

Pointwise (one candidate): the sink quantized into the declared output.
Pairwise (two candidates): candidate 1 if s1 > s2 + epsilon, candidate 2 if
s2 > s1 + epsilon, otherwise the declared `resolve` policy. An absent sink
reads out as abstain.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from rubriclang.catalog.types import JType, fmt_short
from rubriclang.checker.graph import PairwiseReadout, PointwiseReadout
from rubriclang.interp.domain import coerce


class Decision(NamedTuple):
    """A readout's result. `status`: ok, abstain (no decision) or error.

    A named tuple rather than an attrs class: one is made per item, on the
    replay hot path."""

    status: str
    decision: Any = None
    raw: Any = None  # pointwise: the sink value before quantization
    margin: float | None = None  # pairwise: s1 - s2
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "decision": self.decision,
            "raw": self.raw,
            "margin": self.margin,
            "error": self.error,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Decision:
        return cls(d["status"], d.get("decision"), d.get("raw"), d.get("margin"), d.get("error"))


def quantize(x: float, how: str, ties: str) -> int:
    """Round onto the integers: nearest (ties up or down), floor or ceil."""
    if how == "floor":
        return math.floor(x)
    if how == "ceil":
        return math.ceil(x)
    return math.floor(x + 0.5) if ties == "up" else math.ceil(x - 0.5)


def _check_sink(value: object, scale: JType) -> str | None:
    if scale.numeric and (value.__class__ is int or value.__class__ is float) and scale.lo <= value <= scale.hi:
        return None  # the common case, without building an error message
    _, problem = coerce(value, scale.as_optional(False))
    return f"the sink value {problem}, so it breaks the contract's scale" if problem else None


def pointwise(readout: PointwiseReadout, scale: JType, sink: Any) -> Decision:
    if sink is None:
        return Decision("abstain")
    problem = _check_sink(sink, scale)
    if problem:
        return Decision("error", raw=sink, error=problem)
    out = readout.output
    if out.kind == "ordinal":
        value = quantize(sink, readout.quantize, readout.ties)
        if out.lo <= value <= out.hi:
            return Decision("ok", value, raw=sink)
    value, problem = coerce(sink if out.kind != "ordinal" else value, out)
    if problem:
        return Decision("error", raw=sink, error=f"the readout value {problem}")
    return Decision("ok", value, raw=sink)


def reader(readout: PointwiseReadout | PairwiseReadout, scale: JType, sink: int) -> Reader:
    """The readout as a function `(candidates, rows)` -> decision, where
    `rows[candidate][sink]` is the candidate's sink value."""
    if isinstance(readout, PairwiseReadout):
        return lambda cids, rows: pairwise(readout, scale, cids, {cid: rows[cid][sink] for cid in cids})
    return lambda cids, rows: pointwise(readout, scale, rows[cids[0]][sink])


Reader = Callable[[tuple[str, ...], dict[str, tuple[Any, ...]]], Decision]


def pointwise_source(
    readout: PointwiseReadout, scale: JType, x: str, prefix: str
) -> tuple[str, str, dict[str, Any]] | None:
    """The common pointwise case as source, for compiled compositions: a
    condition on the variable `x` (the sink's value) and an expression that,
    where the condition holds, is what `pointwise` decides; and the
    constants both name (each `prefix + ...`). The case: a number inside the
    scale, rounded to the nearest integer (ties up), inside the output.
    None for other readouts, which `pointwise` decides."""
    out = readout.output
    if not (scale.numeric and out.kind == "ordinal" and readout.quantize == "nearest" and readout.ties == "up"):
        return None
    p = prefix
    condition = (
        f"({x}.__class__ is float or {x}.__class__ is int) and {p}lo <= {x} <= {p}hi"
        f" and {p}out_lo <= ({p}q := {p}floor({x} + 0.5)) <= {p}out_hi"  # quantize(x, "nearest", "up")
    )
    # Decision("ok", q, raw=x), without the named tuple's Python-level __new__.
    decision = f"{p}new({p}Decision, ('ok', {p}q, {x}, None, None))"
    constants = {p + "lo": scale.lo, p + "hi": scale.hi, p + "out_lo": out.lo, p + "out_hi": out.hi}
    return (
        condition,
        decision,
        constants | {p + "floor": math.floor, p + "new": tuple.__new__, p + "Decision": Decision},
    )


def pairwise(readout: PairwiseReadout, scale: JType, cids: tuple[str, ...], sinks: dict[str, Any]) -> Decision:
    s1, s2 = sinks[cids[0]], sinks[cids[1]]
    for s in (s1, s2):
        if s is not None:
            problem = _check_sink(s, scale)
            if problem:
                return Decision("error", error=problem)
    if s1 is None or s2 is None:
        return Decision("abstain")
    margin = s1 - s2
    eps = readout.epsilon
    if margin > eps:
        return Decision("ok", cids[0], margin=margin)
    if -margin > eps:
        return Decision("ok", cids[1], margin=margin)
    resolve = readout.resolve
    if resolve == "abstain":
        return Decision("abstain", margin=margin)
    if resolve == "tie":
        return Decision("ok", "tie", margin=margin)
    return Decision("ok", cids[0] if resolve == "first" else cids[1], margin=margin)


def describe(d: Decision) -> str:
    """A decision in a few words, for tables and replay diffs (numbers to 4
    significant digits)."""
    if d.status != "ok":
        return d.status
    if isinstance(d.decision, bool):
        return str(d.decision).lower()
    if isinstance(d.decision, (int, float)):
        return fmt_short(d.decision)
    return str(d.decision)


def transition_lines(changes: Iterable[tuple[str, str]], limit: int) -> list[str]:
    """Changed decisions, `(item, "old -> new")`, grouped by transition (most
    frequent first) as `  37 items: 5.667 -> 5.5 (a, b, ...)`, naming at
    most `limit` items in all."""
    groups: dict[str, list[str]] = {}
    for item, t in changes:
        groups.setdefault(t, []).append(item)
    lines, budget, hidden = [], max(limit, 0), 0
    for t, ids in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        shown, budget = ids[:budget], budget - min(budget, len(ids))
        more = len(ids) - len(shown)
        hidden += more
        listed = ", ".join(shown) + (f", {more} more" if shown and more else "")
        lines.append(f"  {len(ids)} item{'' if len(ids) == 1 else 's'}: {t}" + (f" ({listed})" if shown else ""))
    if hidden:
        lines.append(f"  ({hidden} items not named: --limit, or --format json, lists them all)")
    return lines
