"""What the catalog says about a name, as short Markdown for hovers and
completion items, and which parameters a declaration's block takes."""

from __future__ import annotations

from rubriclang.catalog import Catalog
from rubriclang.catalog.model import OperatorSpec, ParamSpec, ProcedureSpec
from rubriclang.catalog.types import fmt_value
from rubriclang.syntax.strings import quote

READOUT_MODES = ("pointwise", "pairwise")


def block_params(catalog: Catalog, decl: str | None, head: str | None) -> tuple[ParamSpec, ...]:
    """The parameters of a declaration's `{ }` block. `decl` is its keyword;
    `head` its procedure, operator or readout mode. Unknown ones have none."""
    if decl == "criterion":
        proc = catalog.procedures.get(head or "")
        return catalog.procedure_params(proc) if proc else ()
    if decl == "node":
        op = catalog.operators.get(head or "")
        return op.params if op else ()
    if decl == "readout":
        return catalog.blocks[head].params if head in READOUT_MODES else ()
    if decl in ("rubric", "contract"):
        return catalog.blocks[decl].params
    return ()


def name_markdown(catalog: Catalog, name: str) -> str | None:
    """Docs for an operator or procedure name, or None for an unknown name."""
    if name in catalog.operators:
        return operator_markdown(catalog.operators[name])
    if name in catalog.procedures:
        return procedure_markdown(catalog.procedures[name], catalog)
    return None


def operator_markdown(op: OperatorSpec) -> str:
    parts = [
        _code(op.signature()),
        f"**{op.kind}** operator: {op.summary}",
        _params(op.params),
    ]
    return _join(parts, op.doc, op.example)


def procedure_markdown(proc: ProcedureSpec, catalog: Catalog) -> str:
    produces = ", ".join(f"`{k}`" for k in proc.produces)
    parts = [
        _code(f"criterion NAME: TYPE = {proc.name}"),
        f"**procedure**: {proc.summary}\n\nProduces {produces}.",
        _params(catalog.procedure_params(proc)),
    ]
    return _join(parts, proc.doc, proc.example)


def param_markdown(p: ParamSpec) -> str:
    """One parameter: its type, default and description."""
    default = _default(p)
    text = "\n\n".join(x for x in (default[0].upper() + default[1:] + ".", p.doc) if x)
    return _code(f"{p.name} = {p.type_text()}") + "\n" + text


def param_detail(p: ParamSpec) -> str:
    """A parameter's type and default, in one line."""
    return f"{p.type_text()}, {_default(p)}"


def _join(parts: list[str], doc: str, example: str) -> str:
    if doc:
        parts.append(doc)
    if example:
        parts.append("Example:\n" + _code(example))
    return "\n\n".join(p for p in parts if p)


def _params(params: tuple[ParamSpec, ...]) -> str:
    if not params:
        return "No parameters."
    lines = [f"- `{p.name}`: `{p.type_text()}`, {_default(p)}" + (f". {p.doc}" if p.doc else "") for p in params]
    return "Parameters:\n\n" + "\n".join(lines)


def _default(p: ParamSpec) -> str:
    if p.required:
        return "required"
    if p.default is None:
        return "optional"
    shown = quote(p.default) if p.type == "string" else fmt_value(p.default)
    return f"default `{shown}`"


def _code(text: str) -> str:
    return f"```rbg\n{text.strip()}\n```"
