"""The compile spec: what `rbg compile` turns into a `.rbg` program.

A spec is a TOML file with the task, the rubric in prose, optional fixed
reference material and the contract the program must meet. It has no place
for candidate responses: a rubric is compiled before any response is seen, so
a key such as `response` is refused with its own message, like any other
unknown key.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from rubriclang.catalog.types import JType
from rubriclang.errors import LocatedError
from rubriclang.tomlfile import Lines, read_toml
from rubriclang.tomlschema import Field, Place, check

_SNAKE = re.compile(r"[a-z][a-z0-9_]*\Z")

# Keys that would smuggle candidate responses into compilation.
_RESPONSE_KEYS = frozenset({"response", "responses", "candidate", "candidates", "completion", "completions"})

READOUTS = ("pointwise", "pairwise")
RESOLVE = ("abstain", "tie", "first", "second")

_TYPE = 'a type, e.g. "ordinal[1, 5]"'
# table -> its fields
SCHEMA: dict[str, dict[str, Field]] = {
    "rubric": {
        "name": Field(str, required=True, what="a snake_case name"),
        "text": Field(str, required=True, hint="write the rubric to compile"),
        "description": Field(str),
        "version": Field(int, lo=0, what="a non-negative integer"),
        "guidance": Field(str),
    },
    "task": {
        "input": Field(str),
        "description": Field(str),
        "system_prompt": Field(str),
    },
    "reference": {
        "text": Field(str),
        "at_run_time": Field(bool),
    },
    "contract": {
        "scale": Field(str, required=True, what=_TYPE),
        "readouts": Field(list, items=str, what='a list of "pointwise" and/or "pairwise"'),
        "output": Field(str, what=_TYPE),
        "epsilon": Field(float, lo=0, what="a non-negative number"),
        "resolve": Field(str, choices=RESOLVE),
        "fallback": Field(str, what='"abstain" or a graph file, e.g. "direct.rbg"'),
    },
}
_TABLES = {name: Field(dict, required=name in ("rubric", "contract"), what=f"a table (`[{name}]`)") for name in SCHEMA}


class SpecError(LocatedError):
    """A spec that cannot be compiled; `where` is `path:line` (or the path)."""


@attrs.frozen
class Spec:
    """A validated compile spec. Types are `JType`s; text is kept verbatim."""

    name: str
    rubric: str
    scale: JType
    readouts: tuple[str, ...] = ("pointwise",)
    output: JType | None = None  # the pointwise readout's output type
    epsilon: float | None = None
    resolve: str | None = None
    description: str | None = None
    version: int = 1
    guidance: str | None = None
    task_input: str | None = None
    task_description: str | None = None
    system_prompt: str | None = None
    reference: str | None = None
    reference_at_run_time: bool = False
    # What a folder run does with this instance if it does not compile:
    # `abstain`, or the path of a fallback graph (relative to the spec's
    # file); None records it as a compile failure. Not part of the program.
    fallback: str | None = None


def load_spec(path: str) -> Spec:
    """Read and validate a spec file; raises SpecError naming the problem and its line."""
    import os

    data, text = read_toml(path, SpecError, "spec")
    spec = spec_from_dict(data, path, text)
    resolve_fallback(spec.fallback, os.path.dirname(path), Lines(path, text).at("fallback", "contract"))
    return spec


def resolve_fallback(fallback: str | None, base: str, where: str) -> str | None:
    """`contract.fallback` as a path from here (a graph file is relative to
    `base`, the spec file's folder), or `abstain`, or None; SpecError at
    `where` for a graph file that is not there."""
    import os

    if fallback is None or fallback == "abstain":
        return fallback
    path = os.path.normpath(os.path.join(base, fallback))
    if not os.path.isfile(path):
        raise SpecError(
            where,
            f"`contract.fallback`: no such graph file `{fallback}` (looked for `{path}`; a path is relative to the "
            "spec file's folder)",
        )
    return path


def spec_from_dict(data: dict[str, Any], where: str = "<spec>", text: str = "") -> Spec:
    """Validate a decoded spec (the tables of the TOML file); `text`, the
    file's text, lets errors name the line."""
    lines = Lines(where, text)
    _no_responses(data, lines)
    check(data, _TABLES, Place(lines, SpecError, "the spec"))
    for table, fields in SCHEMA.items():
        if table in data:
            check(data[table], fields, Place(lines, SpecError, f"[{table}]", table, prefix=f"{table}."))
    rubric, task = data["rubric"], data.get("task", {})
    reference, contract = data.get("reference", {}), data["contract"]
    if not _SNAKE.match(rubric["name"]):
        raise SpecError(
            lines.at("name", "rubric"),
            f"`rubric.name` must be snake_case (lowercase letters, digits, `_`), got `{rubric['name']}`",
        )
    if not rubric["text"].strip():
        raise SpecError(lines.at("text", "rubric"), "`rubric.text` is empty: write the rubric to compile")
    if not (task.get("input") or task.get("description")):
        raise SpecError(
            lines.at(None, "task"), "`[task]` needs `input` (the task's input) or `description` (what the task is)"
        )
    readouts = tuple(contract.get("readouts", ["pointwise"]))
    bad = [r for r in readouts if r not in READOUTS]
    if bad or not readouts or len(set(readouts)) != len(readouts):
        raise SpecError(
            lines.at("readouts", "contract"), '`contract.readouts` must list "pointwise" and/or "pairwise", each once'
        )
    scale = parse_type(contract["scale"], lines.at("scale", "contract"), "contract.scale")
    output = None
    if "pointwise" in readouts:
        output = (
            parse_type(contract["output"], lines.at("output", "contract"), "contract.output")
            if "output" in contract
            else scale
        )
    elif "output" in contract:
        raise SpecError(
            lines.at("output", "contract"),
            "`contract.output` is the pointwise readout's output, but `readouts` has no pointwise",
        )
    if "pairwise" not in readouts and ({"epsilon", "resolve"} & set(contract)):
        raise SpecError(
            lines.at("epsilon", "contract") if "epsilon" in contract else lines.at("resolve", "contract"),
            "`contract.epsilon` and `contract.resolve` need a pairwise readout in `readouts`",
        )
    fallback = contract.get("fallback")
    if fallback is not None and fallback != "abstain" and not fallback.endswith(".rbg"):
        raise SpecError(
            lines.at("fallback", "contract"),
            '`contract.fallback` must be "abstain" or the path of a .rbg graph (such as a direct judge), got '
            f"`{fallback}`",
        )
    spec = Spec(
        name=rubric["name"],
        rubric=rubric["text"],
        scale=scale,
        readouts=readouts,
        output=output,
        epsilon=contract.get("epsilon"),
        resolve=contract.get("resolve"),
        description=rubric.get("description"),
        version=rubric.get("version", 1),
        guidance=rubric.get("guidance"),
        task_input=task.get("input"),
        task_description=task.get("description"),
        system_prompt=task.get("system_prompt"),
        reference=reference.get("text"),
        reference_at_run_time=reference.get("at_run_time", False),
        fallback=fallback,
    )
    _check_contract(spec, lines.at(None, "contract"))
    return spec


def skeleton(spec: Spec) -> str:
    """The declarations the spec fixes: the header, the contract and the
    readouts, as `.rbg` source. Every compiled program starts from these."""
    from rubriclang.catalog.types import fmt_num
    from rubriclang.syntax.strings import quote

    header = [f"  version = {spec.version}"]
    if spec.description is not None:
        header.append(f"  description = {quote(spec.description)}")
    lines = [f"rubric {spec.name} {{", *header, "}", "", f"contract {{ scale = {spec.scale} }}", ""]
    if "pointwise" in spec.readouts:
        lines.append(f"readout pointwise {{ output = {spec.output} }}")
    if "pairwise" in spec.readouts:
        params = []
        if spec.epsilon is not None:
            params.append(f"epsilon = {fmt_num(spec.epsilon)}")
        if spec.resolve is not None:
            params.append(f"resolve = {spec.resolve}")
        lines.append("readout pairwise { " + ", ".join(params) + (" }" if params else "}"))
    return "\n".join(lines) + "\n"


def _check_contract(spec: Spec, where: str) -> None:
    """Refuse a contract no program could meet (an optional scale, an output
    that cannot hold the scale, a pairwise readout on labels...), using the
    checker itself on the skeleton with a stand-in criterion as the sink."""
    from rubriclang.checker import check_source

    if spec.scale.optional:
        raise SpecError(where, "`contract.scale` cannot be optional: an absent sink already reads out as abstain")
    text = skeleton(spec) + f'criterion probe: {spec.scale} = recorded.value {{ key = "probe" }}\nsink probe\n'
    errors = [d for d in check_source(text, "<spec>").diagnostics if d.is_error]
    if errors:
        raise SpecError(where, "the contract cannot be met: " + "; ".join(d.message for d in errors))


def parse_type(text: str, where: str, key: str) -> JType:
    """A type written as in `.rbg` (`ordinal[1, 5]`, `label{a, b}`), read by
    the language's own parser and checker."""
    from rubriclang.checker.values import type_from_ast
    from rubriclang.syntax import ast, parse

    parsed = parse(f"contract {{ scale = {text} }}", "<spec>")
    decls = parsed.module.decls if parsed.module is not None else ()
    contract = decls[0] if len(decls) == 1 and isinstance(decls[0], ast.ContractDecl) else None
    value = contract.block.params[0].value if contract is not None and len(contract.block.params) == 1 else None
    problems: list[Any] = []
    jtype = type_from_ast(value, problems) if isinstance(value, ast.TypeExpr) else None
    if jtype is None:
        detail = f" ({problems[0].message})" if problems else ""
        raise SpecError(
            where,
            f'`{key}` is not a type: `{text}`{detail}; e.g. "ordinal[1, 5]", "score[0, 1]", "bool", "label{{good, '
            'bad}"',
        )
    return jtype


def _no_responses(data: dict[str, Any], lines: Lines) -> None:
    """Refuse a key that would bring candidate responses into compilation,
    with its own message (before the schema calls it merely unknown)."""
    for table, value in data.items():
        keys = [(None, table)] + [(table, k) for k in value] if isinstance(value, dict) else [(None, table)]
        for parent, key in keys:
            if key in _RESPONSE_KEYS:
                name = f"{parent}.{key}" if parent else key
                raise SpecError(
                    lines.at(key if parent else None, parent or key),
                    f"`{name}`: a spec has no place for candidate responses; a rubric is compiled "
                    "before any response is seen (responses go to `rbg run` as items)",
                )
