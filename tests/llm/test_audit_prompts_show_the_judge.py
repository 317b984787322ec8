"""The audit's generators and validators are shown the judge under audit
(its criteria's questions and rubric), so the variants they make and accept
fit what is being judged; the sealed suite records which prompt versions
made them."""

from __future__ import annotations

import json
import re

from audit.helpers import role_of, user_text
from click.testing import CliRunner

from rubriclang.cli.main import cli

from .fault_server import FaultServer

JUDGE = """\
rubric graded { version = 1 }
contract { scale = score[1, 5] }
criterion grounded: ordinal[1, 5] = llm.rate {
  question = "Does every claim in the response follow from the reference?"
  anchors = { 1: "Invents most of its claims.", 5: "Every claim is in the reference." }
  with_reference = true
}
criterion long: bool = rule.length { under = 4 }
node capped = gate.cap(value: grounded, when: long) { max = 2 }
sink capped
readout pointwise { output = ordinal[1, 5] }
"""

ITEMS = [
    {
        "id": "a",
        "input": "Where is the Eiffel Tower?",
        "response": "It stands in Paris, by the Seine.",
        "reference": "The Eiffel Tower is in Paris.",
    },
    {
        "id": "b",
        "input": "When did the Berlin Wall fall?",
        "response": "It fell in November 1989.",
        "reference": "The Berlin Wall fell in 1989.",
    },
]
# Every LLM path: a response, a task, the rubric's anchors, the whole template, a system framing.
OPERATORS = ["tone_shift", "input_paraphrase", "rubric_paraphrase", "prompt_paraphrase", "role_framing"]
SHOWN = (
    "Does every claim in the response follow from the reference?",
    "1: Invents most of its claims.",
    "5: Every claim is in the reference.",
    "criterion grounded: ordinal[1, 5] by llm.rate",
    "criterion long: bool by rule.length",
)


def answer(body: dict) -> str:
    """Generator: the form asked for, with every placeholder text as the new
    text (a template keeps its sections and placeholders); validator: accept;
    the judge: a 4."""
    role, text = role_of(body), user_text(body)
    if role == "generator":
        form = json.loads(text.rsplit("of this form:\n", 1)[1])
        if "template" in form:
            found = re.search(r"<template>\n(.*?)\n</template>", text, re.DOTALL)
            assert found, text
            template = found.group(1)
            form["template"] = template.replace("## user\n", "## user\nPlease judge carefully.\n", 1)
        return json.dumps(form)
    if role == "validator":
        return json.dumps({"reason": "It did what was asked.", "verdict": "accept"})
    return json.dumps({"reason": "Grounded.", "score": 4})


def _audit(tmp_path, server: FaultServer):
    (tmp_path / "judge.rbg").write_text(JUDGE, encoding="utf-8")
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ITEMS), encoding="utf-8")
    backend = f'base_url = "{server.url}/v1"\nmodel = "judge"\nmax_retries = 0\n'
    (tmp_path / "suite.toml").write_text(
        f'items = "items.jsonl"\nrepeats = 1\noperators = {json.dumps(OPERATORS)}\n'
        f'[judge]\ngraph = "judge.rbg"\n{backend}[generator]\n{backend}[validator]\n{backend}',
        encoding="utf-8",
    )
    return CliRunner().invoke(cli, ["audit", str(tmp_path / "suite.toml"), "--out", str(tmp_path / "out")])


def test_every_generator_and_validator_prompt_shows_the_judges_criteria_and_rubric(tmp_path):
    with FaultServer(answer=answer, models=("judge",)) as server:
        result = _audit(tmp_path, server)
        bodies = [r.json for r in server.chats]
    assert result.exit_code == 0, result.output
    generated = [b for b in bodies if role_of(b) == "generator"]
    validated = [b for b in bodies if role_of(b) == "validator"]
    # One call per item for each item-side operator, one per LLM criterion for each judge-side one.
    assert len(generated) == 2 * 2 + 3 and len(validated) == len(generated)
    for body in generated + validated:
        judge = re.search(r"<judge>\n(.*?)\n</judge>", user_text(body), re.DOTALL)
        assert judge is not None, user_text(body)
        for text in SHOWN:
            assert text in judge.group(1), (text, judge.group(1))
    sealed = json.loads((tmp_path / "out" / "sealed.json").read_text(encoding="utf-8"))
    assert sealed["prompts"] == {"generate": "generate.v2", "validate": "validate.v2"}
