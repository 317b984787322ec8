"""`rbg audit compare DIR_A DIR_B`: two audits of one sealed suite (two
judges, or two versions of a rubric) side by side: every rate of each, per
surface and per operator, the paired difference B - A over the variants
both judged, and the variants that flip (or are detected) in one and not
the other. Read from the two `report.json` files alone (docs/audit.md,
"Comparing two audits")."""

from __future__ import annotations

import os
from collections.abc import Iterable

import numpy as np

from rubriclang.evaluation.metrics import bootstrap
from rubriclang.safetext import printable

SCHEMA = "rubriclang.audit.compare/1"
# The rates of each block, by the outcome a variant counts for.
_RATES = {"invariant": ("flip_rate", "judgment_flip_rate"), "directional": ("detection_rate", "contradiction_rate")}


class CompareError(Exception):
    """Two folders that cannot be compared, and why."""


def load(folder: str) -> dict:
    """`folder/report.json`, read and checked as the page reads it."""
    from rubriclang.audit.html.write import ReportError, load_report

    try:
        return load_report(os.path.join(folder, "report.json"))
    except ReportError as exc:
        raise CompareError(str(exc)) from None


def _flag(relation: str, outcome: str) -> int | None:
    """1 when the variant went wrong (flipped or failed; a missed or failed
    degradation), 0 when it did not, None when it does not count (ineligible)."""
    if relation == "invariant":
        return int(outcome != "stable")
    return None if outcome == "ineligible" else int(outcome != "detected")


def _variants(report: dict, relations: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str, str]]:
    """variant id -> (item, operator, outcome)."""
    return {
        vid: (item, v["operator"], v["outcome"])
        for item, e in report["by_item"].items()
        for vid, v in e["variants"].items()
        if v["operator"] in relations
    }


def _relations(report: dict) -> dict[str, tuple[str, str]]:
    return {op["name"]: (op["relation"], op["surface"]) for op in report["operators"]}


def paired(rows: Iterable[tuple[str, int, int]]) -> dict:
    """B - A of a share over paired units (item, a 0/1, b 0/1): the
    difference of the pooled rates, with a bootstrap interval resampling
    items (units of one item together); `value` null without units."""
    per: dict[str, list[int]] = {}
    for item, a, b in rows:
        cell = per.setdefault(item, [0, 0, 0])
        cell[0] += a
        cell[1] += b
        cell[2] += 1
    keys = sorted(per)
    if not keys:
        return {"value": None, "low": None, "high": None, "n": 0, "a": 0, "b": 0, "total": 0}
    sa, sb, st = ([per[k][i] for k in keys] for i in range(3))
    est = bootstrap(lambda a, b, t: (np.sum(b) - np.sum(a)) / np.sum(t), sa, sb, st).to_json()
    return {**est, "a": sum(sa), "b": sum(sb), "total": sum(st)}


def _block_rates(block: dict | None, relation: str) -> dict:
    return {name: (block or {}).get(name) for name in _RATES[relation]}


def compare(a: dict, b: dict, names: tuple[str, str]) -> dict:
    """The comparison document (schema `rubriclang.audit.compare/1`)."""
    if a["suite"]["sealed"] != b["suite"]["sealed"]:
        raise CompareError(
            f"the two audits ran on different sealed suites ({a['suite']['sealed'][:19]}... and "
            f"{b['suite']['sealed'][:19]}...); "
            "run the second with `--sealed DIR_A/sealed.json` to compare them"
        )
    rel_a, rel_b = _relations(a), _relations(b)
    relations = {n: rel_a[n] for n in rel_a if n in rel_b and rel_a[n] == rel_b[n]}
    va, vb = _variants(a, relations), _variants(b, relations)
    shared = sorted(set(va) & set(vb))
    groups: dict[tuple[str, str], list[str]] = {}
    for vid in shared:
        op = va[vid][1]
        relation, surface = relations[op]
        groups.setdefault(("operator", op), []).append(vid)
        groups.setdefault(("surface", surface), []).append(vid)
        groups.setdefault(("all", relation), []).append(vid)

    def block(vids: list[str], section_a: dict | None, section_b: dict | None) -> dict:
        out = {}
        for relation in ("invariant", "directional"):
            mine = [v for v in vids if relations[va[v][1]][0] == relation]
            if not mine:
                continue
            rows = []
            for v in mine:
                fa, fb = _flag(relation, va[v][2]), _flag(relation, vb[v][2])
                if fa is not None and fb is not None:
                    rows.append((va[v][0], fa, fb))
            out[relation] = {
                "a": _block_rates((section_a or {}).get(relation), relation),
                "b": _block_rates((section_b or {}).get(relation), relation),
                "paired": paired(rows),
                "variants": len(mine),
            }
        return out

    by_operator = {
        op: block(v, a["by_operator"].get(op), b["by_operator"].get(op))
        for (kind, op), v in sorted(groups.items())
        if kind == "operator"
    }
    by_surface = {
        s: block(v, a["by_surface"].get(s), b["by_surface"].get(s))
        for (kind, s), v in sorted(groups.items())
        if kind == "surface"
    }
    overall = block(shared, a["metrics"], b["metrics"])
    items = sorted(set(a["by_item"]) & set(b["by_item"]))
    repeat = {
        "a": a["metrics"]["repeat_flip_rate"],
        "b": b["metrics"]["repeat_flip_rate"],
        "paired": _repeat_paired(a, b, items),
    }
    differ = []
    for vid in shared:
        item, op, oa = va[vid]
        ob = vb[vid][2]
        relation = relations[op][0]
        fa, fb = _flag(relation, oa), _flag(relation, ob)
        if (
            fa is not None and fb is not None and fa != fb
        ):  # an item eligible in one audit only is not a difference of the judges' outcomes
            differ.append({"variant": vid, "item": item, "operator": op, "relation": relation, "a": oa, "b": ob})
    return {
        "schema": SCHEMA,
        "sealed": a["suite"]["sealed"],
        "a": _side(a, names[0]),
        "b": _side(b, names[1]),
        "shared": {
            "items": len(items),
            "variants": len(shared),
            "only_a": len(set(va) - set(vb)),
            "only_b": len(set(vb) - set(va)),
        },
        "repeat_flip_rate": repeat,
        "overall": overall,
        "by_surface": by_surface,
        "by_operator": by_operator,
        "differ": differ,
        "differences": len(differ)
        + sum(
            _nonzero(x)
            for x in [
                repeat["paired"],
                *_paired_all(overall),
                *(p for g in (*by_surface.values(), *by_operator.values()) for p in _paired_all(g)),
            ]
        ),
    }


def _paired_all(group: dict) -> list[dict]:
    return [g["paired"] for g in group.values()]


def _nonzero(p: dict) -> bool:
    return p["value"] is not None and abs(p["value"]) > 1e-12


def _repeat_paired(a: dict, b: dict, items: list[str]) -> dict:
    """B - A of the repeat flip share over the shared items."""
    rows = []
    for item in items:
        ea, eb = a["by_item"][item], b["by_item"][item]
        na, nb = ea["repeats"], eb["repeats"]
        if na != nb or not na:
            continue
        rows += [(item, int(r < ea["repeat_flips"]), int(r < eb["repeat_flips"])) for r in range(na)]
    return paired(rows)


def _side(report: dict, folder: str) -> dict:
    j = report["judge"]
    return {
        "folder": folder,
        "judge": j["name"],
        "path": j["path"],
        "hash": j["hash"],
        "type": j["type"],
        "repeats": report["suite"]["repeats"],
    }


# --- text ----------------------------------------------------------------------


def _pct(r: dict | None) -> str:
    return "n/a" if not r or r.get("value") is None else f"{100 * r['value']:.1f}%"


def _delta(p: dict) -> str:
    if p["value"] is None:
        return "n/a"
    ci = f" [{100 * p['low']:+.1f}, {100 * p['high']:+.1f}]" if p.get("low") is not None else ""
    return f"{100 * p['value']:+.1f} pp{ci} over {p['total']}"


def render_text(doc: dict, max_rows: int = 20) -> str:
    a, b = doc["a"], doc["b"]
    lines = [
        f"A: `{a['judge']}` ({a['folder']})   B: `{b['judge']}` ({b['folder']})   sealed {doc['sealed'][:19]}...",
        f"  shared: {doc['shared']['items']} items, {doc['shared']['variants']} variants (only A "
        f"{doc['shared']['only_a']}, only B {doc['shared']['only_b']})",
        f"  repeat flip rate     A {_pct(doc['repeat_flip_rate']['a'])}  B {_pct(doc['repeat_flip_rate']['b'])}  B-A "
        f"{_delta(doc['repeat_flip_rate']['paired'])}",
    ]

    def rows(title: str, groups: dict) -> None:
        if not groups:
            return
        lines.append(title)
        for name, g in groups.items():
            for relation, r in g.items():
                first = _RATES[relation][0]
                lines.append(
                    f"  {name:<24} {first:<16} A {_pct(r['a'][first])}  B {_pct(r['b'][first])}  B-A "
                    f"{_delta(r['paired'])}"
                )

    rows("Overall:", {"all": doc["overall"]})
    rows("By surface:", doc["by_surface"])
    rows("By operator:", doc["by_operator"])
    if doc["differ"]:
        lines.append(f"Variants that went wrong in one audit only ({len(doc['differ'])}):")
        lines += [f"  {d['variant']}: A {d['a']}, B {d['b']}" for d in doc["differ"][:max_rows]]
        if len(doc["differ"]) > max_rows:
            lines.append(f"  ... and {len(doc['differ']) - max_rows} more in compare.json")
    lines.append(f"Differences: {doc['differences']}")
    return printable("\n".join(lines) + "\n")
