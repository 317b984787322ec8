"""The known judges of examples/judges/: MT-Bench's prompts reach the server
as FastChat writes them, the pairwise judge shows both answers in the order
its graph asks for, `order = both` turns a position-following verdict into a
tie, the decomposed judge's veto overrides the side-by-side preference, and
every audit suite loads with a judge that fits its items; every ported
judge (these and the structured ones of examples/bfcl, tau_bench, begin,
faithdial and ragchecker) has a suite naming only operators that apply to
it. The judges' calls go to a scripted loopback server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubriclang.audit.applicability import why_skipped
from rubriclang.audit.judge import judge_info
from rubriclang.audit.suite import load_suite
from rubriclang.checker import check_source
from rubriclang.cli.main import cli
from rubriclang.interp.items import read_items
from rubriclang.items.shape import shape_of

from .fault_server import FaultServer

ROOT = Path(__file__).resolve().parents[2]
JUDGES = ROOT / "examples" / "judges"
PAIRS = ROOT / "examples" / "audit" / "llmbar_mt_bench.jsonl"
DATA = ROOT.parent / "shared" / "data"
# FastChat prompt name -> the example graph that ports it
FASTCHAT = {"single-v1": "mt_bench_single", "pair-v2": "mt_bench_pair"}


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def rbg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def first_position_judge(body: dict) -> str:
    """Always prefers the answer shown first; rates every answer 7."""
    if "[[rating]]" in body["messages"][-1]["content"]:
        return "A fine answer. Rating: [[7]]"
    return "Assistant A is better. [[A]]"


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


@pytest.mark.skipif(not DATA.is_dir(), reason="the shared data folder is not here")
@pytest.mark.parametrize("name", sorted(FASTCHAT))
def test_the_request_carries_fastchats_prompt_filled_as_fastchat_fills_it(name, tmp_path):
    prompt = next(p for p in map(json.loads, (DATA / "mt_bench" / "judge_prompts.jsonl").open()) if p["name"] == name)
    item = json.loads(PAIRS.read_text("utf-8").splitlines()[0])
    a, b = item["responses"].values()
    if name == "single-v1":
        items = tmp_path / "one.jsonl"
        items.write_text(json.dumps({"id": "q", "input": item["input"], "response": a}) + "\n", encoding="utf-8")
        user = prompt["prompt_template"].format(question=item["input"], answer=a)
    else:
        items = tmp_path / "one.jsonl"
        items.write_text(json.dumps(item) + "\n", encoding="utf-8")
        user = prompt["prompt_template"].format(question=item["input"], answer_a=a, answer_b=b)
    with FaultServer(answer=first_position_judge) as server:
        r = rbg(
            "run",
            JUDGES / f"{FASTCHAT[name]}.rbg",
            items,
            "--out",
            tmp_path / "t.jsonl",
            "--base-url",
            server.url,
            "--no-cache",
        )
        assert r.exit_code == 0, r.output
        messages = server.chats[0].json["messages"]
    assert messages == [{"role": "system", "content": prompt["system_prompt"]}, {"role": "user", "content": user}]


def test_the_pairwise_judge_follows_a_position_biased_server_and_order_both_makes_it_a_tie(tmp_path):
    lines = PAIRS.read_text("utf-8").splitlines(keepends=True)[:4]
    items = tmp_path / "pairs.jsonl"
    items.write_text("".join(lines), encoding="utf-8")
    firsts = [json.loads(line)["responses"]["output_1"] for line in lines]
    seconds = [json.loads(line)["responses"]["output_2"] for line in lines]
    decisions = {}
    for graph in ("mt_bench_pair", "mt_bench_pair_both"):
        with FaultServer(answer=first_position_judge) as server:
            r = rbg(
                "run",
                JUDGES / f"{graph}.rbg",
                items,
                "--out",
                tmp_path / f"{graph}.jsonl",
                "--base-url",
                server.url,
                "--no-cache",
            )
            assert r.exit_code == 0, r.output
            found = [
                re.search(r"Assistant A's Answer\]\n(.*?)\n\[The End", c.json["messages"][-1]["content"], re.S)
                for c in server.chats
            ]
            shown = [m.group(1) for m in found if m]
            assert len(shown) == len(found)
        recs = _records(tmp_path / f"{graph}.jsonl")
        decisions[graph] = [r["readout"]["decision"] for r in recs]
        expected = sorted(firsts) if graph == "mt_bench_pair" else sorted(firsts + seconds)
        assert sorted(shown) == expected  # one call per order asked, both answers in one prompt
    assert decisions == {"mt_bench_pair": ["output_1"] * 4, "mt_bench_pair_both": ["tie"] * 4}


def test_the_single_answer_judge_reads_fastchats_rating(tmp_path):
    with FaultServer(answer=first_position_judge) as server:
        r = rbg(
            "run",
            JUDGES / "mt_bench_single.rbg",
            JUDGES / "answers.jsonl",
            "--out",
            tmp_path / "t.jsonl",
            "--base-url",
            server.url,
            "--no-cache",
        )
        assert r.exit_code == 0, r.output
    assert [rec["readout"]["decision"] for rec in _records(tmp_path / "t.jsonl")] == [7.0] * 6


def test_the_decomposed_judges_veto_overrides_the_side_by_side_preference(tmp_path):
    pair = json.loads((JUDGES / "pairs_math.jsonl").read_text("utf-8").splitlines()[0])
    harmful = pair["responses"]["a"]

    def judge(body: dict) -> str:
        user = body["messages"][-1]["content"]
        if "<response_a>" in user:  # prefers `a` in either order
            m = re.search(r"<response_a>\n(.*?)\n</response_a>", user, re.S)
            assert m, user
            first = m.group(1)
            return json.dumps({"reason": "r", "preference": "A" if first == harmful else "B"})
        m = re.search(r"<response>\n(.*?)\n</response>", user, re.S)
        assert m, user
        response = m.group(1)
        if '"answer"' in user:  # the harm check: `a` is harmful
            return json.dumps({"reason": "r", "answer": response == harmful})
        return json.dumps({"reason": "r", "score": 4})

    items = tmp_path / "one.jsonl"
    items.write_text(json.dumps(pair) + "\n", encoding="utf-8")
    with FaultServer(answer=judge) as server:
        r = rbg(
            "run",
            JUDGES / "decomposed.rbg",
            items,
            "--out",
            tmp_path / "t.jsonl",
            "--base-url",
            server.url,
            "--no-cache",
        )
        assert r.exit_code == 0, r.output
    (rec,) = _records(tmp_path / "t.jsonl")
    assert rec["criteria"]["better"]["a"]["value"] == 1.0 and rec["criteria"]["harmful"]["a"]["value"] is True
    assert rec["readout"]["decision"] == "b"


SUITES = sorted(JUDGES.glob("*.toml"))


@pytest.mark.parametrize("suite_path", SUITES, ids=[p.name for p in SUITES])
def test_every_judge_suite_loads_and_its_judge_fits_its_items(suite_path):
    suite = load_suite(str(suite_path))
    checked = check_source(Path(suite.judge).read_text("utf-8"), suite.judge)
    assert checked.graph is not None and not checked.diagnostics, checked.diagnostics
    items = list(read_items(suite.items))
    kind = judge_info(checked.graph, items, suite.positive).type
    assert kind == ("pairwise" if all(it.mode == "pairwise" for it in items) else "ordinal")
    assert any(c.procedure.startswith("llm.") for c in checked.graph.criteria)


AUDIT_SUITES = sorted((ROOT / "examples" / "audit").glob("*.toml"))
# The structured judges ported with the item shape (issue 26, item 9), beside examples/judges/.
STRUCTURED_JUDGES: tuple[str, ...] = (
    "bfcl/rubric.rbg",
    "tau_bench/rules.rbg",
    "tau_bench/rubric.rbg",
    "begin/rubric.rbg",
)
STRUCTURED_JUDGES += ("faithdial/rubric.rbg", "ragchecker/rubric.rbg")
PORTED = {(ROOT / "examples" / g).resolve() for g in STRUCTURED_JUDGES} | {p.resolve() for p in JUDGES.glob("*.rbg")}
# The suites of the ported judges (the LLMBar ones run a swap their per-candidate judge skips, on purpose).
PORTED_SUITES = [p for p in SUITES + AUDIT_SUITES if Path(load_suite(str(p)).judge).resolve() in PORTED]


def test_every_judge_graph_has_an_audit_suite():
    judged = {Path(load_suite(str(p)).judge).resolve() for p in PORTED_SUITES}
    assert sorted(str(g.relative_to(ROOT)) for g in PORTED - judged) == []


@pytest.mark.parametrize("suite_path", PORTED_SUITES, ids=[p.name for p in PORTED_SUITES])
def test_every_operator_a_ported_judges_suite_names_applies_to_its_judge(suite_path):
    suite = load_suite(str(suite_path))
    checked = check_source(Path(suite.judge).read_text("utf-8"), suite.judge)
    assert checked.graph is not None and not checked.diagnostics, checked.diagnostics
    judge = judge_info(checked.graph, list(read_items(suite.items, shape_of(checked.graph))), suite.positive)
    skipped = {name: why_skipped(suite.perturbation(name), judge) for name in suite.requested()}
    assert {name: why for name, why in skipped.items() if why} == {}


def test_a_reply_the_pattern_cannot_read_is_asked_again_for_the_templates_format_not_json(tmp_path):
    items = tmp_path / "pairs.jsonl"
    items.write_text(PAIRS.read_text("utf-8").splitlines(keepends=True)[0], encoding="utf-8")
    replies = iter(["Both answers are fine.", "Assistant B is better. [[B]]"])
    with FaultServer(answer=lambda body: next(replies)) as server:
        r = rbg(
            "run",
            JUDGES / "mt_bench_pair.rbg",
            items,
            "--out",
            tmp_path / "t.jsonl",
            "--base-url",
            server.url,
            "--no-cache",
        )
        assert r.exit_code == 0, r.output
        retry = server.chats[1].json["messages"]
    assert [m["role"] for m in retry] == ["system", "user", "assistant", "user"]
    assert retry[2]["content"] == "Both answers are fine."
    note = retry[3]["content"]
    assert "format asked for above" in note and "JSON" not in note
    assert _records(tmp_path / "t.jsonl")[0]["readout"]["decision"] == "output_2"
