"""The criteria pass: each criterion's procedure, parameters and declared
type, its prompt (for LLM procedures) and the procedure's own checks (its
registry entry's `check` hook)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from rubriclang.catalog import Catalog, JType
from rubriclang.checker.graph import Criterion
from rubriclang.checker.lookup import Lookup, unknown_spec
from rubriclang.checker.prompts import PromptChecker
from rubriclang.checker.values import CheckedBlock, check_block, type_from_ast
from rubriclang.diagnostics import Diagnostic
from rubriclang.diagnostics.codes import make
from rubriclang.diagnostics.span import Span
from rubriclang.records import frozen
from rubriclang.syntax import ast


def param_span(d: ast.CriterionDecl | ast.NodeDecl, name: str) -> Span:
    """The span of the parameter's value (of the procedure or operator when not given)."""
    for p in d.block.params:
        if p.name.value == name:
            return p.value.span
    return d.procedure.span if isinstance(d, ast.CriterionDecl) else d.operator.span


@frozen
class CriterionCheck:
    """What a procedure's `check` hook sees of one criterion, and how it reports."""

    diags: list[Diagnostic]
    decl: ast.CriterionDecl
    type: JType
    values: dict[str, Any]
    failed: frozenset[str]
    prompts: PromptChecker

    def err(self, code: str, span: Span, message: str, notes: Sequence[str] = ()) -> None:
        self.diags.append(make(code, span, message, notes))

    def param_span(self, name: str) -> Span:
        """The span of the parameter's value (of the procedure when not given)."""
        return param_span(self.decl, name)

    def map_keys(self, name: str) -> tuple[ast.String | ast.Number | ast.Bool | ast.Ident, ...]:
        """The key nodes of the map given for parameter `name` (its first occurrence)."""
        value = next(p.value for p in self.decl.block.params if p.name.value == name)
        return tuple(e.key for e in value.entries) if isinstance(value, ast.MapValue) else ()


@frozen
class CheckedCriterion:
    """One criterion, checked: None when it has errors that stop its type
    from being known; its parameter block when the procedure is known."""

    criterion: Criterion | None
    block: CheckedBlock | None


def check_criterion(
    d: ast.CriterionDecl, lookup: Lookup, prompts: PromptChecker, diags: list[Diagnostic]
) -> CheckedCriterion:
    """Check one criterion declaration."""
    name = d.name.value
    declared = type_from_ast(d.type, diags)
    proc = lookup.procedure(d.procedure.text)
    if proc is None:
        diags.append(unknown_spec("RB104", d.procedure, lookup.catalog.procedures, "procedure"))
        return CheckedCriterion(None, None)
    where = f"`{proc.name}`"
    checked = check_block(d.block, lookup.catalog.procedure_params(proc), diags, where, d.procedure.span)
    values, failed = checked.values, checked.failed
    if declared is None:
        return CheckedCriterion(None, checked)
    if declared.kind not in proc.produces:
        kinds = ", ".join(f"`{k}`" for k in proc.produces)
        diags.append(
            make(
                "RB204",
                d.type.span,
                f"`{proc.name}` cannot produce `{declared}`: it produces {kinds}",
                _procedure_hint(declared, lookup.catalog),
            )
        )
        return CheckedCriterion(None, checked)
    if values.get("on_error") == "abstain" and not declared.optional:
        diags.append(
            make(
                "RB206",
                d.type.span,
                f"`{name}` abstains on error, so its type must be optional: `{declared.as_optional()}`",
            )
        )
    prompt = None
    if proc.placeholders:  # a prompt procedure: its template and answer
        prompt = prompts.prompt(d, proc, values, failed)
        prompts.answer(d, proc, declared, values, failed)
    if proc.hooks.check is not None:  # checks that need the procedure's semantics
        proc.hooks.check(CriterionCheck(diags, d, declared, values, failed, prompts))
    each = None
    if d.each is not None:
        each = _each(d.each, "side_by_side" in proc.hooks.traits, prompts, diags)
        if each is None:
            return CheckedCriterion(None, checked)
        declared = attrs.evolve(declared, many=True)
    criterion = Criterion(name, declared, proc.name, values, span=d.span, prompt=prompt, each=each)
    return CheckedCriterion(criterion, checked)


def _each(
    each: ast.Each, side_by_side: bool, prompts: PromptChecker, diags: list[Diagnostic]
) -> tuple[str, str] | None:
    """(element, field) of `each ELEMENT in FIELD`, when the item's shape
    declares the field as a list of such elements (and the procedure does
    not show both responses at once, if it is the response); else reported, None."""
    from rubriclang.items.elements import ELEMENTS

    element, field = each.element.value, each.field.value
    shape = prompts.shape
    spec = None if shape is None else shape.get(field)
    if spec is None:
        what = "the rubric declares no item shape" if shape is None else "`item { ... }` does not declare it"
        diags.append(
            make(
                "RB602",
                each.field.span,
                f"judged per element of the item's `{field}`, but {what}",
                (f"declare `{field}` as `documents`, `list[text]` or `conversation` in `item {{ ... }}`",),
            )
        )
        return None
    kinds = ELEMENTS.get(spec.kind, ())
    if element not in kinds:
        fits = [f"`{e}` of a `{k}` field" for k, es in ELEMENTS.items() for e in es]
        diags.append(
            make(
                "RB603",
                each.element.span,
                f"`{field}` is declared `{spec.type_text}`, which has no `{element}` elements"
                + (f" (it has: {', '.join(kinds)})" if kinds else ""),
                ("a criterion is judged per " + ", ".join(fits),),
            )
        )
        return None
    if side_by_side and field == "response":
        diags.append(
            make(
                "RB603",
                each.field.span,
                "a procedure that shows both responses side by side cannot be judged per element of one of them",
                ("judge it per element of a field both candidates share (e.g. `each document in documents`)",),
            )
        )
        return None
    return element, field


def _procedure_hint(declared: JType, catalog: Catalog) -> tuple[str, ...]:
    makers = sorted(p.name for p in catalog.procedures.values() if declared.kind in p.produces)
    if not makers:
        return ()
    return (f"procedures that produce `{declared.kind}`: " + ", ".join(makers),)
