"""Composition: criterion judgments -> operator values -> sink -> decision.

Pure and deterministic: the same judgments give the same values whatever
order they arrived in. `rbg run` and `rbg replay` share this code, so a
replay recomputes exactly what the run computed. The operators run as one
compiled plan (`plan.py`) whose meaning is that of the operators' catalog functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from rubriclang.catalog.types import JType
from rubriclang.checker.graph import CheckedGraph, PointwiseReadout
from rubriclang.interp.backend import Judgment
from rubriclang.interp.domain import coerce
from rubriclang.interp.plan import compile_plan
from rubriclang.interp.readout import Decision, pairwise, pointwise


class ModeError(Exception):
    """The graph has no readout for the requested mode."""


class Composition(NamedTuple):
    """Every node's value per candidate, the criteria that failed, and the decision.

    Values are kept as one row per candidate (criteria, then operators, in
    graph order); `values` builds the node -> candidate map on demand, since
    replays mostly need only the decision. A named tuple: one per item, on
    the replay hot path."""

    names: tuple[str, ...]
    rows: dict[str, tuple[Any, ...]]  # candidate -> value of each node in `names` order
    errors: dict[str, dict[str, str]]  # criterion -> candidate -> why its value failed
    decision: Decision

    @property
    def values(self) -> dict[str, dict[str, Any]]:
        """node -> candidate -> value (operators are missing when a criterion failed)."""
        out: dict[str, dict[str, Any]] = {}
        for cid, row in self.rows.items():
            for name, v in zip(self.names, row):
                out.setdefault(name, {})[cid] = v
        return out


def _fast_check(t: JType) -> Callable[[Any], bool]:
    """A predicate accepting the common, already-canonical values of `t`
    cheaply; anything else goes through `coerce` (which also explains why)."""
    if t.kind == "bool":
        return lambda v: v is True or v is False
    if t.kind == "ordinal":
        lo, hi = t.lo, t.hi
        return lambda v: v.__class__ is int and lo <= v <= hi
    if t.kind == "score":
        lo, hi = t.lo, t.hi
        return lambda v: (v.__class__ is float or v.__class__ is int) and lo <= v <= hi
    labels = frozenset(t.labels)
    return lambda v: v.__class__ is str and v in labels


class Composer:
    """Evaluates a checked graph's operators and readout; built once per graph."""

    def __init__(self, graph: CheckedGraph):
        self.graph = graph
        self._plan = compile_plan(graph)
        self._criteria = [(c.name, c.type, _fast_check(c.type), c.params.get("on_error") == "abstain") for c in graph.criteria]
        self._crit_names = tuple(c.name for c in graph.criteria)
        self._names = self._crit_names + tuple(o.name for o in graph.operators)
        self._sink = self._names.index(graph.sink)

    def check_mode(self, mode: str) -> None:
        if mode not in self.graph.readouts:
            have = ", ".join(self.graph.readouts) or "none"
            raise ModeError(
                f"the graph `{self.graph.name}` has no `{mode}` readout (it has: {have}); "
                f"add `readout {mode} {{ ... }}` or run in another mode"
            )

    def compose(self, mode: str, cids: tuple[str, ...], judgments: dict[str, dict[str, Judgment]]) -> Composition:
        errors: dict[str, dict[str, str]] = {}
        failures = []
        values: dict[str, list[Any]] = {}
        for cid in cids:
            row = []
            for name, t, ok, abstains in self._criteria:
                j = judgments[name][cid]
                value = j.value
                if j.error or not ok(value):
                    value, problem = (None, j.error) if j.error else coerce(value, t)
                    if problem:
                        errors.setdefault(name, {})[cid] = problem
                        if not abstains:
                            failures.append(f"criterion `{name}` failed for candidate `{cid}`: {problem}")
                        value = None
                row.append(value)
            values[cid] = row
        if failures:
            rows = {cid: tuple(row) for cid, row in values.items()}
            return Composition(self._crit_names, rows, errors, Decision("error", error="; ".join(failures)))
        rows = {cid: (*row, *self._plan(*row)) for cid, row in values.items()}
        s = self._sink
        g = self.graph
        readout = g.readouts[mode]
        if isinstance(readout, PointwiseReadout):
            decision = pointwise(readout, g.scale, rows[cids[0]][s])
        else:
            decision = pairwise(readout, g.scale, cids, {cid: rows[cid][s] for cid in cids})
        return Composition(self._names, rows, errors, decision)
