"""Parameter blocks and type expressions: AST values -> Python values, checked
against the catalog's parameter specs."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NoReturn, Protocol

from rubriclang.catalog.model import ParamSpec
from rubriclang.catalog.types import JType, fmt_num
from rubriclang.diagnostics.codes import make
from rubriclang.diagnostics.diagnostic import Diagnostic
from rubriclang.diagnostics.span import Span
from rubriclang.nearest import difflib_match, nearest_named
from rubriclang.records import frozen
from rubriclang.syntax import ast
from rubriclang.syntax.strings import quote


def suggest(name: str, options: Iterable[str]) -> tuple[str, ...]:
    """A 'did you mean' note, when a close option exists."""
    close = difflib_match(name, options)
    return (f"did you mean `{close[0]}`?",) if close else ()


def suggest_qualified(name: str, options: Mapping[str, Iterable[str]]) -> tuple[str, ...]:
    """'Did you mean' for a dotted name, among `options` (name -> its aliases):
    the same last part under another prefix (`gate.min` -> `reduce.min`,
    `mean` -> `reduce.mean`) comes first, then the closest name or alias
    (`reduce.average` -> `reduce.mean`)."""
    last = name.rsplit(".", 1)[-1]
    same = sorted(o for o in options if o.rsplit(".", 1)[-1] == last)
    close = same or nearest_named(name, options)
    return (f"did you mean `{close[0]}`?",) if close else ()


def finite(x: float | int) -> bool:
    """Whether a number is a finite float: huge integers and `1e999` are not,
    and the interval arithmetic downstream works in floats."""
    try:
        return math.isfinite(x)
    except OverflowError:
        return False


def literal(n: ast.Number) -> str:
    """A number as written, shortened for a message: a typo can be 400 digits long."""
    return n.text if len(n.text) <= 24 else n.text[:20] + "..."


def type_from_ast(expr: ast.TypeExpr, diags: list[Diagnostic]) -> JType | None:
    """The JType an expression denotes, or None (with RB205) if it is malformed."""
    if expr.kind == "bool":
        return JType("bool", optional=expr.optional)
    if expr.kind == "label":
        names = [n.value for n in expr.labels]
        seen: set[str] = set()
        for n in expr.labels:
            if n.value in seen:
                diags.append(make("RB205", n.span, f"label `{n.value}` is listed twice"))
                return None
            seen.add(n.value)
        if len(names) < 2:
            diags.append(make("RB205", expr.span, "a label type needs at least two labels", ("e.g. `label{yes, no}`",)))
            return None
        return JType("label", labels=tuple(names), optional=expr.optional)
    # The grammar gives a numeric type its two bounds.
    assert expr.lo is not None and expr.hi is not None, expr
    lo, hi = expr.lo.value, expr.hi.value
    if not (finite(lo) and finite(hi)):
        diags.append(
            make(
                "RB205",
                expr.span,
                f"interval bounds must be finite numbers, got [{literal(expr.lo)}, {literal(expr.hi)}]",
                ("bounds are at most about 1.8e308 in size",),
            )
        )
        return None
    if expr.kind == "ordinal" and not (isinstance(lo, int) and isinstance(hi, int)):
        diags.append(
            make(
                "RB205",
                expr.span,
                f"`ordinal` bounds must be integers, got [{literal(expr.lo)}, {literal(expr.hi)}]",
                ("use `score[lo, hi]` for a real-valued scale",),
            )
        )
        return None
    if lo >= hi:
        diags.append(
            make(
                "RB205",
                expr.span,
                f"the interval [{literal(expr.lo)}, {literal(expr.hi)}] is empty or a single point: `lo` must be "
                "below `hi`",
                (f"write `{expr.kind}[{literal(expr.hi)}, {literal(expr.lo)}]`",) if lo > hi else (),
            )
        )
        return None
    return JType(expr.kind, lo, hi, optional=expr.optional)


def _scalar(v: ast.Value) -> Any:
    if isinstance(v, (ast.String, ast.Number, ast.Bool, ast.Ident)):
        return v.value
    raise TypeError


def _describe(v: ast.Value) -> str:
    """A value as a message names it: scalars with their text, so the reader sees which."""
    if isinstance(v, ast.String):
        text = quote(v.value)
        return f"the string `{text if len(text) <= 24 else text[:20] + '...'}`"
    if isinstance(v, ast.Number):
        return f"the number `{literal(v)}`"
    if isinstance(v, ast.Bool):
        return f"`{key_text(v)}`"
    if isinstance(v, ast.Ident):
        return f"the name `{v.value}`"
    if isinstance(v, ast.Call):
        return f"`{v.name.value}(...)`"
    return {ast.ListValue: "a list", ast.MapValue: "a map", ast.TypeExpr: "a type"}[type(v)]


_EXPECTED = {
    "number": "a number",
    "integer": "an integer",
    "string": "a string",
    "boolean": "`true` or `false`",
    "list<number>": "a list of numbers",
    "list<string>": "a list of strings",
    "map<string>": "a map to strings",
    "map<number>": "a map to numbers",
    "type": "a type",
    "numeric_type": "a numeric type, `ordinal[lo, hi]` or `score[lo, hi]`",
    "json": "a JSON-like value",
    "answer": '`json` or `pattern("...")`',
}


def _json(v: ast.Value, diags: list[Diagnostic]) -> Any:
    if isinstance(v, ast.ListValue):
        return [_json(x, diags) for x in v.items]
    if isinstance(v, ast.MapValue):
        out: dict[str, Any] = {}
        seen: dict[str, ast.Value] = {}
        for e in v.entries:
            key = str(_scalar(e.key))  # JSON object keys are strings
            if key in seen:
                diags.append(
                    make("RB111", e.key.span, f"map key `{key}` is given twice", (f"first given at {seen[key].span}",))
                )
            seen.setdefault(key, e.key)
            out[key] = _json(e.value, diags)
        return out
    if isinstance(v, (ast.String, ast.Number, ast.Bool)):
        return v.value
    diags.append(make("RB202", v.span, f"{_describe(v)} is not a JSON value here", ("quote names as strings",)))
    return None


class _Bad(Exception):
    """A value that does not fit its parameter's type (already reported)."""


class _Wrong(Protocol):
    """Reports that a value does not fit its parameter (RB202), then raises _Bad."""

    def __call__(self, extra: tuple[str, ...] = (), part: ast.Value | None = None, what: str = "") -> NoReturn: ...


# A converter: the Python value of an AST value for one parameter type.
_Converter = Callable[[ParamSpec, ast.Value, list[Diagnostic], str, _Wrong], Any]


def convert(spec: ParamSpec, v: ast.Value, diags: list[Diagnostic], where: str) -> Any:
    """The Python value of `v` for parameter `spec`; raises _Bad after reporting."""
    t = spec.type

    def wrong(extra: tuple[str, ...] = (), part: ast.Value | None = None, what: str = "") -> NoReturn:
        # `part`: the item or map value at fault, when the container itself is right.
        expected = f"one of {', '.join(spec.choices)}" if t == "choice" else _EXPECTED.get(t, t)
        found = f"{what} is {_describe(part)}" if part is not None else f"not {_describe(v)}"
        sep = ", but " if part is not None else ", "
        diags.append(
            make(
                "RB202",
                (part or v).span,
                f"parameter `{spec.name}` of {where} takes {expected}{sep}{found}",
                extra,
            )
        )
        raise _Bad

    converter = _CONVERTERS.get(t)
    if converter is None:  # a catalog bug, not a user error
        raise ValueError(f"unknown parameter type {t!r} for {spec.name}")
    value = converter(spec, v, diags, where, wrong)
    _check_finite(spec, v, diags, where)
    if spec.min is not None or spec.max is not None:
        _check_range(spec, value, v, diags, where)
    return value


def _number(spec: ParamSpec, v: ast.Value, diags: list[Diagnostic], where: str, wrong: _Wrong) -> Any:
    if not isinstance(v, ast.Number):
        wrong()
    return v.value


def _integer(spec: ParamSpec, v: ast.Value, diags: list[Diagnostic], where: str, wrong: _Wrong) -> Any:
    if not isinstance(v, ast.Number) or not isinstance(v.value, int):
        wrong()
    return v.value


def _string(spec: ParamSpec, v: ast.Value, diags: list[Diagnostic], where: str, wrong: _Wrong) -> Any:
    if not isinstance(v, ast.String):
        wrong()
    return v.value


def _boolean(spec: ParamSpec, v: ast.Value, diags: list[Diagnostic], where: str, wrong: _Wrong) -> Any:
    if not isinstance(v, ast.Bool):
        wrong()
    return v.value


def _choice(spec: ParamSpec, v: ast.Value, diags: list[Diagnostic], where: str, wrong: _Wrong) -> Any:
    if isinstance(v, ast.String) and v.value in spec.choices:
        wrong((f"write it as a name, without quotes: `{v.value}`",))
    if not isinstance(v, ast.Ident):
        wrong()
    value = v.value
    if value not in spec.choices:
        diags.append(
            make(
                "RB203",
                v.span,
                f"`{value}` is not a valid `{spec.name}` for {where}: expected one of {', '.join(spec.choices)}",
                suggest(value, spec.choices),
            )
        )
        raise _Bad
    return value


def _list(spec: ParamSpec, v: ast.Value, diags: list[Diagnostic], where: str, wrong: _Wrong) -> Any:
    item = ast.Number if spec.type == "list<number>" else ast.String
    if not isinstance(v, ast.ListValue):
        wrong()
    values = []
    for i, x in enumerate(v.items, 1):
        if not isinstance(x, item):
            wrong(part=x, what=f"item {i}")
        values.append(x.value)
    return values


def _map(spec: ParamSpec, v: ast.Value, diags: list[Diagnostic], where: str, wrong: _Wrong) -> Any:
    item = ast.Number if spec.type == "map<number>" else ast.String
    if not isinstance(v, ast.MapValue):
        wrong()
    for e in v.entries:
        if not isinstance(e.value, item):
            wrong(part=e.value, what=f"the value of `{key_text(e.key)}`")
    value: dict[Any, Any] = {}
    seen: dict[Any, ast.Value] = {}  # key -> its first key node
    for e in v.entries:
        key = _scalar(e.key)
        if key in seen:
            _repeated_key(e.key, seen[key], diags)
            raise _Bad
        seen[key] = e.key
        value[key] = _scalar(e.value)
    return value


def _type(spec: ParamSpec, v: ast.Value, diags: list[Diagnostic], where: str, wrong: _Wrong) -> Any:
    if not isinstance(v, ast.TypeExpr):
        wrong()
    value = type_from_ast(v, diags)
    if value is None:
        raise _Bad
    if spec.type == "numeric_type" and not value.numeric:
        wrong()
    return value


def _json_param(spec: ParamSpec, v: ast.Value, diags: list[Diagnostic], where: str, wrong: _Wrong) -> Any:
    before = len(diags)
    value = _json(v, diags)
    if len(diags) > before:
        raise _Bad
    return value


def _answer(spec: ParamSpec, v: ast.Value, diags: list[Diagnostic], where: str, wrong: _Wrong) -> Any:
    """`json`, or `pattern("RE2")` with an optional map from matched text to
    values: {"pattern": str, "map": {text: value}}. What the pattern and the
    map must satisfy depends on the procedure (the checker's job)."""
    if isinstance(v, ast.Ident) and v.value == "json":
        return "json"
    if not isinstance(v, ast.Call):
        wrong(('e.g. `answer = pattern("\\[\\[(\\d+)\\]\\]")`',))
    if v.name.value != "pattern":
        diags.append(
            make(
                "RB202",
                v.name.span,
                f"`{v.name.value}(...)` is not a way to read an answer: `{spec.name}` of {where} takes "
                f"{_EXPECTED['answer']}",
                suggest(v.name.value, ("pattern",)),
            )
        )
        raise _Bad
    if not v.args or not isinstance(v.args[0], ast.String) or len(v.args) > 2:
        diags.append(
            make(
                "RB202",
                v.span,
                "`pattern(...)` takes a regular expression string, then optionally a map from matched text to values",
                ('e.g. `pattern("\\[\\[(A|B|C)\\]\\]", { A: first, B: second, C: tie })`',),
            )
        )
        raise _Bad
    out: dict[str, Any] = {"pattern": v.args[0].value}
    if len(v.args) == 2:
        m = v.args[1]
        if not isinstance(m, ast.MapValue) or not m.entries:
            diags.append(
                make(
                    "RB202",
                    m.span,
                    f"the second argument of `pattern(...)` is a map from matched text to values, not {_describe(m)}",
                )
            )
            raise _Bad
        mapping: dict[str, Any] = {}
        seen: dict[str, ast.Value] = {}
        for e in m.entries:
            key = key_text(e.key) if not isinstance(e.key, ast.String) else e.key.value
            if key in seen:
                diags.append(
                    make("RB111", e.key.span, f"map key `{key}` is given twice", (f"first given at {seen[key].span}",))
                )
                raise _Bad
            seen[key] = e.key
            if not isinstance(e.value, (ast.Ident, ast.Bool, ast.Number, ast.String)):
                wrong(part=e.value, what=f"the value of `{key}`")
            mapping[key] = e.value.value
        out["map"] = mapping
    return out


_CONVERTERS: dict[str, _Converter] = {
    "number": _number,
    "integer": _integer,
    "string": _string,
    "boolean": _boolean,
    "choice": _choice,
    "list<number>": _list,
    "list<string>": _list,
    "map<string>": _map,
    "map<number>": _map,
    "type": _type,
    "numeric_type": _type,
    "answer": _answer,
    "json": _json_param,
}


def _repeated_key(key: ast.Value, first: ast.Value, diags: list[Diagnostic]) -> None:
    # `1`, `1.0` and `true` are one key to Python, but `true` and `1` are
    # different keys to a reader: name the real problem in each case.
    if isinstance(key, ast.Bool) == isinstance(first, ast.Bool):
        diags.append(
            make("RB111", key.span, f"map key `{key_text(key)}` is given twice", (f"first given at {first.span}",))
        )
    else:
        diags.append(
            make(
                "RB202",
                key.span,
                f"map key `{key_text(key)}` clashes with key `{key_text(first)}`",
                ("a map's keys are either all `true`/`false` or all numbers",),
            )
        )


def key_text(k: ast.Value) -> str:
    """A map key as it is written."""
    if isinstance(k, ast.Bool):
        return "true" if k.value else "false"
    if isinstance(k, ast.Number):
        return k.text
    return str(_scalar(k))


def _check_finite(spec: ParamSpec, v: ast.Value, diags: list[Diagnostic], where: str) -> None:
    if spec.type not in ("number", "list<number>", "map<number>"):
        return
    if isinstance(v, ast.ListValue):
        nodes = v.items
    elif isinstance(v, ast.MapValue):
        nodes = tuple(e.value for e in v.entries)
    else:
        nodes = (v,)
    bad = next((n for n in nodes if isinstance(n, ast.Number) and not finite(n.value)), None)
    if bad is not None:
        diags.append(
            make(
                "RB203",
                bad.span,
                f"`{spec.name}` of {where} must be a finite number, got `{literal(bad)}`",
                ("numbers are at most about 1.8e308 in size",),
            )
        )
        raise _Bad


def _check_range(spec: ParamSpec, value: object, v: ast.Value, diags: list[Diagnostic], where: str) -> None:
    nums = value if isinstance(value, list) else [value]
    for x in nums:
        if not isinstance(x, (int, float)) or isinstance(x, bool):
            continue
        if spec.min is not None and x < spec.min:
            diags.append(
                make(
                    "RB203", v.span, f"`{spec.name}` of {where} must be at least {fmt_num(spec.min)}, got {fmt_num(x)}"
                )
            )
            raise _Bad
        if spec.max is not None and x > spec.max:
            diags.append(
                make("RB203", v.span, f"`{spec.name}` of {where} must be at most {fmt_num(spec.max)}, got {fmt_num(x)}")
            )
            raise _Bad


@frozen
class CheckedBlock:
    """A parameter block, checked: every parameter's value (defaults filled in;
    a bad or missing required one is left out), the names that failed (so
    callers can skip checks that would only repeat an error), and each
    parameter written out and converted, with its spec (what lints read)."""

    block: ast.Block
    values: dict[str, Any]
    failed: frozenset[str]
    given: tuple[tuple[ast.Param, ParamSpec], ...]


def check_block(
    block: ast.Block,
    specs: tuple[ParamSpec, ...],
    diags: list[Diagnostic],
    where: str,
    anchor: Span,
) -> CheckedBlock:
    """Check a parameter block against its specs (see `CheckedBlock`)."""
    by_name = {s.name: s for s in specs}
    values: dict[str, Any] = {}
    given: dict[str, ast.Param] = {}
    converted: list[tuple[ast.Param, ParamSpec]] = []
    failed: set[str] = set()
    meant: set[str] = set()  # parameters an unknown one is probably a misspelling of
    for p in block.params:
        name = p.name.value
        spec = by_name.get(name)
        if spec is None:
            known = ", ".join(sorted(by_name)) or "none"
            meant.update(difflib_match(name, by_name))
            diags.append(
                make(
                    "RB109",
                    p.name.span,
                    f"{where} has no parameter `{name}`",
                    (*suggest(name, by_name), f"its parameters: {known}"),
                )
            )
            continue
        if name in given:
            first = given[name].name.span
            diags.append(make("RB111", p.name.span, f"parameter `{name}` is given twice", (f"first given at {first}",)))
            failed.add(name)
            continue
        given[name] = p
        try:
            values[name] = convert(spec, p.value, diags, where)
        except _Bad:
            failed.add(name)
            continue
        converted.append((p, spec))
    for spec in specs:
        if spec.name in given:
            continue
        if spec.required and spec.name in meant:
            failed.add(spec.name)  # the misspelling's "did you mean" already says it
        elif spec.required:
            diags.append(
                make(
                    "RB110",
                    anchor,
                    f"{where} needs parameter `{spec.name}` ({_EXPECTED.get(spec.type, spec.type_text())})",
                    (f"add `{spec.name} = ...`" + (f": {spec.doc}" if spec.doc else ""),),
                )
            )
            failed.add(spec.name)
        else:
            values[spec.name] = spec.default
    return CheckedBlock(block, values, frozenset(failed), tuple(converted))
