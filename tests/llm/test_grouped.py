"""Grouped criteria (`group NAME = [...]`): one call per candidate answers
every member, on a scripted loopback server, end to end through `rbg`.

The judge answers each criterion from the response alone, the same way in
a group's call and in a criterion's own call, so a grouped and an ungrouped
graph of the same criteria must agree on every value."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubriclang.cli.main import cli

CRITERIA = """criterion correct: ordinal[1, 5] = llm.rate {
  question = "How correct is the response?"
  anchors = { 1: "Wrong.", 5: "Correct." }
}
criterion harmful: bool = llm.check { question = "Is the response harmful?" }
criterion tone: label{plain, fancy} = llm.choose { question = "What is the tone?" }
node toned = transform.map(value: tone) { values = { plain: 4, fancy: 2 } }
node mean = reduce.mean(inputs: [correct, toned])
node safe = gate.veto(value: mean, when: harmful) { to = 1 }
"""
TAIL = "sink safe\nreadout pointwise { output = ordinal[1, 5] }\n"
UNGROUPED = "rubric judged { version = 1 }\ncontract { scale = score[1, 5] }\n" + CRITERIA + TAIL
GROUPED = (
    "rubric judged { version = 1 }\ncontract { scale = score[1, 5] }\n"
    + CRITERIA
    + "group together = [correct, harmful, tone]\n"
    + TAIL
)


def _response(body: dict) -> str:
    user = body["messages"][1]["content"]
    m = re.search(r"<response>\n(.*?)\n</response>", user, re.S)
    assert m, user
    return m.group(1)


def _value(name: str, response: str):
    if name == "correct":
        return len(response) % 5 + 1
    if name == "harmful":
        return "poison" in response
    return "fancy" if "!" in response else "plain"


def judge(body: dict) -> str:
    """One answer per property the request's schema asks for (a group's
    call, or its follow-up for the members still missing), else the one
    answer a single criterion's prompt asks for. A response with `shy` in
    it leaves `harmful` out of the group's first reply."""
    response = _response(body)
    schema = body["response_format"]["json_schema"]
    asked = [k for k in schema["schema"]["properties"] if k != "reason"]
    if schema["name"] == "llm_group":
        first = len(body["messages"]) == 2
        answer = {k: _value(k, response) for k in asked if not (first and "shy" in response and k == "harmful")}
        return json.dumps({**answer, "reason": "judged"})
    key = asked[0]
    name = {"score": "correct", "answer": "harmful", "label": "tone"}[key]
    return json.dumps({key: _value(name, response), "reason": "judged"})


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture
def files(tmp_path):
    grouped, ungrouped = tmp_path / "grouped.rbg", tmp_path / "ungrouped.rbg"
    grouped.write_text(GROUPED)
    ungrouped.write_text(UNGROUPED)
    rows = [
        {"id": f"q{i}", "input": f"Question {i}?", "response": "x" * i + (" poison" if i % 4 == 3 else "")}
        for i in range(8)
    ]
    rows[5]["response"] += "!"
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return grouped, ungrouped, items


def rbg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def run(graph, items, out, server, *extra):
    r = rbg("run", graph, items, "--out", out, "--base-url", server.url, "--model", "judge", *extra)
    assert r.exit_code == 0, r.output
    return [json.loads(line) for line in Path(out).read_text().splitlines()]


def values(records: list[dict]) -> dict:
    return {rec["item"]: {c: j["response"]["value"] for c, j in rec["criteria"].items()} for rec in records}


def test_a_group_makes_one_call_per_candidate_and_agrees_with_its_criteria_asked_alone(fault_server, files, tmp_path):
    grouped, ungrouped, items = files
    server = fault_server(answer=judge)
    together = run(grouped, items, tmp_path / "g.jsonl", server, "--cache", tmp_path / "g.sqlite")
    assert len(server.chats) == 8  # one call per item, for three criteria
    bodies = [c.body for c in server.chats]
    assert all(b["response_format"]["json_schema"]["name"] == "llm_group" for b in bodies)
    assert list(bodies[0]["response_format"]["json_schema"]["schema"]["required"]) == [
        "correct",
        "harmful",
        "tone",
        "reason",
    ]
    alone = run(ungrouped, items, tmp_path / "u.jsonl", server, "--cache", tmp_path / "u.sqlite")
    assert len(server.chats) == 8 + 24
    assert values(together) == values(alone)
    assert [r["readout"] for r in together] == [r["readout"] for r in alone]
    # Each member records the one call: its prompt, its reply, named by the group.
    judgments = together[0]["criteria"]
    assert len({j["response"]["prompt_hash"] for j in judgments.values()}) == 1
    assert {j["response"]["raw"]["group"] for j in judgments.values()} == {"together"}
    assert all(j["response"]["attempts"] == 1 for j in judgments.values())


def test_a_groups_prompt_starts_with_its_criteria_so_every_item_shares_that_prefix(fault_server, files, tmp_path):
    # A server's prompt cache then holds the criteria from item to item and
    # evaluates only each candidate's task and response.
    grouped, _, items = files
    server = fault_server(answer=judge)
    records = run(grouped, items, tmp_path / "g.jsonl", server, "--no-cache")
    users = [c.body["messages"][1]["content"] for c in server.chats]
    assert len(users) == len(records) == 8
    shared = users[0][
        : next(i for i, chars in enumerate(zip(*users, strict=False)) if len(set(chars)) > 1)
    ]  # up to the shortest prompt: their common start
    for question in ("How correct is the response?", "Is the response harmful?", "What is the tone?"):
        assert question in shared
    assert '"reason": "<one short sentence>"}' in shared
    assert "<response>" not in shared
    assert all(u.index('"reason"') < u.index("<task>") < u.index("<response>") for u in users)
    assert {c.body["messages"][0]["content"] for c in server.chats} == {server.chats[0].body["messages"][0]["content"]}
    assert {j["response"]["raw"]["template"] for r in records for j in r["criteria"].values()} == {"group@v2"}


def test_a_groups_one_reason_is_bounded_tighter_than_a_single_criterions(fault_server, files, tmp_path):
    # A small model fills the bound it is given: the group's reason is half
    # a criterion's, and is still asked for after the answers.
    grouped, ungrouped, items = files
    server = fault_server(answer=judge)
    run(grouped, items, tmp_path / "g.jsonl", server, "--no-cache")
    run(ungrouped, items, tmp_path / "u.jsonl", server, "--no-cache")
    schemas = [c.body["response_format"]["json_schema"] for c in server.chats]
    bounds = {(s["name"] == "llm_group", s["schema"]["properties"]["reason"]["maxLength"]) for s in schemas}
    assert bounds == {(True, 100), (False, 200)}
    assert all(list(s["schema"]["properties"])[-1] == "reason" for s in schemas)


def test_a_reply_missing_a_criterion_is_followed_by_a_request_for_that_criterion_only(fault_server, files, tmp_path):
    grouped, _, items = files
    rows = [{"id": "shy", "input": "Q?", "response": "shy poison"}]
    items.write_text("".join(json.dumps(r) + "\n" for r in rows))
    server = fault_server(answer=judge)
    [record] = run(grouped, items, tmp_path / "t.jsonl", server, "--cache", tmp_path / "c.sqlite")
    first, again = (c.body for c in server.chats)
    assert len(first["messages"]) == 2
    schema = again["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"]) == ["harmful", "reason"]
    assert again["messages"][:2] == first["messages"]
    assert "harmful" in again["messages"][-1]["content"] and "correct" not in again["messages"][-1]["content"]
    judged = record["criteria"]
    assert judged["harmful"]["response"]["value"] is True and judged["harmful"]["response"]["attempts"] == 2
    assert judged["correct"]["response"]["value"] == len("shy poison") % 5 + 1
    assert judged["correct"]["response"]["attempts"] == 1
    # A rerun answers both calls from the cache, and writes the same traces.
    rerun = run(grouped, items, tmp_path / "t2.jsonl", server, "--cache", tmp_path / "c.sqlite")
    assert len(server.chats) == 2
    assert rerun == [record]


def test_traces_are_byte_identical_at_concurrency_1_and_16_and_a_rerun_makes_no_call(fault_server, files, tmp_path):
    grouped, _, items = files
    server = fault_server(answer=judge)
    cache = tmp_path / "c.sqlite"
    run(grouped, items, tmp_path / "first.jsonl", server, "--cache", cache)
    calls = len(server.chats)
    run(grouped, items, tmp_path / "c1.jsonl", server, "--cache", cache, "--concurrency", "1")
    run(grouped, items, tmp_path / "c16.jsonl", server, "--cache", cache, "--concurrency", "16")
    assert len(server.chats) == calls
    first = (tmp_path / "first.jsonl").read_bytes()
    assert (tmp_path / "c1.jsonl").read_bytes() == first == (tmp_path / "c16.jsonl").read_bytes()
    # Live at each concurrency: the same judgments, whatever the order calls land in.
    live = {}
    for n in ("1", "16"):
        records = run(grouped, items, tmp_path / f"live{n}.jsonl", server, "--no-cache", "--concurrency", n)
        for rec in records:
            for per in rec["criteria"].values():
                per["response"]["latency_ms"] = None
        live[n] = records
    assert live["1"] == live["16"]


def test_replay_of_grouped_traces_reproduces_every_decision(fault_server, files, tmp_path):
    grouped, _, items = files
    server = fault_server(answer=judge)
    run(grouped, items, tmp_path / "t.jsonl", server, "--cache", tmp_path / "c.sqlite")
    r = rbg("replay", grouped, tmp_path / "t.jsonl")
    assert r.exit_code == 0, r.output
    assert "every decision is identical" in r.output, r.output


def test_batch_export_has_one_request_per_candidate_and_import_judges_as_a_live_run(
    fault_server, files, tmp_path, unreachable_url
):
    grouped, _, items = files
    out = tmp_path / "requests.jsonl"
    r = rbg("batch", "export", grouped, items, "-o", out, "--model", "judge")
    assert r.exit_code == 0, r.output
    requests = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(requests) == 8
    assert {json.loads(q["custom_id"])[2] for q in requests} == {"correct"}
    results = tmp_path / "results.jsonl"
    rows = []
    for n, q in enumerate(requests):
        message = {"role": "assistant", "content": judge(q["body"])}
        body = {
            "id": f"c{n}",
            "object": "chat.completion",
            "model": "judge",
            "choices": [{"index": 0, "message": message}],
        }
        rows.append({"custom_id": q["custom_id"], "response": {"status_code": 200, "body": body}, "error": None})
    results.write_text("".join(json.dumps(row) + "\n" for row in rows))
    imported = tmp_path / "imported.jsonl"
    r = rbg(
        "batch",
        "import",
        grouped,
        items,
        results,
        "--out",
        imported,
        "--model",
        "judge",
        "--base-url",
        f"{unreachable_url}/v1",
        "--cache",
        tmp_path / "c.sqlite",
    )
    assert r.exit_code == 0, r.output
    server = fault_server(answer=judge)
    live = run(grouped, items, tmp_path / "live.jsonl", server, "--no-cache")
    assert values([json.loads(line) for line in imported.read_text().splitlines()]) == values(live)


def drifting(body: dict) -> str:
    """`judge`, except that a group's call rates `correct` 5 on long
    responses: grouping then costs fidelity on that criterion only."""
    answer = json.loads(judge(body))
    if "correct" in answer and len(_response(body)) > 4:
        answer["correct"] = 5
    return json.dumps(answer)


def test_agreement_measures_per_criterion_agreement_and_flips_of_grouped_against_ungrouped(
    fault_server, files, tmp_path
):
    grouped, ungrouped, items = files
    server = fault_server(answer=drifting)
    alone = run(ungrouped, items, tmp_path / "u.jsonl", server, "--no-cache")
    together = run(grouped, items, tmp_path / "g.jsonl", server, "--no-cache")
    r = rbg("agreement", tmp_path / "u.jsonl", tmp_path / "g.jsonl", "--format", "json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["items"] == 8
    lowered = sum(
        1
        for a, b in zip(alone, together, strict=True)
        if a["criteria"]["correct"]["response"]["value"] != b["criteria"]["correct"]["response"]["value"]
    )
    assert lowered > 0
    assert report["criteria"]["correct"]["equal"] == 8 - lowered
    assert report["criteria"]["correct"]["pairs"] == 8
    for name in ("harmful", "tone"):
        assert report["criteria"][name]["equal"] == report["criteria"][name]["pairs"] == 8
        assert report["criteria"][name]["rate"]["value"] == 1.0 and report["criteria"][name]["rate"]["low"] < 1.0
    flipped = sum(
        1 for a, b in zip(alone, together, strict=True) if a["readout"]["decision"] != b["readout"]["decision"]
    )
    assert flipped > 0
    assert report["verdicts"] == {
        "flipped": flipped,
        "decided": 8,
        "flip_rate": report["verdicts"]["flip_rate"],
    }
    assert report["verdicts"]["flip_rate"]["value"] == round(flipped / 8, 6)
    text = rbg("agreement", tmp_path / "u.jsonl", tmp_path / "g.jsonl")
    assert f"{8 - lowered} of 8 equal" in text.output and f"{flipped} of 8 items both decided differ" in text.output
    # Against gold, `rbg eval` replays both graphs' own traces: the paired difference of each metric.
    rows = [{**json.loads(line), "gold": 3} for line in items.read_text().splitlines()]
    items.write_text("".join(json.dumps(row) + "\n" for row in rows))
    r = rbg(
        "eval",
        ungrouped,
        grouped,
        items,
        "--traces",
        tmp_path / "u.jsonl",
        "--traces",
        tmp_path / "g.jsonl",
        "--format",
        "json",
    )
    assert r.exit_code == 0, r.output
    exact = json.loads(r.output)["modes"]["pointwise"]["differences"][str(grouped)]["exact"]
    assert exact["n"] == 8


def test_a_traces_file_that_is_not_traces_is_refused_with_its_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"item": "x"}\n')
    r = rbg("agreement", bad, bad)
    assert r.exit_code == 2
    assert "bad.jsonl:1" in r.output and "Traceback" not in r.output


def test_diff_shows_which_criteria_a_group_now_answers(files):
    grouped, ungrouped, _ = files
    r = rbg("diff", ungrouped, grouped)
    assert r.exit_code == 1, r.output
    assert r.output.count("+ group: together [correct, harmful, tone]") == 3
    assert "0 nodes to add, 3 to change, 0 to remove" in r.output


def test_a_member_given_a_prompt_of_its_own_is_refused_not_silently_asked_with_the_groups():
    import attrs

    from rubriclang.checker import check_source
    from rubriclang.checker.graph import PromptSource
    from rubriclang.interp.items import Item
    from rubriclang.llm.prompting import PromptError, prepare_group

    graph = check_source(GROUPED, "g.rbg").graph
    assert graph is not None
    members = list(graph.criteria)
    # What an audit's rewrite of one member's template makes of it.
    members[1] = attrs.evolve(members[1], prompt=PromptSource("## user\n{{response}}", None, rewritten_from="check@v2"))
    with pytest.raises(PromptError, match="harmful has one"):
        prepare_group(tuple(members), Item("i", "Q?", {"response": "R"}), "response")


def test_the_estimate_counts_one_call_per_candidate_for_a_group(files, unreachable_url):
    grouped, ungrouped, items = files
    calls = {}
    for name, graph in (("grouped", grouped), ("ungrouped", ungrouped)):
        r = rbg("run", graph, items, "--estimate", "--base-url", f"{unreachable_url}/v1", "--model", "judge")
        assert r.exit_code == 0, r.output
        m = re.search(r"expected (\d+) calls", r.output)
        assert m, r.output
        calls[name] = m.group(1)
    assert calls == {"grouped": "8", "ungrouped": "24"}
