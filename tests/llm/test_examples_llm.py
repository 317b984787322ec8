"""The MT-Bench and Prometheus examples: their graphs check clean and are
formatted, their item files parse and match what the builder makes from the
shared data, the per-item rubric reaches the Prometheus judge's prompt, and a
small run against a scripted loopback server writes a trace per item."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner

from rubriclang.checker import Criterion, check_source
from rubriclang.cli.main import cli
from rubriclang.fmt import format_source
from rubriclang.interp.items import read_items
from rubriclang.llm.prompting import prometheus_rubric, render

ROOT = Path(__file__).resolve().parents[2]
MT_BENCH = ROOT / "examples" / "mt_bench"
PROMETHEUS = ROOT / "examples" / "prometheus"
DATA = ROOT.parent / "shared" / "data"
GRAPHS = [
    MT_BENCH / "rubric.rbg",
    PROMETHEUS / "direct.rbg",
    PROMETHEUS / "rubric.rbg",
    PROMETHEUS / "direct_pairwise.rbg",
]
IDS = [str(p.relative_to(ROOT / "examples")) for p in GRAPHS]


def rbg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def judge(body: dict) -> str:
    """A scripted judge: ratings follow the response's length; nothing is
    harmful or a refusal unless the response says "I cannot". Prometheus's
    prompt is answered in Prometheus's format."""
    user = body["messages"][1]["content"]
    if user.startswith("###Task Description:"):
        found = re.search(r"###Response to evaluate:\n(.*?)\n\n###", user, re.S)
        assert found, user
        response = found.group(1)
        return f"The response meets the rubric in part. [RESULT] {len(response) % 5 + 1}"
    found = re.search(r"<response>\n(.*?)\n</response>", user, re.S)
    assert found, user
    response = found.group(1)
    if '"answer"' in user:
        return json.dumps({"reason": "checked", "answer": "I cannot" in response})
    return json.dumps({"reason": "rated", "score": len(response) % 5 + 1})


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.mark.parametrize("path", GRAPHS, ids=IDS)
def test_example_graph_checks_clean_and_is_formatted(path: Path):
    text = path.read_text("utf-8")
    result = check_source(text, str(path))
    assert [f"{d.span.line}:{d.span.column} {d.code} {d.message}" for d in result.diagnostics] == []
    assert result.graph is not None
    assert format_source(text, str(path)).output == text


def test_mt_bench_items_are_80_turn_1_answers_with_references_where_mt_bench_has_them():
    items = list(read_items(str(MT_BENCH / "items.jsonl")))
    assert len(items) == 80 and all(it.mode == "pointwise" for it in items)
    assert sum(it.reference is not None for it in items) == 30
    assert all(it.gold is None for it in items)  # no released judgment of these answers
    models = {it.id.split("-", 2)[2] for it in items}
    assert models == {"alpaca-13b", "claude-v1", "gpt-3.5-turbo", "gpt-4", "llama-13b", "vicuna-13b-v1.3"}


def test_mt_bench_pairs_carry_the_human_preference_as_a_candidate_id():
    items = list(read_items(str(MT_BENCH / "items_pairwise.jsonl")))
    assert len(items) == 68
    assert all(it.mode == "pairwise" and it.candidate_ids == ("a", "b") and it.gold in ("a", "b") for it in items)


def test_prometheus_items_carry_the_instruction_their_own_rubric_and_a_rounded_gpt4_gold():
    items = list(read_items(str(PROMETHEUS / "items.jsonl")))
    assert len(items) == 320 and {it.gold for it in items} == {1, 2, 3, 4, 5}
    for it in items:
        assert it.input.startswith("Here is a previous dialogue") and it.input.endswith("Assistant: ")
        assert it.rubric is not None
        rubric = it.rubric.splitlines()
        assert rubric[0].startswith("[") and [line[:8] for line in rubric[1:]] == [f"Score {k}:" for k in range(1, 6)]
        assert it.reference


@pytest.mark.skipif(not DATA.is_dir(), reason="the shared data folder is not here")
def test_the_builder_reproduces_the_item_files_byte_for_byte(tmp_path):
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_mt_bench.py"), "--data", str(DATA), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    for name in (
        "mt_bench/items.jsonl",
        "mt_bench/items_pairwise.jsonl",
        "mt_bench/items_multi_turn.jsonl",
        "mt_bench/items_pairwise_multi_turn.jsonl",
        "prometheus/items.jsonl",
    ):
        assert (tmp_path / name).read_bytes() == (ROOT / "examples" / name).read_bytes(), name


@pytest.mark.skipif(not DATA.is_dir(), reason="the shared data folder is not here")
def test_the_direct_judges_prompts_are_the_prometheus_datas_prompts():
    crit = _direct_criterion()
    records = json.loads((DATA / "prometheus" / "mt_bench_eval.json").read_text("utf-8"))
    shown = {f"pm-{r['idx']}-{r['response_source']}": r["instruction"] for r in records}
    for item in read_items(str(PROMETHEUS / "items.jsonl")):
        user = render(crit, item, "response").request.messages[1]["content"]
        # Prometheus 1's data words step 3 "Feedback: (write ..."; prometheus-eval,
        # whose wording the template keeps, drops "Feedback: ". The template
        # format trims the blank after the last "###Feedback:".
        assert user + " " == shown[item.id].replace('"Feedback: (write a feedback', '"(write a feedback'), item.id


def test_the_direct_judges_own_rubric_is_question_81s():
    crit = _direct_criterion()
    item = next(it for it in read_items(str(PROMETHEUS / "items.jsonl")) if it.id.startswith("pm-81-"))
    assert prometheus_rubric(crit, attrs.evolve(item, rubric=None)) == item.rubric


def _first_items(src: Path, dest: Path, ids: list[str] | None = None, n: int = 0) -> Path:
    lines = src.read_text("utf-8").splitlines(keepends=True)
    chosen = [ln for ln in lines if json.loads(ln)["id"] in ids] if ids else lines[:n]
    dest.write_text("".join(chosen), encoding="utf-8")
    return dest


def test_a_small_mt_bench_run_writes_a_trace_per_item(fault_server, tmp_path):
    server = fault_server(answer=judge)
    # Questions 81-86 have no reference; 101-104 have one (MT-Bench's math and reasoning).
    ids = ["mtb-81-alpaca-13b", "mtb-82-claude-v1", "mtb-101-gpt-3.5-turbo", "mtb-102-gpt-4"]
    items = _first_items(MT_BENCH / "items.jsonl", tmp_path / "items.jsonl", ids)
    out = tmp_path / "traces.jsonl"
    r = rbg(
        "run",
        MT_BENCH / "rubric.rbg",
        items,
        "--out",
        out,
        "--base-url",
        server.url,
        "--model",
        "judge",
        "--no-cache",
        "--format",
        "json",
    )
    assert r.exit_code == 0, r.output
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [rec["item"] for rec in records] == ids
    assert all(rec["readout"]["status"] == "ok" and rec["readout"]["decision"] in range(1, 6) for rec in records)
    # The reference criterion is asked only where there is a reference; elsewhere it abstains.
    has_reference = {it.id: it.reference is not None for it in read_items(str(items))}
    assert list(has_reference.values()) == [False, False, True, True]
    for rec in records:
        j = rec["criteria"]["matches_reference"]["response"]
        if has_reference[rec["item"]]:
            assert j["error"] is None and j["value"] in range(1, 6)
        else:
            assert j["value"] is None and "no `reference`" in j["error"]
    assert len(server.chats) == 4 * 5 + 2  # five LLM criteria per item, the reference one on two items


def test_the_per_item_rubric_and_reference_reach_the_direct_judges_prometheus_prompt(fault_server, tmp_path):
    server = fault_server(answer=judge)
    items = _first_items(PROMETHEUS / "items.jsonl", tmp_path / "items.jsonl", n=2)
    out = tmp_path / "t.jsonl"
    r = rbg("run", PROMETHEUS / "direct.rbg", items, "--out", out, "--base-url", server.url, "--no-cache")
    assert r.exit_code == 0, r.output
    assert len(server.chats) == 2 and all(
        "response_format" not in c.body for c in server.chats
    )  # Prometheus writes free text
    prompts = [c.body["messages"][1]["content"] for c in server.chats]
    for item in read_items(str(items)):
        shown = (
            f"###The instruction to evaluate:\n{item.input}\n\n###Response to evaluate:\n"
            f"{item.candidates['response']}\n\n"
        )
        prompt = next(p for p in prompts if shown in p)  # calls run concurrently, in any order
        assert prompt.endswith(
            f"###Reference Answer (Score 5):\n{item.reference}\n\n###Score Rubrics:\n{item.rubric}\n\n###Feedback:"
        )
    for rec in map(json.loads, out.read_text().splitlines()):
        j = rec["criteria"]["rubric_score"]["response"]
        assert j["raw"]["template"] == "prometheus@v1" and j["raw"]["text"].endswith(f"[RESULT] {j['value']}")


def test_the_decomposed_graph_reuses_the_direct_judges_calls_from_the_cache(fault_server, tmp_path):
    server = fault_server(answer=judge)
    items = _first_items(PROMETHEUS / "items.jsonl", tmp_path / "items.jsonl", n=2)
    cache = tmp_path / "calls.sqlite"
    for graph in ("direct.rbg", "rubric.rbg"):
        r = rbg(
            "run",
            PROMETHEUS / graph,
            items,
            "--out",
            tmp_path / f"{graph}.jsonl",
            "--base-url",
            server.url,
            "--cache",
            cache,
            "--format",
            "json",
        )
        assert r.exit_code == 0, r.output
    # The rubric criterion is the same criterion in both graphs: the same two calls.
    usage = json.loads(r.stdout)["llm"]
    assert (usage["calls"], usage["cache_hits"]) == (2 * 5, 2)


def test_the_direct_judge_on_pairs_reads_equal_scores_as_no_decision(fault_server, tmp_path):
    # The scripted judge rates by length: two equally long answers tie.
    pair = {"id": "p", "input": "Q?", "responses": {"a": "xxxx", "b": "yyyy"}, "gold": "a"}
    longer = {"id": "q", "input": "Q?", "responses": {"a": "xxx", "b": "yyyy"}, "gold": "b"}
    items = tmp_path / "pairs.jsonl"
    items.write_text("".join(json.dumps(x) + "\n" for x in (pair, longer)))
    server = fault_server(answer=judge)
    r = rbg(
        "eval", PROMETHEUS / "direct_pairwise.rbg", items, "--base-url", server.url, "--no-cache", "--format", "json"
    )
    assert r.exit_code == 0, r.output
    figures = json.loads(r.stdout)["modes"]["pairwise"]
    graph = figures["metrics"][json.loads(r.stdout)["columns"][0]["name"]]
    assert figures["scored"] == 2 and graph["coverage"]["value"] == 0.5
    assert graph["agreement_without_ties"]["value"] == 1.0 and graph["agreement_without_ties"]["n"] == 2


def test_the_prometheus_template_reads_the_final_result_and_rejects_one_out_of_range():
    from rubriclang.llm.parsing import parse

    source = (
        "rubric p { version = 1 }\ncontract { scale = ordinal[1, 5] }\n"
        'criterion c: ordinal[1, 5] = llm.rate { question = "Q?", template = prometheus }\n'
        "sink c\nreadout pointwise { output = ordinal[1, 5] }\n"
    )
    result = check_source(source, "p.rbg")
    assert result.graph is not None, result.diagnostics
    crit = result.graph.criteria[0]
    feedback = "The response meets Score 3: it revises the answer but misses two points. [RESULT] 3"
    assert (parse(crit, feedback).value, parse(crit, feedback).error) == (3, None)
    assert parse(crit, "Feedback: good, not Score 5 material. [RESULT] 4\n").value == 4
    assert parse(crit, "An excellent answer. [RESULT] 7").error is not None
    assert parse(crit, "An excellent answer, score 5.").error is not None  # no [RESULT]


def _direct_criterion() -> Criterion:
    graph = check_source((PROMETHEUS / "direct.rbg").read_text("utf-8"), "direct.rbg").graph
    assert graph is not None
    return graph.criteria[0]
