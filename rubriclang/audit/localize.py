"""Criterion-level localization: which node judgments moved between an item
and its variant, and how the move propagated (or was absorbed) on the way
to the sink.

Each node's value is summarised over the repeats, per candidate: the mode
for `bool`, `label` and `ordinal` nodes (whole points), the mean for `score`
nodes. Candidates are matched by id, never by position.
"""

from __future__ import annotations

import collections
from typing import Any

from rubriclang.checker.graph import CheckedGraph

EPS = 1e-9


def same(a: Any, b: Any) -> bool:
    """Equal values, where True is not 1 (a bool verdict is not a score) and
    real numbers are equal within EPS."""
    if a is None or b is None:
        return a is b
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) <= EPS
    return a == b


def modal(values: list) -> Any:
    """The most frequent value; ties go to the value seen first."""
    counts: dict = {}
    order = []
    for v in values:
        # A per-element criterion's value is a list: counted by its elements.
        key = (type(v).__name__, tuple(v) if isinstance(v, list) else v)
        if key not in counts:
            order.append((key, v))
        counts[key] = counts.get(key, 0) + 1
    best = max(counts.values())
    return next(v for key, v in order if counts[key] == best)


def rounded(x: Any) -> Any:
    """Floats rounded to 6 places (means of repeats), for stable reports."""
    return round(x, 6) if isinstance(x, float) else x


def node_value(trace: dict, node: str, cid: str, kind: str) -> Any:
    """One node's value for one candidate in a trace (None when absent or failed)."""
    if kind == "criterion":
        j = trace["criteria"].get(node, {}).get(cid)
        return None if j is None or j.get("error") else j.get("value")
    return (trace["operators"].get(node) or {}).get(cid)


def _summarise(values: list, mean: bool) -> Any:
    present = [v for v in values if v is not None]
    if not present:
        return None
    if mean:
        return rounded(sum(present) / len(present))
    return modal(present)


class Localizer:
    """Node summaries and their comparison, for one judge graph."""

    def __init__(self, graph: CheckedGraph):
        self.graph = graph

        # Scores are summarised over repeats by their mean, other values by
        # their mode; a numeric sink always by its mean, as an ordinal
        # verdict is, so a flipped verdict always shows a moved sink.
        def mean(name, t):
            # A list of scores (judged per element) is no number to average: its mode.
            return not t.many and (t.kind == "score" or (name == graph.sink and t.numeric))

        self.nodes = [(c.name, "criterion", mean(c.name, c.type)) for c in graph.criteria]
        self.nodes += [(o.name, "operator", mean(o.name, o.type)) for o in graph.operators]
        self.inputs = {o.name: o.inputs for o in graph.operators}

    def summaries(self, traces: list[dict]) -> dict[str, dict[str, Any]]:
        """node -> candidate -> value summarised over `traces` (the repeats)."""
        cids = traces[0]["candidates"] if traces else []
        return {
            name: {cid: _summarise([node_value(t, name, cid, kind) for t in traces], mean) for cid in cids}
            for name, kind, mean in self.nodes
        }

    def compare(self, base: dict, var: dict) -> dict:
        """The localization of a variant: moved nodes in graph order,
        operators that absorbed a moved input, and whether the sink moved."""
        moved, absorbed = [], []
        moved_keys = set()
        for name, kind, _ in self.nodes:
            for cid in sorted(base.get(name, {})):
                a, b = base[name][cid], var.get(name, {}).get(cid)
                if not same(a, b):
                    moved.append({"node": name, "kind": kind, "candidate": cid, "original": a, "perturbed": b})
                    moved_keys.add((name, cid))
                elif kind == "operator":
                    inputs = [n for n in self.inputs[name] if (n, cid) in moved_keys]
                    if inputs:
                        absorbed.append({"node": name, "candidate": cid, "inputs": sorted(set(inputs))})
        sink = self.graph.sink
        return {"moved": moved, "absorbed": absorbed, "reached_sink": any(m["node"] == sink for m in moved)}

    def repeat_moves(self, traces: list[dict], base: dict) -> dict[str, tuple[int, int, int]]:
        """criterion -> (judgments that differ from the summary, judgments
        measured, judgments failed), over the repeats of one original item:
        the criterion's own noise. A failed judgment (or one against a
        summary that none measured) is no move: it measured nothing."""
        out: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
        for name, kind, _ in self.nodes:
            if kind != "criterion":
                continue
            for t in traces:
                for cid in t["candidates"]:
                    value, summary = node_value(t, name, cid, kind), base[name][cid]
                    if value is None or summary is None:
                        out[name][2] += 1
                        continue
                    out[name][1] += 1
                    out[name][0] += not same(value, summary)
        return {k: (v[0], v[1], v[2]) for k, v in out.items()}


def moved_criteria(localization: dict) -> set[str]:
    return {m["node"] for m in localization["moved"] if m["kind"] == "criterion"}
