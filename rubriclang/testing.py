"""A small pytest helper: pin a rubric's verdict on fixed items.

    from rubriclang.testing import assert_verdict

    def test_wrong_final_answer_fails():
        assert_verdict("rubrics/math.rbg", {"id": "1", "input": "2+2?",
                       "response": "5", "reference": "#### 4"}, False)

On failure the message shows every criterion and operator value, so the
reason for the verdict is in the test output.
"""

from __future__ import annotations

from typing import Any

from rubriclang.api import Rubric, load
from rubriclang.interp.engine import ItemResult
from rubriclang.interp.readout import describe


def explain(result: ItemResult) -> str:
    """The values behind a verdict, one node per line."""
    lines = []
    for node, per in result.composition.values.items():
        lines.append(f"  {node}: " + ", ".join(f"{cid}={v!r}" for cid, v in per.items()))
    for node, per in result.composition.errors.items():
        lines.append(f"  {node} failed: " + "; ".join(f"{cid}: {e}" for cid, e in per.items()))
    return "\n".join(lines)


def assert_verdict(rubric: Rubric | str, item: dict[str, Any], expected: Any, mode: str | None = None) -> None:
    """Assert that `rubric` (a Rubric or a path) decides `expected` on `item`.

    `expected` is the decision (a number, bool, label or candidate id), or
    "abstain" / "error" for an item that gets no decision.
    """
    r = load(rubric) if isinstance(rubric, str) else rubric
    result = r.evaluate(item, mode)
    d = result.composition.decision
    got = d.decision if d.status == "ok" else d.status
    # True == 1 in Python, but a bool verdict and a score of 1 are different answers.
    same = got == expected and (isinstance(got, bool) == isinstance(expected, bool))
    if not same:
        raise AssertionError(
            f"rubric `{r.graph.name}` decided {describe(d)} on item `{result.item.id}`, expected {expected!r}"
            + (f" ({d.error})" if d.error else "")
            + "\n"
            + explain(result)
        )
