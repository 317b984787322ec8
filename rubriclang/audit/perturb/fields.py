"""Variants of an item's declared structured fields: which field and element
an operator on structured fields perturbs, the changes it makes (the new
value, and the new rendering of a structured input or response, which text
criteria see), and the checks every variant passes, its own and the item
validator's (it must still fit the declared shape).

An operator acts on the first of its target fields (`applicability.
target_fields`) whose value has something to perturb; a response field is
perturbed candidate by candidate (each with its own seeded choice).
"""

from __future__ import annotations

from collections.abc import Callable
from random import Random
from typing import Any

from rubriclang.audit.perturb import structured as st
from rubriclang.audit.perturbations import Perturbation
from rubriclang.audit.variants import Validation
from rubriclang.interp.items import POINTWISE_CANDIDATE, Item
from rubriclang.items.render import render
from rubriclang.items.shape import FieldSpec
from rubriclang.items.validate import ShapeError, check_value

# Draws of another item's document before giving up on finding one whose
# text the item lacks (bounded, so a large item set costs no more per item).
_DONOR_DRAWS = 20


def value_of(item: Item, spec: FieldSpec, cid: str | None) -> Any:
    """The field's value as read (the candidate's, for the response)."""
    if spec.name == "response":
        return (item.fields.get("response") or {}).get(cid)
    return item.fields.get(spec.name)


def sites(item: Item, spec: FieldSpec) -> list[str | None]:
    """Where the field is perturbed: each candidate for the response, once otherwise."""
    return list(item.candidate_ids) if spec.name == "response" else [None]


def changes_for(item: Item, spec: FieldSpec, new: dict[str | None, Any]) -> dict[str, Any]:
    """A variant's changes: the field's new value (per candidate, for the
    response), and the new rendering of a structured input or response."""
    if spec.name == "response":
        values = {**item.fields["response"], **new}
        changes: dict[str, Any] = {"fields": {"response": values}}
        if spec.structured:
            changes["candidates"] = [[cid, render(spec, values[cid])] for cid in item.candidate_ids]
        return changes
    value = new[None]
    out: dict[str, Any] = {"fields": {spec.name: value}}
    if spec.name == "input" and spec.structured:
        out["input"] = render(spec, value)
    return out


def path_of(spec: FieldSpec, item: Item, cid: str | None) -> str:
    if spec.name != "response":
        return spec.name
    return "response" if cid == POINTWISE_CANDIDATE else f"responses.{cid}"


def fits(spec: FieldSpec, item: Item, cid: str | None, value: Any) -> str | None:
    """Why `value` does not fit the declared shape (the item validator's words), or None."""
    try:
        check_value(spec, value, path_of(spec, item, cid))
    except ShapeError as exc:
        return f"the variant does not fit the declared shape: {exc}"
    return None


class Donors:
    """Every item's documents by field, for `documents.insert_irrelevant`:
    a seeded draw of a document from another item."""

    def __init__(self, items: list[Item]):
        self.items = items
        self.pools: dict[str, list[tuple[str, dict]]] = {}

    def pool(self, name: str) -> list[tuple[str, dict]]:
        if name not in self.pools:
            self.pools[name] = [(it.id, d) for it in self.items for d in it.fields.get(name) or ()]
        return self.pools[name]

    def draw(self, name: str, item: Item, docs: list[dict], rng: Random) -> dict | None:
        pool = self.pool(name)
        texts = {d["text"] for d in docs}
        for _ in range(_DONOR_DRAWS if pool else 0):
            iid, doc = pool[rng.randrange(len(pool))]
            if iid != item.id and doc["text"] not in texts:
                return doc
        return None


# One perturbation of one value: (new value, element, problem) or None
# (nothing to perturb there); `why` says what is missing for it.
_Rule = Callable[[Item, FieldSpec, Any, Random], "tuple[Any, dict, str | None] | None"]


class RuleVariants:
    """The rule operators on structured fields, over one audit's items."""

    def __init__(self, items: list[Item]):
        self.donors = Donors(items)
        self.rules: dict[str, tuple[_Rule, str]] = {
            "documents.shuffle": (self._shuffle, "no documents field has two documents to reorder"),
            "documents.insert_irrelevant": (
                self._insert,
                "no other item has a document whose text this item lacks",
            ),
            "documents.remove_supporting": (self._remove, "there is no document to remove"),
            "tool_calls.drop": (self._drop, "no tool call to drop (a JSON value that is one call cannot lose it)"),
            "tool_calls.corrupt_argument": (
                self._corrupt,
                "no tool call has an argument whose value can be made wrong (every one null or empty)",
            ),
        }

    def variant(
        self, op: Perturbation, item: Item, targets: tuple[FieldSpec, ...], rng: Callable[[str], Random]
    ) -> tuple[dict, Validation, dict]:
        """(changes, validation, detail) of rule operator `op` on `item`,
        whose perturbable fields are `targets`; `rng(key)` seeds a choice."""
        rule, why = self.rules[op.name]
        for spec in targets:
            new: dict[str | None, Any] = {}
            elements, problems = [], []
            for cid in sites(item, spec):
                value = value_of(item, spec, cid)
                made = None if value is None else rule(item, spec, value, rng(f"{spec.name}:{cid or ''}"))
                if made is None:
                    continue
                new[cid], element, problem = made
                elements.append(element if cid is None else {**element, "candidate": cid})
                problems.append(problem or fits(spec, item, cid, new[cid]))
            if new:
                problem = next((p for p in problems if p), None)
                v = Validation("structure", "reject", problem) if problem else _OK
                return changes_for(item, spec, new), v, {"elements": elements}
        return {}, Validation("structure", "failed", why), {}

    def _shuffle(self, item: Item, spec: FieldSpec, docs: Any, rng: Random):
        new = st.shuffle_documents(docs, rng)
        if new is None:
            return None
        return new, st.element(spec.name, "order", None), st.check_shuffle(docs, new)

    def _insert(self, item: Item, spec: FieldSpec, docs: Any, rng: Random):
        donor = self.donors.draw(spec.name, item, docs, rng)
        if donor is None:
            return None
        new, new_id = st.insert_document(docs, donor, rng)
        return new, st.element(spec.name, "document", new_id), st.check_insert(docs, new, new_id)

    def _remove(self, item: Item, spec: FieldSpec, docs: Any, rng: Random):
        response = item.candidates.get(POINTWISE_CANDIDATE, "")
        gold = item.fields.get("supporting")
        found = st.supporting_document(docs, response, gold if isinstance(gold, (str, int)) else None)
        if found is None:
            return None
        index, how = found
        removed = str(docs[index]["id"])
        new = st.remove_document(docs, index)
        return new, st.element(spec.name, "document", removed, chosen_by=how), st.check_removed(docs, new, removed)

    def _drop(self, item: Item, spec: FieldSpec, value: Any, rng: Random):
        calls = st.call_sites(spec.kind, value)
        if not calls or (spec.kind != "conversation" and not isinstance(value, list)):
            return None
        site = rng.choice(calls)
        key = st.call_id(spec.kind, value, site)
        if spec.kind == "conversation":
            new = st.drop_call(value, site)
            problem = st.check_dropped(value, new, key)
        else:
            new = st.drop_json_call(value, site)
            problem = st.check_dropped_json(value, new, site[0])
        return new, st.element(spec.name, "tool_call", key), problem

    def _corrupt(self, item: Item, spec: FieldSpec, value: Any, rng: Random):
        calls = st.call_sites(spec.kind, value)
        rng.shuffle(calls)
        for site in calls:
            made = st.corrupt_argument(spec.kind, value, site, rng)
            if made is not None:
                new, name = made
                key = st.call_id(spec.kind, value, site)
                problem = st.check_corrupted(spec.kind, value, new, site, name)
                return new, st.element(spec.name, "tool_call", key, argument=name), problem
        return None


_OK = Validation("structure", "accept", "the structural check passed")


def text_site(
    op: Perturbation, item: Item, targets: tuple[FieldSpec, ...], rng: Callable[[str], Random]
) -> tuple[FieldSpec, str | None, int] | None:
    """(field, candidate, message index) of the conversation turn an LLM
    operator rewrites: an earlier user or assistant turn, or a tool result,
    chosen by the seed in the first field (and candidate) that has one."""
    choose = st.earlier_turns if op.target == "turn" else st.tool_results
    for spec in targets:
        if spec.kind != "conversation":
            continue
        for cid in sites(item, spec):
            value = value_of(item, spec, cid)
            found = choose(value) if value is not None else []
            if found:
                return spec, cid, rng(f"{spec.name}:{cid or ''}").choice(found)
    return None


def turn_text(item: Item, spec: FieldSpec, cid: str | None, index: int) -> str:
    """The text of message `index` of the field."""
    return st.content_text(value_of(item, spec, cid)[index])


def with_text(item: Item, spec: FieldSpec, cid: str | None, index: int, text: str) -> tuple[dict, dict, str | None]:
    """(changes, detail, problem) of message `index` given `text`: only it
    changed, and the variant fits the declared shape."""
    value = value_of(item, spec, cid)
    new = st.with_content(value, index, text)
    message = value[index]
    problem = st.check_one_content(value, new, index) or fits(spec, item, cid, new)
    if message["role"] == "tool":
        problem = problem or st.check_same_values(st.content_text(message), text)
    kind, key = ("tool_result", message["tool_call_id"]) if message["role"] == "tool" else ("turn", index)
    element = st.element(spec.name, kind, key)
    detail = {"elements": [element if cid is None else {**element, "candidate": cid}]}
    return changes_for(item, spec, {cid: new}), detail, problem
