"""Operator semantics: pure, deterministic functions, one per catalog operator.

Each takes the node's inputs by port (`value` ports hold one value, variadic
ports a list, in slot order) and its parameters, and returns the output value.
`None` is the absent value of optional types: transforms and gates pass it
through, reducers skip it, and a reducer whose inputs are all absent yields
absent.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from rubriclang.catalog.types import JType

Ports = dict[str, Any]
Params = dict[str, Any]
OpFn = Callable[[Ports, Params, dict[str, JType]], Any]
# The shapes of the per-value functions the wrappers below lift into an OpFn
# (values are whatever the judgment types admit: bool, number, label).
_UnaryFn = Callable[[Any, Params, JType | None], Any]
_GateFn = Callable[[Any, Params], Any]
_ReduceFn = Callable[[list[Any]], Any]


def _unary(fn: _UnaryFn) -> OpFn:
    """A transform: absent in, absent out."""

    def op(ports: Ports, params: Params, types: dict[str, JType]) -> Any:
        v = ports["value"]
        return None if v is None else fn(v, params, types.get("value"))

    return op


def _gate(fn: _GateFn) -> OpFn:
    def op(ports: Ports, params: Params, types: dict[str, JType]) -> Any:
        v = ports["value"]
        if v is None:
            return None
        return fn(v, params) if ports["when"] else v

    return op


def _present(ports: Ports) -> list[Any]:
    return [v for v in ports["inputs"] if v is not None]


def _reducer(fn: _ReduceFn) -> OpFn:
    def op(ports: Ports, params: Params, types: dict[str, JType]) -> Any:
        xs = _present(ports)
        return fn(xs) if xs else None

    return op


def _rescale(v: Any, params: Params, t: JType | None) -> Any:
    assert t is not None  # the input's interval is the one rescaled from
    to = params["to"]
    return to.lo + (v - t.lo) * (to.hi - to.lo) / (t.hi - t.lo)


def _threshold(v: Any, params: Params, t: JType | None) -> Any:
    return v >= params["at"] if params["inclusive"] else v > params["at"]


def _map(v: Any, params: Params, t: JType | None) -> Any:
    return params["values"][v]


def _invert(v: Any, params: Params, t: JType | None) -> Any:
    assert t is not None  # inverting reflects the value within the input's interval
    return t.lo + t.hi - v


def _clamp(v: Any, params: Params, t: JType | None) -> Any:
    return min(max(v, params["lo"]), params["hi"])


def _mean(xs: list[Any]) -> Any:
    return math.fsum(xs) / len(xs)


def _median(xs: list[Any]) -> Any:
    xs = sorted(xs)
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def _sum(xs: list[Any]) -> Any:
    # Integers stay integers (an ordinal sum is an ordinal); floats sum exactly.
    return sum(xs) if all(isinstance(x, int) for x in xs) else math.fsum(xs)


def _weighted_mean(ports: Ports, params: Params, types: dict[str, JType]) -> Any:
    pairs = [(w, x) for w, x in zip(params["weights"], ports["inputs"]) if x is not None]
    total = math.fsum(w for w, _ in pairs)
    if total <= 0:
        return None
    return math.fsum(w * x for w, x in pairs) / total


def _count(ports: Ports, params: Params, types: dict[str, JType]) -> Any:
    xs = _present(ports)
    return sum(1 for x in xs if x) if xs else None


def _mask(ports: Ports, params: Params, types: dict[str, JType]) -> Any:
    return None if ports["when"] else ports["value"]


OPERATORS: dict[str, OpFn] = {
    "transform.rescale": _unary(_rescale),
    "transform.threshold": _unary(_threshold),
    "transform.map": _unary(_map),
    "transform.invert": _unary(_invert),
    "transform.not": _unary(lambda v, p, t: not v),
    "transform.clamp": _unary(_clamp),
    "reduce.mean": _reducer(_mean),
    "reduce.weighted_mean": _weighted_mean,
    "reduce.min": _reducer(min),
    "reduce.max": _reducer(max),
    "reduce.median": _reducer(_median),
    "reduce.sum": _reducer(_sum),
    "reduce.all": _reducer(all),
    "reduce.any": _reducer(any),
    "reduce.count": _count,
    "gate.cap": _gate(lambda v, p: min(v, p["max"])),
    "gate.floor": _gate(lambda v, p: max(v, p["min"])),
    "gate.veto": _gate(lambda v, p: p["to"]),
    "gate.mask": _mask,
}
