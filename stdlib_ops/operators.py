"""The standard operators' behaviour: one entry per operator of
`operators.toml`, each its reference semantics and its plan template.

Each entry also names its output-type rule (`output_rules.py`).
`None` is the absent value of optional types: transforms and gates pass it
through, reducers skip it, and a reducer whose inputs are all absent yields
absent. A plan template compiles the same arithmetic into straight-line code
(see `rubriclang.interp.plan`); tests hold the two to each other.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from typing import Any

from rubriclang.catalog.entries import OperatorImpl, PlanSite, PlanTemplate, Ports
from rubriclang.catalog.rules import Rule
from rubriclang.catalog.types import JType
from stdlib_ops import output_rules as rules

# The values operators compute on are the graph's: numbers, booleans, labels, None.
Params = dict[str, Any]
Types = dict[str, JType]
Plan = tuple[str, dict[str, Any]] | None
# A transform's function of one present value, its parameters and the value's
# type (given by the engine; left out by a caller whose transform reads none).
TransformFn = Callable[[Any, Params, JType | None], Any]
ReduceFn = Callable[[list[Any]], Any]


def _present(ports: Ports) -> list[Any]:
    """The inputs present; a list input (a per-element criterion, a tuple)
    gives its elements present."""
    return [v for x in ports["inputs"] for v in (x if x.__class__ is tuple else (x,)) if v is not None]


def _transform(
    fn: TransformFn, rule: Rule, plan: PlanTemplate | None = None, traits: frozenset[str] = frozenset()
) -> OperatorImpl:
    """A transform: absent in, absent out."""

    def op(ports: Ports, params: Params, types: Types) -> Any:
        v = ports["value"]
        return None if v is None else fn(v, params, types.get("value"))

    return OperatorImpl(op, rule, plan, traits)


def _absent_in_out(s: PlanSite, i: int, expr: str) -> str:
    """`expr`, or None where input `i` is absent (tested only if its type admits absence)."""
    return f"None if {s.x[i]} is None else {expr}" if s.types[i].optional else expr


def _unary(expr: str, constants: Callable[[PlanSite], dict[str, Any]] = lambda s: {}) -> PlanTemplate:
    """The plan of a transform: `expr` reads the input as `{x}` and this
    application's constants (named by `constants`) as `{k}NAME`."""

    def plan(s: PlanSite) -> Plan:
        body = expr.format(x=s.x[0], k=s.k)
        return _absent_in_out(s, 0, body), {s.k + n: v for n, v in constants(s).items()}

    return plan


def _gate(fn: Callable[[Any, Any], Any], key: str, expr: str, rule: Rule) -> OperatorImpl:
    """A gate: `fn(value, params[key])` when the condition holds, else the
    value; `expr` is the same as a plan expression over `{x}` and `{k}KEY`."""

    def op(ports: Ports, params: Params, types: Types) -> Any:
        v = ports["value"]
        if v is None:
            return None
        return fn(v, params[key]) if ports["when"] else v

    def plan(s: PlanSite) -> Plan:
        v, w = s.x
        return _absent_in_out(s, 0, f"({expr.format(x=v, k=s.k)} if {w} else {v})"), {s.k + key: s.params[key]}

    return OperatorImpl(op, rule, plan)


def _reducer(
    fn: ReduceFn, rule: Rule, plan: PlanTemplate | None = None, traits: frozenset[str] = frozenset()
) -> OperatorImpl:
    """A reducer over the present inputs; absent when none is present."""

    def op(ports: Ports, params: Params, types: Types) -> Any:
        xs = _present(ports)
        return fn(xs) if xs else None

    return OperatorImpl(op, rule, plan or _call_plan(fn), traits)


def _call_plan(fn: ReduceFn) -> PlanTemplate:
    """The plan of a reducer: `fn` called on the inputs when none can be absent."""

    def plan(s: PlanSite) -> Plan:
        if any(t.optional for t in s.types):
            return None  # absent inputs: the function skips them
        return f"{s.k}f(({', '.join(s.x)},))", {s.k + "f": fn}

    return plan


def _pick(a: str, b: str, cmp: str) -> str:
    """`min(a, b)` (`cmp` "<") or `max(a, b)` (">") of two pure expressions,
    without the call: the builtin keeps its first argument unless the second
    compares `cmp` to it (so NaNs and ties come out as from the builtin)."""
    return f"({b} if {b} {cmp} {a} else {a})"


def _extreme_plan(fn: Callable[..., Any], cmp: str) -> PlanTemplate:
    """The plan of `reduce.min` / `reduce.max`: the inputs picked pairwise
    when two, the builtin called on them when more."""

    def plan(s: PlanSite) -> Plan:
        if any(t.optional for t in s.types):
            return None  # absent inputs: the function skips them
        if len(s.x) == 1:
            return s.x[0], {}
        if len(s.x) == 2:
            return _pick(*s.x, cmp), {}
        return f"{s.k}f({', '.join(s.x)})", {s.k + "f": fn}

    return plan


def _scale(t: JType | None) -> JType:
    """The input's type, for a transform computed from its bounds."""
    if t is None:
        raise TypeError("this transform reads its input's type: pass it in `types`")
    return t


def _rescale(v: float, params: Params, t: JType | None) -> float:
    to: JType = params["to"]
    t = _scale(t)
    return to.lo + (v - t.lo) * (to.hi - to.lo) / (t.hi - t.lo)


def _rescale_constants(s: PlanSite) -> dict[str, Any]:
    t, to = s.types[0], s.params["to"]
    return {"to_lo": to.lo, "lo": t.lo, "to_w": to.hi - to.lo, "w": t.hi - t.lo}


def _invert(v: float, params: Params, t: JType | None) -> float:
    t = _scale(t)
    return t.lo + t.hi - v


def _threshold(v: float, params: Params, t: JType | None) -> bool:
    at: float = params["at"]
    return v >= at if params["inclusive"] else v > at


def _threshold_plan(s: PlanSite) -> Plan:
    cmp = ">=" if s.params["inclusive"] else ">"
    return _unary("{x} " + cmp + " {k}at", lambda s: {"at": s.params["at"]})(s)


def _mean(xs: list[float]) -> float:
    return math.fsum(xs) / len(xs)


# What `math.fsum` returns for negative zeros alone (0.0 before Python 3.12):
# the start of a plain sum that is to equal fsum's, sign of zero included.
_FSUM_ZERO = math.fsum((-0.0,))
_EXACT = 2.0**53  # integers up to this size are exact floats, and so are their sums


def _fsum_source(s: PlanSite, weights: tuple[float, ...] | None = None) -> tuple[str, dict[str, Any]]:
    """Source equal to `math.fsum` of the inputs (each times its weight, as
    `w * x`), and its constants. fsum rounds the exact sum once; so does
    plain addition of integral terms (of ordinals or booleans, by integral
    weights) whose total stays within 2**53, followed by at most one other
    term: then the sum is written out, otherwise it is fsum's."""
    consts: dict[str, Any] = {}
    whole: list[str] = []
    other: list[str] = []
    bound = 0.0
    for i, (x, t) in enumerate(zip(s.x, s.types, strict=True)):
        w = 1 if weights is None else weights[i]
        term = x
        if w != 1:
            consts[f"{s.k}w{i}"] = w
            term = f"{s.k}w{i} * {x}"
        integral = t.kind in ("ordinal", "bool") and float(w).is_integer()
        bound += abs(w) * (1 if t.kind == "bool" else max(abs(t.lo), abs(t.hi)) if t.numeric else math.inf)
        (whole if integral else other).append(term)
    if bound <= _EXACT and len(other) <= 1:
        return " + ".join([repr(_FSUM_ZERO), *whole, *other]), consts
    return f"{s.k}fsum(({', '.join(whole + other)},))", consts | {s.k + "fsum": math.fsum}


def _mean_plan(s: PlanSite) -> Plan:
    if any(t.optional for t in s.types):
        return None
    total, consts = _fsum_source(s)
    return f"({total}) / {len(s.x)}", consts


def _median(xs: list[Any]) -> Any:
    xs = sorted(xs)
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def _sum(xs: list[Any]) -> Any:
    # Integers stay integers (an ordinal sum is an ordinal); floats sum exactly.
    return sum(xs) if all(isinstance(x, int) for x in xs) else math.fsum(xs)


def _weighted_mean(ports: Ports, params: Params, types: Types) -> float | None:
    pairs = [(w, x) for w, x in zip(params["weights"], ports["inputs"], strict=True) if x is not None]
    total = math.fsum(w for w, _ in pairs)
    if total <= 0:
        return None
    return math.fsum(w * x for w, x in pairs) / total


def _weighted_mean_plan(s: PlanSite) -> Plan:
    if any(t.optional for t in s.types):
        return None
    # Same arithmetic as the function: fsum of products over fsum of weights
    # (a constant, so its test is made here).
    total = math.fsum(s.params["weights"])
    if not total > 0:
        return "None", {}
    products, consts = _fsum_source(s, tuple(s.params["weights"]))
    return f"({products}) / {s.k}total", consts | {s.k + "total": total}


def _count(ports: Ports, params: Params, types: Types) -> int | None:
    xs = _present(ports)
    return sum(1 for x in xs if x) if xs else None


def _majority(ports: Ports, params: Params, types: Types) -> Any:
    # The most common present value; a tie for the most common is no majority.
    top = Counter(_present(ports)).most_common(2)
    if not top or (len(top) == 2 and top[0][1] == top[1][1]):
        return None
    return top[0][0]


def _mask(ports: Ports, params: Params, types: Types) -> Any:
    return None if ports["when"] else ports["value"]


def _mask_plan(s: PlanSite) -> Plan:
    return f"None if {s.x[1]} else {s.x[0]}", {}


def _default(ports: Ports, params: Params, types: Types) -> Any:
    v = ports["value"]
    return params["value"] if v is None else v


def _default_plan(s: PlanSite) -> Plan:
    return f"{s.k}d if {s.x[0]} is None else {s.x[0]}", {s.k + "d": s.params["value"]}


_SELECTS = frozenset({"selects"})


def _fraction(xs: list[bool]) -> float:
    """The share of true values among the present ones."""
    return sum(xs) / len(xs)


OPERATORS: dict[str, OperatorImpl] = {
    "transform.rescale": _transform(
        _rescale, rules.rescale, _unary("{k}to_lo + ({x} - {k}lo) * {k}to_w / {k}w", _rescale_constants)
    ),
    "transform.threshold": _transform(_threshold, rules.threshold, _threshold_plan, frozenset({"cuts"})),
    "transform.map": _transform(
        lambda v, p, t: p["values"][v],
        rules.map_values,
        _unary("{k}table[{x}]", lambda s: {"table": s.params["values"]}),
    ),
    "transform.invert": _transform(
        _invert,
        rules.same,
        _unary("{k}sum - {x}", lambda s: {"sum": s.types[0].lo + s.types[0].hi}),
    ),
    "transform.not": _transform(lambda v, p, t: not v, rules.boolean, _unary("(not {x})")),
    "transform.clamp": _transform(
        lambda v, p, t: min(max(v, p["lo"]), p["hi"]),
        rules.clamp,
        _unary(
            _pick(_pick("{x}", "{k}clo", ">"), "{k}chi", "<"), lambda s: {"clo": s.params["lo"], "chi": s.params["hi"]}
        ),
    ),
    "transform.default": OperatorImpl(_default, rules.default, _default_plan),
    "reduce.mean": _reducer(_mean, rules.mean, _mean_plan),
    "reduce.weighted_mean": OperatorImpl(_weighted_mean, rules.weighted_mean, _weighted_mean_plan),
    "reduce.min": _reducer(min, rules.minimum, _extreme_plan(min, "<"), traits=_SELECTS),
    "reduce.max": _reducer(max, rules.maximum, _extreme_plan(max, ">"), traits=_SELECTS),
    "reduce.median": _reducer(_median, rules.median),
    "reduce.sum": _reducer(_sum, rules.total, traits=frozenset({"leaves_scale"})),
    "reduce.all": _reducer(all, rules.bool_reduce),
    "reduce.any": _reducer(any, rules.bool_reduce),
    "reduce.count": OperatorImpl(_count, rules.count),
    "reduce.fraction": _reducer(_fraction, rules.fraction),
    "reduce.majority": OperatorImpl(_majority, rules.majority, traits=_SELECTS),
    "gate.cap": _gate(min, "max", _pick("{x}", "{k}max", "<"), rules.cap),
    "gate.floor": _gate(max, "min", _pick("{x}", "{k}min", ">"), rules.floor),
    "gate.veto": _gate(lambda v, to: to, "to", "{k}to", rules.veto),
    "gate.mask": OperatorImpl(_mask, rules.mask, _mask_plan),
}
