"""The standard procedures' behaviour beyond their specs in `procedures.toml`:
one entry per procedure with hooks: the backend that runs it, a local
procedure's judging function (`judges.py`), its extra checks, its built-in
prompt and answer key, the words that introduce its answer in free text, and
the traits other tools read (see `rubriclang.catalog.entries.ProcedureImpl`).

Checks receive the checker's `CriterionCheck` context; the imports they need
are made when they run, so loading the catalog imports no checker code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rubriclang.catalog.entries import ProcedureImpl
from rubriclang.catalog.types import JType, fmt_num
from stdlib_ops import judges, structure

if TYPE_CHECKING:
    from rubriclang.checker.criteria import CriterionCheck

# The one scale `llm.rate { template = prometheus }` rates on.
PROMETHEUS_SCALE = JType("ordinal", 1, 5)


def _check_rate(c: CriterionCheck) -> None:
    """`llm.rate`: the scale its template grades on, and anchors that are points of the type."""
    from rubriclang.checker.values import key_text
    from rubriclang.syntax import ast

    t, values, failed = c.type, c.values, c.failed
    plain = t.as_optional(False)
    if values.get("template") == "prometheus" and plain != PROMETHEUS_SCALE:
        # Prometheus models are trained to grade 1-5 in whole points; a
        # `[RESULT] 4` is no point of any other scale.
        c.err(
            "RB204",
            c.decl.type.span,
            f"`llm.rate` with `template = prometheus` cannot produce `{t}`: Prometheus grades on `{PROMETHEUS_SCALE}`",
            (
                f"declare `{PROMETHEUS_SCALE.as_optional(t.optional)}`, or drop `template = prometheus` to rate on "
                f"`{plain}`",
            ),
        )
    if "anchors" not in failed and values.get("anchors"):
        points = (
            f"integers from {fmt_num(t.lo)} to {fmt_num(t.hi)}"
            if t.kind == "ordinal"
            else f"numbers from {fmt_num(t.lo)} to {fmt_num(t.hi)}"
        )
        for key in c.map_keys("anchors"):
            ok = (
                isinstance(key, ast.Number)
                and t.lo <= key.value <= t.hi
                and (t.kind != "ordinal" or float(key.value).is_integer())
            )
            if not ok:
                c.err(
                    "RB203",
                    key.span,
                    f"anchor `{key_text(key)}` is not a point of `{plain}`",
                    (f"anchors are points of the scale: {points}",),
                )


def _check_choose(c: CriterionCheck) -> None:
    """`llm.choose`: each described label is one of the type's."""
    from rubriclang.checker.values import key_text, suggest

    if "descriptions" in c.failed or not c.values.get("descriptions"):
        return
    labels = c.type.labels
    for key in c.map_keys("descriptions"):
        if key.value not in labels:
            c.err(
                "RB203",
                key.span,
                f"`{key_text(key)}` is not one of the labels of `{c.type.as_optional(False)}`",
                (*suggest(str(key.value), labels), f"the labels: {', '.join(labels)}"),
            )


def _check_compare(c: CriterionCheck) -> None:
    """`llm.compare`: the type its reply produces."""
    c.prompts.compare_type(c.decl, c.type, c.values)


def _check_regex(c: CriterionCheck) -> None:
    """`rule.regex`: the pattern compiles under RE2."""
    if "pattern" in c.failed or c.values.get("pattern") is None:
        return
    from rubriclang.regex import compile_regex  # only for files that use rule.regex

    try:
        compile_regex(c.values["pattern"], bool(c.values.get("ignore_case")))
    except ValueError as exc:
        c.err(
            "RB203",
            c.param_span("pattern"),
            f"`pattern` is not a valid RE2 regular expression: {exc}",
            ("rule.regex uses RE2 (linear time): no backreferences or lookaround",),
        )


def _check_length(c: CriterionCheck) -> None:
    """`rule.length`: a bool one compares with exactly one bound; a numeric one with none."""
    given = [k for k in ("over", "under") if c.values.get(k) is not None]
    if c.type.kind == "bool" and len(given) != 1:
        msg = "a bool `rule.length` needs exactly one of `over` and `under`"
        span = c.decl.procedure.span if not given else c.param_span(given[1])
        c.err(
            "RB110" if not given else "RB203",
            span,
            msg,
            ("e.g. `rule.length { over = 400 }` is true for answers over 400 words",),
        )
    elif c.type.kind != "bool" and given:
        c.err(
            "RB203",
            c.param_span(given[0]),
            f"`{given[0]}` only applies to a bool `rule.length`; a numeric one yields the length itself",
        )


# The field kinds a structure rule reads: a text field holding JSON is parsed.
_JSON = ("json", "text")
_CALLS = ("conversation", "json", "text")


def _check_json_valid(c: CriterionCheck) -> None:
    """`rule.json_valid`: a text or JSON field, or one holding tool calls with `arguments = true`."""
    structure.check_fields(c, {"field": _CALLS if c.values.get("arguments") else _JSON})


def _check_json_schema(c: CriterionCheck) -> None:
    """`rule.json_schema`: the schema (a file's read in), and the field's kind."""
    structure.inline_schema(c)
    structure.check_fields(c, {"field": _CALLS if c.values.get("arguments") else _JSON})


def _check_tool_calls_match(c: CriterionCheck) -> None:
    """`rule.tool_calls_match`: the candidate holds calls, the expected field JSON."""
    structure.check_fields(c, {"field": _CALLS, "expected": _JSON})


def _check_citations(c: CriterionCheck) -> None:
    """`rule.citations_valid`: the pattern compiles under RE2; a text field and a documents field."""
    _check_regex(c)
    structure.check_fields(c, {"field": ("text",), "documents": ("documents",)})


def _check_count(c: CriterionCheck) -> None:
    """`rule.count`: the field holds what `of` counts; bounds as `rule.length`'s."""
    of = c.values.get("of")
    structure.check_fields(c, {"field": ("conversation",) if of == "turns" else _CALLS})
    wrong = "name" if of == "turns" else "role"
    if c.values.get(wrong) is not None:
        c.err("RB203", c.param_span(wrong), f"`{wrong}` does not apply to `of = {of}`")
    given = [k for k in ("min", "max") if c.values.get(k) is not None]
    if c.type.kind == "bool" and not given:
        c.err(
            "RB110",
            c.decl.procedure.span,
            "a bool `rule.count` needs `min`, `max` or both",
            ("e.g. `rule.count { of = tool_calls, max = 10 }` is true for at most 10 calls",),
        )
    elif c.type.kind != "bool" and given:
        c.err(
            "RB203",
            c.param_span(given[0]),
            f"`{given[0]}` only applies to a bool `rule.count`; a numeric one yields the count itself",
        )
    elif len(given) == 2 and c.values["min"] > c.values["max"]:
        c.err("RB203", c.param_span("min"), "`min` is over `max`: no count lies between them")


PROCEDURES: dict[str, ProcedureImpl] = {
    "llm.rate": ProcedureImpl(
        backend="llm",
        check=_check_rate,
        prompt=("rate.v2", "score"),
        answer_keyword=r"(?:final\s+)?(?:score|rating|grade)",
        traits=frozenset({"rates"}),
    ),
    "llm.check": ProcedureImpl(
        backend="llm", prompt=("check.v2", "answer"), answer_keyword=r"(?:final\s+)?(?:answer|verdict)"
    ),
    "llm.choose": ProcedureImpl(
        backend="llm",
        check=_check_choose,
        prompt=("choose.v2", "label"),
        answer_keyword=r"(?:final\s+)?(?:label|answer|choice|category)",
    ),
    "llm.compare": ProcedureImpl(
        backend="llm", check=_check_compare, prompt=("compare.v2", "preference"), traits=frozenset({"side_by_side"})
    ),
    "rule.regex": ProcedureImpl(
        backend="local",
        judge=judges.rule_regex,
        check=_check_regex,
        traits=frozenset({"reads_field", "checks_format"}),
    ),
    "rule.length": ProcedureImpl(
        backend="local",
        judge=judges.rule_length,
        check=_check_length,
        traits=frozenset({"reads_field", "measures_length"}),
    ),
    "rule.contains": ProcedureImpl(backend="local", judge=judges.rule_contains, traits=frozenset({"reads_field"})),
    "rule.json_valid": ProcedureImpl(
        backend="local",
        judge=structure.json_valid,
        check=_check_json_valid,
        traits=frozenset({"reads_field", "checks_format"}),
        field_params=("field",),
    ),
    "rule.json_schema": ProcedureImpl(
        backend="local",
        judge=structure.json_schema,
        check=_check_json_schema,
        traits=frozenset({"reads_field", "checks_format"}),
        field_params=("field",),
    ),
    "rule.tool_calls_match": ProcedureImpl(
        backend="local",
        judge=structure.tool_calls_match,
        check=_check_tool_calls_match,
        traits=frozenset({"reads_field"}),
        field_params=("field", "expected"),
    ),
    "rule.citations_valid": ProcedureImpl(
        backend="local",
        judge=structure.citations_valid,
        check=_check_citations,
        traits=frozenset({"reads_field"}),
        field_params=("field", "documents"),
    ),
    "rule.count": ProcedureImpl(
        backend="local",
        judge=structure.count,
        check=_check_count,
        traits=frozenset({"reads_field"}),
        field_params=("field",),
    ),
    "rule.matches_reference": ProcedureImpl(
        backend="local", judge=judges.rule_matches_reference, traits=frozenset({"reads_reference"})
    ),
    "human.annotation": ProcedureImpl(backend="local", judge=judges.human_annotation),
    "recorded.value": ProcedureImpl(backend="local", judge=judges.recorded_value),
}
