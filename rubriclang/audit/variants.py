"""Variants and judge patches: what a perturbation produced, as plain data
that seals to JSON and back.

Candidates are kept as an ordered list of `[id, text]` pairs, never a JSON
object: canonical JSON sorts object keys, and a position swap lives in the
order.
"""

from __future__ import annotations

from typing import Any

import attrs

from rubriclang.checker.graph import CheckedGraph, Criterion, PromptSource
from rubriclang.interp.items import Item

# `fields`: new values of declared structured fields (`response`: candidate ->
# value), beside the new renderings of a structured input or response.
ITEM_FIELDS = ("input", "candidates", "reference", "fields")


def texts(item: Item) -> dict:
    """The fields an item-side variant may change, for side-by-side display:
    the input and the candidates (a structured one as read, not its
    rendering), the reference, and the declared fields beyond these as read
    (only for items that have some)."""
    structured = item.fields.get("response") or {}
    out = {
        "input": item.fields.get("input", item.input),
        "candidates": [[cid, structured.get(cid, text)] for cid, text in item.candidates.items()],
        "reference": item.reference,
    }
    extra = {k: v for k, v in item.fields.items() if k not in ("input", "response")}
    if extra:
        out["fields"] = extra
    return out


def apply_changes(item: Item, changes: dict[str, Any]) -> Item:
    """The perturbed item. It keeps the original's id, so value tables keyed
    by item id (annotations, recorded judgments) still apply."""
    return attrs.evolve(
        item,
        input=changes.get("input", item.input),
        candidates=dict(changes["candidates"]) if "candidates" in changes else item.candidates,
        reference=changes.get("reference", item.reference),
        fields={**item.fields, **changes["fields"]} if "fields" in changes else item.fields,
    )


@attrs.frozen
class Validation:
    """How a variant was checked: by `structure` (rules) or the `llm` validator.
    `verdict`: accept, reject, unavailable (no verdict could be had) or failed
    (the generator produced nothing usable)."""

    by: str
    verdict: str
    reason: str = ""
    model: str | None = None

    def to_json(self) -> dict:
        return attrs.asdict(self)


@attrs.frozen
class Variant:
    """A perturbed item (item-side operators) or an item judged by a patched
    judge (judge-side operators, `patch` names the patch)."""

    id: str
    item: str
    operator: str
    changes: dict[str, Any]  # field -> new value (ITEM_FIELDS)
    patch: str | None
    validation: Validation
    # e.g. partial_completion's removed unit; an operator on a structured
    # field's `element`: the document, turn or tool call it changed.
    detail: dict[str, Any] = attrs.field(factory=dict)

    def apply(self, item: Item) -> Item:
        return apply_changes(item, self.changes)

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "item": self.item,
            "operator": self.operator,
            "changes": self.changes,
            "patch": self.patch,
            "validation": self.validation.to_json(),
            "detail": self.detail,
        }

    @classmethod
    def from_json(cls, d: dict) -> Variant:
        return cls(
            d["id"],
            d["item"],
            d["operator"],
            d["changes"],
            d.get("patch"),
            Validation(**d["validation"]),
            d.get("detail") or {},
        )


# The key of a patch that gives a criterion a new prompt template (its text).
PROMPT = "prompt"


@attrs.frozen
class Patch:
    """A perturbed judge: new parameters for some criteria (`prompt`: a new
    template text) and, optionally, a new criterion order. Node names never
    change, so judgments stay comparable. A judge of several graphs has a
    patch per graph, which names it (`graph`); a patch that names none
    applies to every graph (a judge of one graph's)."""

    id: str
    operator: str
    criteria: dict[str, dict[str, Any]]
    criterion_order: tuple[str, ...] | None
    validation: Validation
    graph: str | None = None

    def texts(self, graph: CheckedGraph) -> tuple[dict, dict]:
        """(original, perturbed) of what the patch changes, side by side."""
        criteria = {c.name: c for c in graph.criteria}
        original = {
            name: {k: _current(criteria[name], k) for k in params}
            for name, params in self.criteria.items()
            if name in criteria
        }
        before = {
            "criteria": original,
            "criterion_order": [c.name for c in graph.criteria] if self.criterion_order else None,
        }
        after = {
            "criteria": self.criteria,
            "criterion_order": list(self.criterion_order) if self.criterion_order else None,
        }
        return before, after

    def missing(self, graph: CheckedGraph) -> list[str]:
        """Criteria the patch names that `graph` lacks (a sealed patch reused with another judge)."""
        names = {c.name for c in graph.criteria}
        wanted = set(self.criteria) | set(self.criterion_order or ())
        return sorted(wanted - names)

    def unknown(self, graph: CheckedGraph) -> list[str]:
        """`criterion.key` of what the patch sets that the criterion's
        procedure has no parameter for (a suite sealed by an older version)."""
        from rubriclang.catalog import load_catalog

        procedures = load_catalog().procedures
        out = []
        for name, params in self.criteria.items():
            node = graph.nodes.get(name)
            spec = procedures.get(node.procedure) if isinstance(node, Criterion) else None
            known = {p.name for p in spec.params} if spec else set()
            out += [f"{name}.{k}" for k in params if k != PROMPT and k not in known]
        return sorted(out)

    def apply(self, graph: CheckedGraph) -> CheckedGraph:
        criteria = [_patched(c, self.criteria[c.name]) if c.name in self.criteria else c for c in graph.criteria]
        if self.criterion_order:
            order = {name: i for i, name in enumerate(self.criterion_order)}
            criteria.sort(key=lambda c: order.get(c.name, len(order)))
        return attrs.evolve(graph, criteria=tuple(criteria))

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "operator": self.operator,
            "criteria": self.criteria,
            "criterion_order": list(self.criterion_order) if self.criterion_order else None,
            "validation": self.validation.to_json(),
            # Only when named, so that a one-graph suite seals as it always did.
            **({"graph": self.graph} if self.graph is not None else {}),
        }

    @classmethod
    def from_json(cls, d: dict) -> Patch:
        order = d.get("criterion_order")
        return cls(
            d["id"],
            d["operator"],
            d["criteria"],
            tuple(order) if order else None,
            Validation(**d["validation"]),
            d.get("graph"),
        )


def _patched(criterion: Criterion, changes: dict[str, Any]) -> Criterion:
    """The criterion with a patch's parameters; a `prompt` is a template text
    that replaces its prompt (its reply format and parsing stay its own)."""
    params = {k: _rekey(criterion.params.get(k), v) for k, v in changes.items() if k != PROMPT}
    out = attrs.evolve(criterion, params={**criterion.params, **params})
    if PROMPT not in changes:
        return out
    from rubriclang.llm.prompting import criterion_template

    origin = criterion.prompt.rewritten_from if criterion.prompt is not None else criterion_template(criterion).id
    return attrs.evolve(out, prompt=PromptSource(changes[PROMPT], None, rewritten_from=origin))


def _current(criterion: Criterion, key: str) -> Any:
    """What a patch key replaces: a parameter, or the prompt template's text."""
    if key != PROMPT:
        return criterion.params.get(key)
    from rubriclang.llm.prompting import criterion_template_text

    return criterion_template_text(criterion)


def _rekey(original: Any, new: Any) -> Any:
    """`new` with the keys of `original` when both are maps: JSON turns the
    numeric keys of anchors (`{1: ...}`) into strings, and the prompt must
    show and order them as the graph does."""
    if not (isinstance(original, dict) and isinstance(new, dict)):
        return new
    by_text = {str(k): k for k in original}
    return {by_text.get(str(k), k): v for k, v in new.items()}
