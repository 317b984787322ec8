"""Judgment types: `bool`, `ordinal[lo, hi]`, `score[lo, hi]`, `label{...}`, and `T?`."""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs

from rubriclang.records import frozen

NUMERIC = ("ordinal", "score")


def fmt_num(x: float | int) -> str:
    """A number as the language writes it: integers without a decimal point."""
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return repr(x) if isinstance(x, float) else str(x)


def fmt_short(x: float | int, digits: int = 4) -> str:
    """A number for people to read: `digits` significant digits, spelled as
    `fmt_num` spells it (5.666666666666667 -> 5.667, 2.0 -> 2). For reports
    and summaries only: traces keep every digit."""
    if isinstance(x, float) and math.isfinite(x):
        x = float(f"{x:.{digits}g}")
    return fmt_num(x)


def fmt_value(v: object) -> str:
    """A parameter value (a default, say) as the language writes it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return fmt_num(v)
    if isinstance(v, list):
        return "[" + ", ".join(fmt_value(x) for x in v) + "]"
    return str(v)


@frozen
class JType:
    """A judgment type. Intervals are closed; `optional` admits an absent value."""

    kind: str
    # Only numeric kinds have an interval: read it through `lo`/`hi`, which
    # narrow it (and fail loudly on a bool or label type).
    _lo: float | int | None = attrs.field(default=None, alias="lo")
    _hi: float | int | None = attrs.field(default=None, alias="hi")
    labels: tuple[str, ...] = ()
    optional: bool = False
    # `list[T]`: one judgment per element of a list field (`each`); the rest
    # of the fields describe each element (`optional`: an element may be absent).
    many: bool = False

    @property
    def numeric(self) -> bool:
        return self.kind in NUMERIC

    @property
    def lo(self) -> float | int:
        """The interval's lower bound (numeric kinds only)."""
        if self._lo is None:
            raise TypeError(f"a {self.kind} type has no interval")
        return self._lo

    @property
    def hi(self) -> float | int:
        """The interval's upper bound (numeric kinds only)."""
        if self._hi is None:
            raise TypeError(f"a {self.kind} type has no interval")
        return self._hi

    def as_optional(self, optional: bool = True) -> JType:
        return attrs.evolve(self, optional=optional)

    @property
    def element(self) -> JType:
        """The type of one element of a `list[T]` (the type itself otherwise)."""
        return attrs.evolve(self, many=False)

    def fits(self, other: JType) -> bool:
        """Whether every value of `self` is a value of `other` (subtyping)."""
        if self.many != other.many:
            return False
        if self.optional and not other.optional:
            return False
        if self.kind == "bool" or other.kind == "bool":
            return self.kind == other.kind
        if self.kind == "label" or other.kind == "label":
            return self.kind == other.kind and set(self.labels) <= set(other.labels)
        if self.kind == "score" and other.kind == "ordinal":
            return False
        return other.lo <= self.lo and self.hi <= other.hi

    def accepts_kind(self, accepted: tuple[str, ...]) -> bool:
        """Whether a port of these kinds takes a value of this type; a list
        only enters a port that takes lists (`PortSpec.lists`), by its elements."""
        return not self.many and self.element_accepted(accepted)

    def element_accepted(self, accepted: tuple[str, ...]) -> bool:
        return "any" in accepted or self.kind in accepted or ("numeric" in accepted and self.numeric)

    def point_values(self) -> Sequence[bool] | Sequence[int] | Sequence[str] | None:
        """Every value of a finite type (bool, ordinal, label), else None.
        An ordinal's points are a lazy `range`: the interval may be huge."""
        if self.kind == "bool":
            return (True, False)
        if self.kind == "ordinal":
            return range(int(self.lo), int(self.hi) + 1)
        if self.kind == "label":
            return self.labels
        return None

    def __str__(self) -> str:
        if self.many:
            return f"list[{self.element}]"
        q = "?" if self.optional else ""
        if self.kind == "bool":
            return "bool" + q
        if self.kind == "label":
            return "label{" + ", ".join(self.labels) + "}" + q
        return f"{self.kind}[{fmt_num(self.lo)}, {fmt_num(self.hi)}]{q}"


BOOL = JType("bool")


def interval(lo: float | int, hi: float | int, integral: bool, optional: bool = False) -> JType:
    """`ordinal[lo, hi]` when `integral` (and the bounds are whole), else `score`."""
    whole = float(lo).is_integer() and float(hi).is_integer()
    if integral and whole:
        return JType("ordinal", int(lo), int(hi), optional=optional)
    return JType("score", _tidy(lo), _tidy(hi), optional=optional)


def _tidy(x: float | int) -> float | int:
    x = round(x, 12)  # interval arithmetic noise, e.g. 0.1 * 3
    return int(x) if float(x).is_integer() else x
