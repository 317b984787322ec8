"""The judges of the structured-data examples (examples/bfcl, tau_bench,
begin, faithdial, ragchecker, and MT-Bench's multi-turn judges) check clean
and keep their measured figures.

The rules-only judges run over every item here (no model); their figures
are the ones docs/results.md reports, pinned in tests/real_figures.json
(scripts/pin_real_figures.py rewrites the pins).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from pinned import assert_pinned

import rubriclang
from rubriclang.checker import check_source
from rubriclang.cli.main import cli
from rubriclang.evaluation.evaluate import evaluate, graph_columns
from rubriclang.evaluation.gold import read_gold
from rubriclang.interp.items import read_items
from rubriclang.interp.local import LocalBackend
from rubriclang.llm.prompting import render

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
DATA = ROOT.parent / "shared" / "data"


class Judged:
    """A rules-only example graph run over all its items."""

    def __init__(self, folder: str, graph: str):
        path = EXAMPLES / folder / graph
        self.rubric = rubriclang.load(str(path), backends=[LocalBackend()])
        self.items = list(read_items(str(EXAMPLES / folder / "items.jsonl"), self.rubric.graph.item_shape))
        self.results = self.rubric.evaluate_many(self.items)
        self.records = [r.record for r in self.results]

    def pointwise(self):
        g = self.rubric.graph
        columns = graph_columns(g, g.name, [(r.item.id, r.mode, r.composition) for r in self.results])
        return evaluate(g, self.items, read_gold(self.items, g, "items.jsonl"), columns).modes["pointwise"]


@pytest.fixture(scope="module")
def bfcl() -> Judged:
    return Judged("bfcl", "rubric.rbg")


@pytest.fixture(scope="module")
def tau_rules() -> Judged:
    return Judged("tau_bench", "rules.rbg")


def test_bfcl_accepts_every_accepted_call_and_refuses_every_corrupted_one(bfcl):
    assert len(bfcl.records) == 298
    decided = {rec["item"]: rec["readout"]["decision"] for rec in bfcl.records}
    assert [i.id for i in bfcl.items if decided[i.id] is not i.gold] == []
    report = bfcl.pointwise()
    assert len(report.scored) == 298 and report.left_out == ()
    assert_pinned("bfcl.accuracy", report.metrics["bfcl_call"]["accuracy"].value, 3)


def test_bfcl_names_the_mismatch_each_corruption_makes(bfcl):
    # Each corruption kind of scripts/build_bfcl.py against the kind of the
    # first mismatch the rule reports (its `raw`).
    seen: Counter[tuple[str, str]] = Counter()
    for rec, item in zip(bfcl.records, bfcl.items, strict=True):
        judged = rec["criteria"]["accepted"]["response"]
        corruption = item.id.split("-", 1)[1]
        seen[(corruption, judged["raw"]["kind"] if not judged["value"] else "match")] += 1
    assert seen == {
        ("accepted", "match"): 60,
        ("wrong_function", "name"): 60,
        ("wrong_value", "value"): 58,
        ("missing_argument", "missing_argument"): 60,
        ("extra_argument", "unexpected_argument"): 60,
    }
    for (corruption, kind), n in seen.items():
        assert_pinned(f"bfcl.{corruption}.{kind}", n)


def test_tau_bench_rules_only_judge_agrees_with_the_reward_as_measured(tau_rules):
    report = tau_rules.pointwise()
    assert len(report.scored) == 32 and report.left_out == ()
    accuracy = report.metrics["tau_bench_rules"]["accuracy"]
    assert_pinned("tau_bench.rules.accuracy", accuracy.value, 3)
    assert_pinned("tau_bench.rules.accuracy.low", accuracy.low, 3)
    assert_pinned("tau_bench.rules.accuracy.high", accuracy.high, 3)
    assert_pinned("tau_bench.rules.kappa", report.metrics["tau_bench_rules"]["kappa"].value, 3)


# --- MT-Bench's two-turn judges, word for word ------------------------------------


def _fastchat(name: str) -> dict:
    prompts = map(json.loads, (DATA / "mt_bench" / "judge_prompts.jsonl").read_text("utf-8").splitlines())
    return next(p for p in prompts if p["name"] == name)


def _judge(graph: str):
    path = EXAMPLES / "judges" / graph
    checked = check_source(path.read_text("utf-8"), str(path))
    assert checked.graph is not None
    (criterion,) = checked.graph.criteria
    return checked.graph, criterion


def _turns(conversation: list[dict]) -> tuple[str, str, str, str]:
    assert [m["role"] for m in conversation] == ["user", "assistant", "user", "assistant"]
    q1, a1, q2, a2 = (m["content"] for m in conversation)
    return q1, a1, q2, a2


@pytest.mark.skipif(not DATA.is_dir(), reason="the shared data folder is not here")
def test_the_two_turn_single_judge_sends_fastchats_prompt_filled_as_fastchat_fills_it():
    prompt = _fastchat("single-v1-multi-turn")
    graph, criterion = _judge("mt_bench_single_multi_turn.rbg")
    items = list(read_items(str(EXAMPLES / "mt_bench" / "items_multi_turn.jsonl"), graph.item_shape))
    assert len(items) == 80
    for item in items:
        q1, a1, q2, a2 = _turns(item.fields["response"]["response"])
        user = prompt["prompt_template"].format(question_1=q1, answer_1=a1, question_2=q2, answer_2=a2)
        messages = render(criterion, item, "response").request.messages
        # Each message is sent stripped: FastChat's system prompt ends with a blank line.
        assert list(messages) == [
            {"role": "system", "content": prompt["system_prompt"].strip()},
            {"role": "user", "content": user},
        ], item.id


@pytest.mark.skipif(not DATA.is_dir(), reason="the shared data folder is not here")
def test_the_two_turn_pairwise_judge_sends_fastchats_prompt_in_each_order_it_asks():
    prompt = _fastchat("pair-v2-multi-turn")
    graph, criterion = _judge("mt_bench_pair_multi_turn.rbg")
    items = list(read_items(str(EXAMPLES / "mt_bench" / "items_pairwise_multi_turn.jsonl"), graph.item_shape))
    assert len(items) == 80
    for item in items:
        for first, second in (("a", "b"), ("b", "a")):
            q1, a1, q2, a2 = _turns(item.fields["response"][first])
            r1, b1, r2, b2 = _turns(item.fields["response"][second])
            assert (q1, q2) == (r1, r2)
            user = prompt["prompt_template"].format(
                question_1=q1, question_2=q2, answer_a_1=a1, answer_a_2=a2, answer_b_1=b1, answer_b_2=b2
            )
            messages = render(criterion, item, (first, second)).request.messages
            assert list(messages) == [
                {"role": "system", "content": prompt["system_prompt"].strip()},
                {"role": "user", "content": user},
            ], (item.id, first)


# --- LLM judges: figures of their recorded runs on the embedded model -------------------
# The runs are recorded in each folder's traces_smollm2.jsonl (`rbg run` with no
# --base-url, on a slice of the items: docs/results.md); `rbg eval --traces`
# replays them, so the figures are exact, and say nothing of judging quality.

RECORDED = {
    "begin": "begin_groundedness",
    "faithdial": "faithdial_groundedness",
    "ragchecker": "ragchecker_pairwise",
    "tau_bench": "tau_bench_trajectory",
}


@pytest.mark.parametrize("folder", sorted(RECORDED))
def test_a_recorded_llm_judge_replays_to_its_figure_over_the_judged_slice(folder):
    d = EXAMPLES / folder
    r = CliRunner().invoke(
        cli,
        [
            "eval",
            str(d / "rubric.rbg"),
            str(d / "items.jsonl"),
            "--traces",
            str(d / "traces_smollm2.jsonl"),
            "--format",
            "json",
        ],
    )
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    mode = next(iter(report["modes"].values()))
    records = [json.loads(line) for line in (d / "traces_smollm2.jsonl").open(encoding="utf-8")]
    judged = sum(rec["readout"]["status"] == "ok" for rec in records)
    # Every item decided in the recorded run is scored (a failed judgment is left out and
    # said); the others are left out as not judged, never counted.
    assert mode["scored"] == judged and RECORDED[folder] in mode["left_out"]["counts"]["not judged"]
    # A pairwise judge's agreement counts ties as a class; its coverage is the share it decided.
    for metric in ("agreement", "coverage") if mode["kind"] == "pairwise" else ("accuracy",):
        figure = mode["metrics"][RECORDED[folder]][metric]
        assert_pinned(f"{folder}.smollm2.n", figure["n"])
        for part in ("value", "low", "high"):
            assert_pinned(f"{folder}.smollm2.{metric}.{part}", figure[part], 3)


def test_a_section_over_a_conversation_shows_a_role_section_only_for_turns_of_that_role():
    from rubriclang.items.render import template_value
    from rubriclang.items.shape import FieldSpec
    from rubriclang.template import parse

    conversation = [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
        {"role": "assistant", "content": "done"},
    ]
    text = (
        "{{#response}}{{#is_system}}S{{/is_system}}{{#is_user}}U{{/is_user}}"
        "{{#is_assistant}}A{{/is_assistant}}{{#is_tool}}T{{/is_tool}}{{^is_user}}-{{/is_user}}{{/response}}"
    )
    template, problems = parse(text, "t")
    assert problems == [] and template is not None
    value = template_value(FieldSpec("response", "conversation"), conversation)
    assert template.fill({"response": value})[0]["content"] == "S-UA-T-A-"


JUDGES = {
    "begin": ("rubric.rbg",),
    "faithdial": ("rubric.rbg",),
    "ragchecker": ("rubric.rbg",),
    "tau_bench": ("rules.rbg", "rubric.rbg"),
    "bfcl": ("rubric.rbg",),
}


@pytest.mark.parametrize("folder", sorted(JUDGES))
def test_every_item_of_an_example_fits_the_shape_its_judges_declare(folder):
    for graph in JUDGES[folder]:
        path = EXAMPLES / folder / graph
        checked = check_source(path.read_text("utf-8"), str(path))
        assert checked.graph is not None and checked.graph.item_shape is not None, graph
        items = list(read_items(str(EXAMPLES / folder / "items.jsonl"), checked.graph.item_shape))
        assert len(items) == sum(1 for _ in (EXAMPLES / folder / "items.jsonl").open(encoding="utf-8"))


@pytest.mark.parametrize("name", ["mt_bench_single_multi_turn", "mt_bench_pair_multi_turn"])
def test_the_recorded_two_turn_runs_replay_to_the_decisions_they_recorded(name):
    from rubriclang.interp.replay import replay

    graph, _ = _judge(f"{name}.rbg")
    replayed = list(replay(graph, str(EXAMPLES / "judges" / f"{name}.smollm2.jsonl")))
    assert [r.item for r in replayed if r.changed] == []
    # The embedded model's replies, read with FastChat's own pattern (docs/results.md).
    statuses = Counter(r.new.status for r in replayed)
    assert_pinned(f"{name}.smollm2.judged", len(replayed))
    assert_pinned(f"{name}.smollm2.decided", statuses["ok"])


def test_a_role_section_outside_a_section_over_a_conversation_is_refused_at_its_tag():
    text = (
        "rubric r { version = 1 }\ncontract { scale = bool }\nitem { response: conversation }\n"
        'criterion ok: bool = llm.check { prompt = """\n  ## user\n  {{#is_user}}x{{/is_user}} {{response}}\n  """ }\n'
        "sink ok\nreadout pointwise { output = bool }\n"
    )
    codes = [(d.code, d.span.line) for d in check_source(text, "r.rbg").diagnostics]
    assert codes == [("RB603", 6)]
