"""Position effects of an `llm.compare` judge, read from its traces.

    .venv/bin/python scripts/pairwise_order_stats.py ITEMS.jsonl TRACES.jsonl [--criterion better]

TRACES is the trace file of a pairwise run (`rbg run`) of ITEMS whose compare
criterion asked in one order or in both (`order = both`: each judgment
records both calls, `raw.calls[i].order` and `.answer`). For each order
found (as given, swapped) and for the combined verdict it prints the
verdicts, `agreement_without_ties` against `gold` (as `rbg eval` defines
it: over the pairs whose gold is not a tie and that were decided), coverage
(decided pairs over all), and how often the candidate shown first was chosen; where
both orders were read, the flip rate: the share of pairs whose preferred
candidate changes with the order. Intervals are 95% Wilson score intervals.
Reads traces only: no model is called.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

from rubriclang.evaluation.metrics import wilson


def _rate(k: int, n: int) -> str:
    if n == 0:
        return "n/a (0 pairs)"
    lo, hi = wilson(k, n)
    return f"{k / n:.3f} [{lo:.3f}, {hi:.3f}] ({k} / {n})"


def _without_ties(decided: list[tuple]) -> str:
    """agreement_without_ties of (decision, gold) pairs already decided."""
    kept = [(d, g) for d, g in decided if g != "tie"]
    return _rate(sum(d == g for d, g in kept), len(kept))


def verdicts(record: dict, given: list[str], criterion: str) -> tuple[dict[str, str | None], str | None]:
    """The preferred candidate (or `tie`, or None when unread) per order
    asked (`given`: the item's candidate ids), and the record's own decision
    (None when it failed)."""
    judgment = next(iter(record["criteria"][criterion].values()))
    by_order: dict[str, str | None] = {}
    for call in (judgment.get("raw") or {}).get("calls", []):
        shown = call["order"]
        name = "as_given" if shown == given else "swapped"
        answer = call.get("answer")
        by_order[name] = {"first": shown[0], "second": shown[1], "tie": "tie"}.get(answer) if answer else None
    decision = record["readout"]["decision"] if record["readout"]["status"] == "ok" else None
    return by_order, decision


def summarise(records: list[dict], given: dict[str, list[str]], criterion: str) -> list[str]:
    rows: dict[str, list[tuple[str | None, str | None, str]]] = {}
    combined = []
    for rec in records:
        order = given[rec["item"]]
        by_order, decision = verdicts(rec, order, criterion)
        first = {"as_given": order[0], "swapped": order[1]}
        for name, chosen in by_order.items():
            rows.setdefault(name, []).append((chosen, rec.get("gold"), first[name]))
        combined.append((decision, rec.get("gold"), by_order))
    out = [f"{len(records)} pairs"]
    for name in ("as_given", "swapped"):
        if name not in rows:
            continue
        got = rows[name] + [(None, None, "")] * (len(records) - len(rows[name]))
        decided = [(c, g) for c, g, _ in got if c not in (None, "tie")]
        out.append(f"{name}: verdicts {dict(sorted(Counter(str(c) for c, _, _ in got).items()))}")
        out.append(f"  agreement_without_ties {_without_ties(decided)}")
        out.append(f"  coverage           {_rate(len(decided), len(records))}")
        out.append(
            f"  first shown chosen {_rate(sum(c == f for c, _, f in got if c not in (None, 'tie')), len(decided))}"
        )
    decided = [(d, g) for d, g, _ in combined if d not in (None, "tie")]
    out.append(f"decision: {dict(sorted(Counter(str(d) for d, _, _ in combined).items()))}")
    out.append(f"  agreement_without_ties {_without_ties(decided)}")
    out.append(f"  coverage           {_rate(len(decided), len(records))}")
    both = [o for _, _, o in combined if o.get("as_given") is not None and o.get("swapped") is not None]
    if both:
        flips = sum(o["as_given"] != o["swapped"] for o in both)
        out.append(f"flip rate (both orders read) {_rate(flips, len(both))}")
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("items")
    ap.add_argument("traces")
    ap.add_argument("--criterion", default="better")
    args = ap.parse_args(argv)
    with open(args.items, encoding="utf-8") as fh:
        given = {it["id"]: list(it["responses"]) for it in map(json.loads, fh)}
    with open(args.traces, encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh if line.strip()]
    print("\n".join(summarise(records, given, args.criterion)))


if __name__ == "__main__":
    main()
