"""Tool calls against expected ones (`rule.tool_calls_match`).

An expected call is `{"name", "arguments"}` (or OpenAI's `{"function":
{...}}`, or tau-bench's `{"name", "kwargs"}`), whose arguments must be given
exactly, or BFCL's `possible_answer` form `{NAME: {ARG: [accepted, ...]}}`:
each argument takes any of its accepted values, and `""` among them means it
may be left out; an accepted object's keys take accepted lists in turn.
Numbers compare by value (`5` and `5.0` are one value, as BFCL's checker
takes an integer for a float); `true` is not `1`; strings compare exactly,
or with `strings = bfcl` as BFCL's checker compares them: lower-cased, with
spaces and `,./-_*^` left out and `'` read as `"` ("April 1, 2024" is
"april 1 2024"). An argument the expected call does not name is a mismatch.
"""

from __future__ import annotations

import re
from typing import Any

from stdlib_ops.structure import Call, Malformed, NotJSON, decoded_arguments, read_call


class Expected:
    """One expected call: its name, its arguments, and whether each
    argument holds a list of accepted values (BFCL) or the value itself."""

    __slots__ = ("accepted", "arguments", "name")

    def __init__(self, name: str, arguments: dict[str, Any], accepted: bool):
        self.name, self.arguments, self.accepted = name, arguments, accepted


def expected_calls(value: Any, where: str) -> list[Expected]:
    """The expected calls a JSON array holds (`Malformed` when it holds none)."""
    if not isinstance(value, list):
        raise Malformed(f"`{where}` is not an array of expected tool calls")
    out = []
    for i, entry in enumerate(value):
        at = f"{where}[{i}]"
        if isinstance(entry, dict) and len(entry) == 1:
            ((name, args),) = entry.items()
            if name not in ("name", "function") and isinstance(args, dict):
                for arg, accepted in args.items():
                    if not isinstance(accepted, list):
                        raise Malformed(f"`{at}.{name}.{arg}` is not a list of accepted values")
                out.append(Expected(name, args, accepted=True))
                continue
        call = read_call(entry, at)
        try:
            out.append(Expected(call.name, decoded_arguments(call), accepted=False))
        except NotJSON as exc:
            raise Malformed(str(exc)) from None
    return out


# What BFCL's checker leaves out of a string before comparing it.
_BFCL_IGNORED = re.compile(r"[ ,./\-_*^]")


def _folded(text: str) -> str:
    return _BFCL_IGNORED.sub("", text).lower().replace("'", '"')


def same(a: Any, b: Any, fold: bool = False) -> bool:
    """JSON equality with numbers compared by value (a boolean is no number),
    strings compared as BFCL does when `fold`."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y, fold) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], fold) for k in a)
    if fold and isinstance(a, str) and isinstance(b, str):
        return _folded(a) == _folded(b)
    return type(a) is type(b) and a == b


def accepts(accepted: Any, value: Any, fold: bool = False) -> bool:
    """Whether `value` is the accepted value `accepted`, read as BFCL does:
    an object's keys hold lists of accepted values (`""`: may be left out)."""
    if isinstance(accepted, dict):
        if not isinstance(value, dict) or not value.keys() <= accepted.keys():
            return False
        for key, options in accepted.items():
            options = options if isinstance(options, list) else [options]
            if key not in value:
                if "" not in options:
                    return False
            elif not any(accepts(o, value[key], fold) for o in options):
                return False
        return True
    if isinstance(accepted, list):
        return (
            isinstance(value, list)
            and len(accepted) == len(value)
            and all(accepts(a, v, fold) for a, v in zip(accepted, value, strict=True))
        )
    return same(accepted, value, fold)


def _show(value: Any) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


def _problem(kind: str, message: str) -> dict[str, str]:
    return {"kind": kind, "mismatch": message}


def call_problem(
    call: Call, args: dict[str, Any] | str, expected: Expected, fold: bool = False
) -> dict[str, str] | None:
    """What makes `call` (its decoded `args`, or why they do not decode)
    other than `expected` (strings compared as BFCL does when `fold`)."""
    if call.name != expected.name:
        return _problem("name", f"`{call.where}` calls `{call.name}`, expected `{expected.name}`")
    if isinstance(args, str):
        return _problem("arguments", args)
    for arg, want in expected.arguments.items():
        if arg not in args:
            if not (expected.accepted and "" in want):
                return _problem("missing_argument", f"`{call.where}` calls `{call.name}` without `{arg}`")
            continue
        ok = any(accepts(o, args[arg], fold) for o in want) if expected.accepted else same(want, args[arg], fold)
        if not ok:
            wanted = " or ".join(_show(o) for o in want if o != "") if expected.accepted else _show(want)
            return _problem(
                "value", f"`{call.where}` gives `{arg}` = {_show(args[arg])}, expected {wanted or 'it left out'}"
            )
    for arg in args:
        if arg not in expected.arguments:
            return _problem(
                "unexpected_argument", f"`{call.where}` gives `{arg}`, which `{call.name}` is not expected to take"
            )
    return None


def match(
    calls: list[Call], expected: list[Expected], ordered: bool, extra: bool, fold: bool = False
) -> dict[str, str] | None:
    """The first mismatch between the calls and the expected ones (None:
    they match): in order or in any order (each expected call matched to
    its own call), with other calls allowed among them when `extra`, and
    strings compared as BFCL does when `fold`."""
    args: list[dict[str, Any] | str] = []
    for call in calls:  # decoded once: every pairing below reads them
        try:
            args.append(decoded_arguments(call))
        except NotJSON as exc:
            args.append(str(exc))

    def problem(i: int, e: Expected) -> dict[str, str] | None:
        return call_problem(calls[i], args[i], e, fold)

    if ordered and not extra:
        for i, e in enumerate(expected[: len(calls)]):
            found = problem(i, e)
            if found is not None:
                return found
        return _count_problem(calls, expected)
    if ordered:
        at = 0
        for e in expected:  # the earliest call that matches leaves the most for the rest
            while at < len(calls) and problem(at, e) is not None:
                at += 1
            if at == len(calls):
                return _unmatched(e, calls, args, fold)
            at += 1
        return None
    owner: dict[int, int] = {}  # call -> the expected call matched to it
    fits = [[i for i in range(len(calls)) if problem(i, e) is None] for e in expected]

    def assign(k: int, seen: set[int]) -> bool:  # an augmenting path (Kuhn's algorithm)
        for i in fits[k]:
            if i not in seen:
                seen.add(i)
                if i not in owner or assign(owner[i], seen):
                    owner[i] = k
                    return True
        return False

    for k, e in enumerate(expected):
        if not assign(k, set()):
            return _unmatched(e, calls, args, fold)
    if not extra:
        for i, call in enumerate(calls):
            if i not in owner:
                return _problem("extra_call", f"`{call.where}` calls `{call.name}`, which no expected call matches")
    return None


def _count_problem(calls: list[Call], expected: list[Expected]) -> dict[str, str] | None:
    if len(calls) < len(expected):
        return _problem(
            "missing_call",
            f"{len(calls)} call(s) where {len(expected)} are expected: no call of `{expected[len(calls)].name}`",
        )
    if len(calls) > len(expected):
        call = calls[len(expected)]
        return _problem("extra_call", f"`{call.where}` calls `{call.name}`, beyond the {len(expected)} expected")
    return None


def _unmatched(e: Expected, calls: list[Call], args: list[dict[str, Any] | str], fold: bool) -> dict[str, str]:
    """Why `e` found no call: what is wrong with the first call of its name, if any."""
    for i, call in enumerate(calls):
        if call.name == e.name:
            found = call_problem(call, args[i], e, fold)
            if found is not None:
                return found
    return _problem("missing_call", f"no call of `{e.name}` matches")
