"""Small judges of every output type, on recorded values (no calls), and
items for them."""

from __future__ import annotations

import json
from pathlib import Path

ORDINAL = """rubric ord { version = 1 }
contract { scale = ordinal[1, 5] }
criterion q: ordinal[1, 5] = recorded.value { key = "q" }
sink q
readout pointwise { output = ordinal[1, 5] }
"""

SCORE = """rubric sc { version = 1 }
contract { scale = score[1, 5] }
criterion a: ordinal[1, 5] = recorded.value { key = "a" }
criterion b: ordinal[1, 5] = recorded.value { key = "b" }
criterion c: ordinal[1, 5] = recorded.value { key = "c" }
node m = reduce.mean(inputs: [a, b, c])
sink m
readout pointwise { output = ordinal[1, 5] }
"""

BOOL = """rubric ok { version = 1 }
contract { scale = bool }
criterion good: bool = recorded.value { key = "good" }
sink good
readout pointwise { output = bool }
"""

LABEL = """rubric lab { version = 1 }
contract { scale = label{good, bad, ugly} }
criterion c: label{good, bad, ugly} = recorded.value { key = "c" }
sink c
readout pointwise { output = label{good, bad, ugly} }
"""

PAIRWISE = """rubric pref { version = 1 }
contract { scale = score[0, 1] }
criterion q: score[0, 1] = recorded.value { key = "q" }
sink q
readout pairwise { epsilon = 0.1, resolve = tie }
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def write_items(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def pointwise(i: int, gold, **recorded) -> dict:
    row = {"id": f"i{i}", "input": "Q?", "response": "A.", "recorded": recorded}
    if gold is not None:
        row["gold"] = gold
    return row


def pair(i: int, gold, qa: float, qb: float) -> dict:
    row = {
        "id": f"p{i}",
        "input": "Q?",
        "responses": {"a": "A.", "b": "B."},
        "recorded": {"a": {"q": qa}, "b": {"q": qb}},
    }
    if gold is not None:
        row["gold"] = gold
    return row
