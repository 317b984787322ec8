"""What the audit needs to know about the judge: its type (read from the
graph and the items, never declared), the fields its criteria read, and the
criteria that make some operators meaningless.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from rubriclang.catalog.types import JType
from rubriclang.checker.graph import CheckedGraph, Criterion
from rubriclang.interp.items import Item

# The text fields each local procedure reads; LLM procedures read the input,
# the response and (with `with_reference`) the reference. Annotations and
# recorded values are keyed by item id: they read no text at all.
_FIELD_PARAM = ("rule.regex", "rule.length", "rule.contains", "rule.json_valid")
_FORMAT_CHECKS = ("rule.json_valid", "rule.regex")
# Procedures that see both candidates in one prompt, in a presentation order.
SIDE_BY_SIDE = ("llm.compare",)


class JudgeError(Exception):
    """The judge cannot be audited on these items (and why)."""


def is_llm(criterion: Criterion) -> bool:
    return criterion.procedure.startswith("llm.")


def reads(criterion: Criterion) -> frozenset[str]:
    """The item fields a criterion's judgment depends on."""
    p = criterion.params
    if is_llm(criterion):
        return frozenset({"input", "response", *(("reference",) if p.get("with_reference") else ())})
    if criterion.procedure in _FIELD_PARAM:
        return frozenset({p["field"]})
    if criterion.procedure == "rule.matches_reference":
        return frozenset({"response", "reference"})
    return frozenset()


@attrs.frozen
class JudgeInfo:
    """The judge under audit, as the audit sees it."""

    graph: CheckedGraph
    mode: str  # pointwise or pairwise
    type: str  # binary, ordinal, categorical or pairwise
    output: JType | None  # the pointwise readout's output
    positive: bool | None  # binary: the "good" verdict
    reads: frozenset[str]  # input, response, reference; `order` for pairwise judges

    @property
    def llm_criteria(self) -> tuple[Criterion, ...]:
        return tuple(c for c in self.graph.criteria if is_llm(c))

    def response_criteria(self, procedures: Iterable[str]) -> tuple[str, ...]:
        """Criteria running one of `procedures` on the response."""
        procs = set(procedures)
        return tuple(c.name for c in self.graph.criteria if c.procedure in procs and "response" in reads(c))

    @property
    def side_by_side(self) -> tuple[str, ...]:
        """Criteria that see both candidates at once, in an order."""
        return tuple(c.name for c in self.graph.criteria if c.procedure in SIDE_BY_SIDE)

    @property
    def has_anchors(self) -> bool:
        return any(c.params.get("anchors") or c.params.get("descriptions") for c in self.llm_criteria)


def judge_info(graph: CheckedGraph, items: list[Item], positive: bool = True) -> JudgeInfo:
    """The judge's type and reads; raises JudgeError when the items and the
    graph's readouts do not fit together."""
    modes = {it.mode for it in items}
    if len(modes) > 1:
        raise JudgeError("the items mix pointwise (`response`) and pairwise (`responses`) items; audit them separately")
    mode = modes.pop() if modes else "pointwise"
    if mode not in graph.readouts:
        have = ", ".join(graph.readouts) or "none"
        raise JudgeError(f"the items are {mode}, but the judge `{graph.name}` has no `{mode}` readout (it has: {have})")
    fields = frozenset().union(*(reads(c) for c in graph.criteria))
    if mode == "pairwise":
        return JudgeInfo(graph, mode, "pairwise", None, None, fields | {"order"})
    output = graph.pointwise_readout.output
    kind = {"bool": "binary", "label": "categorical"}.get(output.kind, "ordinal")
    return JudgeInfo(graph, mode, kind, output, positive if kind == "binary" else None, fields)
