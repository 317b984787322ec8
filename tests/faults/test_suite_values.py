"""Every value of an audit suite is checked before anything runs: a number
that is not finite or out of range, or a value of the wrong type, in any
field, is an error naming the suite's line (exit 2), never a traceback or
a silent default."""

from __future__ import annotations

import pytest
from audit.helpers import GSM8K_ITEMS, GSM8K_JUDGE
from click.testing import CliRunner

from rubriclang.audit.suite import _MODEL_KEYS, SuiteError, load_suite
from rubriclang.cli.main import cli

JUDGE = f'judge = "{GSM8K_JUDGE}"\n'
HEAD = f'items = "{GSM8K_ITEMS}"\n'
BACKENDS = ("judge", "generator", "validator")
FLOATS = [("", "tolerance")] + [(t, k) for t in BACKENDS for k in ("temperature", "timeout")]
INTS = [("", k) for k in ("repeats", "seed", "limit", "concurrency")] + [
    (t, k) for t in BACKENDS for k in ("seed", "max_tokens", "max_retries")
]
# A value of the right type for each top-level scalar field (others: tables, lists).
RIGHT: dict[str, type | tuple[type, ...]] = {
    "annotations": str,
    "recorded": str,
    "repeats": int,
    "tolerance": (int, float),
    "seed": int,
    "positive": bool,
    "gold": bool,
    "limit": int,
    "concurrency": int,
}
WRONG = {"[1, 2]": list, "{ a = 1 }": dict, '"text"': str, "true": bool, "1979-05-27": None, "2.5": float, "7": int}


def _suite(tmp_path, table: str, line: str):
    """(path, `path:N:` of `line`): `line` in [table], or at the top level."""
    if table == "judge":
        text, n = f'{HEAD}[judge]\n{line}\ngraph = "{GSM8K_JUDGE}"\n', 3
    elif table:
        text, n = f"{JUDGE}{HEAD}[{table}]\n{line}\n", 4
    else:
        text, n = f"{JUDGE}{HEAD}{line}\n", 3
    path = tmp_path / "suite.toml"
    path.write_text(text, encoding="utf-8")
    return path, f"{path}:{n}"


def _refused(tmp_path, table, line, message=""):
    path, where = _suite(tmp_path, table, line)
    with pytest.raises(SuiteError) as info:
        load_suite(str(path))
    assert info.value.where == where and message in info.value.message, (info.value.where, info.value.message)


@pytest.mark.parametrize("value", ["nan", "+nan", "-nan", "inf", "+inf", "-inf"])
@pytest.mark.parametrize(("table", "key"), FLOATS)
def test_a_number_that_is_not_finite_is_refused_at_its_line(tmp_path, table, key, value):
    _refused(tmp_path, table, f"{key} = {value}", "must be a finite number")


@pytest.mark.parametrize(("table", "key"), FLOATS + INTS)
def test_a_number_out_of_range_is_refused_at_its_line(tmp_path, table, key):
    _refused(tmp_path, table, f"{key} = -5", f"`{key}` must be")
    big = "1e300" if (table, key) in FLOATS else str(2**62)
    if key != "tolerance":  # any finite tolerance is meaningful
        _refused(tmp_path, table, f"{key} = {big}", f"`{key}` must be")


@pytest.mark.parametrize("value", list(WRONG))
@pytest.mark.parametrize("key", list(RIGHT))
def test_a_top_level_value_of_the_wrong_type_is_refused_at_its_line(tmp_path, key, value):
    kind, right = WRONG[value], RIGHT[key]
    if kind is not None and (kind is right or (isinstance(right, tuple) and kind in right)):
        return  # the right type: range and existence checks are tested elsewhere
    _refused(tmp_path, "", f"{key} = {value}")


@pytest.mark.parametrize("value", ["[1, 2]", "{ a = 1 }", "1979-05-27", "true"])
@pytest.mark.parametrize("key", list(_MODEL_KEYS))
@pytest.mark.parametrize("table", BACKENDS)
def test_a_backend_value_of_the_wrong_type_is_refused_at_its_line(tmp_path, table, key, value):
    _refused(tmp_path, table, f"{key} = {value}", f"`{key}` must be")


@pytest.mark.parametrize("value", ["[1, 2]", '["a"]', "[[1]]", "5", '"x"', "[{ name = 1 }]"])
def test_custom_operators_that_are_not_tables_are_refused_at_their_line(tmp_path, value):
    _refused(tmp_path, "", f"custom = {value}")


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "true", '"0.1"'])
def test_an_operator_option_that_is_not_a_finite_number_in_range_is_refused(tmp_path, value):
    _refused(tmp_path, "options.typo_noise", f"rate = {value}", "`rate` must be")


def test_dotted_and_inline_backend_tables_name_the_line_too(tmp_path):
    path = tmp_path / "suite.toml"
    for line in ("generator.timeout = inf", "validator = { temperature = nan }"):
        path.write_text(f"{JUDGE}{HEAD}{line}\n", encoding="utf-8")
        with pytest.raises(SuiteError) as info:
            load_suite(str(path))
        assert info.value.where == f"{path}:3"


@pytest.mark.parametrize(
    "line", ["tolerance = nan", "custom = [1, 2]", "[judge]\ntemperature = nan", "[judge]\ntimeout = inf"]
)
def test_rbg_audit_refuses_a_bad_suite_value_with_exit_2_and_writes_nothing(tmp_path, line):
    table, _, line = line.rpartition("\n")
    path, where = _suite(tmp_path, table.strip("[]"), line)
    result = CliRunner().invoke(cli, ["audit", str(path), "--out", str(tmp_path / "out")], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert f"Error: {where}: " in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()
