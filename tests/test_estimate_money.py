"""Money in every command that calls a model: `--estimate` counts calls,
tokens and cost and contacts no server (the loopback server records every
request it gets), a model without a price is said to have none (never $0),
calls a run makes exactly are marked so, and after a run the summary says
what was spent: calls, the server's token counts, and their cost."""

from __future__ import annotations

import json

import pytest
from audit.helpers import Scripted, gsm8k_items
from click.testing import CliRunner
from faults.run_fixtures import SPEC

from rubriclang.cli.main import cli

JUDGE = """\
rubric checked { version = 1 }
contract { scale = bool }
criterion correct: bool = llm.check {
  question = "Is the response's final answer right?"
}
sink correct
readout pointwise { output = bool }
"""
PRICES = '[prices."scripted"]\nprompt = 2.0\ncompletion = 10.0\n'
NO_PRICE = "no price for model `scripted` in rubriclang.toml"
ITEMS = 3  # gsm8k_items(1): one problem's full, bare and early responses


def rbg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _usd(prompt: int, completion: int) -> float:
    return round((prompt * 2.0 + completion * 10.0) / 1e6, 6)


@pytest.fixture
def server():
    s = Scripted(lambda role, body: json.dumps({"reason": "scripted", "answer": True}))
    yield s
    s.close()


@pytest.fixture
def here(tmp_path):
    """A folder with the judge, its items (with gold) and a compile spec."""
    (tmp_path / "judge.rbg").write_text(JUDGE)
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in gsm8k_items(1)))
    (tmp_path / "spec.toml").write_text(SPEC)
    return tmp_path


def _llm(server, *extra):
    return ["--base-url", server.url, "--model", "scripted", "--max-tokens", "50", *extra]


def _spec_line(sid: str) -> dict:
    return {
        "id": sid,
        "rubric": {"name": sid, "text": "Is the answer right?"},
        "task": {"description": "Answer a question."},
        "contract": {"scale": "bool"},
    }


def _estimate(here, server, *command) -> dict:
    r = rbg(*command, "--estimate", "--format", "json")
    assert r.exit_code == 0, r.output
    assert server.requests == []  # no model was called
    assert sorted(p.name for p in here.iterdir()) == ["items.jsonl", "judge.rbg", "spec.toml"] + (
        ["rubriclang.toml"] if (here / "rubriclang.toml").exists() else []
    )  # nothing was written
    return json.loads(r.stdout)


def test_eval_estimate_counts_the_judges_calls_and_calls_no_server(here, server):
    doc = _estimate(here, server, "eval", here / "judge.rbg", here / "items.jsonl", *_llm(server))
    judge = doc["phases"]["judge"]
    assert judge["calls"] == ITEMS and judge["completion_tokens"] == ITEMS * 50
    assert judge["at_most"]["calls"] > judge["calls"] and not judge["calls_exact"]  # unreadable replies are re-asked
    assert judge["usd"] is None and NO_PRICE in judge["price_note"]
    assert doc["requests_at_most"] == judge["at_most"]["calls"] * (1 + 5)  # the default --max-retries, 5 a call


@pytest.mark.parametrize("gate", [["--fail-under", "accuracy=0.5"], ["--min-coverage", "0.5"]])
def test_eval_estimate_with_a_gate_is_refused_since_it_evaluates_nothing(here, server, gate):
    r = rbg("eval", here / "judge.rbg", here / "items.jsonl", "--estimate", *gate, *_llm(server))
    assert r.exit_code == 2 and "--estimate evaluates nothing" in r.output
    assert server.requests == []


def test_eval_estimate_of_replayed_traces_is_no_call_exactly(here, server):
    traces = here / "t.jsonl"
    traces.write_text("")
    r = rbg("eval", here / "judge.rbg", here / "items.jsonl", "--traces", traces, "--estimate", *_llm(server))
    assert r.exit_code == 0, r.output
    assert "0 calls (exact)" in r.stdout and "rbg eval --traces calls no model" in r.stdout
    assert server.requests == []


def test_fit_estimate_says_it_calls_no_model(here):
    fitted = here / "fitted.rbg"
    r = rbg("fit", here / "judge.rbg", here / "items.jsonl", "-o", fitted, "--estimate", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["phases"]["judge"]["calls"] == doc["phases"]["judge"]["at_most"]["calls"] == 0
    assert doc["phases"]["judge"]["usd"] == 0.0 and any("rbg fit calls no model" in n for n in doc["notes"])
    assert not fitted.exists()


def test_compile_estimate_bounds_the_calls_by_the_repairs_and_calls_no_server(here, server):
    (here / "rubriclang.toml").write_text(PRICES)
    r = rbg("compile", here / "spec.toml", "--repairs", "2", "--estimate", *_llm(server))
    assert r.exit_code == 0, r.output
    assert server.requests == [] and not list(here.glob("*.rbg.*"))
    assert "at most: every answer repaired, --repairs 2 times" in r.stdout
    lines = r.stdout.splitlines()
    i = next(k for k, line in enumerate(lines) if line.strip().startswith("compile"))
    assert "expected 1 calls," in lines[i] and "at most  3 calls," in lines[i + 1] and "about $" in lines[i]


def test_compile_estimate_of_many_specs_counts_those_not_compiled_yet(here, server):
    specs = here / "specs.jsonl"
    specs.write_text("".join(json.dumps(_spec_line(f"s{i}")) + "\n" for i in range(3)))
    args = ["compile", specs, "--out-dir", here / "graphs", "--repairs", "1", "--estimate", "--format", "json"]
    r = rbg(*args, *_llm(server))
    assert r.exit_code == 0, r.output
    phase = json.loads(r.stdout)["phases"]["compile"]
    assert (phase["calls"], phase["at_most"]["calls"]) == (3, 6)
    assert server.requests == [] and not (here / "graphs").exists()


def test_batch_export_estimate_is_exact_on_calls_and_matches_the_export(here, server):
    (here / "rubriclang.toml").write_text(PRICES)
    base = ["batch", "export", here / "judge.rbg", here / "items.jsonl", "-o", here / "req.jsonl", "--model"]
    est = rbg(*base, "scripted", "--max-tokens", "50", "--estimate")
    assert est.exit_code == 0, est.output
    assert not (here / "req.jsonl").exists()
    assert f"expected {ITEMS} calls (exact)" in est.stdout and "about $" in est.stdout
    assert rbg(*base, "scripted", "--max-tokens", "50").exit_code == 0
    assert len((here / "req.jsonl").read_text().splitlines()) == ITEMS


def test_run_spends_are_reported_with_their_cost_in_text_and_json(here, server):
    (here / "rubriclang.toml").write_text(PRICES)
    args = ["run", here / "judge.rbg", here / "items.jsonl", "--no-cache", *_llm(server)]
    r = rbg(*args, "--out", here / "a.jsonl", "--format", "json")
    assert r.exit_code == 0, r.output
    spent = json.loads(r.stdout)["llm"]
    # The scripted server reports 1 prompt and 1 completion token a call.
    assert (spent["calls"], spent["prompt_tokens"], spent["completion_tokens"]) == (ITEMS, ITEMS, ITEMS)
    assert spent["usd"] == _usd(ITEMS, ITEMS) and spent["price_note"] is None
    text = rbg(*args, "--out", here / "b.jsonl")
    assert f"cost ${_usd(ITEMS, ITEMS):.6f}" in text.stdout


def test_a_run_without_a_price_says_so_and_never_shows_zero_dollars(here, server):
    r = rbg("run", here / "judge.rbg", here / "items.jsonl", "--out", here / "t.jsonl", "--no-cache", *_llm(server))
    assert r.exit_code == 0, r.output
    assert f"cost unknown: {NO_PRICE}" in r.stdout and "$0" not in r.stdout


def test_eval_reports_what_it_spent_on_stderr_and_in_its_json(here, server):
    (here / "rubriclang.toml").write_text(PRICES)
    args = ["eval", here / "judge.rbg", here / "items.jsonl", "--no-cache", *_llm(server)]
    r = rbg(*args)
    assert r.exit_code == 0, r.output
    assert f"{ITEMS} calls to the server" in r.stderr and f"cost ${_usd(ITEMS, ITEMS):.6f}" in r.stderr
    spent = json.loads(rbg(*args, "--format", "json").stdout)["llm"]
    assert (spent["calls"], spent["usd"]) == (ITEMS, _usd(ITEMS, ITEMS))


def test_compile_reports_what_it_spent_even_when_it_fails_and_the_bound_held(here, server):
    args = ["compile", here / "spec.toml", "-o", here / "out.rbg", "--repairs", "1", *_llm(server)]
    bound = json.loads(rbg(*args, "--estimate", "--format", "json").stdout)["phases"]["compile"]["at_most"]
    # The scripted server never answers with a program: the first ask and one repair are spent.
    r = rbg(*args, "--no-cache")
    assert r.exit_code == 1, r.output
    assert len(server.requests) == bound["calls"] == 2
    assert "2 calls to the server" in r.stderr and f"cost unknown: {NO_PRICE}" in r.stderr


def test_compile_many_puts_what_it_spent_in_its_json_summary(here, server):
    (here / "rubriclang.toml").write_text(PRICES)
    specs = here / "specs.jsonl"
    specs.write_text(json.dumps(_spec_line("a")) + "\n")
    args = ["compile", specs, "--out-dir", here / "graphs", "--repairs", "0", "--no-cache", "--format", "json"]
    r = rbg(*args, *_llm(server))
    assert r.exit_code == 1, r.output  # the spec failed: no program in the answer
    spent = json.loads(r.stdout)["llm"]
    assert (spent["calls"], spent["usd"]) == (1, _usd(1, 1))


def test_run_estimate_of_a_folder_of_compiled_graphs_asks_only_the_items_with_a_graph(tmp_path, server):
    from llm.fault_server import FaultServer
    from llm.test_compile_many import scripted, spec_line, write_specs

    plan = {"alpha": "good", "beta": "good", "gamma": "bad"}
    specs = write_specs(tmp_path / "specs.jsonl", [spec_line(s) for s in plan])
    graphs = tmp_path / "graphs"
    with FaultServer(scripted(plan)) as compiler:
        assert rbg("compile", specs, "--out-dir", graphs, "--base-url", compiler.url, "--repairs", "0").exit_code == 1
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"id": i, "input": f"x {i}", "response": "y"}) + "\n" for i in plan))
    r = rbg("run", graphs, items, "--out", tmp_path / "t.jsonl", "--estimate", "--format", "json", *_llm(server))
    assert r.exit_code == 0, r.output
    # alpha and beta are judged by their own graph's one LLM criterion; gamma has no graph, so no call.
    assert json.loads(r.stdout)["phases"]["judge"]["calls"] == 2
    assert server.requests == [] and not (tmp_path / "t.jsonl").exists()
