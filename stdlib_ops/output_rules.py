"""The standard operators' output-type rules, each named by its operator's
entry in `operators.py`: the output type (with its interval) from the input
types and the parameters, and the problems found, as `(code, message,
param)`. The interface they implement is `rubriclang.catalog.rules`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence

from rubriclang.catalog.rules import Number, Problem, Rule, RuleInput, RuleResult
from rubriclang.catalog.types import BOOL, JType, fmt_num, fmt_value, interval


def _mean(xs: Sequence[Number]) -> Number:
    return sum(xs) / len(xs)


def _median(xs: Sequence[Number]) -> Number:
    xs = sorted(xs)
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def _all_optional(types: Iterable[JType]) -> bool:
    return all(t.optional for t in types)


def _integral(types: Iterable[JType]) -> bool:
    return all(t.kind == "ordinal" for t in types)


def _is_int(x: object) -> bool:
    return isinstance(x, int) or (isinstance(x, float) and x.is_integer())


def same(r: RuleInput) -> RuleResult:
    return r.one("value"), []


def boolean(r: RuleInput) -> RuleResult:
    return BOOL.as_optional(r.one("value").optional), []


def threshold(r: RuleInput) -> RuleResult:
    v = r.one("value")
    at = r.number("at")
    problems: list[Problem] = []
    if not (v.lo <= at <= v.hi):
        problems.append(
            (
                "RB203",
                f"`at = {fmt_num(at)}` lies outside the input's interval [{fmt_num(v.lo)}, {fmt_num(v.hi)}], so the "
                "result never changes",
                "at",
            )
        )
    return BOOL.as_optional(v.optional), problems


def bool_reduce(r: RuleInput) -> RuleResult:
    return BOOL.as_optional(_all_optional(r.many("inputs"))), []


def fraction(r: RuleInput) -> RuleResult:
    return JType("score", 0, 1, optional=_all_optional(r.many("inputs"))), []


def rescale(r: RuleInput) -> RuleResult:
    v = r.one("value")
    to = r.jtype("to")
    problems: list[Problem] = []
    if v.lo == v.hi:  # the mapping would divide by the input's width, zero
        problems.append(
            (
                "RB203",
                f"the input of `transform.rescale` is always {fmt_num(v.lo)} (`{v.as_optional(False)}`), so there is "
                "no interval to rescale from",
                None,
            )
        )
    return JType("score", to.lo, to.hi, optional=v.optional), problems


def map_values(r: RuleInput) -> RuleResult:
    v = r.one("value")
    table = r.table("values")
    problems: list[Problem] = []
    # `true == 1` in Python, so keys are compared together with their boolness.
    keys = {(isinstance(k, bool), k) for k in table}
    # An ordinal's points are produced lazily and only the first few missing
    # ones are named: `ordinal[0, 1000000000]` must not build a billion points.
    points = v.point_values()
    assert points is not None, v  # the catalog gives `transform.map` finite inputs only
    missing = list(itertools.islice((p for p in points if (isinstance(p, bool), p) not in keys), _SHOWN + 1))
    extra = [k for k in table if not _is_point(v, k)]
    if missing:
        shown = ", ".join(_key_text(p) for p in missing[:_SHOWN]) + (", ..." if len(missing) > _SHOWN else "")
        problems.append(
            ("RB203", f"`values` gives no number for {shown}, which `{v.as_optional(False)}` can take", "values")
        )
    if extra:
        shown = ", ".join(_key_text(k) for k in extra)
        problems.append(("RB203", f"`values` maps {shown}, which `{v.as_optional(False)}` never takes", "values"))
    nums = [x for x in table.values() if isinstance(x, (int, float)) and not isinstance(x, bool)]
    if not nums:
        return JType("score", 0, 1, optional=v.optional), problems
    return interval(min(nums), max(nums), all(_is_int(x) for x in nums), v.optional), problems


_SHOWN = 5  # missing points named in a message


def _is_point(t: JType, k: object) -> bool:
    """Whether `k` is one of the values of the finite type `t`."""
    if t.kind == "bool":
        return isinstance(k, bool)
    if t.kind == "label":
        return isinstance(k, str) and k in t.labels
    return isinstance(k, (int, float)) and not isinstance(k, bool) and _is_int(k) and t.lo <= k <= t.hi


def _key_text(k: object) -> str:
    if isinstance(k, bool):
        return "`true`" if k else "`false`"
    return f"`{k}`"


def clamp(r: RuleInput) -> RuleResult:
    v = r.one("value")
    lo, hi = r.number("lo"), r.number("hi")
    if lo >= hi:
        return v, [("RB203", f"`lo = {fmt_num(lo)}` must be below `hi = {fmt_num(hi)}`", "hi")]
    new_lo, new_hi = max(v.lo, lo), min(v.hi, hi)
    if new_lo > new_hi:
        return v, [
            (
                "RB203",
                f"[{fmt_num(lo)}, {fmt_num(hi)}] does not overlap the input's interval [{fmt_num(v.lo)}, "
                f"{fmt_num(v.hi)}]",
                "lo",
            )
        ]
    return interval(new_lo, new_hi, v.kind == "ordinal" and _is_int(lo) and _is_int(hi), v.optional), []


def _reduce(fn: Callable[[list[Number]], Number], integral_ok: bool) -> Rule:
    def rule(r: RuleInput) -> RuleResult:
        ins = r.many("inputs")
        if any(t.optional for t in ins):
            # Absent inputs are skipped, so the result is that of any subset
            # of the inputs: bounded only by the extremes.
            lo, hi = min(t.lo for t in ins), max(t.hi for t in ins)
        else:
            lo, hi = fn([t.lo for t in ins]), fn([t.hi for t in ins])
        return interval(lo, hi, integral_ok and _integral(ins), _all_optional(ins)), []

    return rule


def weighted_mean(r: RuleInput) -> RuleResult:
    ins = r.many("inputs")
    weights = r.numbers("weights")
    if len(weights) != len(ins) or sum(weights) <= 0:
        problems: list[Problem] = []
        if sum(weights) <= 0 and len(weights) == len(ins):
            problems.append(("RB203", "`weights` must not all be zero", "weights"))
        return JType("score", min(t.lo for t in ins), max(t.hi for t in ins), optional=_all_optional(ins)), problems
    total = sum(weights)
    lo = sum(w * t.lo for w, t in zip(weights, ins, strict=True)) / total
    hi = sum(w * t.hi for w, t in zip(weights, ins, strict=True)) / total
    # Absent inputs renormalise the weights, so any input's bounds can be reached.
    if any(t.optional for t in ins):
        lo = min(lo, min(t.lo for t, w in zip(ins, weights, strict=True) if w > 0))
        hi = max(hi, max(t.hi for t, w in zip(ins, weights, strict=True) if w > 0))
    # Zero-weight inputs do not count: with every weighted input absent the
    # weights present sum to zero and the result is absent.
    optional = all(t.optional for t, w in zip(ins, weights, strict=True) if w > 0)
    return interval(lo, hi, False, optional), []


def total(r: RuleInput) -> RuleResult:
    ins = r.many("inputs")
    # An absent input contributes nothing, so with optional inputs 0 is reachable too.
    lo = sum(min(t.lo, 0) if t.optional else t.lo for t in ins)
    hi = sum(max(t.hi, 0) if t.optional else t.hi for t in ins)
    return interval(lo, hi, _integral(ins), _all_optional(ins)), []


def count(r: RuleInput) -> RuleResult:
    ins = r.many("inputs")
    return JType("ordinal", 0, len(ins), optional=_all_optional(ins)), []


def cap(r: RuleInput) -> RuleResult:
    v = r.one("value")
    m = r.number("max")
    return interval(min(v.lo, m), v.hi, v.kind == "ordinal" and _is_int(m), v.optional), []


def floor(r: RuleInput) -> RuleResult:
    v = r.one("value")
    m = r.number("min")
    return interval(v.lo, max(v.hi, m), v.kind == "ordinal" and _is_int(m), v.optional), []


def veto(r: RuleInput) -> RuleResult:
    """The hull of the value's interval and `to`: a `to` outside the value's
    interval (say the scale's bottom, below a mean's least value) widens it,
    and the sink's type is held to the contract's scale (RB403)."""
    v = r.one("value")
    to = r.number("to")
    return interval(min(v.lo, to), max(v.hi, to), v.kind == "ordinal" and _is_int(to), v.optional), []


def majority(r: RuleInput) -> RuleResult:
    """All bool inputs give a `bool`; label inputs give the union of their labels.
    The result is optional unless every input is present and no tie can occur."""
    ins = r.many("inputs")
    kinds = {t.kind for t in ins}
    if len(kinds) > 1:
        shown = ", ".join(f"`{t.as_optional(False)}`" for t in ins)
        return ins[0], [
            ("RB201", f"`reduce.majority` takes inputs of one kind, all bool or all labels; these are {shown}", None)
        ]
    labels = tuple(dict.fromkeys(x for t in ins for x in t.labels))
    values = 2 if "bool" in kinds else len(labels)
    present = sum(1 for t in ins if not t.optional)
    # A tie needs two or more present inputs: an even count splits two values,
    # an odd count from three on splits three or more values.
    tie = any((p % 2 == 0 and values >= 2) or (p >= 3 and values >= 3) for p in range(max(present, 2), len(ins) + 1))
    return JType(ins[0].kind, labels=labels, optional=present == 0 or tie), []


def default(r: RuleInput) -> RuleResult:
    """The input's type, no longer optional; `value` must be one of its values."""
    v = r.one("value")
    d = r.params["value"]
    plain = v.as_optional(False)
    problems: list[Problem] = []
    number = isinstance(d, (int, float)) and not isinstance(d, bool)
    if v.kind == "bool":
        want = "`true` or `false`"
    elif v.kind == "label":
        want = "one of " + ", ".join(f'"{x}"' for x in v.labels)
    else:
        want = f"{'a whole number' if v.kind == 'ordinal' else 'a number'} in [{fmt_num(v.lo)}, {fmt_num(v.hi)}]"
    if not v.optional:
        problems.append(
            (
                "RB203",
                f"the input is `{v}`, never absent, so the default never applies; drop the `transform.default`",
                None,
            )
        )
    elif (
        (v.kind == "bool" and not isinstance(d, bool))
        or (v.kind == "label" and not isinstance(d, str))
        or (v.numeric and not number)
    ):
        problems.append(("RB202", f"`value = {_value_text(d)}` is not a value of `{plain}`: give {want}", "value"))
    elif (v.kind == "label" and d not in v.labels) or (
        isinstance(d, (int, float))
        and v.numeric
        and not (v.lo <= d <= v.hi and (v.kind == "score" or isinstance(d, int)))
    ):
        problems.append(("RB203", f"`value = {_value_text(d)}` is not a value of `{plain}`: give {want}", "value"))
    return plain, problems


def _value_text(d: object) -> str:
    return f'"{d}"' if isinstance(d, str) else "{ ... }" if isinstance(d, dict) else fmt_value(d)


def mask(r: RuleInput) -> RuleResult:
    return r.one("value").as_optional(True), []


mean = _reduce(_mean, False)
minimum = _reduce(min, True)
maximum = _reduce(max, True)
median = _reduce(_median, False)
