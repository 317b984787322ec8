"""The JSON IR of a rubric graph: its JSON Schema (generated from the catalog),
its validation, and its printer to `.rbg` source (through the AST and the
formatter).

Constrained decoding asks the server for a JSON object matching `ir_schema`;
the printer turns it into source, which is then checked like any program.
The schema carries one branch per procedure and per operator (each with its
own parameters and ports), so a server that enforces it cannot invent a
parameter, a port or a procedure. The IR, by example:

    {"rubric": {"name": "helpful", "version": 1, "description": "..."},
     "contract": {"scale": {"kind": "ordinal", "lo": 1, "hi": 5}},
     "criteria": [{"name": "correct", "type": {"kind": "ordinal", "lo": 1, "hi": 5},
                   "procedure": "llm.rate",
                   "params": {"question": "...", "anchors": {"1": "...", "5": "..."}}}],
     "nodes": [{"name": "capped", "operator": "gate.cap",
                "ports": {"value": "correct", "when": "rambling"}, "params": {"max": 4}}],
     "sink": "capped",
     "readouts": {"pointwise": {"output": {"kind": "ordinal", "lo": 1, "hi": 5}}}}

A rubric that declares its item shape has an `"item"` list after the
contract, one field each, and a criterion judged per element an `"each"`:

    "item": [{"name": "documents", "kind": "documents"},
             {"name": "tags", "kind": "list", "element": "text", "optional": true},
             {"name": "response", "kind": "json", "schema": {"type": "object"}}],
    ... {"name": "supported_by", ..., "each": {"element": "document", "field": "documents"}}

Both are omitted when absent, and the schema the model is sent
(`response_format`) has neither: a rubric without a shape has the same IR,
schema and prompts as before shapes existed. `validate_ir` admits them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NoReturn

from rubriclang.catalog import Catalog
from rubriclang.catalog.model import ParamSpec
from rubriclang.catalog.types import fmt_num
from rubriclang.items.elements import ELEMENTS
from rubriclang.items.shape import KINDS, LIST_ELEMENTS
from rubriclang.syntax import ast

if TYPE_CHECKING:
    import jsonschema

NAME_PATTERN = "^[a-z][a-z0-9_]*$"
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\Z")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Words the grammar reads as keywords or types, so a key spelled so is quoted.
_RESERVED = frozenset({"true", "false", "bool", "ordinal", "score", "label"})
_BLOCK_ORDER = ("pointwise", "pairwise")


# -- the schema ---------------------------------------------------------------


def _obj(properties: dict[str, Any], required: Iterable[str] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


def type_schema(kinds: Iterable[str] = ("bool", "ordinal", "score", "label")) -> dict[str, Any]:
    """A judgment type as JSON: `{"kind": "ordinal", "lo": 1, "hi": 5}`,
    `{"kind": "label", "labels": [...]}`, with `"optional": true` for `T?`."""
    optional = {"type": "boolean"}
    branches = {
        "bool": _obj({"kind": {"const": "bool"}, "optional": optional}, ["kind"]),
        "ordinal": _obj(
            {"kind": {"const": "ordinal"}, "lo": {"type": "integer"}, "hi": {"type": "integer"}, "optional": optional},
            ["kind", "lo", "hi"],
        ),
        "score": _obj(
            {"kind": {"const": "score"}, "lo": {"type": "number"}, "hi": {"type": "number"}, "optional": optional},
            ["kind", "lo", "hi"],
        ),
        "label": _obj(
            {
                "kind": {"const": "label"},
                "labels": {"type": "array", "items": {"type": "string", "pattern": NAME_PATTERN}, "minItems": 2},
                "optional": optional,
            },
            ["kind", "labels"],
        ),
    }
    chosen = [branches[k] for k in kinds if k in branches]
    return chosen[0] if len(chosen) == 1 else {"anyOf": chosen}


def value_schema(param: ParamSpec) -> dict[str, Any]:
    """The JSON Schema of a parameter's value, from its catalog type. A type
    the schema cannot describe (a plugin's own) admits any JSON value, and is
    left to the checker."""
    simple = {"string": "string", "number": "number", "integer": "integer", "boolean": "boolean"}
    t = param.type
    if t in simple:
        return {"type": simple[t]}
    if t == "choice":
        return {"enum": list(param.choices)}
    if t.startswith("list<") and t[5:-1] in simple:
        return {"type": "array", "items": {"type": simple[t[5:-1]]}}
    if t.startswith("map<") and t[4:-1] in simple:
        return {"type": "object", "additionalProperties": {"type": simple[t[4:-1]]}}
    if t == "type":
        return type_schema()
    if t == "numeric_type":
        return type_schema(("ordinal", "score"))
    return {}


def _params_schema(params: tuple[ParamSpec, ...]) -> dict[str, Any]:
    return _obj({p.name: value_schema(p) for p in params}, [p.name for p in params if p.required])


def _name() -> dict[str, Any]:
    return {"type": "string", "pattern": NAME_PATTERN}


def field_schema() -> dict[str, Any]:
    """An item field as JSON: `{"name": "tags", "kind": "list", "element":
    "text"}`, with `"optional": true` for `T?`; a `json` field's optional
    `"schema"` is a file's path or an inline JSON Schema."""
    branches = []
    for kind in KINDS:
        props: dict[str, Any] = {"name": _name(), "kind": {"const": kind}}
        required = ["name", "kind"]
        if kind == "list":
            props["element"] = {"enum": list(LIST_ELEMENTS)}
            required.append("element")
        if kind == "json":
            props["schema"] = {"anyOf": [{"type": "string"}, {"type": "object"}]}
        props["optional"] = {"type": "boolean"}
        branches.append(_obj(props, required))
    return {"anyOf": branches}


def _each_schema() -> dict[str, Any]:
    elements = sorted({e for names in ELEMENTS.values() for e in names})
    return _obj({"element": {"enum": elements}, "field": _name()}, ["element", "field"])


def _group_schema() -> dict[str, Any]:
    return _obj({"name": _name(), "members": {"type": "array", "items": _name(), "minItems": 1}}, ["name", "members"])


def ir_schema(catalog: Catalog, items: bool = False) -> dict[str, Any]:
    """The JSON Schema of the IR, generated from the catalog. With `items`,
    it admits an item shape (`"item"`), per-element criteria (`"each"`) and
    criteria asked together (`"groups"`), all optional; without, it is the
    schema the model is sent."""
    extra = {"each": _each_schema()} if items else {}
    criteria = [
        _obj(
            {
                "name": _name(),
                "type": type_schema(proc.produces),
                "procedure": {"const": proc.name},
                "params": _params_schema(catalog.procedure_params(proc)),
                **extra,
            },
            ["name", "type", "procedure", "params"],
        )
        for proc in catalog.procedures.values()
    ]
    nodes = []
    for op in catalog.operators.values():
        ports = {}
        for port in op.ports:
            if port.variadic:
                ports[port.name] = {"type": "array", "items": _name(), "minItems": port.min}
                if port.max is not None:
                    ports[port.name]["maxItems"] = port.max
            else:
                ports[port.name] = _name()
        nodes.append(
            _obj(
                {
                    "name": _name(),
                    "operator": {"const": op.name},
                    "ports": _obj(ports, [p.name for p in op.ports]),
                    "params": _params_schema(op.params),
                },
                ["name", "operator", "ports", "params"],
            )
        )
    blocks = catalog.blocks
    rubric = _params_schema(blocks["rubric"].params)
    rubric["properties"] = {"name": _name(), **rubric["properties"]}
    rubric["required"] = ["name", *rubric["required"]]
    readouts = _obj({mode: _params_schema(blocks[mode].params) for mode in _BLOCK_ORDER})
    readouts["minProperties"] = 1
    item = {"item": {"type": "array", "items": field_schema(), "minItems": 1}} if items else {}
    groups = {"groups": {"type": "array", "items": _group_schema()}} if items else {}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "rubric graph",
        **_obj(
            {
                "rubric": rubric,
                "contract": _params_schema(blocks["contract"].params),
                **item,
                "criteria": {"type": "array", "items": _any_of(criteria), "minItems": 1},
                "nodes": {"type": "array", "items": _any_of(nodes)},
                **groups,
                "sink": _name(),
                "readouts": readouts,
            },
            ["rubric", "contract", "criteria", "nodes", "sink", "readouts"],
        ),
    }


def _any_of(branches: list[dict[str, Any]]) -> dict[str, Any]:
    return branches[0] if len(branches) == 1 else {"anyOf": branches}


def response_format(catalog: Catalog) -> dict[str, Any]:
    """The OpenAI `response_format` asking for the IR. Not `strict`: strict
    mode would demand every optional parameter; servers that constrain
    decoding (vLLM, llama.cpp) enforce the schema either way."""
    return {
        "type": "json_schema",
        "json_schema": {"name": "rubric_graph", "schema": ir_schema(catalog), "strict": False},
    }


# -- validation ---------------------------------------------------------------

_DISCRIMINATORS = ("procedure", "operator", "kind")


def validate_ir(ir: Any, catalog: Catalog) -> list[str]:
    """Problems with an IR value, each naming its JSON path; [] when it fits
    the schema. Where an `anyOf` fails, the branch chosen by the value's
    `procedure`, `operator` or `kind` explains why."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(ir_schema(catalog, items=True))
    out: list[str] = []
    for error in sorted(validator.iter_errors(ir), key=lambda e: list(map(str, e.absolute_path))):
        out.extend(_explain(error, list(error.absolute_path)))
    return out or [*_nulls(ir, []), *_each_problems(ir)]


def _nulls(value: Any, path: list[Any]) -> list[str]:
    """Where a `null` stands in a value that fits the schema (a `json`
    parameter's or an inline item schema's): `.rbg` has no spelling for it,
    so it could not be printed."""
    if value is None:
        return [f"{_path(path)}: null cannot be written in `.rbg`; remove it"]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _nulls(v, [*path, k])]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _nulls(v, [*path, i])]
    return []


def _each_problems(ir: dict[str, Any]) -> list[str]:
    """Each criterion's `each` against the item's fields (for a value that
    fits the schema): over a declared list field, on an element it has."""
    kinds = {f["name"]: f["kind"] for f in ir.get("item", ())}
    out = []
    for i, c in enumerate(ir["criteria"]):
        each = c.get("each")
        if each is None:
            continue
        field, element = each["field"], each["element"]
        if field not in kinds:
            declared = ", ".join(f"`{k}`" for k in kinds) or "none"
            out.append(
                f"{_path(['criteria', i, 'each', 'field'])}: `{field}` is not a field of `item` (declared: {declared})"
            )
        elif element not in ELEMENTS.get(kinds[field], ()):
            has = ELEMENTS.get(kinds[field])
            fix = f"expected one of: {', '.join(has)}" if has else "only documents, conversation and list fields have"
            out.append(
                f"{_path(['criteria', i, 'each', 'element'])}: a `{kinds[field]}` field has no element "
                f"`{element}`; {fix}"
            )
    return out


def _explain(error: jsonschema.ValidationError, path: list[Any]) -> list[str]:
    if error.validator != "anyOf":
        return [f"{_path(path)}: {error.message}"]
    instance = error.instance
    branches = error.validator_value
    for key in _DISCRIMINATORS:
        consts = [b.get("properties", {}).get(key, {}).get("const") for b in branches]
        if any(c is None for c in consts):
            continue
        if not isinstance(instance, dict) or key not in instance:
            return [f"{_path(path)}: missing `{key}` (one of: {', '.join(consts)})"]
        if instance[key] not in consts:
            return [f"{_path([*path, key])}: unknown {key} `{instance[key]}`; expected one of: {', '.join(consts)}"]
        index = consts.index(instance[key])
        found = []
        for sub in error.context:
            if sub.relative_schema_path and sub.relative_schema_path[0] == index:
                found.extend(_explain(sub, path + list(sub.relative_path)))
        return found or [f"{_path(path)}: {error.message}"]
    return [f"{_path(path)}: {error.message}"]


def _path(parts: list[Any]) -> str:
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


# -- printing -----------------------------------------------------------------


def print_ir(ir: dict[str, Any], catalog: Catalog) -> str:
    """`.rbg` source for a valid IR value (see `validate_ir`), in the
    formatter's canonical layout: the IR becomes an AST (`ir_to_module`),
    which `format_module` prints, sections set apart by a blank line
    (criteria apart too) as an author would write them."""
    from rubriclang.fmt import format_module

    module = ir_to_module(ir, catalog)
    sections: list[list[ast.Decl]] = []
    for d in module.decls:
        # Nodes run together, and readouts; every other declaration stands apart.
        joins = sections and isinstance(d, (ast.NodeDecl, ast.ReadoutDecl)) and isinstance(sections[-1][-1], type(d))
        if joins:
            sections[-1].append(d)
        else:
            sections.append([d])
    return "\n".join(format_module(ast.Module(tuple(s)), "") for s in sections)


def ir_to_module(ir: dict[str, Any], catalog: Catalog) -> ast.Module:
    """The AST of a valid IR value (the inverse of `module_to_ir`). Parameter
    values are built by their catalog type, so a choice is a bare name and a
    type is a type; parameters stand in catalog order, so the same IR always
    prints the same text."""
    blocks = catalog.blocks
    rubric = dict(ir["rubric"])
    decls: list[ast.Decl] = [
        ast.RubricDecl(ast.Name(rubric.pop("name")), _block(rubric, blocks["rubric"].params)),
        ast.ContractDecl(_block(ir["contract"], blocks["contract"].params)),
    ]
    if "item" in ir:
        decls.append(ast.ItemDecl(tuple(ast.FieldDecl(ast.Name(f["name"]), _field_type(f)) for f in ir["item"])))
    for c in ir["criteria"]:
        params = catalog.procedure_params(catalog.procedures[c["procedure"]])
        each = c.get("each")
        decls.append(
            ast.CriterionDecl(
                ast.Name(c["name"]),
                _type(c["type"]),
                _dotted(c["procedure"]),
                _block(c["params"], params),
                each=None if each is None else ast.Each(ast.Name(each["element"]), ast.Name(each["field"])),
            )
        )
    for n in ir["nodes"]:
        op = catalog.operators[n["operator"]]
        ports = []
        for port in op.ports:
            ref = n["ports"][port.name]
            refs = tuple(ast.Name(r) for r in ref) if port.variadic else (ast.Name(ref),)
            ports.append(ast.PortArg(ast.Name(port.name), refs, port.variadic))
        decls.append(
            ast.NodeDecl(ast.Name(n["name"]), _dotted(n["operator"]), tuple(ports), _block(n["params"], op.params))
        )
    decls += [
        ast.GroupDecl(ast.Name(g["name"]), tuple(ast.Name(m) for m in g["members"])) for g in ir.get("groups", ())
    ]
    decls.append(ast.SinkDecl(ast.Name(ir["sink"])))
    decls += [
        ast.ReadoutDecl(ast.Name(mode), _block(ir["readouts"][mode], blocks[mode].params))
        for mode in _BLOCK_ORDER
        if mode in ir["readouts"]
    ]
    return ast.Module(tuple(decls))


def _dotted(text: str) -> ast.Dotted:
    return ast.Dotted(tuple(text.split(".")))


def _type(t: dict[str, Any]) -> ast.TypeExpr:
    optional = bool(t.get("optional"))
    if t["kind"] == "label":
        return ast.TypeExpr("label", labels=tuple(ast.Name(x) for x in t["labels"]), optional=optional)
    if t["kind"] == "bool":
        return ast.TypeExpr("bool", optional=optional)
    return ast.TypeExpr(t["kind"], _number(t["lo"]), _number(t["hi"]), optional=optional)


def _field_type(f: dict[str, Any]) -> ast.FieldType:
    element = ast.Name(f["element"]) if "element" in f else None
    params = None
    if "schema" in f:
        params = ast.Block((ast.Param(ast.Name("schema"), _value(f["schema"], "json")),))
    return ast.FieldType(ast.Name(f["kind"]), element, params, bool(f.get("optional")))


def _block(values: dict[str, Any], specs: tuple[ParamSpec, ...]) -> ast.Block:
    types = {p.name: p.type for p in specs}
    order = [p.name for p in specs if p.name in values] + [k for k in values if k not in types]
    return ast.Block(tuple(ast.Param(ast.Name(k), _value(values[k], types.get(k, ""))) for k in order))


def _value(v: Any, ptype: str) -> ast.Value:
    if ptype in ("type", "numeric_type"):
        return _type(v)
    if ptype == "answer":
        return _answer(v)
    if ptype == "choice" and isinstance(v, str):
        return ast.Ident(v)
    return _literal(v, keys_quoted=ptype == "json")


def _answer(v: Any) -> ast.Value:
    """`json`, or the checker's form of a pattern, `{"pattern": RE2, "map":
    {...}}`, as `pattern("RE2", { ... })`."""
    if not isinstance(v, dict):
        return ast.Ident(v) if v == "json" else _literal(v)
    args = (ast.String(v["pattern"]), *([_literal(v["map"])] if v.get("map") else []))
    return ast.Call(ast.Name("pattern"), args)


def _literal(v: Any, keys_quoted: bool = False) -> ast.Value:
    if isinstance(v, bool):
        return ast.Bool(v)
    if isinstance(v, (int, float)):
        return _number(v)
    if isinstance(v, str):
        return ast.String(v, triple="\n" in v)
    if isinstance(v, list):
        return ast.ListValue(tuple(_literal(x, keys_quoted) for x in v))
    if isinstance(v, dict):
        return ast.MapValue(tuple(ast.Entry(_key(k, keys_quoted), _literal(x, keys_quoted)) for k, x in v.items()))
    raise TypeError(f"not a JSON value: {v!r}")


def _number(x: int | float) -> ast.Number:
    if isinstance(x, float) and not math.isfinite(x):
        raise ValueError(f"not a finite number: {x}")
    return ast.Number(x, text=fmt_num(x))


def _key(k: str, quoted: bool) -> ast.String | ast.Number | ast.Bool | ast.Ident:
    """A map key: JSON keys are strings, so `"1"` is the scale point 1 and
    `"true"` the bool; a JSON Schema's keys (`json` parameters) stay strings."""
    if quoted:
        return ast.String(k)
    if _NUMBER.match(k):
        return ast.Number(int(k) if not any(ch in k for ch in ".eE") else float(k), text=k)
    if k in ("true", "false"):
        return ast.Bool(k == "true")
    if _IDENT.match(k) and k not in _RESERVED:
        return ast.Ident(k)
    return ast.String(k)


# -- from source --------------------------------------------------------------


def module_to_ir(module: ast.Module) -> dict[str, Any]:
    """The IR of a parsed module (its comments and layout are not kept).
    Shows the model what the IR of a program looks like."""
    ir: dict[str, Any] = {"criteria": [], "nodes": [], "readouts": {}}
    for d in module.decls:
        if isinstance(d, ast.RubricDecl):
            ir["rubric"] = {"name": d.name.value, **_block_ir(d.block)}
        elif isinstance(d, ast.ContractDecl):
            ir["contract"] = _block_ir(d.block)
        elif isinstance(d, ast.ItemDecl):
            ir["item"] = [{"name": f.name.value, **_field_type_ir(f.type)} for f in d.fields]
        elif isinstance(d, ast.CriterionDecl):
            criterion = {
                "name": d.name.value,
                "type": _type_ir(d.type),
                "procedure": d.procedure.text,
                "params": _block_ir(d.block),
            }
            if d.each is not None:
                criterion["each"] = {"element": d.each.element.value, "field": d.each.field.value}
            ir["criteria"].append(criterion)
        elif isinstance(d, ast.NodeDecl):
            ports = {p.name.value: [r.value for r in p.refs] if p.is_list else p.refs[0].value for p in d.ports}
            ir["nodes"].append(
                {"name": d.name.value, "operator": d.operator.text, "ports": ports, "params": _block_ir(d.block)}
            )
        elif isinstance(d, ast.GroupDecl):
            ir.setdefault("groups", []).append({"name": d.name.value, "members": [m.value for m in d.members]})
        elif isinstance(d, ast.SinkDecl):
            ir["sink"] = d.target.value
        elif isinstance(d, ast.ReadoutDecl):
            ir["readouts"][d.mode.value] = _block_ir(d.block)
    order = ("rubric", "contract", "item", "criteria", "nodes", "groups", "sink", "readouts")
    return {k: ir[k] for k in order if k in ir}


def _field_type_ir(t: ast.FieldType) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": t.kind.value}
    if t.element is not None:
        out["element"] = t.element.value
    if t.params is not None:
        out.update(_block_ir(t.params))
    if t.optional:
        out["optional"] = True
    return out


def _block_ir(block: ast.Block) -> dict[str, Any]:
    return {p.name.value: _value_ir(p.value) for p in block.params}


def _type_ir(t: ast.TypeExpr) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": t.kind}
    if t.kind == "label":
        out["labels"] = [n.value for n in t.labels]
    elif t.kind != "bool":
        assert t.lo is not None and t.hi is not None  # the grammar gives a numeric type its bounds
        out["lo"], out["hi"] = t.lo.value, t.hi.value
    if t.optional:
        out["optional"] = True
    return out


def _value_ir(v: ast.Value) -> Any:
    if isinstance(v, ast.TypeExpr):
        return _type_ir(v)
    if isinstance(v, ast.ListValue):
        return [_value_ir(x) for x in v.items]
    if isinstance(v, ast.MapValue):
        return {_key_ir(e.key): _value_ir(e.value) for e in v.entries}
    if isinstance(v, ast.Call):  # `pattern(RE2, map)`: the checker's form of it
        pattern, *mapping = (_value_ir(a) for a in v.args)
        return {"pattern": pattern, **({"map": mapping[0]} if mapping else {})}
    return v.value


def _key_ir(k: ast.String | ast.Number | ast.Bool | ast.Ident) -> str:
    if isinstance(k, ast.Bool):
        return "true" if k.value else "false"
    if isinstance(k, ast.Number):
        return k.text or fmt_num(k.value)
    return str(k.value)


def decode_json(text: str) -> Any:
    """Parse JSON as the IR allows it: no NaN or Infinity."""

    def refuse(name: str) -> NoReturn:
        raise ValueError(f"`{name}` is not a JSON number")

    return json.loads(text, parse_constant=refuse)
