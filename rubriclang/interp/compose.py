"""Composition: criterion judgments -> operator values -> sink -> decision.

Pure and deterministic: the same judgments give the same values whatever
order they arrived in. `rbg run` and `rbg replay` share this code, so a
replay recomputes exactly what the run computed. The operators run as one
compiled plan (`plan.py`) whose meaning is that of the operators' catalog functions.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

from rubriclang.checker.graph import CheckedGraph, PointwiseReadout
from rubriclang.interp.backend import Judgment
from rubriclang.interp.domain import coerce
from rubriclang.interp.plan import compile_compose, compile_decide, compile_plan
from rubriclang.interp.readout import Decision, pointwise, pointwise_source, reader


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
            for name, v in zip(self.names, row, strict=False):  # a failed criterion's row stops before the operators
                out.setdefault(name, {})[cid] = v
        return out


class Composer:
    """Evaluates a checked graph's operators and readout; built once per graph.

    `compose(mode, cids, judgments)`: the composition of one item, from each
    criterion's judgment of each candidate (`judgments[criterion][candidate]`).
    `decide(mode, cids, judgments)`: its decision alone, without keeping any
    node's value (replays and verdict diffs need no more). Both are compiled
    per graph (`plan.compile_compose`, `plan.compile_decide`), readout
    included, and take the general path (`_compose`) only for judgments that
    failed or whose values need coercing."""

    compose: Callable[[str, tuple[str, ...], dict[str, dict[str, Judgment]]], Composition]
    decide: Callable[[str, tuple[str, ...], dict[str, dict[str, Judgment]]], Decision]

    def __init__(self, graph: CheckedGraph):
        self.graph = graph
        self._plan = compile_plan(graph)
        self._criteria = [(c.name, c.type, c.params.get("on_error") == "abstain") for c in graph.criteria]
        self._crit_names = tuple(c.name for c in graph.criteria)
        self._names = self._crit_names + tuple(o.name for o in graph.operators)
        sink = self._names.index(graph.sink)
        self._readers = {mode: reader(r, graph.scale, sink) for mode, r in graph.readouts.items()}
        # tuple.__new__ builds the named tuples without their Python-level __new__.
        ns: dict[str, Any] = {"new": tuple.__new__, "Composition": Composition, "names": self._names}
        fast = []  # each readout's common case: (condition on the sink's value `x`, decision)
        for i, (mode, readout) in enumerate(graph.readouts.items()):
            inline = None
            if isinstance(readout, PointwiseReadout):
                inline = pointwise_source(readout, graph.scale, "x", f"r{i}_")
            if inline:
                condition, decision, constants = inline
                ns |= constants | {f"r{i}_mode": mode}
                fast.append((f"mode == r{i}_mode and {condition}", decision))

        def cases(result: Callable[[str], str]) -> list[str]:
            return [f"        if {c}:\n            return {result(d)}" for c, d in fast]

        self.compose = compile_compose(
            graph,
            cases(lambda d: f"new(Composition, (names, {{cid: row}}, {{}}, {d}))"),
            ["    return new(Composition, (names, rows, {}, readers[mode](cids, rows)))"],
            ns | {"general": self._compose, "readers": self._readers},
        )
        self._decide_parts = (cases(lambda d: d), ns)
        self.decide = self._first_decide

    def _first_decide(self, mode: str, cids: tuple[str, ...], judgments: dict[str, dict[str, Judgment]]) -> Decision:
        """`decide`, compiled at its first call (the engine never calls it,
        and a run or an audit may build many composers)."""
        lines, ns = self._decide_parts
        compose = self.compose
        point = {
            m: functools.partial(pointwise, r, self.graph.scale)
            for m, r in self.graph.readouts.items()
            if isinstance(r, PointwiseReadout)
        }

        def general(mode: str, cids: tuple[str, ...], judgments: dict[str, dict[str, Judgment]]) -> Decision:
            return compose(mode, cids, judgments).decision

        self.decide = compile_decide(self.graph, lines, ns | {"general": general, "point": point})
        return self.decide(mode, cids, judgments)

    def check_mode(self, mode: str) -> None:
        if mode not in self.graph.readouts:
            have = ", ".join(self.graph.readouts) or "none"
            raise ModeError(
                f"the graph `{self.graph.name}` has no `{mode}` readout (it has: {have}); "
                f"add `readout {mode} {{ ... }}` or run in another mode"
            )

    def _compose(self, mode: str, cids: tuple[str, ...], judgments: dict[str, dict[str, Judgment]]) -> Composition:
        """The general path: coerces every value, and explains those that fail."""
        errors: dict[str, dict[str, str]] = {}
        failures = []
        values: dict[str, list[Any]] = {}
        for cid in cids:
            row = []
            for name, t, abstains in self._criteria:
                j = judgments[name][cid]
                value, problem = (None, j.error) if j.error else coerce(j.value, t)
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
        return Composition(self._names, rows, errors, self._readers[mode](cids, rows))
