"""`rbg audit cheaper`: each LLM criterion re-judged alone on a cheaper
model profile, the others replayed from the traces, against its repeat
noise on its own profile, with the cost each side spent (issue 28.4).
Two scripted loopback "models": the cheap one deviates on one criterion."""

from __future__ import annotations

import json

import pytest
from audit.helpers import Scripted, user_text
from click.testing import CliRunner

from rubriclang.cli.main import cli

JUDGE = """\
rubric profiled { version = 1 }
contract { scale = bool }
criterion correct: bool = llm.check { question = "Is the final answer right?" model = "strong" }
criterion clear: bool = llm.check { question = "Is the response clear?" model = "strong" }
node both = reduce.all(inputs: [correct, clear])
sink both
readout pointwise { output = bool }
"""

ITEMS = [{"id": f"i{k}", "input": f"What is {k} + {k}?", "response": f"It is {2 * k}."} for k in range(6)]


def _strong(role, body) -> str:
    return json.dumps({"reason": "strong", "answer": True})


def _cheap(role, body) -> str:
    # Wrong on correctness, as the strong model on clarity.
    return json.dumps({"reason": "cheap", "answer": "final answer" not in user_text(body)})


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    strong, cheap = Scripted(_strong), Scripted(_cheap)
    (tmp_path / "judge.rbg").write_text(JUDGE)
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(it) + "\n" for it in ITEMS))
    (tmp_path / "rubriclang.toml").write_text(
        f'[models.strong]\nbase_url = "{strong.url}"\nmodel = "scripted"\n'
        f'[models.cheap]\nbase_url = "{cheap.url}"\nmodel = "scripted-mini"\n'
        '[prices."scripted"]\nprompt = 10.0\ncompletion = 30.0\n'
        '[prices."scripted-mini"]\nprompt = 1.0\ncompletion = 2.0\n'
    )
    run = rbg("run", tmp_path / "judge.rbg", tmp_path / "items.jsonl", "--out", tmp_path / "t.jsonl", "--no-cache")
    assert run.exit_code == 0, run.output
    yield tmp_path, strong, cheap
    strong.close()
    cheap.close()


def rbg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def cheaper(tmp_path, *args):
    return rbg(
        "audit",
        "cheaper",
        tmp_path / "judge.rbg",
        tmp_path / "items.jsonl",
        "--traces",
        tmp_path / "t.jsonl",
        "--profile",
        "cheap",
        *args,
    )


def test_the_criterion_the_cheaper_model_gets_wrong_flips_every_verdict_and_the_other_none(project):
    tmp_path, strong, cheap = project
    before = len(strong.requests)
    result = cheaper(tmp_path, "--no-cache", "--repeats", "2", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    by = {c["criterion"]: c for c in doc["criteria"]}
    assert doc["schema"] == "rubriclang.cheaper/1" and doc["items"] == 6 and doc["repeats"] == 2
    correct, clear = by["correct"], by["clear"]
    assert (correct["flip_rate"]["flipped"], correct["flip_rate"]["measured"]) == (12, 12)
    assert correct["flip_rate"]["value"] == 1.0 and correct["flip_rate"]["low"] < 1.0  # Wilson, honest at 100%
    assert (clear["flip_rate"]["flipped"], clear["flip_rate"]["measured"]) == (0, 12)
    assert clear["flip_rate"]["high"] > 0.0  # and at 0%
    # The strong model repeats itself: no repeat noise, measured on every unit.
    for c in (correct, clear):
        assert (c["repeat_noise"]["flipped"], c["repeat_noise"]["measured"], c["repeat_noise"]["coverage"]) == (
            0,
            12,
            1.0,
        )
    assert correct["excess_over_noise"]["low"] > 0 and clear["excess_over_noise"]["low"] <= 0
    # Each side's calls: 6 items x 2 repeats, each to its own server; priced by model.
    assert len(strong.requests) - before == 24 and len(cheap.requests) == 24
    assert correct["usage"]["own"]["calls"] == correct["usage"]["cheaper"]["calls"] == 12
    assert (correct["model"], correct["cheaper_model"]) == ("scripted", "scripted-mini")
    own, mini = correct["usage"]["own"], correct["usage"]["cheaper"]
    assert own["usd"] == round((own["prompt_tokens"] * 10 + own["completion_tokens"] * 30) / 1e6, 6)
    assert correct["saved"]["usd"] == round(own["usd"] - mini["usd"], 6) > 0
    assert {b["seed"] for b in cheap.requests} == {1, 2}  # repeats 1..N: seed + r


def test_the_text_table_names_each_criterion_with_its_flips_noise_and_saving(project):
    tmp_path, _, _ = project
    result = cheaper(tmp_path, "--no-cache", "--repeats", "1")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    row = next(line for line in lines if line.startswith("correct "))
    assert "6/6 100.0% [" in row and "0/6 0.0% [" in row and "$" in row
    assert any(line.startswith("clear ") and "0/6 0.0% [" in line for line in lines)


def test_costs_answered_from_the_call_cache_are_not_claimed_as_saved(project):
    tmp_path, _, _ = project
    assert cheaper(tmp_path, "--repeats", "1").exit_code == 0
    again = json.loads(cheaper(tmp_path, "--repeats", "1", "--format", "json").output)
    for c in again["criteria"]:
        assert c["saved"] is None and c["usage"]["own"]["calls"] == 0 and c["usage"]["own"]["usd"] is None
        assert c["flip_rate"]["measured"] == 6  # the figures are the same from the cache


def test_a_profile_the_config_lacks_is_an_error_naming_it(project):
    tmp_path, strong, _ = project
    before = len(strong.requests)
    result = rbg(
        "audit", "cheaper", tmp_path / "judge.rbg", tmp_path / "items.jsonl", "--traces", tmp_path / "t.jsonl",
        "--profile", "tiny",
    )  # fmt: skip
    assert result.exit_code == 2 and "[models.tiny]" in result.output and "rubriclang.toml" in result.output
    assert "Traceback" not in result.output and len(strong.requests) == before


def test_an_unknown_criterion_and_traces_of_another_graph_are_refused(project):
    tmp_path, _, _ = project
    result = cheaper(tmp_path, "--criterion", "tone")
    assert result.exit_code == 2 and "no LLM criterion `tone`" in result.output and "`correct`" in result.output
    (tmp_path / "judge.rbg").write_text(JUDGE.replace("Is the response clear?", "Is it short?"))
    result = cheaper(tmp_path, "--no-cache")
    assert result.exit_code == 2 and "t.jsonl:1:" in result.output and "redefined" in result.output


def test_items_whose_traced_judgment_failed_are_left_out_and_counted(project):
    tmp_path, _, cheap = project
    graph = JUDGE.replace(
        "node both",
        'criterion matches: bool? = llm.check {\n  question = "Does it match the reference?"\n'
        '  with_reference = true\n  on_error = abstain\n  model = "strong"\n}\nnode both',
    )
    (tmp_path / "ref.rbg").write_text(graph)
    items = [dict(it, reference=f"{2 * k}") if k % 2 else it for k, it in enumerate(ITEMS)]
    (tmp_path / "ref.jsonl").write_text("".join(json.dumps(it) + "\n" for it in items))
    run = rbg("run", tmp_path / "ref.rbg", tmp_path / "ref.jsonl", "--out", tmp_path / "ref.traces", "--no-cache")
    assert run.exit_code == 0, run.output
    before = len(cheap.requests)
    result = rbg(
        "audit", "cheaper", tmp_path / "ref.rbg", tmp_path / "ref.jsonl", "--traces", tmp_path / "ref.traces",
        "--profile", "cheap", "--criterion", "matches", "--repeats", "1", "--no-cache", "--format", "json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (matches,) = json.loads(result.output)["criteria"]
    # The 3 items without a reference: nothing to compare with, and no call made for them.
    assert matches["unjudged_items"] == 3 and matches["flip_rate"]["measured"] + matches["flip_rate"]["failed"] == 3
    assert len(cheap.requests) - before == 3


def test_a_graph_without_llm_criteria_is_refused(project):
    tmp_path, _, _ = project
    (tmp_path / "rules.rbg").write_text(
        "rubric rules { version = 1 }\ncontract { scale = bool }\n"
        "criterion short: bool = rule.length { over = 100 }\n"
        "sink short\nreadout pointwise { output = bool }\n"
    )
    result = rbg(
        "audit", "cheaper", tmp_path / "rules.rbg", tmp_path / "items.jsonl", "--traces", tmp_path / "t.jsonl",
        "--profile", "cheap",
    )  # fmt: skip
    assert result.exit_code == 2 and "has no LLM criterion" in result.output and "Traceback" not in result.output
