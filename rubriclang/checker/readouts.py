"""The readouts pass: the sink, what reaches it, the sink against the
contract's scale, and the pointwise and pairwise readouts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rubriclang.catalog import Catalog, JType
from rubriclang.catalog.model import OperatorSpec
from rubriclang.catalog.types import fmt_num
from rubriclang.checker.declarations import Decl, Declarations, file_span
from rubriclang.checker.graph import Criterion, PairwiseReadout, PointwiseReadout, Readout
from rubriclang.checker.inference import Inferred
from rubriclang.checker.values import CheckedBlock, check_block, suggest
from rubriclang.diagnostics import Diagnostic
from rubriclang.diagnostics.codes import make
from rubriclang.records import frozen
from rubriclang.syntax import ast


def sink_of(decls: Declarations, path: str, diags: list[Diagnostic]) -> str | None:
    """The one sink's name; None (reported) when there is none, more than one,
    or it names nothing declared."""
    sinks = decls.sinks
    if not sinks:
        diags.append(
            make(
                "RB302",
                file_span(path),
                "the graph has no sink",
                ("add `sink NAME` naming the node the readout reads",),
            )
        )
        return None
    for extra in sinks[1:]:
        diags.append(
            make(
                "RB303",
                extra.span,
                f"a second sink `{extra.target.value}`",
                (
                    f"the first is `{sinks[0].target.value}` at {sinks[0].span}",
                    "combine them with a reducer and sink that",
                ),
            )
        )
        if extra.target.value not in decls.decls:
            diags.append(
                make(
                    "RB101",
                    extra.target.span,
                    f"unknown name `{extra.target.value}`",
                    decls.name_hint(extra.target.value),
                )
            )
    target = sinks[0].target
    if target.value not in decls.decls:
        diags.append(make("RB101", target.span, f"unknown name `{target.value}`", decls.name_hint(target.value)))
        return None
    if len(sinks) > 1:
        return None
    return target.value


def check_reachability(
    sink: str, decls: Declarations, edges: Mapping[str, Sequence[str]], diags: list[Diagnostic]
) -> None:
    """RB304 for every criterion and node the sink does not read."""
    seen = {sink}
    todo = [sink]
    while todo:
        for src in edges.get(todo.pop(), ()):
            if src not in seen:
                seen.add(src)
                todo.append(src)
    for name, d in decls.decls.items():
        if name not in seen:
            diags.append(
                make(
                    "RB304",
                    d.name.span,
                    f"`{name}` does not reach the sink `{sink}`, so it cannot affect the verdict",
                    ("route it into the graph, or remove it",),
                )
            )


@frozen
class CheckedReadouts:
    """The readouts by mode, and the blocks checked on the way."""

    readouts: dict[str, Readout]
    blocks: tuple[CheckedBlock, ...]


def check_readouts(
    decls: Declarations,
    path: str,
    sink: str | None,
    scale: JType | None,
    inferred: Inferred,
    criteria: Mapping[str, Criterion],
    catalog: Catalog,
    diags: list[Diagnostic],
) -> CheckedReadouts:
    """The sink against the scale (RB403), then each readout."""
    sink_type = inferred.types.get(sink) if sink and sink not in inferred.broken else None
    if (
        sink is not None
        and sink_type is not None
        and scale is not None
        and not sink_type.as_optional(False).fits(scale)
    ):
        diags.append(
            make(
                "RB403",
                next(d.target.span for d in decls.sinks),
                f"the sink `{sink}` is `{sink_type}`, which does not fit the contract's scale `{scale}`",
                _fit_hint(sink, sink_type, scale, decls, catalog),
            )
        )
    readouts = decls.readouts
    if not readouts:
        diags.append(
            make(
                "RB405",
                file_span(path),
                "the graph has no readout",
                ("add `readout pointwise { output = ... }` and/or `readout pairwise { ... }`",),
            )
        )
    out: dict[str, Readout] = {}
    blocks: list[CheckedBlock] = []
    for r in readouts:
        mode = r.mode.value
        if mode not in ("pointwise", "pairwise"):
            diags.append(
                make(
                    "RB406",
                    r.mode.span,
                    f"unknown readout mode `{mode}`",
                    (*suggest(mode, ("pointwise", "pairwise")), "the modes are `pointwise` and `pairwise`"),
                )
            )
            continue
        first = next(o for o in readouts if o.mode.value == mode)
        if first is not r:
            diags.append(make("RB406", r.mode.span, f"a second `{mode}` readout", (f"the first is at {first.span}",)))
            continue
        checked = check_block(r.block, catalog.blocks[mode].params, diags, f"the `{mode}` readout", r.mode.span)
        blocks.append(checked)
        values = checked.values
        if checked.failed:
            continue
        if mode == "pointwise":
            pairwise_only = next(
                (c for c in criteria.values() if "side_by_side" in catalog.hooks(c.procedure).traits), None
            )
            if pairwise_only is not None:
                diags.append(
                    make(
                        "RB407",
                        r.mode.span,
                        f"a pointwise readout cannot run `{pairwise_only.name}`: `{pairwise_only.procedure}` judges "
                        "two candidates side by side",
                        (
                            f"`{pairwise_only.name}` is at {pairwise_only.span}; remove the pointwise readout, or "
                            "judge one response at a time with `llm.rate` or `llm.check`",
                        ),
                    )
                )
                continue
            out[mode] = PointwiseReadout(values["output"], values["quantize"], values["ties"], span=r.span)
            if scale is not None:
                _check_pointwise(r, values["output"], scale, diags)
        else:
            out[mode] = PairwiseReadout(values["epsilon"], values["resolve"], span=r.span)
            if scale is not None:
                _check_pairwise(r, values["epsilon"], scale, diags)
    return CheckedReadouts(out, tuple(blocks))


def _fit_hint(sink: str, t: JType, scale: JType, decls: Declarations, catalog: Catalog) -> tuple[str, ...]:
    if t.numeric and scale.numeric:
        if t.kind == "score" and scale.kind == "ordinal":
            return (
                f"the sink's values need not be integers: declare the contract as `scale = score[{fmt_num(scale.lo)}, "
                f"{fmt_num(scale.hi)}]`; the pointwise readout still quantizes to an ordinal `output`",
            )
        decl = decls.decls.get(sink)
        op = catalog.operators.get(decl.operator.text) if isinstance(decl, ast.NodeDecl) else None
        notes = [
            f"{_bound_text(b)} lies outside the contract's scale: give the gate a bound in [{fmt_num(scale.lo)}, "
            f"{fmt_num(scale.hi)}]"
            for b in _bounds_outside(decl, op, scale)
        ]
        notes.append(
            f"rescale it onto the scale (`transform.rescale(value: {sink}) {{ to = score[{fmt_num(scale.lo)}, "
            f"{fmt_num(scale.hi)}] }}`) or widen the contract"
        )
        if op is not None and "leaves_scale" in op.traits:
            notes.append("a mean of the inputs stays on their scale; a sum does not")
        return tuple(notes)
    if t.kind == "label" and scale.kind == "label":
        extra = ", ".join(f"`{x}`" for x in t.labels if x not in scale.labels)
        return (f"the sink can be {extra}, which the contract's scale lacks: add it to the scale",)
    return ("map it onto the scale first (e.g. `transform.map`)",) if t.kind != scale.kind else ()


def _bounds_outside(decl: Decl | None, op: OperatorSpec | None, scale: JType) -> list[ast.Param]:
    """A gate's bounds (`to`, `max`, `min`: its parameters fit over the value's
    interval) written outside the contract's scale."""
    if not isinstance(decl, ast.NodeDecl) or op is None or op.kind != "gate":
        return []
    bounds = {p.name for p in op.params if p.fit == "interval"}
    return [
        p
        for p in decl.block.params
        if p.name.value in bounds and isinstance(p.value, ast.Number) and not (scale.lo <= p.value.value <= scale.hi)
    ]


def _bound_text(p: ast.Param) -> str:
    assert isinstance(p.value, ast.Number)
    return f"`{p.name.value} = {fmt_num(p.value.value)}`"


def _check_pointwise(r: ast.ReadoutDecl, output: JType, scale: JType, diags: list[Diagnostic]) -> None:
    span = next(p.value.span for p in r.block.params if p.name.value == "output")
    if output.optional:
        diags.append(
            make(
                "RB404",
                span,
                "a readout's `output` cannot be optional",
                ("an absent sink already reads out as abstain",),
            )
        )
    elif scale.numeric:
        if not output.numeric:
            kind = "ordinal" if float(scale.lo).is_integer() and float(scale.hi).is_integer() else "score"
            diags.append(
                make(
                    "RB404",
                    span,
                    f"`output = {output}` cannot hold values of the numeric scale `{scale}`",
                    (f"e.g. `output = {kind}[{fmt_num(scale.lo)}, {fmt_num(scale.hi)}]`",),
                )
            )
        elif not (output.lo <= scale.lo and scale.hi <= output.hi):
            diags.append(
                make(
                    "RB404",
                    span,
                    f"`output = {output}` does not cover the contract's scale `{scale}`",
                    (f"quantizing a value in [{fmt_num(scale.lo)}, {fmt_num(scale.hi)}] could fall outside it",),
                )
            )
    elif scale.kind == "bool" and output.kind != "bool":
        diags.append(
            make(
                "RB404",
                span,
                f"`output = {output}` cannot hold the contract's `bool` values",
                ("write `output = bool`",),
            )
        )
    elif scale.kind == "label" and not (output.kind == "label" and set(scale.labels) <= set(output.labels)):
        diags.append(
            make(
                "RB404",
                span,
                f"`output = {output}` cannot hold the contract's `{scale}` values",
                (f"write `output = {scale}`",),
            )
        )


def _check_pairwise(r: ast.ReadoutDecl, epsilon: float, scale: JType, diags: list[Diagnostic]) -> None:
    if not scale.numeric:
        diags.append(
            make(
                "RB404",
                r.mode.span,
                f"a pairwise readout compares numbers, but the contract's scale is `{scale}`",
                ("map the sink to a number (e.g. `transform.map`) and use a numeric scale",),
            )
        )
    elif epsilon >= scale.hi - scale.lo:
        span = next((p.value.span for p in r.block.params if p.name.value == "epsilon"), r.mode.span)
        diags.append(
            make(
                "RB404",
                span,
                f"`epsilon = {fmt_num(epsilon)}` is at least the width of the scale `{scale}`, so no candidate can "
                "ever be preferred",
                (
                    "epsilon is the largest difference that still counts as a tie; keep it well below "
                    f"{fmt_num(scale.hi - scale.lo)}",
                ),
            )
        )
