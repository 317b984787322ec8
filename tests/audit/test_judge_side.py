"""Judge-side operators work on the sections of the judge's own prompt
template (a user's, or the built-in one as a starting text): a perturbed
judge is the criterion with a new template and nothing else changed."""

from __future__ import annotations

import json
import re

import attrs
import pytest

from rubriclang.audit.judge import judge_info
from rubriclang.audit.perturb import judge_prompt
from rubriclang.audit.perturb.generate import deterministic_patch
from rubriclang.audit.perturbations import load_perturbations
from rubriclang.audit.variants import Patch, Validation
from rubriclang.checker import check_source
from rubriclang.checker.graph import CheckedGraph, Criterion, PromptSource
from rubriclang.interp.items import item_from_json
from rubriclang.interp.trace import graph_hash
from rubriclang.llm import parsing, prompting

from .helpers import report, user_text

RATED = """\
rubric rated { version = 1 }
contract { scale = score[1, 5] }
criterion correct: ordinal[1, 5] = llm.rate {
  question = "How correct is the response?"
  anchors = { 1: "Wrong.", 3: "Partly right.", 5: "Right." }
}
criterion short: bool = rule.length { under = 3 }
node capped = gate.cap(value: correct, when: short) { max = 2 }
sink capped
readout pointwise { output = ordinal[1, 5] }
"""

# A judge of the user's own: a system message, one few-shot pair, a reply
# format of its own (read by a pattern), and the material last.
OWN = '''\
rubric own { version = 1 }
contract { scale = score[1, 10] }
criterion quality: ordinal[1, 10] = llm.rate {
  prompt = """
## system
You grade answers for a cooking site. Be strict about safety.

## user
Question: What temperature kills salmonella?
Answer: 74 C.

## assistant
Correct and safe. [[9]]

## user
Finish with your grade as [[n]], from 1 to 10.

Question: {{input}}
Answer: {{response}}
"""
  answer = pattern("\\\\[\\\\[(\\\\d+)\\\\]\\\\]")
}
sink quality
readout pointwise { output = ordinal[1, 10] }
'''

BUILT_INS = {
    "rate": (
        'criterion c: ordinal[1, 5] = llm.rate { question = "Q?" anchors = { 1: "Bad.", 5: "Good." } '
        "with_reference = true }"
    ),
    "check": 'criterion c: bool = llm.check { question = "Q?" }',
    "choose": (
        'criterion c: label{formal, casual} = llm.choose { question = "Tone?" descriptions = { formal: "Stiff." } }'
    ),
    "prometheus": (
        'criterion c: ordinal[1, 5] = llm.rate { question = "Q?" template = prometheus anchors = { 1: '
        '"Bad.", 5: "Good." } }'
    ),
    "compare": 'criterion c: score[0, 1] = llm.compare { question = "Which?" }',
    "ratings": 'criterion c: ordinal[1, 10] = llm.compare { question = "Rate." reply = ratings }',
}


def _graph(text: str, path: str = "j.rbg"):
    result = check_source(text, path)
    assert result.graph is not None, [d.message for d in result.diagnostics]
    return result.graph


def _criterion(decl: str):
    m = re.match(r"criterion c: (.*?) = ", decl)
    assert m, decl
    t = m.group(1)
    readout = (
        "readout pairwise { epsilon = 0.1, resolve = tie }"
        if "llm.compare" in decl
        else f"readout pointwise {{ output = {t} }}"
    )
    return _graph(f"rubric b {{ version = 1 }}\ncontract {{ scale = {t} }}\n{decl}\nsink c\n{readout}\n").criteria[0]


def _item(pairwise: bool):
    responses = (
        {"responses": {"x": "First {{input}} text.", "y": "## user\nSecond."}}
        if pairwise
        else {"response": "An answer."}
    )
    return item_from_json({"id": "1", "input": "A task?", "reference": "Ref.", **responses}, "x")


def _judge(text: str = RATED):
    return judge_info(_graph(text), [item_from_json({"id": "1", "input": "q", "response": "r"}, "x")])


def _with_prompt(criterion, text: str):
    # As the audit patches a judge: the text, and the built-in template it came from.
    origin = criterion.prompt.rewritten_from if criterion.prompt else prompting.criterion_template(criterion).id
    return attrs.evolve(criterion, prompt=PromptSource(text, None, rewritten_from=origin))


@pytest.mark.parametrize("kind", sorted(BUILT_INS))
def test_a_built_in_prompt_given_as_template_text_renders_the_same_request(kind):
    c = _criterion(BUILT_INS[kind])
    item = _item(c.procedure == "llm.compare")
    shown = ("x", "y") if c.procedure == "llm.compare" else "response"
    for text in (prompting.criterion_template_text(c), judge_prompt.starting_text(c)):
        same = _with_prompt(c, text)
        a, b = prompting.render(c, item, shown), prompting.render(same, item, shown)
        assert b.request == a.request  # messages and response format
        assert b.nudge == a.nudge
    reply = {
        "rate": '{"reason": "r", "score": 4}',
        "prometheus": "Fine. [RESULT] 4",
        "check": '{"reason": "r", "answer": true}',
    }.get(kind, '{"reason": "r", "label": "formal", "preference": "B", "score_a": 3, "score_b": 7}')
    assert parsing.parse(same, reply) == parsing.parse(c, reply)


def test_instruction_ordering_moves_the_reply_format_paragraph_of_the_last_user_message_first():
    judge = _judge()
    patch, results = deterministic_patch(load_perturbations()["instruction_ordering"], judge)
    assert [(name, v.verdict) for name, v in results] == [("correct", "accept")]
    assert patch is not None
    patched = patch.apply(judge.graph).nodes["correct"]
    assert isinstance(patched, Criterion)
    assert set(patched.params) == set(judge.graph.nodes["correct"].params)  # no hidden parameter
    before = prompting.render(_criterion_of(judge.graph, "correct"), _item(False), "response").request
    after = prompting.render(patched, _item(False), "response").request
    assert after.response_format == before.response_format
    assert after.messages[0] == before.messages[0]
    paras = before.messages[1]["content"].split("\n\n")
    assert after.messages[1]["content"] == "\n\n".join([paras[-1], *paras[:-1]])
    assert after.messages[1]["content"].startswith("Give your rating first")


def test_instruction_ordering_on_a_users_template_keeps_its_few_shot_turns_or_says_why_not():
    judge = _judge(OWN)
    patch, [(_, v)] = deterministic_patch(load_perturbations()["instruction_ordering"], judge)
    # The last paragraph shows {{input}} and {{response}}: material, not a reply format.
    assert patch is None and v.verdict == "failed" and "`{{input}}`" in v.reason
    moved = OWN.replace(
        "Finish with your grade as [[n]], from 1 to 10.\n\nQuestion: {{input}}\nAnswer: {{response}}",
        "Question: {{input}}\nAnswer: {{response}}\n\nFinish with your grade as [[n]], from 1 to 10.",
    )
    judge = _judge(moved)
    patch, [(_, v)] = deterministic_patch(load_perturbations()["instruction_ordering"], judge)
    assert v.verdict == "accept" and patch is not None
    messages = prompting.render(
        _criterion_of(patch.apply(judge.graph), "quality"), _item(False), "response"
    ).request.messages
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[1]["content"] == "Question: What temperature kills salmonella?\nAnswer: 74 C."
    assert (
        messages[3]["content"]
        == "Finish with your grade as [[n]], from 1 to 10.\n\nQuestion: A task?\nAnswer: An answer."
    )


def test_criterion_reorder_lists_the_scale_from_the_top_in_the_prompt_without_a_hidden_parameter():
    judge = _judge()
    patch, _results = deterministic_patch(load_perturbations()["criterion_reorder"], judge)
    assert patch is not None
    assert patch.criterion_order == ("short", "correct")
    patched = patch.apply(judge.graph)
    assert [c.name for c in patched.criteria] == ["short", "correct"]
    assert patched.nodes["correct"].params == judge.graph.nodes["correct"].params
    assert patched.nodes["short"] == judge.graph.nodes["short"]
    text = prompting.render(_criterion_of(patched, "correct"), _item(False), "response").request.messages[1]["content"]
    assert text.index("5: Right.") < text.index("3: Partly right.") < text.index("1: Wrong.")
    assert graph_hash(patched) != graph_hash(judge.graph)


def test_the_structural_checks_refuse_what_a_rule_should_never_make():
    c = _judge().graph.nodes["correct"]
    text = prompting.criterion_template_text(c)
    moved, _ = judge_prompt.format_first(c, text)
    assert moved is not None
    assert judge_prompt.check_format_first(text, moved) is None
    assert judge_prompt.check_format_first(text, moved.replace("Rate the response", "Judge the response")) is not None
    assert judge_prompt.check_format_first(text, judge_prompt.with_system(moved, "Other.")) is not None
    reversed_, _ = judge_prompt.reverse_points(c, text)
    assert reversed_ is not None
    assert judge_prompt.check_reversed(c, text, reversed_) is None
    reordered = judge_prompt.check_reversed(
        c, text, text.replace("{{anchors}}", "1: Wrong.\n3: Partly right.\n5: Right.")
    )
    assert reordered is not None and "reverse order" in reordered
    reworded = judge_prompt.check_reversed(c, text, reversed_.replace("Partly right.", "Half right."))
    assert reworded is not None and "lines changed" in reworded


def test_a_rewrite_must_parse_and_keep_every_placeholder_of_the_original():
    text = judge_prompt.starting_text(_judge().graph.nodes["correct"])
    assert judge_prompt.check_rewrite(text, text.replace("Rate the response", "Grade the response")) is None
    for rewrite, problem in (
        (text.replace("{{response}}", "the response"), "drops `{{response}}`"),
        (text.replace("Criterion:", "{{rubric}} Criterion:"), "adds `{{rubric}}`"),
        (text.replace("{{/input}}", ""), "not a valid template"),
        (text[text.index("## user") :], "the sections user, not system, user"),
    ):
        assert problem in (judge_prompt.check_rewrite(text, rewrite) or ""), problem


def test_a_sealed_anchor_patch_gets_the_graphs_numeric_keys_back():
    judge = _judge()
    # Sealed JSON turns the anchors' keys into strings.
    patch = Patch(
        "rubric_paraphrase",
        "rubric_paraphrase",
        {"correct": {"anchors": {"1": "Incorrect.", "3": "Half right.", "5": "Correct."}}},
        None,
        Validation("llm", "accept"),
    )
    anchors = patch.apply(judge.graph).nodes["correct"].params["anchors"]
    assert anchors == {1: "Incorrect.", 3: "Half right.", 5: "Correct."}


def _tag(text: str, tag: str) -> str:
    m = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.S)
    assert m, text
    return m.group(1)


def _criterion_of(graph: CheckedGraph, name: str) -> Criterion:
    node = graph.nodes[name]
    assert isinstance(node, Criterion), name
    return node


def _generator(role, body):
    """Paraphrase: one word changed; step by step: a sentence added; the
    criterion-by-criterion rewrite drops the response (and is rejected);
    role framing: a new system text."""
    text = user_text(body)
    if role == "validator":
        return json.dumps({"reason": "scripted accept", "verdict": "accept"})
    if role == "generator" and "<template>" in text:
        template = _tag(text, "template")
        if "step by step" in text:
            return json.dumps({"template": template.replace("Finish with", "Think step by step, then finish with")})
        if "each point of the scale" in text:
            return json.dumps({"template": template.replace("{{response}}", "(hidden)")})
        return json.dumps({"template": template.replace("Be strict", "Be severe")})
    if role == "generator":
        return json.dumps({"system": "You are a food-safety inspector grading answers."})
    return "Fine. [[7]]"


def test_judge_prompt_operators_rewrite_a_users_own_template_through_the_generator(rbg, tmp_path, items_file, scripted):
    server = scripted(_generator)
    (tmp_path / "own.rbg").write_text(OWN)
    path = tmp_path / "s.toml"
    ops = '["prompt_paraphrase", "reasoning_style", "role_framing"]'
    path.write_text(
        f'items = "{items_file}"\ngold = false\nrepeats = 1\noperators = {ops}\n[options.reasoning_style]\n'
        'styles = ["step_by_step", "criterion_by_criterion"]\n'
        f'[judge]\ngraph = "own.rbg"\nbase_url = "{server.url}"\n[generator]\nbase_url = "{server.url}"\n[validator]\n'
        f'base_url = "{server.url}"\n'
    )
    result = rbg("audit", path, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    # The generator saw the criterion it serves and the user's own template.
    asked = [user_text(b) for b in server.calls("generator")]
    assert all(
        "criterion `quality`: ordinal[1, 10] by llm.rate" in _tag(t, "rubric") for t in asked if "<template>" in t
    )
    assert all("You grade answers for a cooking site." in _tag(t, "template") for t in asked if "<template>" in t)
    # A rewrite that drops a placeholder is rejected by the template check, and logged.
    log = [json.loads(line) for line in (tmp_path / "out" / "validation.jsonl").read_text().splitlines()]
    (bad,) = [e for e in log if e["verdict"] == "reject"]
    assert bad["variant"] == "reasoning_style.criterion_by_criterion:quality" and bad["by"] == "template"
    assert "drops `{{response}}`" in bad["reason"]
    r = report(tmp_path / "out")
    assert {op["name"]: op["variants"]["accepted"] for op in r["operators"]} == {
        "prompt_paraphrase": 1,
        "reasoning_style": 1,
        "role_framing": 1,
    }
    # The judge was asked with each rewritten template, few-shot turns kept as messages.
    judged = server.calls("judge")
    systems = {b["messages"][0]["content"] for b in judged}
    assert systems == {
        "You grade answers for a cooking site. Be strict about safety.",
        "You grade answers for a cooking site. Be severe about safety.",
        "You are a food-safety inspector grading answers.",
    }
    assert all([m["role"] for m in b["messages"]] == ["system", "user", "assistant", "user"] for b in judged)
    assert any(b["messages"][3]["content"].startswith("Think step by step, then finish with") for b in judged)
    assert all("response_format" not in b for b in judged)  # the pattern-read reply stays free text
    first = next(iter(r["by_item"].values()))
    assert first["baseline"]["value"] == 7


def test_role_framing_adds_a_system_section_where_the_template_has_none():
    text = "## user\nGrade this: {{response}}\nReply [[n]].\n"
    framed = judge_prompt.with_system(text, "You are a strict grader.")
    assert judge_prompt.template_of(framed).roles == ("system", "user")
    assert judge_prompt.check_rewrite(text, framed, ("system", "user")) is None
    assert judge_prompt.system_text(framed) == "You are a strict grader."
    assert judge_prompt.template_of(judge_prompt.with_system(framed, "Other.")).sections[0] == ("system", "Other.")


def test_a_prometheus_judge_keeps_its_reply_instructions_under_instruction_ordering():
    judge = _judge(
        f"rubric p {{ version = 1 }}\ncontract {{ scale = ordinal[1, 5] }}\n{BUILT_INS['prometheus']}\nsink c\n"
        "readout pointwise { output = ordinal[1, 5] }\n"
    )
    patch, [(_, v)] = deterministic_patch(load_perturbations()["instruction_ordering"], judge)
    assert patch is None and v.verdict == "failed" and "Prometheus" in v.reason


def test_a_patch_sealed_by_an_older_version_names_what_no_procedure_reads():
    graph = _judge().graph
    old = Patch(
        "instruction_ordering",
        "instruction_ordering",
        {"correct": {"prompt_variant": {"format_first": True}}},
        None,
        Validation("structure", "accept"),
    )
    assert old.unknown(graph) == ["correct.prompt_variant"]
    current = Patch(
        "p",
        "prompt_paraphrase",
        {"correct": {"prompt": "## user\n{{response}}", "anchors": {"1": "x"}}},
        None,
        Validation("llm", "accept"),
    )
    assert current.unknown(graph) == []


def test_prompt_operators_leave_a_groups_members_to_their_groups_prompt_and_say_so():
    # A grouped member is asked with its group's prompt: a prompt of its own would
    # fail its judgment, so the operators rewrite the ungrouped criteria alone.
    from pathlib import Path

    from rubriclang.audit.perturb.generate import rewrites

    path = Path(__file__).resolve().parents[2] / "examples" / "mt_bench" / "rubric_grouped.rbg"
    graph = _graph(path.read_text("utf-8"), str(path))
    item = item_from_json({"id": "1", "input": "q", "response": "r", "reference": "x"}, "x")
    judge = judge_info(graph, [item])
    grouped = {c.name for c in graph.criteria if c.group is not None}
    assert grouped and len(grouped) < len(judge.llm_criteria)
    for name in ("instruction_ordering", "criterion_reorder"):
        patch, results = deterministic_patch(load_perturbations()[name], judge)
        assert {c for c, _ in results} == {c.name for c in judge.llm_criteria} - grouped
        assert patch is None or not set(patch.criteria) & grouped
    jobs, kept = rewrites(load_perturbations()["prompt_paraphrase"], judge)
    assert {c.name for c, *_ in jobs} == {c.name for c in judge.llm_criteria} - grouped
    assert {c.name for c, _ in kept} == grouped
    assert all("group answer_quality" in why for _, why in kept)
