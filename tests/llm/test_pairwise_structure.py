"""Pairwise over structure (issue 26 item 6): `llm.compare` and the pairwise
readout when the two candidates are conversations (two agent runs of one
task) or JSON. Both candidates reach the prompt as the deterministic default
rendering of their declared kind, in the order shown; a template can walk
each run's turns; recorded judgments, replay and the audit's position swap
work over them as over text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubriclang.audit.perturb.deterministic import position_swap
from rubriclang.audit.variants import apply_changes
from rubriclang.checker import check_source
from rubriclang.cli.main import cli
from rubriclang.interp.items import item_from_json
from rubriclang.items.render import json_text, render
from rubriclang.items.shape import FieldSpec
from rubriclang.llm.prompting import render as render_prompt

from .fault_server import FaultServer

CONVERSATION = FieldSpec("response", "conversation")


def _call(cid: str, name: str, args: dict) -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


RUN_A = [
    {"role": "user", "content": "Book me a flight to Paris on May 1."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [_call("c1", "search_flights", {"to": "CDG", "day": "05-01"})],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "[AF123, AF456]"},
    {"role": "assistant", "content": None, "tool_calls": [_call("c2", "book", {"flight": "AF123"})]},
    {"role": "tool", "tool_call_id": "c2", "content": "booked"},
    {"role": "assistant", "content": [{"type": "text", "text": "Booked AF123."}]},
]
RUN_B = [
    {"role": "user", "content": "Book me a flight to Paris on May 1."},
    {"role": "assistant", "content": "Which airport do you prefer?"},
]
PAIRS = [
    {"id": "task-1", "input": "Book a flight to Paris.", "responses": [["run_a", RUN_A], ["run_b", RUN_B]]},
    {"id": "task-2", "input": "Book a flight to Paris.", "responses": [["run_b", RUN_B], ["run_a", RUN_A]]},
]

HEAD = """rubric agent_runs {{ version = 1 }}
item {{ input: text, response: {kind} }}
contract {{ scale = score[0, 1] }}
"""
BUILTIN = (
    HEAD
    + """criterion better: score[0, 1] = llm.compare {{
  question = "Which agent run completes the task better?"
  order = {order}
}}
sink better
readout pairwise {{ epsilon = 0.1, resolve = tie }}
"""
)
# A template that walks each run's turns and calls (run A) and shows run B's default rendering.
WALK = """## user
Task: {{input}}

Run A:
{{#response_a}}
{{index}}. {{role}}: {{content}}
{{#tool_calls}}
   call {{name}} {{arguments}}
{{/tool_calls}}
{{/response_a}}

Run B:
{{response_b}}

Which run is better? [[A]], [[B]] or [[C]] for a tie.
"""
WALKING = (
    HEAD
    + """criterion better: score[0, 1] = llm.compare {{
  prompt = "walk.md"
  answer = pattern("\\\\[\\\\[(A|B|C)\\\\]\\\\]", {{ A: first, B: second, C: tie }})
  order = {order}
}}
sink better
readout pairwise {{ epsilon = 0.1, resolve = tie }}
"""
)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)


def rbg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def _items(folder: Path, rows: list[dict]) -> Path:
    return _write(folder, "items.jsonl", "".join(json.dumps(r) + "\n" for r in rows))


def prefers_first(body: dict) -> str:
    """A position-biased judge: whatever it is shown first wins."""
    return json.dumps({"reason": "the first run", "preference": "A"})


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_checker_accepts_a_pairwise_rubric_over_conversations_and_json():
    for kind in ("conversation", "json"):
        result = check_source(BUILTIN.format(kind=kind, order="both"), "agent_runs.rbg")
        assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics


def test_compare_shows_both_runs_rendered_as_conversations_in_each_order(tmp_path):
    graph = _write(tmp_path, "judge.rbg", BUILTIN.format(kind="conversation", order="both"))
    items = _items(tmp_path, PAIRS[:1])
    with FaultServer(answer=prefers_first) as server:
        r = rbg("run", graph, items, "--out", tmp_path / "t.jsonl", "--base-url", server.url, "--no-cache")
        assert r.exit_code == 0, r.output
        prompts = sorted(c.json["messages"][-1]["content"] for c in server.chats)
    a, b = render(CONVERSATION, RUN_A), render(CONVERSATION, RUN_B)
    assert "[tool call c1] search_flights(" in a and "[tool result c2]\nbooked" in a
    # Each order shows both renderings, byte for byte, the one shown first first.
    firsts = sorted((p.index(a) < p.index(b)) for p in prompts)
    assert firsts == [False, True]
    (rec,) = _records(tmp_path / "t.jsonl")
    calls = rec["criteria"]["better"]["run_a"]["raw"]["calls"]
    assert [c["order"] for c in calls] == [["run_a", "run_b"], ["run_b", "run_a"]]
    # The position-biased judge's preference changes with the order: a tie, as MT-Bench counts it.
    assert rec["criteria"]["better"]["run_a"]["value"] == 0.5 and rec["readout"]["decision"] == "tie"


def test_a_template_walks_each_runs_turns_and_tool_calls(tmp_path):
    _write(tmp_path, "walk.md", WALK)
    graph = _write(tmp_path, "judge.rbg", WALKING.format(kind="conversation", order="as_given"))
    items = _items(tmp_path, PAIRS)
    with FaultServer(answer=lambda body: "[[A]]") as server:
        r = rbg("run", graph, items, "--out", tmp_path / "t.jsonl", "--base-url", server.url, "--no-cache")
        assert r.exit_code == 0, r.output
        shown = {c.json["messages"][-1]["content"] for c in server.chats}
    walked_a = (
        "1. user: Book me a flight to Paris on May 1.\n"
        "2. assistant: \n"
        '   call search_flights {"to": "CDG", "day": "05-01"}\n'
        "3. tool: [AF123, AF456]\n"
        "4. assistant: \n"
        '   call book {"flight": "AF123"}\n'
        "5. tool: booked\n"
        "6. assistant: Booked AF123.\n"
    )
    # task-1 shows run_a as A (walked) and run_b as B (rendered); task-2 the other way round.
    assert any(walked_a in p and render(CONVERSATION, RUN_B) in p for p in shown)
    assert any("1. user: Book me a flight to Paris on May 1.\n2. assistant: Which airport" in p for p in shown)
    decisions = [r["readout"]["decision"] for r in _records(tmp_path / "t.jsonl")]
    assert decisions == ["run_a", "run_b"]  # the first shown wins: run_a in task-1, run_b in task-2


def test_json_candidates_reach_the_prompt_as_indented_json(tmp_path):
    graph = _write(tmp_path, "judge.rbg", BUILTIN.format(kind="json", order="as_given"))
    x, y = {"answer": "Paris", "confidence": 0.9}, {"answer": ["Lyon", "<b>Nice</b>"]}
    items = _items(tmp_path, [{"id": "j", "input": "Capital of France?", "responses": {"x": x, "y": y}}])
    with FaultServer(answer=prefers_first) as server:
        r = rbg("run", graph, items, "--out", tmp_path / "t.jsonl", "--base-url", server.url, "--no-cache")
        assert r.exit_code == 0, r.output
        (prompt,) = [c.json["messages"][-1]["content"] for c in server.chats]
    assert prompt.index(json_text(x)) < prompt.index(json_text(y))
    assert _records(tmp_path / "t.jsonl")[0]["readout"]["decision"] == "x"


def test_the_same_items_render_byte_identical_prompts_and_replay_decides_the_same(tmp_path):
    graph = _write(tmp_path, "judge.rbg", BUILTIN.format(kind="conversation", order="both"))
    items = _items(tmp_path, PAIRS)
    bodies, hashes = [], []
    for n in range(2):
        out = tmp_path / f"t{n}.jsonl"
        with FaultServer(answer=prefers_first) as server:
            assert rbg("run", graph, items, "--out", out, "--base-url", server.url, "--no-cache").exit_code == 0
            bodies.append(sorted(json.dumps(c.json["messages"]) for c in server.chats))
        hashes.append([r["criteria"]["better"][c]["prompt_hash"] for r in _records(out) for c in r["candidates"]])
    assert bodies[0] == bodies[1] and hashes[0] == hashes[1]
    replayed = rbg("replay", graph, tmp_path / "t0.jsonl", "--items", items)
    assert replayed.exit_code == 0, replayed.output


def test_recorded_judgments_judge_conversation_candidates_with_no_call(tmp_path):
    source = HEAD.format(kind="conversation") + (
        'criterion done: score[0, 1] = recorded.value { key = "task_done" }\n'
        "sink done\nreadout pairwise { epsilon = 0.1, resolve = tie }\n"
    )
    graph = _write(tmp_path, "judge.rbg", source)
    rows = [{**PAIRS[0], "recorded": {"run_a": {"task_done": 1}, "run_b": {"task_done": 0}}}]
    r = rbg("run", graph, _items(tmp_path, rows), "--out", tmp_path / "t.jsonl")
    assert r.exit_code == 0, r.output
    (rec,) = _records(tmp_path / "t.jsonl")
    assert rec["readout"]["decision"] == "run_a"
    assert {c: rec["criteria"]["done"][c]["value"] for c in ("run_a", "run_b")} == {"run_a": 1, "run_b": 0}


def test_the_position_swap_shows_the_runs_swapped_with_their_structure_kept(tmp_path):
    _write(tmp_path, "walk.md", WALK)
    path = _write(tmp_path, "judge.rbg", WALKING.format(kind="conversation", order="as_given"))
    graph = check_source(path.read_text(encoding="utf-8"), str(path)).graph
    assert graph is not None
    criterion = graph.criteria[0]
    item = item_from_json(PAIRS[0], "items.jsonl:1", 1, graph.item_shape)
    # As the audit's position_swap does: the candidates' texts in the other order, ids kept.
    swapped = apply_changes(item, {"candidates": position_swap([list(c) for c in item.candidates.items()])})
    assert swapped.candidate_ids == ("run_b", "run_a") and swapped.fields == item.fields
    before = render_prompt(criterion, item, item.candidate_ids).request.messages[-1]["content"]
    after = render_prompt(criterion, swapped, swapped.candidate_ids).request.messages[-1]["content"]
    run_a_walked = "6. assistant: Booked AF123."
    assert re.search("Run A:\n1. user", before) and run_a_walked in before.split("Run B:")[0]
    assert render(CONVERSATION, RUN_A) in after.split("Run B:")[1]  # run_a is now shown second, as rendered
    assert "2. assistant: Which airport" in after.split("Run B:")[0]


def test_a_malformed_run_is_refused_at_its_line_and_path_before_any_call(tmp_path):
    graph = _write(tmp_path, "judge.rbg", BUILTIN.format(kind="conversation", order="both"))
    broken = [RUN_B[0], {"role": "tool", "tool_call_id": "nowhere", "content": "?"}]
    items = _items(tmp_path, [PAIRS[0], {**PAIRS[1], "responses": [["run_b", broken], ["run_a", RUN_A]]}])
    with FaultServer(answer=prefers_first) as server:
        r = rbg("run", graph, items, "--out", tmp_path / "t.jsonl", "--base-url", server.url, "--no-cache")
        assert not server.chats
    assert r.exit_code == 2
    assert "items.jsonl:2" in r.output and "responses.run_b[1].tool_call_id" in r.output
