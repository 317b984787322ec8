"""The checked graph: what the checker hands to the interpreter and tools.

Frozen attrs classes, free of syntax types; spans are kept (for run-time
diagnostics) but never compared.
"""

from __future__ import annotations

from typing import Any

import attrs

from rubriclang.catalog.types import JType
from rubriclang.diagnostics.span import Span
from rubriclang.items.shape import FieldSpec, ItemShape
from rubriclang.records import frozen

_span = attrs.field(eq=False, repr=False, kw_only=True, default=None)


@frozen
class PromptSource:
    """A criterion's own prompt template: its text (part of the criterion's
    meaning and hash), the path it was read from as written in the `.rbg`
    file (None for an inline template), and where the `prompt` value is."""

    text: str
    path: str | None
    span: Span = _span
    # Set only on a judge the audit perturbed: the built-in template (`rate@v2`)
    # this text was rewritten from, whose reply schema the judge keeps.
    rewritten_from: str | None = attrs.field(default=None, kw_only=True)


@frozen
class GroupRef:
    """The group a criterion is answered in (`group NAME = [...]`): its name
    and its members in the declared order. One call per candidate answers
    every member; the interpreter hands the backend all of them at once."""

    name: str
    members: tuple[str, ...]


@frozen
class Criterion:
    """A criterion node: one judgment per candidate, from a procedure."""

    name: str
    type: JType
    procedure: str
    params: dict[str, Any]  # every parameter, defaults filled in
    span: Span = _span
    prompt: PromptSource | None = attrs.field(default=None, kw_only=True)
    # The declared item fields it reads that are structured or beyond the
    # built-in ones (empty without a declared shape): part of its hash.
    item_fields: tuple[FieldSpec, ...] = attrs.field(default=(), kw_only=True)
    # `each ELEMENT in FIELD`: judged once per element of the field, its type a `list[T]`.
    each: tuple[str, str] | None = attrs.field(default=None, kw_only=True)
    # `group NAME = [...]`: answered together with the group's other members.
    group: GroupRef | None = attrs.field(default=None, kw_only=True)


@frozen
class Operator:
    """An operator node; `ports` maps each port to its ordered slots (node names)."""

    name: str
    operator: str
    kind: str
    ports: dict[str, tuple[str, ...]]
    params: dict[str, Any]
    type: JType
    span: Span = _span

    @property
    def inputs(self) -> tuple[str, ...]:
        """Every node routed into this one, in port then slot order."""
        return tuple(n for slots in self.ports.values() for n in slots)


Node = Criterion | Operator


@frozen
class PointwiseReadout:
    output: JType
    quantize: str
    ties: str
    span: Span = _span


@frozen
class PairwiseReadout:
    epsilon: float
    resolve: str
    span: Span = _span


Readout = PointwiseReadout | PairwiseReadout


@frozen
class CheckedGraph:
    """A well-typed rubric graph, ready to run.

    `criteria` are in source order; `operators` in a fixed topological order
    (source order among independent nodes), which is the evaluation order.
    """

    name: str
    header: dict[str, Any]
    scale: JType
    criteria: tuple[Criterion, ...]
    operators: tuple[Operator, ...]
    sink: str
    readouts: dict[str, Readout]
    path: str = attrs.field(eq=False, default="<input>")
    # The declared item shape (`item { ... }`); None: items as docs/items.md reads them.
    item_shape: ItemShape | None = None

    @property
    def nodes(self) -> dict[str, Node]:
        nodes: tuple[Node, ...] = (*self.criteria, *self.operators)
        return {n.name: n for n in nodes}

    # The readouts by mode, typed (KeyError when the graph has none of that mode).
    @property
    def pointwise_readout(self) -> PointwiseReadout:
        r = self.readouts["pointwise"]
        assert isinstance(r, PointwiseReadout)
        return r

    @property
    def pairwise_readout(self) -> PairwiseReadout:
        r = self.readouts["pairwise"]
        assert isinstance(r, PairwiseReadout)
        return r

    @property
    def sink_type(self) -> JType:
        return self.nodes[self.sink].type
