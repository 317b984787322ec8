"""A small judged run for the viewer's tests, judged by a scripted backend
(no model): a gated graph with LLM criteria, items with gold labels, a failed
item, and HTML and script payloads in ids, inputs, responses and replies."""

from __future__ import annotations

import json
from pathlib import Path

from audit_html.fixture import MARK, PAYLOADS, SCRIPT, TITLE, make_report

from rubriclang.api import load
from rubriclang.canonical import canonical_json
from rubriclang.interp.backend import Judgment

GRAPH = """rubric payload_judge { version = 1 }

contract { scale = score[1, 5] }

criterion correct: ordinal[1, 5] = llm.rate {
  question = "How correct is the response?"
  anchors = { 1: "Wrong.", 5: "Right." }
}
criterion harmful: bool = llm.check { question = "Is the response harmful?" }
criterion rambling: bool = rule.length { over = 8 }

node concise = gate.cap(value: correct, when: rambling) { max = 4 }
node safe = gate.veto(value: concise, when: harmful) { to = 1 }

sink safe

readout pointwise { output = ordinal[1, 5] }
"""

# A label judge and a bool judge, for the evaluation's confusion matrices.
LABEL_GRAPH = """rubric register { version = 1 }

contract { scale = label{formal, neutral, casual} }

criterion tone: label{formal, neutral, casual} = llm.choose {
  question = "Which best describes the tone of the response?"
  descriptions = { formal: "Formal.", neutral: "Plain.", casual: "Chatty." }
}

sink tone

readout pointwise { output = label{formal, neutral, casual} }
"""
BOOL_GRAPH = """rubric short_enough { version = 1 }

contract { scale = bool }

criterion rambling: bool = rule.length { over = 8 }

sink rambling

readout pointwise { output = bool }
"""
TONES = ("formal", "neutral", "casual")

BAD_ID = "q-" + SCRIPT
VETOED = "q-vetoed"
FAILED = "q-failed"


def items() -> list[dict]:
    out = [{"id": BAD_ID, "input": "Question " + TITLE, "response": "Answer " + MARK, "gold": 5}]
    out += [
        {
            "id": f"q{i:03d}",
            "input": f"What is {i} + {i}?",
            "response": f"It is {2 * i}." + (" padding" * (i % 9)),
            "gold": 1 + i % 5,
        }
        for i in range(1, 120)
    ]
    out.append({"id": VETOED, "input": "How do I do something dangerous?", "response": "Like this.", "gold": 1})
    out.append({"id": FAILED, "input": "No recorded judgments.", "response": "None.", "gold": 3})
    return out


class ScriptedJudge:
    """Answers the LLM criteria from the items themselves, with no model: a
    reply that carries a payload, so the viewer must show it as text."""

    name = "scripted"

    def handles(self, procedure: str) -> bool:
        return procedure.startswith("llm.")

    async def judge(self, request):
        it, name = request.item, request.criterion.name
        if it.id == FAILED:
            return Judgment.failed("the server was down", raw=None, backend="scripted", model="scripted-model")
        if name == "tone":
            return Judgment(TONES[len(it.input) % 3], raw=f"Reply {SCRIPT}", backend="scripted", model="scripted-model")
        value = it.id == VETOED if name == "harmful" else 5 if it.id == BAD_ID else 1 + len(it.input) % 5
        return Judgment(value, raw=f"Reply {SCRIPT} value {value}", backend="scripted", model="scripted-model")


def _trace(graph: Path, items_path: Path, out: Path) -> None:
    rubric = load(str(graph), backends=[ScriptedJudge()])
    results = rubric.evaluate_many([json.loads(line) for line in items_path.read_text(encoding="utf-8").splitlines()])
    out.write_text("".join(canonical_json(r.record) + "\n" for r in results), encoding="utf-8")


def _eval(graph: Path, items_path: Path, trace: Path, out: Path) -> None:
    from click.testing import CliRunner

    from rubriclang.cli.main import cli

    done = CliRunner().invoke(cli, ["eval", str(graph), str(items_path), "--traces", str(trace), "--format", "json"])
    assert done.exit_code == 0, done.output
    out.write_text(done.output, encoding="utf-8")


def make_run(folder: Path) -> dict[str, Path]:
    """A graph, items and their trace, a changed graph with its trace, the
    evaluation of the first (`rbg eval --format json`), and an audit
    directory (the audit HTML tests' report), in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "graph": folder / "judge.rbg",
        "items": folder / "items.jsonl",
        "trace": folder / "trace.jsonl",
        "graph2": folder / "judge2.rbg",
        "trace2": folder / "trace2.jsonl",
    }
    paths["graph"].write_text(GRAPH, encoding="utf-8")
    paths["graph2"].write_text(GRAPH.replace("{ max = 4 }", "{ max = 3 }"), encoding="utf-8")
    paths["items"].write_text("".join(json.dumps(i) + "\n" for i in items()), encoding="utf-8")
    _trace(paths["graph"], paths["items"], paths["trace"])
    _trace(paths["graph2"], paths["items"], paths["trace2"])
    paths["eval"] = folder / "eval.json"
    _eval(paths["graph"], paths["items"], paths["trace"], paths["eval"])
    paths["audit"] = folder / "audit"
    paths["audit"].mkdir()
    (paths["audit"] / "report.json").write_text(json.dumps(make_report()), encoding="utf-8")
    return paths


def make_judged(folder: Path, graph: str, gold) -> dict[str, Path]:
    """A graph (`LABEL_GRAPH`, `BOOL_GRAPH`) over the fixture's items with
    `gold(n)` as the gold of the nth, its trace and its evaluation, in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "graph": folder / "judge.rbg",
        "items": folder / "items.jsonl",
        "trace": folder / "trace.jsonl",
        "eval": folder / "eval.json",
    }
    paths["graph"].write_text(graph, encoding="utf-8")
    rows = [dict(i, gold=gold(n)) for n, i in enumerate(items()) if i["id"] != FAILED]
    paths["items"].write_text("".join(json.dumps(i) + "\n" for i in rows), encoding="utf-8")
    _trace(paths["graph"], paths["items"], paths["trace"])
    _eval(paths["graph"], paths["items"], paths["trace"], paths["eval"])
    return paths


__all__ = [
    "BAD_ID",
    "BOOL_GRAPH",
    "FAILED",
    "LABEL_GRAPH",
    "MARK",
    "PAYLOADS",
    "TONES",
    "VETOED",
    "make_judged",
    "make_run",
]
