"""Parameter blocks and type expressions: AST values -> Python values, checked
against the catalog's parameter specs."""

from __future__ import annotations

import math
from typing import Any

from rubriclang.catalog.model import ParamSpec
from rubriclang.catalog.types import JType, fmt_num
from rubriclang.diagnostics.codes import make
from rubriclang.diagnostics.span import Span
from rubriclang.syntax import ast


def suggest(name: str, options) -> tuple[str, ...]:
    """A 'did you mean' note, when a close option exists."""
    import difflib  # only on the error path

    close = difflib.get_close_matches(name, sorted(options), n=1, cutoff=0.6)
    return (f"did you mean `{close[0]}`?",) if close else ()


def type_from_ast(expr: ast.TypeExpr, diags: list) -> JType | None:
    """The JType an expression denotes, or None (with RB205) if it is malformed."""
    if expr.kind == "bool":
        return JType("bool", optional=expr.optional)
    if expr.kind == "label":
        names = [n.value for n in expr.labels]
        seen = set()
        for n in expr.labels:
            if n.value in seen:
                diags.append(make("RB205", n.span, f"label `{n.value}` is listed twice"))
                return None
            seen.add(n.value)
        if len(names) < 2:
            diags.append(
                make("RB205", expr.span, "a label type needs at least two labels", ("e.g. `label{yes, no}`",))
            )
            return None
        return JType("label", labels=tuple(names), optional=expr.optional)
    lo, hi = expr.lo.value, expr.hi.value
    if not (math.isfinite(lo) and math.isfinite(hi)):
        diags.append(make("RB205", expr.span, "interval bounds must be finite numbers"))
        return None
    if expr.kind == "ordinal" and not (isinstance(lo, int) and isinstance(hi, int)):
        diags.append(
            make(
                "RB205",
                expr.span,
                f"`ordinal` bounds must be integers, got [{expr.lo.text}, {expr.hi.text}]",
                ("use `score[lo, hi]` for a real-valued scale",),
            )
        )
        return None
    if lo >= hi:
        diags.append(
            make(
                "RB205",
                expr.span,
                f"the interval [{expr.lo.text}, {expr.hi.text}] is empty or a single point: `lo` must be below `hi`",
            )
        )
        return None
    return JType(expr.kind, lo, hi, optional=expr.optional)


def _scalar(v) -> Any:
    if isinstance(v, (ast.String, ast.Number, ast.Bool, ast.Ident)):
        return v.value
    raise TypeError


def _describe(v) -> str:
    return {
        ast.String: "a string",
        ast.Number: "a number",
        ast.Bool: "a boolean",
        ast.Ident: "a name",
        ast.ListValue: "a list",
        ast.MapValue: "a map",
        ast.TypeExpr: "a type",
    }[type(v)]


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
    "numeric_type": "a numeric type (`ordinal[lo, hi]` or `score[lo, hi]`)",
    "json": "a JSON-like value",
}


def _json(v, diags: list) -> Any:
    if isinstance(v, ast.ListValue):
        return [_json(x, diags) for x in v.items]
    if isinstance(v, ast.MapValue):
        return {str(_scalar(e.key)): _json(e.value, diags) for e in v.entries}
    if isinstance(v, (ast.String, ast.Number, ast.Bool)):
        return v.value
    diags.append(make("RB202", v.span, f"{_describe(v)} is not a JSON value here", ("quote names as strings",)))
    return None


class _Bad(Exception):
    """A value that does not fit its parameter's type (already reported)."""


def convert(spec: ParamSpec, v: ast.Value, diags: list, where: str) -> Any:
    """The Python value of `v` for parameter `spec`; raises _Bad after reporting."""
    t = spec.type

    def wrong(extra=()):
        diags.append(
            make(
                "RB202",
                v.span,
                f"parameter `{spec.name}` of {where} takes {_EXPECTED.get(t, t)}, not {_describe(v)}",
                extra,
            )
        )
        raise _Bad

    if t == "number":
        if not isinstance(v, ast.Number):
            wrong()
        value = v.value
        if not math.isfinite(value):
            wrong()
    elif t == "integer":
        if not isinstance(v, ast.Number) or not isinstance(v.value, int):
            wrong()
        value = v.value
    elif t == "string":
        if not isinstance(v, ast.String):
            wrong()
        value = v.value
    elif t == "boolean":
        if not isinstance(v, ast.Bool):
            wrong()
        value = v.value
    elif t == "choice":
        if isinstance(v, ast.String) and v.value in spec.choices:
            wrong((f"write it as a name, without quotes: `{v.value}`",))
        if not isinstance(v, ast.Ident):
            wrong((f"one of: {', '.join(spec.choices)}",))
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
    elif t in ("list<number>", "list<string>"):
        item = ast.Number if t == "list<number>" else ast.String
        if not isinstance(v, ast.ListValue) or not all(isinstance(x, item) for x in v.items):
            wrong()
        value = [x.value for x in v.items]
    elif t in ("map<string>", "map<number>"):
        item = ast.Number if t == "map<number>" else ast.String
        if not isinstance(v, ast.MapValue) or not all(isinstance(e.value, item) for e in v.entries):
            wrong()
        value = {}
        for e in v.entries:
            key = _scalar(e.key)
            if key in value and type(key) is type(next(k for k in value if k == key)):
                diags.append(make("RB111", e.key.span, f"map key `{_key_text(e.key)}` is given twice"))
                raise _Bad
            value[key] = e.value.value
    elif t in ("type", "numeric_type"):
        if not isinstance(v, ast.TypeExpr):
            wrong()
        value = type_from_ast(v, diags)
        if value is None:
            raise _Bad
        if t == "numeric_type" and not value.numeric:
            wrong()
    elif t == "json":
        before = len(diags)
        value = _json(v, diags)
        if len(diags) > before:
            raise _Bad
    else:  # a catalog bug, not a user error
        raise ValueError(f"unknown parameter type {t!r} for {spec.name}")
    _check_range(spec, value, v, diags, where)
    return value


def _key_text(k) -> str:
    if isinstance(k, ast.Bool):
        return "true" if k.value else "false"
    if isinstance(k, ast.Number):
        return k.text
    return str(k.value)


def _check_range(spec: ParamSpec, value, v, diags: list, where: str) -> None:
    nums = value if isinstance(value, list) else [value]
    for x in nums:
        if not isinstance(x, (int, float)) or isinstance(x, bool):
            continue
        if spec.min is not None and x < spec.min:
            diags.append(
                make("RB203", v.span, f"`{spec.name}` of {where} must be at least {fmt_num(spec.min)}, got {fmt_num(x)}")
            )
            raise _Bad
        if spec.max is not None and x > spec.max:
            diags.append(
                make("RB203", v.span, f"`{spec.name}` of {where} must be at most {fmt_num(spec.max)}, got {fmt_num(x)}")
            )
            raise _Bad


def _equals_default(spec: ParamSpec, value) -> bool:
    if spec.default is None or spec.required:
        return False
    if isinstance(spec.default, bool) or isinstance(value, bool):
        return value is spec.default
    return value == spec.default


def check_block(
    block: ast.Block,
    specs: tuple[ParamSpec, ...],
    diags: list,
    where: str,
    anchor: Span,
) -> tuple[dict[str, Any], set[str]]:
    """Check a parameter block against its specs.

    Returns every parameter's value (defaults filled in; a bad or missing
    required one is left out) and the set of names that failed, so callers can
    skip checks that would only repeat an error.
    """
    by_name = {s.name: s for s in specs}
    values: dict[str, Any] = {}
    given: dict[str, ast.Param] = {}
    failed: set[str] = set()
    for p in block.params:
        name = p.name.value
        spec = by_name.get(name)
        if spec is None:
            known = ", ".join(sorted(by_name)) or "none"
            diags.append(
                make(
                    "RB109",
                    p.name.span,
                    f"{where} has no parameter `{name}`",
                    suggest(name, by_name) + (f"its parameters: {known}",),
                )
            )
            continue
        if name in given:
            first = given[name].name.span
            diags.append(
                make("RB111", p.name.span, f"parameter `{name}` is given twice", (f"first given at {first}",))
            )
            failed.add(name)
            continue
        given[name] = p
        try:
            values[name] = convert(spec, p.value, diags, where)
        except _Bad:
            failed.add(name)
            continue
        if _equals_default(spec, values[name]):
            diags.append(
                make(
                    "RB504",
                    p.span,
                    f"`{name}` is set to its default value; leave it out",
                )
            )
    for spec in specs:
        if spec.name in given:
            continue
        if spec.required:
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
    return values, failed
