"""Items with structured fields (a conversation input and response,
documents, a list of texts, JSON) and markup payloads in every place the
data can put text, judged by a rules-only graph (no model)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from rubriclang.cli.main import cli

SCRIPT = "<script>alert(1)</script>"
IMG = '<img src=x onerror="document.body.dataset.pwned=1">'

GRAPH = """rubric trajectory_view { version = 1 }

item {
  input: conversation
  documents: documents
  tags: list[text]?
  meta: json?
  response: conversation
}

contract { scale = bool }

criterion few_calls: bool = rule.count { of = tool_calls, max = 3 }
criterion answers: bool = rule.count { role = assistant, min = 1 }
criterion args_ok: bool = rule.json_valid each tool_call in response { arguments = true }
criterion one_call: bool = rule.count each assistant_turn in response { of = tool_calls, max = 1 }

node ok = reduce.all(inputs: [few_calls, answers, args_ok, one_call])
sink ok

readout pointwise { output = bool }
"""

CALL_ARGS = {"city": SCRIPT, "days": 2, "when": {"from": "2024-05-01"}}
TRAJECTORY = [
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "weather" + IMG, "arguments": json.dumps(CALL_ARGS)},
            },
            {"id": "call_2", "type": "function", "function": {"name": "unanswered", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "Sunny " + SCRIPT},
    {"role": "assistant", "content": [{"type": "text", "text": "It will be sunny [d1]."}]},
]
ITEMS = [
    {
        "id": "full",
        "input": [
            {"role": "system", "content": "Be brief " + IMG},
            {"role": "user", "content": "Weather in Paris? " + SCRIPT},
        ],
        "documents": [
            {"id": "d1", "title": "Forecast " + SCRIPT, "text": "Sun all week."},
            {"id": 7, "text": ""},
        ],
        "tags": ["travel", IMG],
        "meta": {"source": SCRIPT, "turns": [1, 2]},
        "response": TRAJECTORY,
    },
    {
        "id": "empty",
        "input": [{"role": "user", "content": ""}],
        "documents": [],
        "response": [],
    },
]


def make_structured_run(folder: Path) -> dict[str, Path]:
    """The graph, items and trace of a judged run over `ITEMS`."""
    graph, items, trace = folder / "judge.rbg", folder / "items.jsonl", folder / "trace.jsonl"
    graph.write_text(GRAPH, encoding="utf-8")
    items.write_text("".join(json.dumps(i) + "\n" for i in ITEMS), encoding="utf-8")
    result = CliRunner().invoke(cli, ["run", str(graph), str(items), "--out", str(trace)])
    assert result.exit_code == 0, result.output
    return {"graph": graph, "items": items, "trace": trace}
