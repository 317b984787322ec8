"""The compile spec: what `rbg compile` turns into a `.rbg` program.

A spec is a TOML file with the task, the rubric in prose, optional fixed
reference material and the contract the program must meet. It has no place
for candidate responses: a rubric is compiled before any response is seen, so
a key such as `response` is refused with its own message, like any other
unknown key.
"""

from __future__ import annotations

import math
import re
from typing import Any

import attrs

from rubriclang.catalog.types import JType
from rubriclang.tomlfile import Lines, read_toml

_SNAKE = re.compile(r"[a-z][a-z0-9_]*\Z")

# Keys that would smuggle candidate responses into compilation.
_RESPONSE_KEYS = frozenset({"response", "responses", "candidate", "candidates", "completion", "completions"})

READOUTS = ("pointwise", "pairwise")
RESOLVE = ("abstain", "tie", "first", "second")

# table -> key -> (expected Python type(s), description for messages)
_SCHEMA: dict[str, dict[str, tuple[tuple[type, ...], str]]] = {
    "rubric": {
        "name": ((str,), "a snake_case name"),
        "text": ((str,), "a string"),
        "description": ((str,), "a string"),
        "version": ((int,), "a non-negative integer"),
        "guidance": ((str,), "a string"),
    },
    "task": {
        "input": ((str,), "a string"),
        "description": ((str,), "a string"),
        "system_prompt": ((str,), "a string"),
    },
    "reference": {
        "text": ((str,), "a string"),
        "at_run_time": ((bool,), "true or false"),
    },
    "contract": {
        "scale": ((str,), 'a type, e.g. "ordinal[1, 5]"'),
        "readouts": ((list,), 'a list of "pointwise" and/or "pairwise"'),
        "output": ((str,), 'a type, e.g. "ordinal[1, 5]"'),
        "epsilon": ((int, float), "a non-negative number"),
        "resolve": ((str,), "one of " + ", ".join(RESOLVE)),
        "fallback": ((str,), '"abstain" or a graph file, e.g. "direct.rbg"'),
    },
}
_REQUIRED = {"rubric": ("name", "text"), "contract": ("scale",)}


class SpecError(Exception):
    """A spec that cannot be compiled; `where` is `path:line` (or the path)."""

    def __init__(self, where: str, message: str):
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


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
        raise SpecError(where, f"`contract.fallback`: no such graph file `{fallback}` (looked for `{path}`; a path is relative to the spec file's folder)")
    return path


def spec_from_dict(data: dict[str, Any], where: str = "<spec>", text: str = "") -> Spec:
    """Validate a decoded spec (the tables of the TOML file); `text`, the
    file's text, lets errors name the line."""
    lines = Lines(where, text)
    for table, value in data.items():
        if table not in _SCHEMA:
            raise SpecError(lines.at(None, table), _unknown(table, None, _SCHEMA))
        if not isinstance(value, dict):
            raise SpecError(lines.at(None, table), f"`{table}` must be a table (`[{table}]`)")
        for key, v in value.items():
            if key not in _SCHEMA[table]:
                raise SpecError(lines.at(key, table), _unknown(key, table, _SCHEMA[table]))
            types, what = _SCHEMA[table][key]
            if not isinstance(v, types) or (bool not in types and isinstance(v, bool)):
                raise SpecError(lines.at(key, table), f"`{table}.{key}` must be {what}")
            if isinstance(v, float) and not math.isfinite(v):
                raise SpecError(lines.at(key, table), f"`{table}.{key}` must be a finite number")
    for table, keys in _REQUIRED.items():
        for key in keys:
            if key not in data.get(table, {}):
                raise SpecError(lines.at(None, table), f"`{table}.{key}` is required")
    rubric, task = data["rubric"], data.get("task", {})
    reference, contract = data.get("reference", {}), data["contract"]
    if not _SNAKE.match(rubric["name"]):
        raise SpecError(lines.at("name", "rubric"), f"`rubric.name` must be snake_case (lowercase letters, digits, `_`), got `{rubric['name']}`")
    if not rubric["text"].strip():
        raise SpecError(lines.at("text", "rubric"), "`rubric.text` is empty: write the rubric to compile")
    if rubric.get("version", 1) < 0:
        raise SpecError(lines.at("version", "rubric"), "`rubric.version` must be a non-negative integer")
    if not (task.get("input") or task.get("description")):
        raise SpecError(lines.at(None, "task"), "`[task]` needs `input` (the task's input) or `description` (what the task is)")
    readouts = tuple(contract.get("readouts", ["pointwise"]))
    bad = [r for r in readouts if r not in READOUTS]
    if bad or not readouts or len(set(readouts)) != len(readouts):
        raise SpecError(lines.at("readouts", "contract"), '`contract.readouts` must list "pointwise" and/or "pairwise", each once')
    scale = parse_type(contract["scale"], lines.at("scale", "contract"), "contract.scale")
    output = None
    if "pointwise" in readouts:
        output = parse_type(contract["output"], lines.at("output", "contract"), "contract.output") if "output" in contract else scale
    elif "output" in contract:
        raise SpecError(lines.at("output", "contract"), "`contract.output` is the pointwise readout's output, but `readouts` has no pointwise")
    if "pairwise" not in readouts and ({"epsilon", "resolve"} & set(contract)):
        raise SpecError(lines.at("epsilon", "contract") if "epsilon" in contract else lines.at("resolve", "contract"), "`contract.epsilon` and `contract.resolve` need a pairwise readout in `readouts`")
    if contract.get("epsilon", 0) < 0:
        raise SpecError(lines.at("epsilon", "contract"), "`contract.epsilon` must be a non-negative number")
    fallback = contract.get("fallback")
    if fallback is not None and fallback != "abstain" and not fallback.endswith(".rbg"):
        raise SpecError(lines.at("fallback", "contract"), f'`contract.fallback` must be "abstain" or the path of a .rbg graph (such as a direct judge), got `{fallback}`')
    if "resolve" in contract and contract["resolve"] not in RESOLVE:
        raise SpecError(lines.at("resolve", "contract"), f"`contract.resolve` must be one of {', '.join(RESOLVE)}")
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
    problems: list = []
    jtype = type_from_ast(value, problems) if isinstance(value, ast.TypeExpr) else None
    if jtype is None:
        detail = f" ({problems[0].message})" if problems else ""
        raise SpecError(where, f"`{key}` is not a type: `{text}`{detail}; e.g. \"ordinal[1, 5]\", \"score[0, 1]\", \"bool\", \"label{{good, bad}}\"")
    return jtype


def _unknown(key: str, table: str | None, known: dict) -> str:
    name = f"{table}.{key}" if table else key
    if key in _RESPONSE_KEYS:
        return (
            f"`{name}`: a spec has no place for candidate responses; a rubric is compiled "
            "before any response is seen (responses go to `rbg run` as items)"
        )
    where = f"in `[{table}]`" if table else "at the top level"
    return f"unknown key `{name}` {where}; expected one of: {', '.join(known)}"
