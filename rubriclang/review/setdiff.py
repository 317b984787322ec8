"""`rbg diff OLD NEW --traces` where a side is a folder of graphs compiled
per instance: which graph ids were added, removed or changed, and the
verdict impact over the traces, each item under its own graph."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import attrs

from rubriclang.checker.graph import CheckedGraph
from rubriclang.review.diff import diff_graphs
from rubriclang.review.impact import Impact
from rubriclang.review.render import SCHEMA, _code, _fenced, _impact_json, _impact_markdown, impact_lines
from rubriclang.safetext import one_line

if TYPE_CHECKING:
    from rubriclang.interp.graphset import GraphSet


@attrs.frozen
class SetDiff:
    """The graph ids only in NEW, only in OLD, and in both but changed in
    meaning; a single graph file is a folder of one graph, named by its path."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]
    same: int

    @property
    def any(self) -> bool:
        return bool(self.added or self.removed or self.changed)


def graphs_of(side: CheckedGraph | GraphSet, label: str) -> dict[str, CheckedGraph]:
    from rubriclang.interp.graphset import GraphSet

    return dict(side.graphs) if isinstance(side, GraphSet) else {label: side}


def set_diff(old: dict[str, CheckedGraph], new: dict[str, CheckedGraph]) -> SetDiff:
    both = sorted(old.keys() & new.keys())
    changed = tuple(k for k in both if diff_graphs(old[k], new[k]).changed)
    return SetDiff(
        tuple(sorted(new.keys() - old.keys())),
        tuple(sorted(old.keys() - new.keys())),
        changed,
        len(both) - len(changed),
    )


def plan(d: SetDiff) -> str:
    return f"Graphs: {d.same} unchanged, {len(d.changed)} changed, {len(d.added)} added, {len(d.removed)} removed."


def _marks(d: SetDiff) -> list[str]:
    return [
        f"{sign} {one_line(k)}" for sign, keys in (("~", d.changed), ("+", d.added), ("-", d.removed)) for k in keys
    ]


def render(fmt: str, old_label: str, new_label: str, d: SetDiff, impact: Impact | None, limit: int) -> str:
    if fmt == "json":
        doc = {
            "schema": SCHEMA,
            "old": {"path": old_label},
            "new": {"path": new_label},
            "changed": d.any,
            "graphs": {
                "added": list(d.added),
                "removed": list(d.removed),
                "changed": list(d.changed),
                "unchanged": d.same,
            },
            "impact": _impact_json(impact) if impact is not None else None,
        }
        return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    if fmt == "markdown":
        parts = [f"### Rubric diff: {_code(old_label)} → {_code(new_label)}", f"**{plan(d)}**"]
        if d.any:
            parts.append(_fenced("diff", "\n".join(_marks(d))))
        if impact is not None:
            parts.append(_impact_markdown(impact, limit))
        return "\n\n".join(parts) + "\n"
    lines = [f"--- {one_line(old_label)}", f"+++ {one_line(new_label)}", "", *_marks(d), plan(d)]
    if impact is not None:
        lines += ["", *impact_lines(impact, limit)]
    return "\n".join(lines) + "\n"
