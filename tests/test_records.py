"""`rubriclang.records.frozen`: attrs classes whose shared `__repr__` writes
exactly what attrs's generated one would, and that behave as attrs classes
in every other way."""

from __future__ import annotations

import attrs
import pytest

from rubriclang import records
from rubriclang.records import frozen


def _twins(body: dict, **options):
    """The same class made by `attrs.frozen` and by `records.frozen`."""

    def make(decorator):
        ns = {
            "__module__": __name__,
            "__qualname__": "Thing",
            "__annotations__": dict(body["__annotations__"]),
            **{k: v for k, v in body.items() if k != "__annotations__"},
        }
        return decorator(**options)(type("Thing", (), ns))

    return make(attrs.frozen), make(frozen)


def _field(**kw):
    return attrs.field(**kw)


SHAPES = {
    "plain": (
        {"__annotations__": {"a": "int", "b": "str"}},
        {},
        lambda cls: cls(1, "x"),
    ),
    "hidden, keyword-only and defaulted fields": (
        {
            "__annotations__": {"a": "int", "span": "object", "note": "str"},
            "span": _field(eq=False, repr=False, kw_only=True, default=None),
            "note": _field(default="n", kw_only=True),
        },
        {},
        lambda cls: cls(2, span=(1, 2), note="it's"),
    ),
    "a field with its own repr": (
        {"__annotations__": {"a": "float"}, "a": _field(repr=lambda v: f"<{v:.1f}>")},
        {},
        lambda cls: cls(2.25),
    ),
    "a private field with an alias": (
        {"__annotations__": {"_lo": "int"}, "_lo": _field(alias="lo")},
        {},
        lambda cls: cls(lo=3),
    ),
    "ordered, nested values": (
        {"__annotations__": {"items": "tuple", "table": "dict"}},
        {"order": True},
        lambda cls: cls((1.0, None, "\n"), {"k": [True, -0.0]}),
    ),
    "no fields": ({"__annotations__": {}}, {}, lambda cls: cls()),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_shared_repr_is_the_one_attrs_generates(shape):
    body, options, make = SHAPES[shape]
    plain, shared = _twins(body, **options)
    assert shared.__repr__ is records.attrs_repr
    assert plain.__repr__ is not records.attrs_repr
    assert repr(make(shared)) == repr(make(plain))


def test_an_object_inside_its_own_repr_is_written_as_three_dots():
    body = {"__annotations__": {"items": "list"}}
    plain, shared = _twins(body)
    a, b = plain([]), shared([])
    a.items.append(a)
    b.items.append(b)
    assert repr(b) == repr(a) == "Thing(items=[...])"
    assert repr(b) == repr(b)  # the guard is released after each repr


def test_nested_records_each_use_the_shared_repr():
    @frozen
    class Inner:
        x: int

    @frozen
    class Outer:
        inner: Inner
        more: tuple[Inner, ...] = ()

    assert repr(Outer(Inner(1), (Inner(2),))) == "Outer(inner=Inner(x=1), more=(Inner(x=2),))"


def test_a_class_with_its_own_repr_keeps_it_and_repr_false_keeps_objects():
    @frozen
    class Own:
        x: int

        def __repr__(self) -> str:
            return "own"

    @frozen(repr=False)
    class NoRepr:
        x: int

    assert repr(Own(1)) == "own"
    assert repr(NoRepr(1)).startswith(f"<{__name__}.")


def test_records_are_frozen_attrs_classes_with_generated_equality_and_hash():
    @frozen
    class P:
        a: int
        b: str = attrs.field(eq=False, default="")

    p = P(1, "x")
    is_attrs = attrs.has(P)  # a variable: as a condition it would narrow P to AttrsInstance
    assert is_attrs and attrs.fields(P).a.name == "a"
    assert p == P(1, "y") and hash(p) == hash(P(1, "y")) and p != P(2)
    assert "__dict__" not in dir(p)  # slotted, as attrs.frozen makes it
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        p.a = 2  # type: ignore[misc]
    assert attrs.evolve(p, a=3) == P(3)


CHECK_PATH = [
    *(f"rubriclang.catalog.{m}" for m in ("entries", "loader", "model", "rules", "types")),
    *(f"rubriclang.checker.{m}" for m in ("check", "criteria", "declarations", "graph", "inference", "lints")),
    *(f"rubriclang.checker.{m}" for m in ("nodes", "order", "readouts", "values")),
    *(f"rubriclang.diagnostics.{m}" for m in ("codes", "diagnostic", "span")),
    "rubriclang.cli.inputs",
    "rubriclang.syntax.ast",
]


def test_the_classes_a_check_creates_use_the_shared_repr():
    # Every frozen attrs class of the modules `rbg check` imports (bar the
    # parser's own) is made by `frozen`, so none compiles a repr at start-up.
    import importlib
    import inspect

    made = [
        cls
        for name in CHECK_PATH
        for _, cls in inspect.getmembers(importlib.import_module(name), inspect.isclass)
        if attrs.has(cls) and cls.__module__ == name
    ]
    assert len(made) > 40
    assert [c.__qualname__ for c in made if c.__repr__ is not records.attrs_repr] == []
