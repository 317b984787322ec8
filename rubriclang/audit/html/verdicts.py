"""How far a variant's repeats moved from the item's baseline, read from
the report alone (the comparisons of docs/audit.md, "Definitions"), so that
the review queue can rank findings by how badly they went."""

from __future__ import annotations

from typing import Any

import attrs

EPS = 1e-9


def _same(a: Any, b: Any) -> bool:
    # A boolean verdict is never equal to a number, although True == 1.
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) <= EPS
    return a == b


@attrs.frozen
class Judge:
    """What comparing verdicts needs to know of the judge and the suite."""

    type: str
    positive: Any
    tolerance: float

    @classmethod
    def of(cls, report: dict) -> Judge:
        j = report["judge"]
        ordinal = j["type"] == "ordinal"
        return cls(j["type"], j.get("positive"), float(report["suite"]["tolerance"]) if ordinal else 0.0)

    def agrees(self, d: dict, base: dict) -> bool:
        """Whether one judgment (a Verdict) matches a baseline Summary."""
        if d["status"] == "failed" or base["status"] == "failed" or d["status"] != base["status"]:
            return False
        if d["status"] == "abstain":
            return True
        if self.type == "ordinal":
            return abs(float(d["decision"]) - float(base["value"])) <= self.tolerance + EPS
        return _same(d["decision"], base["value"])

    def fell(self, d: dict, base: dict) -> bool:
        """Whether one judgment of a degraded response is below the baseline."""
        if d["status"] != "ok" or base["status"] != "ok":
            return False
        if self.type == "ordinal":
            return float(d["decision"]) < float(base["value"]) - self.tolerance - EPS
        return _same(d["decision"], not self.positive)


@attrs.frozen
class Severity:
    """How badly one finding went: `bad` of its `repeats` judgments went
    the wrong way (differ from the baseline for an invariant flip; did not
    fall for a missed degradation), and the size of the move of an ordinal
    verdict (None otherwise)."""

    bad: int
    repeats: int
    shift: float | None

    @property
    def share(self) -> float:
        return self.bad / self.repeats if self.repeats else 1.0

    def describe(self, relation: str) -> str:
        what = "differ from the baseline" if relation == "invariant" else "did not fall"
        return f"{self.bad}/{self.repeats} repeats {what}"


def severity(finding: dict, judge: Judge) -> Severity:
    base, result = finding["baseline"], finding["result"]
    decisions = result["decisions"]
    if finding["relation"] == "invariant":
        bad = sum(not judge.agrees(d, base) for d in decisions)
    else:
        bad = sum(not judge.fell(d, base) for d in decisions)
    shift = None
    if judge.type == "ordinal" and base["status"] == result["status"] == "ok":
        shift = float(result["value"]) - float(base["value"])
    return Severity(bad, len(decisions), shift)
