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
OpFn = Callable[[Ports, dict[str, Any], dict[str, JType]], Any]


def _unary(fn):
    """A transform: absent in, absent out."""

    def op(ports, params, types):
        v = ports["value"]
        return None if v is None else fn(v, params, types.get("value"))

    return op


def _gate(fn):
    def op(ports, params, types):
        v = ports["value"]
        if v is None:
            return None
        return fn(v, params) if ports["when"] else v

    return op


def _present(ports) -> list:
    return [v for v in ports["inputs"] if v is not None]


def _reducer(fn):
    def op(ports, params, types):
        xs = _present(ports)
        return fn(xs) if xs else None

    return op


def _rescale(v, params, t: JType):
    to = params["to"]
    return to.lo + (v - t.lo) * (to.hi - to.lo) / (t.hi - t.lo)


def _threshold(v, params, t):
    return v >= params["at"] if params["inclusive"] else v > params["at"]


def _map(v, params, t):
    return params["values"][v]


def _invert(v, params, t):
    return t.lo + t.hi - v


def _clamp(v, params, t):
    return min(max(v, params["lo"]), params["hi"])


def _mean(xs):
    return math.fsum(xs) / len(xs)


def _median(xs):
    xs = sorted(xs)
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def _sum(xs):
    # Integers stay integers (an ordinal sum is an ordinal); floats sum exactly.
    return sum(xs) if all(isinstance(x, int) for x in xs) else math.fsum(xs)


def _weighted_mean(ports, params, types):
    pairs = [(w, x) for w, x in zip(params["weights"], ports["inputs"]) if x is not None]
    total = math.fsum(w for w, _ in pairs)
    if total <= 0:
        return None
    return math.fsum(w * x for w, x in pairs) / total


def _count(ports, params, types):
    xs = _present(ports)
    return sum(1 for x in xs if x) if xs else None


def _mask(ports, params, types):
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
