"""Gates for CI (docs/ci.md): `rbg eval --fail-under` / `--fail-if` and
`rbg audit --fail-if`. A gate names a figure of the command's report, an
optional scope in brackets, a comparison and a threshold:

    GATE := NAME [ "[" SCOPE "]" ] [ ("<" | ">") NUMBER [ "@low" | "@high" ] ]

`accuracy<0.8` fails when the point estimate is under 0.8; `@low` or
`@high` compares that bound of the figure's 95% interval instead. A figure
that was not measured fails its gate, whatever the threshold. Without a
comparison, an audit's flip and detection rates are held to the judge's own
repeat noise (`_NOISE_RULES`). A failed gate exits with `GATE_FAILED`.

Public API: `parse(text)` (a `Gate`, or `GateError`), `eval_gates` and
`audit_gates` (the option values checked against what the command can
measure, before it runs), `check_eval` and `check_audit` (each gate's
`Result` on the finished report), `render_text`, `GATE_FAILED`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence

import attrs
import click

from rubriclang.nearest import difflib_match

GATE_FAILED = 4  # the exit status of a command one of whose gates failed

BOUNDS = {"value": "point estimate", "low": "interval's lower bound", "high": "interval's upper bound"}

_GATE = re.compile(
    r"\s*(?P<name>[A-Za-z_][A-Za-z0-9_.]*)\s*(?:\[(?P<scope>[^\]]*)\])?\s*"
    r"(?:(?P<op>[<>]=?|=)\s*(?P<number>[^@\s]+)\s*(?:@\s*(?P<bound>\S*))?)?\s*"
)
SYNTAX = "NAME[SCOPE]<NUMBER or NAME[SCOPE]>NUMBER, optionally ending @low or @high; [SCOPE] is optional"


class GateError(Exception):
    """A gate that cannot be read or names no figure: a usage error."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@attrs.frozen
class Gate:
    """One gate: fail when `name` (in `scope`) is `op` `threshold`, read at
    `bound`; `op` None is the noise rule of an audit's rate."""

    name: str
    scope: str | None = None
    op: str | None = None
    threshold: float | None = None
    bound: str = "value"

    def text(self) -> str:
        """The gate as written canonically (`accuracy<0.8@low`)."""
        scope = f"[{self.scope}]" if self.scope is not None else ""
        if self.op is None:
            return f"{self.name}{scope}"
        bound = f"@{self.bound}" if self.bound != "value" else ""
        return f"{self.name}{scope}{self.op}{_number(self.threshold)}{bound}"


def _number(x: float | None) -> str:
    """A threshold as short as it reads back exactly (`0.8`, `1e-05`)."""
    return f"{x:g}" if x is not None and float(f"{x:g}") == x else repr(x)


def parse(text: str) -> Gate:
    """The gate `text` writes; GateError saying what is wrong otherwise."""
    m = _GATE.fullmatch(text)
    if m is None:
        raise GateError(f"cannot read `{text}` as a gate: write {SYNTAX}, e.g. `accuracy<0.8`")
    op, number, bound = m["op"], m["number"], m["bound"]
    if op in ("<=", ">=", "="):
        raise GateError(
            f"`{text}`: a gate compares with `<` (fails under the number) or `>` (fails over it), not `{op}`"
        )
    threshold = None
    if number is not None:
        try:
            threshold = float(number)
        except ValueError:
            raise GateError(f"`{text}`: `{number}` is not a number") from None
        if not math.isfinite(threshold):
            raise GateError(f"`{text}`: the threshold must be a finite number, not `{number}`")
    if bound is not None and bound not in ("low", "high"):
        raise GateError(
            f"`{text}`: `@{bound}` is not a bound: `@low` (the interval's lower bound) or `@high` (its upper)"
        )
    scope = m["scope"].strip() if m["scope"] is not None else None
    if scope == "":
        raise GateError(f"`{text}`: the brackets are empty; name a scope in them, or leave them out")
    return Gate(m["name"], scope, op, threshold, bound or "value")


def fail_under(text: str) -> Gate:
    """`METRIC=VALUE[@low|@high]` (`--fail-under`) as the gate `METRIC<VALUE`."""
    name, sep, rest = text.partition("=")
    if not sep or not name.strip() or "<" in name or ">" in name:
        raise GateError(f"cannot read `{text}`: write METRIC=VALUE, e.g. `accuracy=0.8` (or `accuracy=0.8@low`)")
    return parse(f"{name.strip()}<{rest}")


@attrs.frozen
class Result:
    """A gate on a finished report: the figure it read (`figure`, a Rate or
    an Estimate as the report writes it, None when absent), where it read
    it, whether it passed, and why."""

    gate: Gate
    where: str
    figure: dict | None
    passed: bool
    why: str

    def to_json(self) -> dict:
        f = self.figure or {}
        return {
            "gate": self.gate.text(),
            "figure": self.gate.name,
            "where": self.where,
            "compare": self.gate.op,
            "threshold": self.gate.threshold,
            "bound": self.gate.bound,
            **{k: f.get(k) for k in ("value", "low", "high", "n", "coverage")},
            "passed": self.passed,
            "why": self.why,
        }


def _compare(gate: Gate, where: str, figure: dict | None, unmeasured: str) -> Result:
    """`gate` on `figure`: failed (saying why) when it or its bound was not
    measured; else failed when the bound read compares with the threshold."""
    if figure is None or figure.get("value") is None:
        return Result(gate, where, figure, False, f"not measured: {unmeasured}")
    x = figure.get(gate.bound)
    if x is None:
        return Result(gate, where, figure, False, f"no interval to read the {BOUNDS[gate.bound]} of")
    assert gate.threshold is not None
    failed = x < gate.threshold if gate.op == "<" else x > gate.threshold
    word = "under" if gate.op == "<" else "over"
    if failed:
        return Result(gate, where, figure, False, f"the {BOUNDS[gate.bound]} {x:.3f} is {word} {gate.threshold:g}")
    return Result(gate, where, figure, True, f"the {BOUNDS[gate.bound]} {x:.3f} is not {word} {gate.threshold:g}")


def _unknown(kind: str, name: str, known: Sequence[str], where: str = "") -> GateError:
    close = difflib_match(name, known)
    mean = f" (did you mean `{close[0]}`?)" if close else ""
    return GateError(f"unknown {kind} `{name}`{where}{mean}; the {kind}s here: {', '.join(known)}")


# --- rbg eval ----------------------------------------------------------------------


def eval_gates(
    gates: Sequence[Gate], families: Mapping[str, Sequence[str]], columns: Sequence[str], floor: bool = False
) -> None:
    """Check gates on `rbg eval`'s report before it runs: `families` maps
    each readout (mode) of the first graph to its metric names, `columns`
    the report's columns (a gate reads the first unless its scope names one).
    A `floor` (`--fail-under`) on a figure where lower is better is refused."""
    from rubriclang.evaluation.metrics import DEFINITIONS

    known = list(dict.fromkeys(m for names in families.values() for m in names))
    for g in gates:
        if g.name not in known:
            raise _unknown("metric", g.name, known, " for this judge's readout")
        if floor and DEFINITIONS[g.name].better == "lower":
            raise GateError(
                f"lower `{g.name}` is better, so a floor on it would fail a better judge: write "
                f"--fail-if '{g.name}>{g.threshold:g}' to fail when it is over {g.threshold:g}"
            )
        if g.scope is not None and g.scope not in columns:
            raise _unknown("column", g.scope, columns)
        if g.op is None:
            raise GateError(f"`{g.text()}` has no threshold: write e.g. `{g.name}<0.8`")


def check_eval(gates: Sequence[Gate], report: dict, families: Mapping[str, Sequence[str]]) -> list[Result]:
    """Each gate on `rbg eval`'s JSON report (`Evaluation.to_json()`)."""
    out = []
    for g in gates:
        mode = next(m for m, names in families.items() if g.name in names)
        column = g.scope if g.scope is not None else report["differences_of"]
        where = f"{mode}, `{column}`"
        r = report["modes"].get(mode)
        if r is None:
            out.append(_compare(g, where, None, f"no item was evaluated {mode}"))
            continue
        figure = {**r["metrics"][column][g.name], "coverage": r["coverage"]}
        if not r["scored"]:
            why = f"no item was scored (of {r['items']}; the report lists those left out and why)"
        else:
            why = f"undefined on the {r['scored']} scored items (e.g. a correlation of a constant column)"
        out.append(_compare(g, where, figure, why))
    return out


# --- rbg audit ---------------------------------------------------------------------

_INVARIANT = (
    "flip_rate",
    "flip_rate_stable_baseline",
    "judgment_flip_rate",
    "excess_over_noise",
    "score_shift",
    "tie_rate",
    "abstain_rate",
    "tie_rate_change",
    "abstain_rate_change",
)
_DIRECTIONAL = (
    "detection_rate",
    "detection_rate_stable_baseline",
    "detection_over_noise",
    "contradiction_rate",
    "score_shift",
)
_THRESHOLD = ("score_fell", "fell_without_crossing", "score_shift", "margin")
_CRITERION = ("repeat_move_rate", "invariant_move_rate", "directional_move_rate")


def _blocks() -> tuple[str, ...]:
    """The figures of a relation's blocks, as paths (the blocks of
    `metrics`, of each operator and of each surface)."""
    from rubriclang.audit.figures import GOLD_FIGURES

    return (
        *(f"invariant.{f}" for f in _INVARIANT),
        *(f"invariant.gold.{f}" for f in GOLD_FIGURES),
        *(f"directional.{f}" for f in _DIRECTIONAL),
        *(f"directional.threshold.{f}" for f in _THRESHOLD),
    )


def _names(scope_kind: str) -> tuple[str, ...]:
    """The figure paths a gate may name in a scope of this kind."""
    from rubriclang.audit.figures import GOLD_FIGURES

    if scope_kind == "criterion":
        return _CRITERION
    if scope_kind in ("operator", "surface"):
        return _blocks()
    return (
        "repeat_flip_rate",
        "decisions.tie_rate",
        "decisions.abstain_rate",
        *_blocks(),
        *(f"gold.{f}" for f in GOLD_FIGURES),
    )


# A rate with no threshold is held to the judge's repeat noise: the gate
# reads the difference the report already measures against the repeats on
# the same items (Newcombe's interval) and fails on its interval's side.
_NOISE_RULES = {
    "invariant.flip_rate": "invariant.excess_over_noise",
    "invariant.judgment_flip_rate": "invariant.excess_over_noise",
    "invariant.excess_over_noise": "invariant.excess_over_noise",
    "directional.detection_rate": "directional.detection_over_noise",
    "directional.detection_over_noise": "directional.detection_over_noise",
}


def _scope_kind(scope: str | None) -> tuple[str, str | None]:
    """(metrics, operator, surface or criterion; the name) of a scope."""
    if scope is None:
        return "metrics", None
    kind, sep, name = scope.partition(":")
    if sep and kind in ("operator", "surface", "criterion"):
        return kind, name.strip()
    return "operator", scope


def audit_gates(gates: Sequence[Gate], operators: Sequence[str]) -> None:
    """Check gates on an audit's report before it runs: each names a figure
    of its scope's kind, an operator the suite requests (or `*`), a surface,
    and a threshold unless the figure has a noise rule."""
    from rubriclang.audit.perturbations import SURFACES

    for g in gates:
        kind, name = _scope_kind(g.scope)
        known = _names(kind)
        if g.name not in known:
            where = " in an audit report" if kind == "metrics" else f" in the scope `[{g.scope}]`"
            raise _unknown("figure", g.name, known, where)
        if kind == "operator" and name != "*" and name not in operators:
            raise _unknown("operator", name or "", list(operators), " (the suite's operators)")
        if kind == "surface" and name != "*" and name not in SURFACES:
            raise _unknown("surface", name or "", SURFACES)
        if g.op is None and g.name not in _NOISE_RULES:
            raise GateError(
                f"`{g.text()}` has no threshold, and no rule from the repeat noise: write e.g. `{g.name}>0.1`; "
                f"without a threshold, a gate reads the repeat noise for {', '.join(_NOISE_RULES)}"
            )


def _get(node: dict | None, path: str) -> dict | None:
    for key in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node if isinstance(node, dict) else None


def _noise(gate: Gate, where: str, figure: dict | None, rule: str, missing: str | None) -> Result:
    """The noise rule: an invariant rate fails when its excess over the
    repeat noise is above 0 (its interval's low bound); a detection rate
    when its detection over noise is not (a low bound at or under 0)."""
    if missing is not None:
        return Result(gate, where, figure, False, f"not measured: {missing}")
    if figure is None or figure.get("value") is None or figure.get("low") is None:
        return Result(
            gate,
            where,
            figure,
            False,
            f"not measured: `{rule}`, the difference from the repeat noise, needs 2 repeats or more and a measured "
            "variant (or give the gate a threshold)",
        )
    est = f"{rule.split('.')[-1]} {figure['value']:+.3f} [{figure['low']:+.3f}, {figure['high']:+.3f}]"
    if rule.startswith("invariant."):
        if figure["low"] > 0:
            return Result(gate, where, figure, False, f"flips beyond the repeat noise: {est} lies above 0")
        return Result(gate, where, figure, True, f"within the repeat noise: {est} does not lie above 0")
    if figure["low"] <= 0:
        return Result(gate, where, figure, False, f"not detected beyond the repeat noise: {est} does not lie above 0")
    return Result(gate, where, figure, True, f"detected beyond the repeat noise: {est} lies above 0")


def _scopes(report: dict, gate: Gate) -> list[tuple[str, dict | None]]:
    """(where, the scope's part of the report) for each scope the gate reads."""
    kind, name = _scope_kind(gate.scope)
    if kind == "metrics":
        return [("metrics", report["metrics"])]
    table = {"operator": "by_operator", "surface": "by_surface", "criterion": "by_criterion"}[kind]
    part = report.get(table) or {}
    if name != "*":
        return [(f"{table}.{name}", part.get(name))]
    # Every operator the gate's figure was measured for; none at all fails below.
    relation = gate.name.split(".")[0]
    found = [(f"{table}.{op}", block) for op, block in sorted(part.items()) if (block or {}).get(relation)]
    return found or [(f"{table}.*", None)]


def check_audit(gates: Sequence[Gate], report: dict) -> list[Result]:
    """Each gate on an audit's report (report.json), read from its summary
    figures (never `by_item`); a `[*]` gate gives one result per operator."""
    out = []
    for g in gates:
        for where, part in _scopes(report, g):
            rule = _NOISE_RULES.get(g.name) if g.op is None else None
            figure = _get(part, rule or g.name)
            if rule is not None:
                missing = _unmeasured(g, part, figure) if part is None or figure is None else None
                out.append(_noise(g, where, figure, rule, missing))
                continue
            repeats = (report.get("suite") or {}).get("repeats")
            out.append(_compare(g, where, figure, _unmeasured(g, part, figure, repeats)))
    return out


def _unmeasured(gate: Gate, part: dict | None, figure: dict | None, repeats: int | None = None) -> str:
    """Why a gate's figure has no value, in the report's terms."""
    if gate.name == "repeat_flip_rate" and repeats == 1:
        return "the suite has 1 repeat, so there is no repeat to compare (repeats = 2 or more)"
    kind, name = _scope_kind(gate.scope)
    if part is None and name == "*":
        return f"no {kind} of the audit has `{gate.name}`"
    if part is None:
        return {
            "operator": f"operator `{name}` did not run (`operators` in the report says why)",
            "surface": f"no operator on surface `{name}` ran",
            "criterion": f"the judge has no criterion `{name}`",
        }[kind]
    if figure is None:
        return f"the report has no `{gate.name}` here (no variant of that relation, or a judge type without it)"
    failed = f" ({figure['failed']} failed)" if figure.get("failed") else ""
    return f"no unit was measured{failed}"


# --- output ------------------------------------------------------------------------


def render_text(results: Iterable[Result]) -> str:
    """One line per gate: pass or FAIL, the gate, where, the figure, why."""
    lines = ["Gates (each fails when its comparison holds, or its figure was not measured):"]
    for r in results:
        f = r.figure or {}
        shown = ""
        if f.get("value") is not None and r.gate.op is not None:  # a noise rule's why shows its difference
            interval = f" [{f['low']:.3f}, {f['high']:.3f}]" if f.get("low") is not None else " [n/a]"
            coverage = f", coverage {f['coverage']:.3f}" if f.get("coverage") is not None else ""
            shown = f" {f['value']:.3f}{interval} (n {f.get('n')}{coverage});"
        lines.append(f"  {'pass' if r.passed else 'FAIL'}  {r.gate.text()}  ({r.where}){shown} {r.why}")
    return "\n".join(lines)


class GateParam(click.ParamType):
    """A command-line gate: `read` (`parse` or `fail_under`) of the option's
    value, a GateError shown at the option (exit status 2)."""

    name = "gate"

    def __init__(self, read=parse):
        self.read = read

    def convert(self, value, param, ctx):
        if isinstance(value, Gate):
            return value
        try:
            return self.read(value)
        except GateError as exc:
            self.fail(exc.message, param, ctx)


def at_option(option: str, check, *args) -> None:
    """`check(*args)` (`eval_gates`, `audit_gates`), a GateError raised as a
    usage error at `option`."""
    try:
        check(*args)
    except GateError as exc:
        raise click.BadParameter(exc.message, param_hint=f"'{option}'") from None


def report_failures(results: Sequence[Result]) -> None:
    """On stderr, each failed gate; exit with GATE_FAILED when one failed."""
    failed = [r for r in results if not r.passed]
    for r in failed:
        click.echo(f"Error: gate `{r.gate.text()}` failed ({r.where}): {r.why}", err=True)
    if failed:
        raise SystemExit(GATE_FAILED)


@attrs.frozen
class GateOptions:
    """`rbg eval`'s gates: floors (`--fail-under`) and comparisons (`--fail-if`)."""

    fail_under: tuple[Gate, ...]
    fail_if: tuple[Gate, ...]

    def all(self) -> list[Gate]:
        return [*self.fail_under, *self.fail_if]


FAIL_IF_HELP = "exit 4 when it holds, or when the figure was not measured; repeatable (docs/ci.md)"

# `rbg eval`'s options, collected as one GateOptions (`cli.options.collect`).
EVAL_GATE_OPTIONS = [
    click.option(
        "--fail-under",
        multiple=True,
        type=GateParam(fail_under),
        metavar="METRIC[COLUMN]=VALUE[@low|@high]",
        help=(
            "A CI gate: exit 4 when the first graph's METRIC is under VALUE (its point estimate, or that bound "
            "of its 95% interval), or was not measured; repeatable (docs/ci.md)."
        ),
    ),
    click.option(
        "--fail-if",
        multiple=True,
        type=GateParam(),
        metavar="METRIC[COLUMN]<VALUE|>VALUE",
        help=f"A CI gate as a comparison, e.g. 'mae>0.5': {FAIL_IF_HELP}.",
    ),
]
