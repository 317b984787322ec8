"""One declarative validator for the TOML tables people write: audit suites,
compile specs and plugin catalogs. A table's `Field`s say each key's type,
whether it is required, its bounds and its allowed values; `check` refuses
the first mistake as `error(path:line, message, hint)`, the line found by
`tomlfile.Lines`. What a field cannot say (a path that must exist, a URL)
stays with the caller, checked after.

Messages, the same for every file:
- unknown key `KEY` in PLACE (hint: did you mean `KEY`? / known keys: ...)
- PLACE needs `KEY`
- `KEY` must be WHAT, not TYPE VALUE
- `KEY` must be a finite number, not nan
- `KEY` must be between LO and HI, not VALUE (or at least LO, at most HI)
- `KEY` must be one of A, B, not `VALUE`

A quoted key or value longer than an excerpt is cut (`safetext.capped`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from typing import Any

import attrs

from rubriclang.nearest import difflib_match
from rubriclang.safetext import capped
from rubriclang.tomlfile import Lines

_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false", list: "a list", dict: "a table"}


@attrs.frozen
class Field:
    """One key of a table. `kind` is a Python type or a tuple of them (str,
    int, float, bool, list, dict); a `float` field takes integers too, as
    floats. `items`: the type of a list's elements. `what`: the expected
    value as messages say it (by default from `kind`); `hint`: how to fix
    the field's absence or a wrong value."""

    kind: type | tuple[type, ...]
    required: bool = False
    lo: float | None = None
    hi: float | None = None
    choices: tuple[Any, ...] = ()
    items: type | None = None
    what: str = ""
    hint: str = ""


@attrs.frozen
class Place:
    """Where a checked table is and how messages name it: `table` is its
    dotted name in the file ("" at the top level), `index` its position in
    an array of tables, `name` how a message names it ("the suite",
    "[judge]"), `prefix` what a key's name starts with in messages
    (`rubric.` for `rubric.name`). `anchor`: for an inline table inside an
    array (`params = [{ ... }]`), whose keys have no lines of their own, the
    key of `table` whose line stands for all of them."""

    lines: Lines
    error: Callable[..., Exception]
    name: str
    table: str = ""
    index: int = 0
    prefix: str = ""
    anchor: str | None = None

    def at(self, key: str | None = None) -> str:
        """`path:line` of `key` in this table (else of the table, else the path)."""
        return self.lines.at(self.anchor or key, self.table, self.index)

    def fail(self, key: str | None, message: str, hint: str = "") -> Exception:
        """The error to raise for `key` of this table, its quoted keys and
        values cut to an excerpt's width (`safetext.capped`)."""
        return self.error(self.at(key), capped(message), capped(hint))


def check(data: dict[str, Any], fields: dict[str, Field], place: Place) -> dict[str, Any]:
    """`data` checked against `fields`: unknown keys first, then each field in
    its declared order. Returns the values given (floats for `float` fields)."""
    check_keys(data, fields, place)
    out = {}
    for key, field in fields.items():
        if key not in data:
            if field.required:
                raise place.fail(None, f"{place.name} needs `{place.prefix}{key}`", field.hint)
            continue
        out[key] = check_value(key, data[key], field, place)
    return out


def check_keys(data: dict[str, Any], known: Collection[str], place: Place) -> None:
    """Refuse a key of `data` that is not in `known`, suggesting the nearest."""
    for key in data:
        if key not in known:
            close = difflib_match(key, known)
            hint = f"did you mean `{close[0]}`?" if close else f"known keys: {', '.join(sorted(known))}"
            raise place.fail(key, f"unknown key `{place.prefix}{key}` in {place.name}", hint)


def check_value(key: str, value: Any, field: Field, place: Place) -> Any:
    """One value against its field; the value (an integer as a float for a
    `float` field)."""
    kinds = field.kind if isinstance(field.kind, tuple) else (field.kind,)
    name = f"`{place.prefix}{key}`"
    if float in kinds and _is(value, int) and not any(_is(value, k) for k in kinds if k is not float):
        value = float(value)
    if not any(_is(value, k) for k in kinds) or (
        field.items is not None and not all(_is(v, field.items) for v in value)
    ):
        what = field.what or " or ".join(_NAMES[k] for k in kinds)
        raise place.fail(key, f"{name} must be {what}, not {toml_type(value)} {shown(value)}", field.hint)
    if isinstance(value, float) and not math.isfinite(value):
        raise place.fail(key, f"{name} must be a finite number, not {shown(value)}")
    lo, hi = field.lo, field.hi
    if isinstance(value, (int, float)) and ((lo is not None and value < lo) or (hi is not None and value > hi)):
        bounds = field.what or (
            f"at least {lo}" if hi is None else f"at most {hi}" if lo is None else f"between {lo} and {hi}"
        )
        raise place.fail(key, f"{name} must be {bounds}, not {shown(value)}")
    if field.choices and value not in field.choices:
        close = difflib_match(str(value), [str(c) for c in field.choices])
        hint = f"did you mean `{close[0]}`?" if close else field.hint
        raise place.fail(key, f"{name} must be one of {', '.join(map(str, field.choices))}, not `{value}`", hint)
    return value


def _is(value: Any, kind: type) -> bool:
    # TOML's booleans are no numbers, though Python's are.
    return isinstance(value, kind) and not (kind in (int, float) and isinstance(value, bool))


def toml_type(value: Any) -> str:
    """The TOML name of a decoded value's type."""
    kinds = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "array"), (dict, "table"))
    return next((name for t, name in kinds if isinstance(value, t)), type(value).__name__)


def shown(value: Any) -> str:
    """A value as TOML writes it (`nan`, `inf`, `true`), kept short."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else "inf" if value > 0 else "-inf"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
