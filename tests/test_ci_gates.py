"""CI gates (docs/ci.md): `rbg eval --fail-under/--fail-if` and `rbg audit
--fail-if` pass, fail (exit 4), fail on what was not measured, and refuse
what they cannot read (exit 2, at the option), in text and in JSON."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO_ROOT
from evaluation.judges import BOOL, ORDINAL, pointwise, write, write_items
from hypothesis import given
from hypothesis import strategies as st

from rubriclang.cli.gates import GATE_FAILED, Gate, GateError, check_audit, fail_under, parse
from rubriclang.cli.main import cli

GSM8K = REPO_ROOT / "examples" / "gsm8k"


def rbg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


# --- the expression ----------------------------------------------------------------


def test_a_gate_reads_name_scope_comparison_threshold_and_bound():
    assert parse("accuracy<0.8") == Gate("accuracy", None, "<", 0.8, "value")
    assert parse(" invariant.flip_rate [typo_noise] > 0.05 @high ") == Gate(
        "invariant.flip_rate", "typo_noise", ">", 0.05, "high"
    )
    assert parse("invariant.flip_rate[*]") == Gate("invariant.flip_rate", "*")
    assert fail_under("kappa=0.4@low") == Gate("kappa", None, "<", 0.4, "low")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("accuracy<=0.8", "not `<=`"),
        ("accuracy=0.8", "not `=`"),
        ("accuracy<high", "`high` is not a number"),
        ("accuracy<nan", "finite number"),
        ("accuracy<inf", "finite number"),
        ("accuracy<0.8@mid", "`@mid` is not a bound"),
        ("flip_rate[]>0.1", "the brackets are empty"),
        ("0.8<accuracy", "cannot read"),
        ("", "cannot read"),
    ],
)
def test_a_malformed_gate_says_what_is_wrong(text, says):
    with pytest.raises(GateError) as exc:
        parse(text)
    assert says in exc.value.message


@pytest.mark.parametrize("text", ["accuracy", "accuracy>0.8", "=0.8", "accuracy=0.8@top"])
def test_a_malformed_floor_is_refused(text):
    with pytest.raises(GateError):
        fail_under(text)


names = st.from_regex(r"[a-z_][a-z0-9_]{0,8}(\.[a-z_][a-z0-9_]{0,8}){0,2}", fullmatch=True)


@given(
    names,
    st.none() | st.from_regex(r"[a-z*][a-z0-9_.:]{0,8}", fullmatch=True),
    st.sampled_from("<>"),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["value", "low", "high"]),
)
def test_a_gate_written_canonically_reads_back_as_itself(name, scope, op, threshold, bound):
    gate = Gate(name, scope, op, threshold, bound)
    assert parse(gate.text()) == gate


# --- rbg eval ------------------------------------------------------------------------


@pytest.fixture
def bool_judge(tmp_path) -> tuple[Path, Path]:
    """A bool judge right on 9 of 10 items."""
    rows = [pointwise(i, True, good=i != 0) for i in range(10)]
    return write(tmp_path / "ok.rbg", BOOL), write_items(tmp_path / "items.jsonl", rows)


def test_eval_passes_a_gate_it_meets_and_prints_it(bool_judge):
    r = rbg("eval", *bool_judge, "--fail-under", "accuracy=0.8")
    assert r.exit_code == 0, r.output
    assert "Gates (" in r.output
    assert "pass  accuracy<0.8  (pointwise, `ok`) 0.900 [0.596, 0.982] (n 10, coverage 1.000)" in r.output


def test_eval_fails_a_gate_under_its_floor_with_exit_4(bool_judge):
    r = rbg("eval", *bool_judge, "--fail-under", "accuracy=0.95", "--fail-under", "accuracy=0.8")
    assert r.exit_code == GATE_FAILED == 4
    assert "FAIL  accuracy<0.95" in r.output and "pass  accuracy<0.8" in r.output
    assert "Error: gate `accuracy<0.95` failed (pointwise, `ok`): the point estimate 0.900 is under 0.95" in r.stderr


def test_eval_gate_on_the_lower_bound_reads_the_wilson_interval(bool_judge):
    # 9/10 is over 0.8, but its interval's lower bound (0.596) is not.
    r = rbg("eval", *bool_judge, "--fail-under", "accuracy=0.8@low", "--format", "json")
    assert r.exit_code == 4
    (gate,) = json.loads(r.stdout)["gates"]
    assert gate == {
        "gate": "accuracy<0.8@low",
        "figure": "accuracy",
        "where": "pointwise, `ok`",
        "compare": "<",
        "threshold": 0.8,
        "bound": "low",
        "value": 0.9,
        "low": gate["low"],
        "high": gate["high"],
        "n": 10,
        "coverage": 1.0,
        "passed": False,
        "why": f"the interval's lower bound {gate['low']:.3f} is under 0.8",
    }
    assert math.isclose(gate["low"], 0.596, abs_tol=1e-3)


def test_eval_gate_on_a_baseline_column_by_its_name(bool_judge):
    r = rbg("eval", *bool_judge, "--fail-if", "accuracy[equal baseline]<0.95")
    assert r.exit_code == 4
    assert "(pointwise, `equal baseline`)" in r.output


def test_eval_gate_without_a_baseline_reads_the_graph(bool_judge):
    r = rbg("eval", *bool_judge, "--baseline", "none", "--fail-under", "accuracy=0.8")
    assert r.exit_code == 0, r.output
    assert "pass  accuracy<0.8  (pointwise, `ok`)" in r.output


def test_eval_json_has_no_gates_key_without_gates(bool_judge):
    r = rbg("eval", *bool_judge, "--format", "json")
    assert r.exit_code == 0 and "gates" not in json.loads(r.stdout)


def test_eval_gate_on_an_undefined_figure_fails_as_not_measured(tmp_path):
    # Every decision true: precision is defined, kappa is not (chance agreement 1).
    rows = [pointwise(i, True, good=True) for i in range(6)]
    graph, items = write(tmp_path / "ok.rbg", BOOL), write_items(tmp_path / "items.jsonl", rows)
    r = rbg("eval", graph, items, "--fail-under", "kappa=0.1", "--fail-under", "precision=0.5")
    assert r.exit_code == 4
    assert "FAIL  kappa<0.1  (pointwise, `ok`) not measured: undefined on the 6 scored items" in r.output
    assert "pass  precision<0.5" in r.output


def test_eval_gate_with_no_item_scored_fails_as_not_measured(tmp_path):
    rows = [pointwise(0, True, good=True), pointwise(1, None, good=True)]
    graph = write(tmp_path / "ok.rbg", BOOL)
    items = write_items(tmp_path / "items.jsonl", rows)
    traces = tmp_path / "none.jsonl"
    traces.write_text("", encoding="utf-8")  # judged nothing: the one item with gold is not scored
    r = rbg("eval", graph, items, "--traces", traces, "--fail-under", "accuracy=0.1")
    assert r.exit_code == 4, r.output
    assert "not measured: no item was scored (of 2;" in r.output


def test_eval_gate_failure_wins_over_min_coverage(tmp_path):
    rows = [pointwise(0, True, good=False), pointwise(1, True, good=None)]
    graph, items = write(tmp_path / "ok.rbg", BOOL), write_items(tmp_path / "items.jsonl", rows)
    r = rbg("eval", graph, items, "--min-coverage", "0.9", "--fail-under", "accuracy=0.5")
    assert r.exit_code == 4
    assert "below --min-coverage" in r.stderr and "gate `accuracy<0.5` failed" in r.stderr


def test_eval_unknown_metric_is_refused_with_did_you_mean_and_the_readouts_metrics(tmp_path):
    graph = write(tmp_path / "ord.rbg", ORDINAL)
    items = write_items(tmp_path / "items.jsonl", [pointwise(0, 3, q=3)])
    r = rbg("eval", graph, items, "--fail-under", "kendall_tau=0.3")
    assert r.exit_code == 2
    assert "Invalid value for '--fail-under': unknown metric `kendall_tau`" in r.stderr
    assert "(did you mean `kendall`?)" in r.stderr
    assert "exact, within_1, mae, pearson, spearman, kendall" in r.stderr
    assert "Traceback" not in r.output


def test_eval_unknown_column_is_refused(bool_judge):
    r = rbg("eval", *bool_judge, "--fail-if", "accuracy[okk]<0.5")
    assert r.exit_code == 2
    assert "unknown column `okk` (did you mean `ok`?)" in r.stderr


def test_eval_refuses_a_floor_on_a_figure_where_lower_is_better(tmp_path):
    graph = write(tmp_path / "ord.rbg", ORDINAL)
    items = write_items(tmp_path / "items.jsonl", [pointwise(i, 3, q=3 + i % 2) for i in range(4)])
    r = rbg("eval", graph, items, "--fail-under", "mae=0.5")
    assert r.exit_code == 2
    assert "--fail-if 'mae>0.5'" in r.stderr
    r = rbg("eval", graph, items, "--fail-if", "mae>0.4")
    assert r.exit_code == 4 and "FAIL  mae>0.4" in r.output


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--fail-under", "accuracy", "write METRIC=VALUE"),
        ("--fail-if", "accuracy", "has no threshold"),
        ("--fail-if", "accuracy<x", "`x` is not a number"),
    ],
)
def test_eval_malformed_gate_is_a_usage_error_at_the_option(bool_judge, option, value, says):
    r = rbg("eval", *bool_judge, option, value)
    assert r.exit_code == 2
    assert f"Invalid value for '{option}'" in r.stderr and says in r.stderr


# --- rbg audit -----------------------------------------------------------------------


@pytest.fixture
def suite(tmp_path) -> Path:
    """A GSM8K audit, 4 items, 2 repeats: typos (invariant) and a cut answer (directional)."""
    rows = (GSM8K / "items.jsonl").read_text(encoding="utf-8").splitlines()[:4]
    (tmp_path / "items.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    path = tmp_path / "suite.toml"
    path.write_text(
        f'judge = "{GSM8K / "rubric.rbg"}"\nitems = "items.jsonl"\nrepeats = 2\nseed = 0\n'
        'operators = ["typo_noise", "partial_completion"]\n[options.typo_noise]\nfields = ["response"]\n',
        encoding="utf-8",
    )
    return path


def test_audit_gates_pass_fail_and_hold_rates_to_the_repeat_noise(suite, tmp_path):
    r = rbg(
        "audit",
        suite,
        "--out",
        tmp_path / "a",
        "--fail-if",
        "invariant.flip_rate[*]",
        "--fail-if",
        "repeat_flip_rate>0.1",
        "--fail-if",
        "directional.detection_rate[partial_completion]<0.9",
        "--format",
        "json",
    )
    assert r.exit_code == 4, r.output
    gates = {g["gate"]: g for g in json.loads(r.stdout)["gates"]}
    noise = gates["invariant.flip_rate[*]"]
    assert noise["where"] == "by_operator.typo_noise" and noise["passed"] and noise["threshold"] is None
    assert noise["why"].startswith("within the repeat noise: excess_over_noise +0.000 [")
    assert gates["repeat_flip_rate>0.1"]["passed"] and gates["repeat_flip_rate>0.1"]["coverage"] == 1.0
    detection = gates["directional.detection_rate[partial_completion]<0.9"]
    assert not detection["passed"] and detection["where"] == "by_operator.partial_completion"
    assert "Error: gate `directional.detection_rate[partial_completion]<0.9` failed" in r.stderr
    # report.json is the audit's, gates or not.
    assert "gates" not in json.loads((tmp_path / "a" / "report.json").read_text(encoding="utf-8"))


def test_audit_text_prints_each_gate_and_exits_0_when_all_pass(suite, tmp_path):
    r = rbg("audit", suite, "--out", tmp_path / "a", "--fail-if", "gold.accuracy<0.5")
    assert r.exit_code == 0, r.output
    assert "  pass  gold.accuracy<0.5  (metrics) 1.000 [" in r.output


@pytest.mark.parametrize(
    ("gate", "says"),
    [
        (
            "invariant_flip_rate>0.1",
            "unknown figure `invariant_flip_rate` in an audit report (did you mean `invariant.flip_rate`?)",
        ),
        (
            "invariant.flip_rate[typo_nosie]>0.1",
            "unknown operator `typo_nosie` (the suite's operators) (did you mean `typo_noise`?)",
        ),
        ("repeat_flip_rate", "has no threshold, and no rule from the repeat noise"),
        ("invariant.flip_rate[surface:outptu]>0", "unknown surface `outptu`"),
        ("repeat_flip_rate[typo_noise]>0.1", "unknown figure `repeat_flip_rate` in the scope `[typo_noise]`"),
        ("repeat_flip_rate>=0.1", "not `>=`"),
    ],
)
def test_audit_gate_that_names_nothing_is_refused_before_the_audit_runs(suite, tmp_path, gate, says):
    r = rbg("audit", suite, "--out", tmp_path / "a", "--fail-if", gate)
    assert r.exit_code == 2
    assert "Invalid value for '--fail-if'" in r.stderr and says in r.stderr
    assert not (tmp_path / "a").exists()


def test_audit_gates_with_estimate_are_refused(suite):
    r = rbg("audit", suite, "--estimate", "--fail-if", "repeat_flip_rate>0.1")
    assert r.exit_code == 2 and "nothing for --fail-if to gate" in r.stderr


def _rate(value, low, high, failed=0):
    total = 0 if value is None else 10
    return {
        "value": value,
        "low": low,
        "high": high,
        "n": 5,
        "count": 0,
        "total": total,
        "failed": failed,
        "coverage": None if total + failed == 0 else total / (total + failed),
    }


def _report(invariant=None, by_operator=None, operators=()):
    return {
        "metrics": {"repeat_flip_rate": _rate(None, None, None), "invariant": invariant, "directional": None},
        "by_operator": by_operator or {},
        "by_surface": {},
        "by_criterion": {},
        "operators": [{"name": n} for n in operators],
    }


def test_an_unmeasured_rate_fails_its_gate_loudly():
    report = _report(invariant={"flip_rate": _rate(None, None, None, failed=3), "excess_over_noise": None})
    results = check_audit([parse("repeat_flip_rate>0.1"), parse("invariant.flip_rate>0.1")], report)
    assert [r.passed for r in results] == [False, False]
    assert results[1].why == "not measured: no unit was measured (3 failed)"


def test_the_noise_rule_needs_the_repeat_noise_and_fails_without_it():
    # One repeat: no repeat noise, so no excess over it.
    estimate = {"value": None, "low": None, "high": None, "n": 0}
    report = _report(invariant={"flip_rate": _rate(0.2, 0.1, 0.4), "excess_over_noise": estimate})
    (r,) = check_audit([parse("invariant.flip_rate")], report)
    assert not r.passed and "needs 2 repeats or more" in r.why


def test_the_noise_rule_fails_on_flips_beyond_the_repeat_noise_only():
    above = {"value": 0.3, "low": 0.05, "high": 0.5, "n": 5}
    inside = {"value": 0.1, "low": -0.05, "high": 0.3, "n": 5}
    report = _report(
        by_operator={
            "a": {"invariant": {"excess_over_noise": above}},
            "b": {"invariant": {"excess_over_noise": inside}},
            "c": {"invariant": None, "directional": {}},
        },
    )
    results = check_audit([parse("invariant.flip_rate[*]")], report)
    assert [(r.where, r.passed) for r in results] == [("by_operator.a", False), ("by_operator.b", True)]
    assert "flips beyond the repeat noise: excess_over_noise +0.300 [+0.050, +0.500] lies above 0" in results[0].why


def test_every_operator_gate_fails_when_no_operator_measured_the_figure():
    (r,) = check_audit([parse("directional.detection_rate[*]<0.5")], _report())
    assert not r.passed and r.why == "not measured: no operator of the audit has `directional.detection_rate`"


def test_a_gate_on_an_operator_that_did_not_run_fails():
    (r,) = check_audit([parse("invariant.flip_rate[typo_noise]>0.1")], _report(operators=["typo_noise"]))
    assert not r.passed and "operator `typo_noise` did not run" in r.why
