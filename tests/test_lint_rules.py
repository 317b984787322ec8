"""The RB5xx lints as rule objects (one per code, found by its code), and gate
bounds judged by the interval they produce rather than the value's."""

from __future__ import annotations

from pathlib import Path

import pytest

from rubriclang.catalog.rules import RuleInput
from rubriclang.catalog.types import JType
from rubriclang.checker import check_source, lints
from rubriclang.diagnostics.codes import registry
from stdlib_ops.output_rules import veto

CORPUS = Path(__file__).parent / "corpus"
LINT_CODES = sorted(c for c, info in registry().items() if c.startswith("RB5"))


def test_every_lint_code_has_exactly_one_rule_object():
    codes = [rule.code for rule in lints.RULES]
    assert sorted(codes) == LINT_CODES
    assert len(codes) == len(set(codes))
    assert set(lints.RULES_BY_CODE) == set(LINT_CODES)


@pytest.mark.parametrize("rule", lints.RULES, ids=lambda r: r.code)
def test_a_rule_is_a_warning_with_its_registered_description_and_a_docstring(rule):
    assert rule.info.severity.value == "warning"
    assert (rule.name, rule.description) == (registry()[rule.code].name, registry()[rule.code].summary)
    assert rule.check.__doc__


def _cases(code: str) -> list[Path]:
    return sorted((CORPUS / "invalid" / code).glob("*.rbg"))


def _diagnose(path: Path, **options):
    return check_source(path.read_text(encoding="utf-8"), str(path), **options).diagnostics


@pytest.mark.parametrize("code", LINT_CODES)
def test_each_lint_warning_comes_from_its_own_rule(code, monkeypatch):
    cases = _cases(code)
    assert cases
    full = {path: _diagnose(path) for path in cases}
    assert all(any(d.code == code for d in diags) for diags in full.values())
    monkeypatch.setattr(lints, "RULES", tuple(r for r in lints.RULES if r.code != code))
    for path, diags in full.items():
        assert _diagnose(path) == tuple(d for d in diags if d.code != code), path


@pytest.mark.parametrize("code", LINT_CODES)
def test_select_and_ignore_choose_a_lint_by_its_code(code):
    for path in _cases(code):
        assert {d.code for d in _diagnose(path, select=[code]) if not d.is_error} == {code}
        assert code not in {d.code for d in _diagnose(path, ignore=[code])}


def test_inline_ignore_silences_a_lint_on_its_line():
    path = CORPUS / "invalid" / "RB506" / "cap_at_top.rbg"
    text = path.read_text(encoding="utf-8").replace("{ max = 5 }", "{ max = 5 }  # rbg: ignore[RB506]")
    assert "RB506" in {d.code for d in _diagnose(path)}
    assert "RB506" not in {d.code for d in check_source(text, str(path)).diagnostics}


GRAPH = """\
rubric r {{ version = 1 }}
contract {{ scale = {scale} }}
criterion helpful: ordinal[1, 5] = llm.rate {{ question = "Helpful?", anchors = {{ 1: "No.", 5: "Yes." }} }}
criterion fluent: ordinal[2, 5] = llm.rate {{ question = "Fluent?", anchors = {{ 2: "No.", 5: "Yes." }} }}
criterion harmful: bool = llm.check {{ question = "Harmful?" }}
node quality = reduce.weighted_mean(inputs: [helpful, fluent]) {{ weights = [3, 1] }}
node gated = {gate}(value: quality, when: harmful) {{ {param} }}
sink gated
readout pointwise {{ output = ordinal[1, 5] }}
"""


def _gated(gate: str, param: str, scale: str = "score[1, 5]"):
    return check_source(GRAPH.format(gate=gate, param=param, scale=scale), "g.rbg")


def test_veto_to_the_scale_bottom_below_the_value_interval_checks():
    result = _gated("gate.veto", "to = 1")
    assert result.diagnostics == ()
    assert result.graph is not None
    quality, gated = (op.type for op in result.graph.operators)
    assert (quality.lo, quality.hi) == (1.25, 5)
    assert (gated.lo, gated.hi) == (1, 5)


@pytest.mark.parametrize(
    ("gate", "param", "bound"),
    [
        ("gate.veto", "to = 0", "`to = 0`"),
        ("gate.veto", "to = 6", "`to = 6`"),
        ("gate.cap", "max = 0.5", "`max = 0.5`"),
        ("gate.floor", "min = 5.5", "`min = 5.5`"),
    ],
)
def test_a_gate_bound_off_the_contract_is_an_error_at_the_sink_naming_it(gate, param, bound):
    (d,) = _gated(gate, param).diagnostics
    assert d.code == "RB403" and d.is_error
    assert any(n.startswith(bound) and "outside the contract's scale" in n for n in d.notes)


@pytest.mark.parametrize(
    ("gate", "param", "no_op"),
    [
        ("gate.cap", "max = 5", True),
        ("gate.cap", "max = 7", True),
        ("gate.cap", "max = 4.9", False),
        ("gate.floor", "min = 1.25", True),
        ("gate.floor", "min = 1", True),
        ("gate.floor", "min = 2", False),
        ("gate.veto", "to = 5", False),
        ("gate.veto", "to = 1", False),
    ],
)
def test_a_gate_that_never_changes_its_value_is_a_warning_not_an_error(gate, param, no_op):
    diags = _gated(gate, param).diagnostics
    assert not any(d.is_error for d in diags)
    assert ("RB506" in {d.code for d in diags}) is no_op


@pytest.mark.parametrize(("lo", "hi", "to"), [(1.25, 5, 1), (1, 5, 3), (2, 4, 5), (0, 1, -1)])
def test_veto_output_is_the_hull_of_the_value_and_to(lo, hi, to):
    out, problems = veto(RuleInput({"value": (JType("score", lo, hi),)}, {"to": to}))
    assert problems == []
    assert (out.lo, out.hi) == (min(lo, to), max(hi, to))
