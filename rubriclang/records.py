"""`frozen`: `attrs.frozen` with one `__repr__` shared by every class.

attrs writes and compiles Python source for each class it makes; the
`__repr__` (with its guard against recursion) is the largest part of that
source, about half the compile time, and a cold `rbg check` creates some 50
classes. Here every class gets the same `__repr__`, which reads the fields
as attrs's generated one does, and writes exactly what attrs would
(`Name(value='x')`, fields with `repr=False` left out, a field's own `repr`
callable used, `...` for an object inside its own repr). `__init__`,
`__eq__` and `__hash__` are still attrs's, generated per class (they are
called often; a repr is for people). A class that defines `__repr__` keeps
its own.

Any frozen attrs class may use it; every class a cold `rbg check` creates
does (tests/test_records.py holds the check path to that). Type checkers
see `attrs.frozen` itself, so attrs's mypy plugin types these classes as it
types any other.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import attrs

__all__ = ["frozen"]

_reprs = threading.local()  # ids of the objects whose repr is being built, per thread


def attrs_repr(self: Any) -> str:
    """The repr attrs would generate for this instance of an attrs class."""
    seen: set[int] | None = getattr(_reprs, "seen", None)
    if seen is None:
        seen = _reprs.seen = set()
    if id(self) in seen:
        return "..."
    seen.add(id(self))
    try:
        fields = ", ".join(
            f"{a.name}={(repr if a.repr is True else a.repr)(getattr(self, a.name))}"
            for a in self.__attrs_attrs__
            if a.repr is not False
        )
    finally:
        seen.discard(id(self))
    return f"{self.__class__.__qualname__.rsplit('>.', 1)[-1]}({fields})"


if TYPE_CHECKING:
    from attrs import frozen as frozen
else:

    def frozen(maybe_cls=None, **options):
        """`attrs.frozen(maybe_cls, **options)`, the class given `attrs_repr`
        unless it defines its own `__repr__` or `repr=False` is passed."""

        def wrap(cls):
            if options.get("repr", True) and "__repr__" not in cls.__dict__:
                cls.__repr__ = attrs_repr  # attrs sees a class's own __repr__ and generates none
            return attrs.frozen(cls, **options)

        return wrap if maybe_cls is None else wrap(maybe_cls)
