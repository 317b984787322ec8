"""position_swap over structured candidates (issue 26 item 6): an
`llm.compare` judge of two agent runs (conversations) sees the runs in the
other order, each as its default rendering, and a judge that prefers the
first position flips on every swap."""

from __future__ import annotations

import json
from typing import Any

from rubriclang.items.render import render
from rubriclang.items.shape import FieldSpec

from .helpers import report, user_text

JUDGE = """\
rubric two_runs { version = 1 }
item { input: text, response: conversation }
contract { scale = score[0, 1] }
criterion better: score[0, 1] = llm.compare { question = "Which agent run completes the task better?" }
sink better
readout pairwise { epsilon = 0.1, resolve = tie }
"""


def _run(n: int, done: bool) -> list[dict]:
    call = {"id": f"c{n}", "type": "function", "function": {"name": "book", "arguments": json.dumps({"n": n})}}
    turns: list[dict[str, Any]] = [{"role": "user", "content": f"Book flight {n}."}]
    if done:
        turns += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": "booked"},
        ]
    return [*turns, {"role": "assistant", "content": "Booked." if done else "I cannot."}]


PAIRS = [
    {"id": f"t{n}", "input": f"Task {n}", "responses": [["x", _run(n, True)], ["y", _run(n, False)]]} for n in range(4)
]
SPEC = FieldSpec("response", "conversation")


def _first_position(role, body) -> str:
    assert role == "judge"
    return json.dumps({"reason": "The first one.", "preference": "A"})


def test_position_swap_shows_two_runs_swapped_and_catches_a_first_position_judge(rbg, tmp_path, scripted):
    server = scripted(_first_position)
    (tmp_path / "judge.rbg").write_text(JUDGE)
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PAIRS))
    (tmp_path / "suite.toml").write_text(
        'items = "items.jsonl"\nrepeats = 1\noperators = ["position_swap"]\n[judge]\ngraph = "judge.rbg"\n'
        f'base_url = "{server.url}"\nmax_retries = 0\n'
    )
    result = rbg("audit", tmp_path / "suite.toml", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    shown = [user_text(b) for b in server.requests if b["messages"][0]["role"] == "system"]
    for n in range(4):
        x, y = render(SPEC, _run(n, True)), render(SPEC, _run(n, False))
        firsts = sorted(t.index(x) < t.index(y) for t in shown if x in t and y in t)
        assert firsts == [False, True]  # as given for the original, swapped for the variant
    op = report(tmp_path / "out")["by_operator"]["position_swap"]["invariant"]
    assert op["variants"] == 4 and op["flipped"] == 4
