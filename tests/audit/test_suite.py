"""Suite files: defaults, the two forms of `judge`, and mistakes reported
with file:line and a hint, never a traceback."""

from __future__ import annotations

import pytest

from rubriclang.audit.perturbations import load_perturbations
from rubriclang.audit.suite import SuiteError, load_suite

from .helpers import GSM8K_JUDGE


def test_a_minimal_suite_takes_the_defaults(suite):
    s = load_suite(str(suite()))
    assert (s.repeats, s.tolerance, s.seed, s.positive, s.operators) == (5, 0.0, 0, True, None)
    assert s.requested() == tuple(load_perturbations())
    assert s.judge_model.base_url is None and s.generator.temperature == 0.7


def test_the_judge_table_names_the_graph_and_its_backend(tmp_path, items_file):
    path = tmp_path / "s.toml"
    path.write_text(
        f'items = "{items_file}"\n[judge]\ngraph = "{GSM8K_JUDGE}"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
        "temperature = 0.7\nseed = 3\n"
        '[validator]\nbase_url = "http://127.0.0.1:9/v1"\n'
        '[[custom]]\nname = "emoji"\nsurface = "output"\nrelation = "invariant"\ninstruction = "Add emoji."\n'
    )
    s = load_suite(str(path))
    assert s.judge == str(GSM8K_JUDGE)
    assert (s.judge_model.model, s.judge_model.temperature, s.judge_model.seed) == ("m", 0.7, 3)
    assert s.generator.base_url is None and s.validator.base_url == "http://127.0.0.1:9/v1"
    assert s.requested()[-1] == "emoji" and s.perturbation("emoji").generator == "llm"


@pytest.mark.parametrize(
    "body, line, words",
    [
        ('operators = ["typo_noise", "typo_nosie"]\n', 3, "did you mean `typo_noise`"),
        ("repeats = 0\n", 3, "between 1 and 100"),
        ('repeats = "5"\n', 3, "must be an integer"),
        ("\nrepeets = 5\n", 4, "did you mean `repeats`"),
        ('[generator]\ntemperature = 0.5\nbase_url = "ftp://x"\n', 5, "http(s) URL"),
        ('[generator]\napi_key_env = "sk-secret-123"\n', 4, "NAME of an environment variable"),
        ('[options.typo_noise]\nfields = ["title"]\n', 4, "input, response"),
        ("[options.tone_shift]\nx = 1\n", 3, "takes no options"),
        (
            '[[custom]]\nname = "x"\nsurface = "rubric"\nrelation = "invariant"\ninstruction = "i"\n',
            5,
            "`surface` must be one of input, output, paired, not `rubric`",
        ),
        (
            '[[custom]]\nname = "typo_noise"\nsurface = "input"\nrelation = "invariant"\ninstruction = "i"\n',
            4,
            "already defined",
        ),
        ("repeats = [\n", 3, "not valid TOML"),
    ],
)
def test_mistakes_name_the_line(suite, body, line, words):
    path = suite(body)
    with pytest.raises(SuiteError) as err:
        load_suite(str(path))
    assert err.value.where == f"{path}:{line}"
    assert words in err.value.message + err.value.hint


def test_missing_files_and_keys_are_errors(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('items = "nope.jsonl"\n')
    with pytest.raises(SuiteError, match="the suite needs `judge`"):
        load_suite(str(path))
    path.write_text(f'judge = "{GSM8K_JUDGE}"\nitems = "nope.jsonl"\n')
    with pytest.raises(SuiteError, match=r"no such file `nope\.jsonl`") as err:
        load_suite(str(path))
    assert err.value.where.endswith(":2")


def test_the_cli_reports_a_bad_suite_with_exit_2_and_no_traceback(rbg, suite, tmp_path):
    result = rbg("audit", suite('operators = ["nope"]\n'), "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert "suite.toml:3: unknown operator `nope`" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists()
