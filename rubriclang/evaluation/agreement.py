"""How far two judges' judgments of the same items agree, from their traces:
per criterion both judged, the share of (item, candidate) values that are
equal, and the verdicts that differ. What grouping criteria into one call
(`group NAME = [...]`) costs in fidelity, against the same criteria asked
one call each, measured rather than assumed; any two versions of a judge
that share criterion names compare the same way.

Records are paired by item id. A value pair counts only where both
judgments have a value (a failed or absent one is counted apart, as
`unjudged`); a verdict pair only where both readouts decided (`ok`).
Intervals are `metrics.proportion`'s: Wilson, on the items as clusters
(an item's candidates are not independent).
"""

from __future__ import annotations

from typing import Any

import attrs

from rubriclang.canonical import canonical_json
from rubriclang.evaluation.metrics import Estimate, proportion
from rubriclang.interp.trace import read_traces


@attrs.frozen
class CriterionAgreement:
    """One criterion's equal values over the value pairs both judged."""

    name: str
    equal: int
    pairs: int
    unjudged: int  # value pairs where either side has no value
    rate: Estimate

    def to_json(self) -> dict[str, Any]:
        return {"equal": self.equal, "pairs": self.pairs, "unjudged": self.unjudged, "rate": self.rate.to_json()}


@attrs.frozen
class Agreement:
    """Two trace files compared item by item."""

    a: str
    b: str
    items: int  # items in both
    only_a: int
    only_b: int
    criteria: tuple[CriterionAgreement, ...]
    flipped: int
    decided: int  # items both decided
    flip_rate: Estimate

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "items": self.items,
            "only_a": self.only_a,
            "only_b": self.only_b,
            "criteria": {c.name: c.to_json() for c in self.criteria},
            "verdicts": {"flipped": self.flipped, "decided": self.decided, "flip_rate": self.flip_rate.to_json()},
        }


def _compact(rec: dict[str, Any]) -> tuple[dict[str, dict[str, str | None]], tuple[Any, ...] | None]:
    """A record's values (criterion -> candidate -> canonical JSON, None
    when it has none) and its decision (None unless the readout is `ok`)."""
    values = {
        name: {cid: None if j.get("error") or j.get("value") is None else _key(j["value"]) for cid, j in per.items()}
        for name, per in rec["criteria"].items()
    }
    readout = rec.get("readout") or {}
    decision = (_key(readout.get("decision")),) if readout.get("status") == "ok" else None
    return values, decision


def _key(value: Any) -> str:
    # Values compare as their JSON: a label, a number, a list of element values alike.
    return canonical_json(value)


def compare_traces(a: str, b: str) -> Agreement:
    """Judgments of trace file `b` against those of `a`. Raises ItemError
    (naming the line) for a line that is not a trace record."""
    first = {rec["item"]: _compact(rec) for _, rec in read_traces(a)}
    seen: set[str] = set()
    counts: dict[str, list[tuple[int, int]]] = {}  # criterion -> per item (equal, pairs)
    unjudged: dict[str, int] = {}
    flips: list[int] = []
    only_b = 0
    for _, rec in read_traces(b):
        mine = first.get(rec["item"])
        if mine is None:
            only_b += 1
            continue
        seen.add(rec["item"])
        values, decision = _compact(rec)
        for name, per in values.items():
            theirs = mine[0].get(name)
            if theirs is None:
                continue
            equal = pairs = 0
            for cid, v in per.items():
                if cid not in theirs:
                    continue
                if v is None or theirs[cid] is None:
                    unjudged[name] = unjudged.get(name, 0) + 1
                    continue
                pairs += 1
                equal += v == theirs[cid]
            counts.setdefault(name, []).append((equal, pairs))
        if decision is not None and mine[1] is not None:
            flips.append(int(decision != mine[1]))
    criteria = tuple(
        CriterionAgreement(
            name,
            sum(e for e, _ in per),
            sum(p for _, p in per),
            unjudged.get(name, 0),
            proportion([e for e, _ in per], [p for _, p in per]),
        )
        for name, per in sorted(counts.items())
    )
    return Agreement(
        a,
        b,
        len(seen),
        len(first) - len(seen),
        only_b,
        criteria,
        sum(flips),
        len(flips),
        proportion(flips, [1] * len(flips)),
    )


def render_text(ag: Agreement) -> str:
    """The comparison as the terminal shows it."""
    lines = [
        f"`{ag.b}` against `{ag.a}`: {ag.items} items in both"
        + (f" ({ag.only_a} only in the first, {ag.only_b} only in the second)" if ag.only_a or ag.only_b else ""),
        "",
        "criterion agreement (equal values over the value pairs both judged, 95% Wilson interval by item):",
    ]
    width = max((len(c.name) for c in ag.criteria), default=9)
    for c in ag.criteria:
        extra = f", {c.unjudged} pairs unjudged on a side" if c.unjudged else ""
        lines.append(f"  {c.name:<{width}}  {c.equal} of {c.pairs} equal, {c.rate.text()}{extra}")
    if not ag.criteria:
        lines.append("  (no criterion judged in both)")
    lines += [
        "",
        f"verdicts: {ag.flipped} of {ag.decided} items both decided differ, {ag.flip_rate.text()}",
    ]
    return "\n".join(lines)
