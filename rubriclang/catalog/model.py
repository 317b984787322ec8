"""Catalog entries: operators, procedures and the language's blocks, as data."""

from __future__ import annotations

from typing import Any

import attrs

from rubriclang.catalog.entries import ProcedureImpl
from rubriclang.records import frozen


@frozen
class PortSpec:
    """A named input of an operator: the kinds it accepts and its arity."""

    name: str
    accepts: tuple[str, ...]
    variadic: bool = False
    min: int = 1
    max: int | None = 1
    absent: bool = False  # accepts optional (`T?`) values
    lists: bool = False  # accepts `list[T]` values (per-element judgments), read element by element

    def arity_text(self) -> str:
        if not self.variadic:
            return "exactly one node"
        if self.max is None:
            return f"a list of at least {self.min} node" + ("" if self.min == 1 else "s")
        return f"a list of {self.min} to {self.max} nodes"

    def signature(self) -> str:
        kinds = " | ".join(self.accepts) + ("?" if self.absent else "")
        return f"{self.name}: [{kinds}...]" if self.variadic else f"{self.name}: {kinds}"


@frozen
class ParamSpec:
    """A parameter: its type, default or requiredness, and constraints."""

    name: str
    type: str
    required: bool = False
    default: Any = None
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = ()
    length_of: str | None = None
    doc: str = ""
    # What `rbg fit` may search this number over: `interval` (the value
    # input's), `weights` (each weight, rescaled to their total) or `range`
    # (each value of a map, over their range); None: fit leaves it.
    fit: str | None = None
    # Writing the default out states a choice worth seeing (the order an audit
    # varies): RB504 does not ask to leave it out.
    explicit_ok: bool = False

    def type_text(self) -> str:
        if self.type == "choice":
            return " | ".join(self.choices)
        return self.type


@frozen
class OperatorSpec:
    name: str
    kind: str
    summary: str
    doc: str
    ports: tuple[PortSpec, ...]
    params: tuple[ParamSpec, ...]
    # What the output type is and which problems its rule reports, in words
    # (the docs' tables); the rule itself is the entry's.
    output_type: str
    problems: str = ""
    example: str = ""
    # Other names a user may reach for (`average` for `reduce.mean`): only
    # "did you mean" reads them; the operator is not callable by them.
    aliases: tuple[str, ...] = ()
    source: str = "stdlib"
    # The behaviour, joined to the spec by the loader from the package's entry:
    # the output-type rule, the function, the plan template and the traits.
    rule: Any = attrs.field(default=None, eq=False, repr=False)
    function: Any = attrs.field(default=None, eq=False, repr=False)
    plan: Any = attrs.field(default=None, eq=False, repr=False)
    traits: frozenset[str] = attrs.field(default=frozenset(), eq=False, repr=False)

    def port(self, name: str) -> PortSpec | None:
        return next((p for p in self.ports if p.name == name), None)

    def signature(self) -> str:
        ports = ", ".join(p.signature() for p in self.ports)
        return f"{self.name}({ports})"


@frozen
class ProcedureSpec:
    name: str
    summary: str
    doc: str
    produces: tuple[str, ...]
    params: tuple[ParamSpec, ...]
    example: str = ""
    aliases: tuple[str, ...] = ()  # as OperatorSpec's
    source: str = "stdlib"
    # Prompt procedures: the values a `prompt` template may mention (name ->
    # what it holds) and those it must show (the response, or both responses).
    placeholders: dict[str, str] = attrs.field(factory=dict)
    shows: tuple[str, ...] = ()
    # The behaviour, joined by the loader from the package's PROCEDURES entry.
    hooks: ProcedureImpl = attrs.field(factory=ProcedureImpl, eq=False, repr=False)


@frozen
class BlockSpec:
    """The `rubric` header, the `contract`, or a readout mode."""

    name: str
    summary: str
    params: tuple[ParamSpec, ...]


def param_from_dict(d: dict[str, Any]) -> ParamSpec:
    return ParamSpec(
        name=d["name"],
        type=d["type"],
        required=d.get("required", False),
        default=d.get("default"),
        min=d.get("min"),
        max=d.get("max"),
        choices=tuple(d.get("choices", ())),
        length_of=d.get("length_of"),
        doc=d.get("doc", ""),
        fit=d.get("fit"),
        explicit_ok=d.get("explicit_ok", False),
    )


def port_from_dict(d: dict[str, Any]) -> PortSpec:
    variadic = d.get("variadic", False)
    return PortSpec(
        name=d["name"],
        accepts=tuple(d["accepts"]),
        variadic=variadic,
        min=d.get("min", 1),
        max=d.get("max") if variadic else 1,
        absent=d.get("absent", False),
        lists=d.get("lists", False),
    )
