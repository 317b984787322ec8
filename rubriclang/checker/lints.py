"""The style lints (the RB5xx warnings), one rule object each, as sqlfluff
keeps its rules: a rule has its code, its description (the code's entry in
`rubriclang/diagnostics/codes.toml`, which the docs are generated from) and a
`check` that reads what the passes found and returns its warnings.

Lints run after every pass, over a `LintContext`; they report, never change
what was checked. `--select`/`--ignore` and inline `# rbg: ignore[...]`
comments filter their warnings by code (`checker.suppress`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping

from rubriclang.catalog import Catalog, JType
from rubriclang.catalog.model import OperatorSpec, ParamSpec
from rubriclang.catalog.types import BOOL, fmt_num, fmt_value
from rubriclang.checker.criteria import param_span
from rubriclang.checker.declarations import Decl
from rubriclang.checker.graph import Criterion
from rubriclang.checker.prompts import known_params
from rubriclang.checker.values import CheckedBlock
from rubriclang.diagnostics import Diagnostic
from rubriclang.diagnostics.codes import CodeInfo, make, registry
from rubriclang.diagnostics.span import Span
from rubriclang.records import frozen
from rubriclang.syntax import ast


@frozen
class LintContext:
    """What the lints see of a checked module: its criteria and nodes, the
    criteria that checked, the types inferred, the names with errors, every
    parameter block checked, each node's parameters (of a known operator),
    and where each criterion's template shows `{{reference}}`."""

    decls: Mapping[str, Decl]
    criteria: Mapping[str, Criterion]
    types: Mapping[str, JType]
    broken: frozenset[str]
    catalog: Catalog
    blocks: tuple[CheckedBlock, ...]
    node_params: Mapping[str, Mapping[str, object]]
    references: Mapping[str, Span]


@frozen
class LintRule:
    """One lint: its code and the check that finds its warnings."""

    code: str
    check: Callable[[LintContext], Iterator[Diagnostic]]

    @property
    def info(self) -> CodeInfo:
        """The code's registered name, summary and explanation."""
        return registry()[self.code]

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def description(self) -> str:
        return self.info.summary


_SNAKE = re.compile(r"[a-z][a-z0-9_]*\Z")


def _snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()
    s = re.sub(r"_+", "_", re.sub(r"[^a-z0-9_]", "_", s)).strip("_")
    return s if s[:1].isalpha() else "n_" + s


def name_style(c: LintContext) -> Iterator[Diagnostic]:
    """Every criterion and node name is snake_case."""
    for name, d in c.decls.items():
        if not _SNAKE.match(name):
            yield make("RB501", d.name.span, f"`{name}` is not snake_case", (f"e.g. `{_snake(name)}`",))


def rate_without_anchors(c: LintContext) -> Iterator[Diagnostic]:
    """A procedure that rates on a scale (trait `rates`) is given anchors, or a
    template of the user's own that shows them or states its own scale."""
    for name, d in c.decls.items():
        if not isinstance(d, ast.CriterionDecl) or "rates" not in c.catalog.hooks(d.procedure.text).traits:
            continue
        crit = c.criteria.get(name)
        written = any(p.name.value == "anchors" for p in d.block.params)
        # A malformed `anchors` was reported already; do not also say it is missing.
        # A template of the user's own states its scale unless it shows the anchors.
        own = any(p.name.value == "prompt" for p in d.block.params) and (
            crit is None or crit.prompt is None or "anchors}}" not in crit.prompt.text
        )
        if crit is not None and not own and (not written or crit.params.get("anchors") == {}):
            lo, hi = fmt_num(crit.type.lo), fmt_num(crit.type.hi)
            yield make(
                "RB502",
                d.name.span,
                f"`{name}` rates on a scale without anchors, so each call decides what its points mean",
                (f'describe at least both ends of the scale, e.g. `anchors = {{ {lo}: "...", {hi}: "..." }}`',),
            )


def single_input_reducer(c: LintContext) -> Iterator[Diagnostic]:
    """A reducer (an operator of kind `reduce`) has more than one input (a
    list of per-element judgments counts as many)."""
    for name, d in c.decls.items():
        if not isinstance(d, ast.NodeDecl) or name in c.broken:
            continue
        op = c.catalog.operators.get(d.operator.text)
        refs = [r for p in d.ports for r in p.refs]
        one = len(refs) == 1 and not (refs[0].value in c.types and c.types[refs[0].value].many)
        if op is not None and op.kind == "reduce" and one:
            yield make(
                "RB503",
                d.operator.span,
                f"`{d.operator.text}` over a single input reduces nothing",
                (f"route `{refs[0].value}` directly, or add the inputs that were meant to be there",),
            )


def _equals_default(spec: ParamSpec, value: object) -> bool:
    if spec.default is None or spec.required or spec.explicit_ok:
        return False
    if isinstance(spec.default, bool) or isinstance(value, bool):
        return value is spec.default
    return bool(value == spec.default)


def default_parameter(c: LintContext) -> Iterator[Diagnostic]:
    """No parameter is written out with its default value, unless the catalog
    marks it `explicit_ok` (its default, written out, states a choice)."""
    for block in c.blocks:
        for p, spec in block.given:
            if _equals_default(spec, block.values[spec.name]):
                yield make("RB504", p.span, f"`{spec.name}` is set to its default value; leave it out")


def template_reference_hidden(c: LintContext) -> Iterator[Diagnostic]:
    """A template that shows `{{reference}}` belongs to a criterion that gives it."""
    for name, span in c.references.items():
        crit = c.criteria.get(name)
        proc = c.catalog.procedures.get(crit.procedure) if crit is not None else None
        if (
            crit is None
            or proc is None
            or "with_reference" not in known_params(proc)
            or crit.params.get("with_reference")
        ):
            continue
        yield make(
            "RB505",
            span,
            "the template shows `{{reference}}`, but the criterion does not set `with_reference = true`, so it is "
            "always empty",
            ("add `with_reference = true` to show the item's reference answer",),
        )


def gate_never_applies(c: LintContext) -> Iterator[Diagnostic]:
    """A gate (an operator of kind `gate`) changes some value of its input's
    type when its condition holds: a cap at or above the value's top, or a
    floor at or below its bottom, never does. The gate's own function decides,
    over the interval's ends and middle (every point of a small ordinal)."""
    for name, d in c.decls.items():
        if not isinstance(d, ast.NodeDecl) or name in c.broken or name not in c.types:
            continue
        op = c.catalog.operators.get(d.operator.text)
        value = next((p.refs[0].value for p in d.ports if p.name.value == "value" and p.refs), None)
        t = c.types.get(value) if value is not None else None
        if (
            op is None
            or op.kind != "gate"
            or {p.name for p in op.ports} != {"value", "when"}
            or t is None
            or not t.numeric
            or op.function is None
        ):
            continue
        params = c.node_params[name]
        plain = t.as_optional(False)
        if all(_applied(op, x, params, plain) == x for x in _samples(plain)):
            bound = next((p.name for p in op.params if p.fit == "interval"), None)
            shown = f"with `{bound} = {fmt_value(params[bound])}` " if bound is not None else ""
            yield make(
                "RB506",
                param_span(d, bound) if bound is not None else d.operator.span,
                f"`{op.name}` {shown}never changes `{value}: {plain}`, so its condition has no effect",
                (
                    f"give a bound inside `{value}`'s interval [{fmt_num(plain.lo)}, {fmt_num(plain.hi)}], or remove "
                    "the gate",
                ),
            )


def _samples(t: JType) -> list[float | int]:
    if t.kind == "ordinal" and t.hi - t.lo <= 100:
        return list(range(int(t.lo), int(t.hi) + 1))
    return [t.lo, (t.lo + t.hi) / 2, t.hi]


def _applied(op: OperatorSpec, x: float | int, params: Mapping[str, object], t: JType) -> object:
    """The gate's output for value `x` when its condition holds."""
    return op.function({"value": x, "when": True}, dict(params), {"value": t, "when": BOOL})


# Every lint, in code order; each RB5xx code has exactly one rule here.
RULES: tuple[LintRule, ...] = (
    LintRule("RB501", name_style),
    LintRule("RB502", rate_without_anchors),
    LintRule("RB503", single_input_reducer),
    LintRule("RB504", default_parameter),
    LintRule("RB505", template_reference_hidden),
    LintRule("RB506", gate_never_applies),
)
RULES_BY_CODE: dict[str, LintRule] = {r.code: r for r in RULES}


def lint(c: LintContext) -> list[Diagnostic]:
    """Every registered rule's warnings over the context."""
    return [d for rule in RULES for d in rule.check(c)]
