"""A checked graph as keyed, comparable data: the subjects `rbg diff` compares.

Each subject (the header, the contract, each declared item field, each node,
the sink, each readout)
maps field paths to plain values. Everything is keyed by name, never by
position in the source, so moving, reformatting or commenting a declaration
changes nothing; the checker has filled every parameter's default, so writing
a default explicitly changes nothing either.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from rubriclang.catalog import Catalog, JType, load_catalog
from rubriclang.catalog.model import ParamSpec
from rubriclang.checker.graph import CheckedGraph, Criterion, Operator, Readout
from rubriclang.items.shape import FieldSpec

# A field path: ("type",), ("params", "anchors", 3), ("ports", "inputs", 0).
Path = tuple[Any, ...]

# Sections in the order every output lists them.
SECTIONS = ("header", "contract", "item", "node", "sink", "readout")

# The fields that say what a node is; the rest are its parameters and ports.
HEAD = (("kind",), ("procedure",), ("operator",), ("type",))


class Name(str):
    """A value the language writes bare (a node, a type, a choice), not quoted."""

    __slots__ = ()


@attrs.frozen
class Subject:
    """One thing a graph declares, as `field path -> value` (unset fields absent).

    `defaults` are the parameter fields at their catalog default: listing a
    whole added or removed node leaves them out, as its author did.
    """

    section: str
    name: str
    fields: dict[Path, Any]
    defaults: frozenset[Path] = frozenset()


def slots(op: Operator, catalog: Catalog) -> list[tuple[str, int | None, str]]:
    """(port, slot index or None for a single port, node) for every route into `op`."""
    spec = catalog.operators.get(op.operator)
    # The catalog's port order, not the author's: `(when: a, value: b)` and
    # `(value: b, when: a)` are one graph.
    order = [p.name for p in spec.ports] if spec else []
    out: list[tuple[str, int | None, str]] = []
    for port in sorted(op.ports, key=lambda p: (order.index(p) if p in order else len(order), p)):
        names = op.ports[port]
        pspec = spec.port(port) if spec else None
        variadic = pspec.variadic if pspec else len(names) != 1
        out.extend((port, i if variadic else None, n) for i, n in enumerate(names))
    return out


def slot_label(port: str, index: int | None) -> str:
    """`inputs[0]` for a slot of a variadic port, `when` for a single port."""
    return port if index is None else f"{port}[{index}]"


def subjects(graph: CheckedGraph | None, catalog: Catalog | None = None) -> dict[tuple[str, str], Subject]:
    """Every subject of `graph` keyed by (section, name); none for no graph
    (a file that does not exist on one side of a diff)."""
    if graph is None:
        return {}
    cat = catalog or load_catalog()
    out = [
        Subject(
            "header", "", {("name",): Name(graph.name), **_params(graph.header, cat.blocks["rubric"].params, ())[0]}
        ),
        Subject("contract", "", {("scale",): Name(str(graph.scale))}),
        *(_field(f) for f in (graph.item_shape.fields if graph.item_shape is not None else ())),
        *(_criterion(c, cat) for c in graph.criteria),
        *(_operator(o, cat) for o in graph.operators),
        Subject("sink", "", {("node",): Name(graph.sink)}),
        *(_readout(mode, r, cat) for mode, r in graph.readouts.items()),
    ]
    return {(s.section, s.name): s for s in out}


def _field(f: FieldSpec) -> Subject:
    """A declared item field (`item { ... }`): its type, and its JSON Schema."""
    fields: dict[Path, Any] = {("type",): Name(f.type_text)}
    if f.schema is not None:
        fields[("schema",)] = f.schema
    return Subject("item", f.name, fields)


def _criterion(c: Criterion, cat: Catalog) -> Subject:
    proc = cat.procedures.get(c.procedure)
    specs = cat.procedure_params(proc) if proc else ()
    params, defaults = _params(c.params, specs, ("params",))
    head = {("kind",): Name("criterion"), ("procedure",): Name(c.procedure), ("type",): Name(str(c.type))}
    if c.prompt is not None:  # the template's text, so an edit to the file shows as a word diff
        params[("template",)] = c.prompt.text
    if c.each is not None:  # judged per element (`each ELEMENT in FIELD`)
        params[("each",)] = Name(f"{c.each[0]} in {c.each[1]}")
    if c.group is not None:  # answered in one call with its group's other members
        params[("group",)] = Name(f"{c.group.name} [{', '.join(c.group.members)}]")
    return Subject("node", c.name, {**head, **params}, defaults)


def _operator(o: Operator, cat: Catalog) -> Subject:
    spec = cat.operators.get(o.operator)
    params, defaults = _params(o.params, spec.params if spec else (), ("params",))
    head = {("kind",): Name(o.kind), ("operator",): Name(o.operator), ("type",): Name(str(o.type))}
    ports = {("ports", p) if i is None else ("ports", p, i): Name(n) for p, i, n in slots(o, cat)}
    return Subject("node", o.name, {**head, **ports, **params}, defaults)


def _readout(mode: str, r: Readout, cat: Catalog) -> Subject:
    values = attrs.asdict(r, filter=lambda a, _: a.name != "span", recurse=False)
    params, defaults = _params(values, cat.blocks[mode].params, ())
    return Subject("readout", mode, params, defaults)


def _params(
    values: dict[str, Any], specs: Iterable[ParamSpec], prefix: Path
) -> tuple[dict[Path, Any], frozenset[Path]]:
    """Flattened parameter fields (a map's entries are fields of their own, so
    one changed anchor is one change), and those at their default."""
    kinds = {s.name: s.type for s in specs}
    default = {s.name: s.default for s in specs}
    fields: dict[Path, Any] = {}
    defaults = set()
    for name, value in values.items():
        if value is None:
            continue  # an unset optional parameter: absent, not a value
        path = (*prefix, name)
        if name in default and value == default[name]:
            defaults.add(path)
        if isinstance(value, dict) and value:
            for key, v in value.items():
                fields[(*path, key)] = _plain(v, "")
        else:
            fields[path] = _plain(value, kinds.get(name, ""))
    return fields, frozenset(defaults)


def _plain(value: Any, kind: str) -> Any:
    if isinstance(value, JType):
        return Name(str(value))
    if kind == "choice" and isinstance(value, str):
        return Name(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v, "") for v in value]
    return value
