"""`rbg eval`: a graph's decisions (from traces) against gold labels, beside
the flat weighted baseline, with bootstrap intervals."""

from __future__ import annotations

from typing import Any, Iterable

from rubriclang.checker.graph import CheckedGraph
from rubriclang.evaluation.baseline import baseline_sink, baseline_weights
from rubriclang.evaluation.metrics import binary_metrics, pairwise_metrics, pointwise_metrics
from rubriclang.interp.domain import coerce
from rubriclang.interp.readout import Decision, pairwise, pointwise


def _values(graph: CheckedGraph, rec: dict, cid: str) -> dict[str, Any]:
    out = {}
    for c in graph.criteria:
        j = rec["criteria"].get(c.name, {}).get(cid)
        if j is None or j.get("error"):
            out[c.name] = None
            continue
        out[c.name], problem = coerce(j["value"], c.type)
    return out


def _baseline_decision(graph: CheckedGraph, weights, rec: dict) -> Decision:
    cids = tuple(rec["candidates"])
    sinks = {cid: baseline_sink(graph, weights, _values(graph, rec, cid)) for cid in cids}
    if rec["mode"] == "pointwise":
        return pointwise(graph.readouts["pointwise"], graph.scale, sinks[cids[0]])
    return pairwise(graph.readouts["pairwise"], graph.scale, cids, sinks)


def _metrics(mode: str, kind: str, decisions: list[Decision], gold: list[Any]) -> dict:
    ok = [(d.decision, g) for d, g in zip(decisions, gold) if d.status == "ok"]
    coverage = len(ok) / len(decisions) if decisions else 0.0
    if mode == "pairwise":
        picks = [d.decision if d.status == "ok" else None for d in decisions]
        figures = pairwise_metrics(picks, [str(g) for g in gold])
    elif kind == "bool":
        figures = binary_metrics([p for p, _ in ok], [bool(g) for _, g in ok])
    else:
        figures = pointwise_metrics([float(p) for p, _ in ok], [float(g) for _, g in ok])
    return {
        "n": len(decisions),
        "decided": len(ok),
        "coverage": round(coverage, 6),
        "metrics": {k: v.to_json() for k, v in figures.items()},
        "_estimates": figures,
    }


def evaluate(graph: CheckedGraph, records: Iterable[dict], gold: dict[str, Any], with_baseline: bool = True) -> dict:
    """The evaluation report: the graph's metrics and, optionally, the flat
    weighted baseline's, over the items that have gold labels."""
    recs = [r for r in records if gold.get(r["item"]) is not None]
    modes = sorted({r["mode"] for r in recs})
    report: dict[str, Any] = {"graph": graph.name, "items_with_gold": len(recs), "modes": {}}
    weights = baseline_weights(graph) if with_baseline else None
    kind = graph.scale.kind
    for mode in modes:
        rs = [r for r in recs if r["mode"] == mode]
        golds = [gold[r["item"]] for r in rs]
        decisions = [Decision.from_json(r["readout"]) for r in rs]
        entry = {"graph": _metrics(mode, kind, decisions, golds)}
        if weights is not None:
            base = [_baseline_decision(graph, weights, r) for r in rs]
            entry["weighted_baseline"] = _metrics(mode, kind, base, golds)
            entry["weighted_baseline"]["weights"] = {k: round(v, 6) for k, v in weights.items()}
        report["modes"][mode] = entry
    return report


def strip_private(report: dict) -> dict:
    """The report without the in-memory estimate objects (for JSON)."""
    if isinstance(report, dict):
        return {k: strip_private(v) for k, v in report.items() if not k.startswith("_")}
    return report


def render_text(report: dict) -> str:
    """A side-by-side table of the graph and its baseline."""
    lines = [f"Evaluation of `{report['graph']}` on {report['items_with_gold']} items with gold labels"]
    for mode, entry in report["modes"].items():
        cols = [k for k in ("graph", "weighted_baseline") if k in entry]
        lines.append("")
        lines.append(f"{mode}:")
        header = f"  {'metric':<14}" + "".join(f"{c.replace('_', ' '):>28}" for c in cols)
        lines.append(header)
        first = entry[cols[0]]
        for name in first["_estimates"]:
            row = f"  {name:<14}" + "".join(f"{entry[c]['_estimates'][name].text():>28}" for c in cols)
            lines.append(row)
        lines.append(f"  {'coverage':<14}" + "".join(f"{entry[c]['decided']:>18} / {entry[c]['n']:<7}" for c in cols))
    lines.append("")
    lines.append("Intervals: percentile bootstrap over items, 95%, 1000 resamples.")
    return "\n".join(lines)
