"""The item pass: the rubric's declared item shape (`item { ... }`, RB601),
and what each criterion reads of the item checked against it: a field the
shape does not declare (RB602), a field read as what its type is not
(RB603), and a declared field nothing reads (RB604, a warning).

What a criterion reads: its template's tags (a built-in template shows
`input` and the response), `reference` with `with_reference = true`, the
item's `rubric` with `template = prometheus`, a rule's `field` (the
response by default) and `rule.matches_reference`'s reference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rubriclang.catalog import Catalog
from rubriclang.catalog.model import ParamSpec
from rubriclang.checker.graph import Criterion
from rubriclang.checker.values import check_block, suggest
from rubriclang.diagnostics import Diagnostic
from rubriclang.diagnostics.codes import make
from rubriclang.diagnostics.span import Span
from rubriclang.items.shape import (
    BUILTIN,
    ELEMENT_NAMES,
    KINDS,
    LIST_ELEMENTS,
    RESERVED,
    TOOL_CALL_NAMES,
    FieldSpec,
    ItemShape,
)
from rubriclang.syntax import ast

_SCHEMA = (ParamSpec(name="schema", type="json", required=True, doc="A JSON Schema: a file's path, or a map."),)
# Values a prompt shows that come from the criterion, not the item.
_OWN = frozenset({"question", "scale", "anchors", "labels", "label_names"})
_CANDIDATES = {"response": "response", "response_a": "response", "response_b": "response"}


def item_shape(
    decls: tuple[ast.ItemDecl, ...],
    resolve: Callable[[ast.String], tuple[str, str] | None],
    diags: list[Diagnostic],
) -> tuple[ItemShape, frozenset[str]]:
    """The declared shape of a file with `item` declarations, and the names
    of its malformed fields (reported, and left out of the shape: what
    reads them is not reported again). `resolve` reads a schema file."""
    for extra in decls[1:]:
        diags.append(make("RB601", extra.span, "a second `item` declaration", (f"the first is at {decls[0].span}",)))
    fields: dict[str, FieldSpec] = {}
    broken = set()
    for f in decls[0].fields:
        spec = _field(f, resolve, diags, fields)
        if spec is not None:
            fields[spec.name] = spec
        elif f.name.value not in fields:
            broken.add(f.name.value)
    return ItemShape(tuple(fields.values()), span=decls[0].span), frozenset(broken)


def _field(
    f: ast.FieldDecl,
    resolve: Callable[[ast.String], tuple[str, str] | None],
    diags: list[Diagnostic],
    seen: dict[str, FieldSpec],
) -> FieldSpec | None:
    name, t = f.name.value, f.type
    kind = t.kind.value

    def bad(span: Span, message: str, *notes: str) -> None:
        diags.append(make("RB601", span, message, notes))

    if name in seen:
        bad(f.name.span, f"field `{name}` is declared twice", f"first declared at {seen[name].span}")
        return None
    if name in RESERVED:
        bad(f.name.span, f"`{name}` cannot be declared: the item reader gives it its meaning", "docs/items.md")
        return None
    if name in _OWN or (name in _CANDIDATES and name != "response"):
        bad(f.name.span, f"`{name}` is a value prompts show already", f"name the field otherwise, e.g. `item_{name}`")
        return None
    if kind not in KINDS:
        bad(t.kind.span, f"unknown field type `{kind}`", *suggest(kind, KINDS), "types: " + ", ".join(KINDS))
        return None
    if kind == "list":
        if t.element is None or t.element.value not in LIST_ELEMENTS:
            got = "no element type" if t.element is None else f"`list[{t.element.value}]`"
            bad(t.span, f"a list field needs its element type, got {got}", "write `list[text]`")
            return None
    elif t.element is not None:
        bad(t.element.span, f"`{kind}` takes no element type", "only `list[text]` has one")
        return None
    if name in BUILTIN and kind not in BUILTIN[name]:
        kinds = ", ".join(f"`{k}`" for k in BUILTIN[name])
        bad(t.span, f"the item's `{name}` cannot be `{kind}`: it is one of {kinds}")
        return None
    if name == "response" and t.optional:
        bad(t.span, "the response cannot be optional: it is what the rubric judges")
        return None
    schema, schema_path = None, None
    if t.params is not None:
        if kind != "json":
            bad(t.params.span, f"`{kind}` takes no parameters", "only `json(schema = ...)` has one")
            return None
        checked = check_block(t.params, _SCHEMA, diags, f"the field type `{kind}`", t.span)
        if checked.failed:
            return None
        schema, schema_path = _schema(t.params.params[0].value, checked.values["schema"], resolve, bad)
        if schema is None:
            return None
    return FieldSpec(name, kind, t.element.value if t.element else None, t.optional, schema, schema_path, span=f.span)


def _schema(
    node: ast.Value, value: Any, resolve: Callable[[ast.String], tuple[str, str] | None], bad: Callable[..., None]
) -> tuple[Any, str | None]:
    """(schema, its path): a map as written, or a file's JSON; (None, None) when it is neither (reported)."""
    import json

    path = None
    if isinstance(node, ast.String):
        resolved = resolve(node)
        if resolved is None:
            return None, None
        path = node.value
        try:
            value = json.loads(resolved[1])
        except ValueError as exc:
            bad(node.span, f"the schema `{path}` is not JSON: {exc}", "a schema file holds one JSON object")
            return None, None
    if not isinstance(value, (dict, bool)):
        bad(node.span, "a JSON Schema is an object", 'write a map, e.g. `{ type: "object" }`, or a file\'s path')
        return None, None
    from rubriclang.items.validate import schema_problem  # jsonschema, only where a schema is declared

    problem = schema_problem(value)
    if problem is not None:
        bad(node.span, f"not a valid JSON Schema: {problem}", "https://json-schema.org/understanding-json-schema/")
        return None, None
    return value, path


# -- what criteria read -------------------------------------------------------------


def template_reads(
    shape: ItemShape,
    broken: frozenset[str],
    mentions: tuple[tuple[str, tuple[str, ...], bool], ...],
    placeholders: dict[str, str],
    at: Callable[[str], Span],
    diags: list[Diagnostic],
) -> dict[str, Span]:
    """The item fields a template's tags read (field -> where first), each
    tag checked against the shape; every name it cannot show is reported,
    but for the `broken` fields (malformed declarations, reported)."""
    reads: dict[str, Span] = {}
    reported: set[str] = set(broken)
    for name, outer, _ in mentions:
        if name in reported:
            continue
        scope, where = _scope(shape, outer)
        if scope is not None and name in scope:
            continue  # a value of the element the section shows
        field = _CANDIDATES.get(name, name)
        if field in _OWN and name in placeholders:
            continue
        spec = shape.get(field)
        problem: tuple[str, str, tuple[str, ...]]
        if spec is not None and (field in BUILTIN or field in placeholders or spec in shape.extra):
            if field in BUILTIN and name not in placeholders:
                problem = ("RB209", f"`{{{{{name}}}}}` is not a value this procedure can show", ())
            else:
                reads.setdefault(field, at(name))
                continue
        elif field in BUILTIN or field in placeholders:
            problem = (
                "RB602",
                f"`{{{{{name}}}}}` reads the item's `{field}`, which `item {{ ... }}` does not declare",
                (f"declare it: `{field}: text?`",),
            )
        elif where is not None and any(name in names for names in ELEMENT_NAMES.values()):
            problem = ("RB603", f"`{{{{{name}}}}}` is not a value of {where}", ())
        elif any(name in names for names in (*ELEMENT_NAMES.values(), TOOL_CALL_NAMES)):
            problem = (
                "RB603",
                f"`{{{{{name}}}}}` is a value of a list field's elements, shown only inside a section over the field",
                ("e.g. `{{#documents}}[{{id}}] {{text}}{{/documents}}`",),
            )
        else:
            declared = [f.name for f in shape.fields] + list(placeholders)
            problem = (
                "RB602",
                f"`{{{{{name}}}}}` is neither a declared item field nor a value the procedure shows",
                (*suggest(name, declared), f"declare it in `item {{ ... }}`, e.g. `{name}: text`"),
            )
        reported.add(name)
        code, message, notes = problem
        diags.append(make(code, at(name), message, notes))
    return reads


def _scope(shape: ItemShape, outer: tuple[str, ...]) -> tuple[frozenset[str] | None, str | None]:
    """The element values visible inside the sections `outer` (None when no
    section iterates), and what the innermost iterated element is, in words."""
    scope: frozenset[str] | None = None
    what = None
    for name in outer:
        if scope is not None and name == "tool_calls" and name in scope:
            scope, what = scope | frozenset(TOOL_CALL_NAMES), "a tool call"
            continue
        if scope is not None and name in scope:
            continue
        spec = shape.get(_CANDIDATES.get(name, name))
        if spec is not None and spec.iterable:
            scope = (scope or frozenset()) | frozenset(ELEMENT_NAMES[spec.kind])
            what = {"list": "a list's element", "documents": "a document", "conversation": "a turn"}[spec.kind]
        elif spec is not None and scope is None:
            what = f"`{spec.name}`, which is `{spec.type_text}`, not a list: a section over it is shown or not"
    return scope, what


def criterion_reads(
    c: Criterion, d: ast.CriterionDecl, template: dict[str, Span] | None, field_params: tuple[str, ...] = ()
) -> dict[str, Span]:
    """Every item field `c` reads, with where the rubric says so; a
    structure rule's `field_params` name fields it reads."""
    reads: dict[str, Span] = {}
    params = {p.name.value: p.value.span for p in d.block.params}
    anchor = d.procedure.span
    if template is not None:  # its tags say what it shows
        reads.update(template)
    elif c.procedure.startswith("llm."):
        reads.update({"input": anchor, "response": anchor})
        if c.params.get("with_reference"):
            reads["reference"] = params.get("with_reference", anchor)
    if c.params.get("template") == "prometheus":
        reads.setdefault("rubric", params.get("template", anchor))
    for param in field_params or ("field",):
        if c.params.get(param) is not None:
            reads.setdefault(c.params[param], params.get(param, anchor))
    if c.procedure == "rule.matches_reference":
        reads.update({"response": anchor, "reference": anchor})
    return reads


def check_reads(
    shape: ItemShape,
    broken: frozenset[str],
    decls: dict[str, ast.CriterionDecl],
    criteria: dict[str, Criterion],
    templates: dict[str, dict[str, Span]],
    catalog: Catalog,
    diags: list[Diagnostic],
) -> dict[str, Criterion]:
    """Each criterion checked against the shape, and given the declared
    fields it reads beyond plain built-in text (`Criterion.item_fields`, part
    of its hash)."""
    read_by: set[str] = set()
    out: dict[str, Criterion] = {}
    for name, c in criteria.items():
        proc = catalog.procedures[c.procedure]
        reads = criterion_reads(c, decls[name], templates.get(name), proc.hooks.field_params)
        # A structure rule's `check` holds its fields to the kinds it reads.
        text_rule = not proc.placeholders and not proc.hooks.field_params and "field" in c.params
        shown: list[FieldSpec] = []
        for field, span in reads.items():
            spec = shape.get(field)
            if field in broken:
                continue
            if spec is None:
                diags.append(
                    make(
                        "RB602",
                        span,
                        f"`{name}` reads the item's `{field}`, which `item {{ ... }}` does not declare",
                        (f"declare it: `{field}: text?`",),
                    )
                )
                continue
            read_by.add(field)
            if text_rule and spec.kind not in ("text", "json"):
                diags.append(
                    make(
                        "RB603",
                        span,
                        f"`{c.procedure}` reads `{field}` as text, but it is declared `{spec.type_text}`",
                        ("a text rule reads a `text` or `json` field",),
                    )
                )
            if spec.structured or field not in BUILTIN:
                shown.append(spec)
        if c.each is not None and c.each[1] not in reads and c.each[1] not in broken:
            each = decls[name].each
            assert each is not None  # a criterion has `each` from its declaration
            field = c.each[1]
            section = "{{#" + field + "}} ... {{/" + field + "}}"
            diags.append(
                make(
                    "RB603",
                    each.field.span,
                    f"`{name}` is judged per element of `{field}`, but it reads no `{field}`",
                    (f"show the element in its template (`{section}`), or name `{field}` in the rule's field",),
                )
            )
        out[name] = c if not shown else _with_fields(c, shown)
    for spec in shape.fields:
        if spec.name not in read_by and spec.name != "response":
            diags.append(
                make(
                    "RB604",
                    spec.span,
                    f"the item field `{spec.name}` is declared, but no criterion reads it",
                    ("show it in a template, or remove the declaration",),
                )
            )
    return out


def _with_fields(c: Criterion, shown: list[FieldSpec]) -> Criterion:
    import attrs

    return attrs.evolve(c, item_fields=tuple(sorted(shown, key=lambda f: f.name)))
