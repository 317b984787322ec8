"""What the audit needs to know about the judge: its type (read from the
graph and the items, never declared), the fields its criteria read, and the
criteria that make some operators meaningless.
"""

from __future__ import annotations

import attrs

from rubriclang.catalog import load_catalog
from rubriclang.catalog.types import JType
from rubriclang.checker.graph import CheckedGraph, Criterion
from rubriclang.interp.items import Item


class JudgeError(Exception):
    """The judge cannot be audited on these items (and why)."""


def is_llm(criterion: Criterion) -> bool:
    return load_catalog().hooks(criterion.procedure).backend == "llm"


def has_trait(criterion: Criterion, trait: str) -> bool:
    """Whether the criterion's procedure has the trait (see `ProcedureImpl`)."""
    return trait in load_catalog().hooks(criterion.procedure).traits


def reads(criterion: Criterion) -> frozenset[str]:
    """The item fields a criterion's judgment depends on: LLM procedures read
    the input, the response and (with `with_reference`) the reference; local
    ones the field they name, or the response and the reference. Annotations
    and recorded values are keyed by item id: they read no text at all."""
    p = criterion.params
    if is_llm(criterion):
        return frozenset({"input", "response", *(("reference",) if p.get("with_reference") else ())})
    if has_trait(criterion, "reads_field"):
        return frozenset({p["field"]})
    if has_trait(criterion, "reads_reference"):
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

    def response_criteria(self, trait: str) -> tuple[str, ...]:
        """Criteria whose procedure has `trait` and that read the response."""
        return tuple(c.name for c in self.graph.criteria if has_trait(c, trait) and "response" in reads(c))

    @property
    def side_by_side(self) -> tuple[str, ...]:
        """Criteria that see both candidates at once, in an order."""
        return tuple(c.name for c in self.graph.criteria if has_trait(c, "side_by_side"))

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
