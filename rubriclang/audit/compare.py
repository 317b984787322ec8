"""`rbg audit compare DIR_A DIR_B`: two audits of one sealed suite (two
judges, or two versions of a rubric) side by side: every rate of each, per
surface and per operator, the difference B - A of each headline rate over
the variants both measured (`b_minus_a`, naming the figure it subtracts),
and the variants that flip (or are detected) in one and not the other.
Read from the two `report.json` files alone (docs/audit.md, "Comparing two
audits")."""

from __future__ import annotations

import os
from collections.abc import Iterable

from rubriclang.audit.figures import label
from rubriclang.audit.metrics import Tally, newcombe
from rubriclang.safetext import printable

SCHEMA = "rubriclang.audit.compare/2"
# The rates of each block; the first is the one B - A subtracts.
_RATES = {"invariant": ("flip_rate", "judgment_flip_rate"), "directional": ("detection_rate", "contradiction_rate")}
# The outcome a variant counts for in that first rate, and those that measured it.
_HIT = {"invariant": "flipped", "directional": "detected"}
_MEASURED = {"invariant": ("stable", "flipped"), "directional": ("detected", "missed")}


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
    """1 when the variant counts in its relation's headline rate (flipped;
    detected), 0 when it was measured and does not, None when it measured
    nothing (failed) or does not count (ineligible)."""
    return int(outcome == _HIT[relation]) if outcome in _MEASURED[relation] else None


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


def paired(figure: str, rows: Iterable[tuple[str, int, int, int, int]]) -> dict:
    """B - A of `figure` from per-item (item, hits in A, units in A, hits in
    B, units in B): the difference of the two pooled rates, with Newcombe's
    interval from their Wilson intervals; `value` null without units."""
    a, b = Tally(), Tally()
    for item, ka, na, kb, nb in rows:
        a.add(item, ka, na)
        b.add(item, kb, nb)
    est = newcombe(b.estimate(), a.estimate()).to_json()
    return {
        "figure": figure,
        **est,
        "a": _int(a.count),
        "b": _int(b.count),
        "a_total": _int(a.total),
        "b_total": _int(b.total),
    }


def _int(x: float) -> int:
    return round(x)


def _shared_units(rows: Iterable[tuple[str, int, int]]) -> list[tuple[str, int, int, int, int]]:
    """Units measured in both audits (item, flag in A, flag in B) as per-unit rows."""
    return [(item, fa, 1, fb, 1) for item, fa, fb in rows]


def _block_rates(block: dict | None, relation: str) -> dict:
    return {name: (block or {}).get(name) for name in _RATES[relation]}


def compare(a: dict, b: dict, names: tuple[str, str]) -> dict:
    """The comparison document (schema `rubriclang.audit.compare/2`)."""
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
                "b_minus_a": paired(_RATES[relation][0], _shared_units(rows)),
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
        "b_minus_a": _repeat_paired(a, b, items),
    }
    differ = []
    for vid in shared:
        item, op, oa = va[vid]
        ob = vb[vid][2]
        # An item eligible in one audit only is not a difference of the judges' outcomes.
        if oa != ob and "ineligible" not in (oa, ob):
            differ.append(
                {"variant": vid, "item": item, "operator": op, "relation": relations[op][0], "a": oa, "b": ob}
            )
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
                repeat["b_minus_a"],
                *_paired_all(overall),
                *(p for g in (*by_surface.values(), *by_operator.values()) for p in _paired_all(g)),
            ]
        ),
    }


def _paired_all(group: dict) -> list[dict]:
    return [g["b_minus_a"] for g in group.values()]


def _nonzero(p: dict) -> bool:
    return p["value"] is not None and abs(p["value"]) > 1e-12


def _repeat_paired(a: dict, b: dict, items: list[str]) -> dict:
    """B - A of the repeat flip rate over the shared items, each side over
    its own repeats compared (the item's part of `repeat_flip_rate`,
    `repeat_noise`; a report of schema /2 or /1 has only the flips against
    the whole summary, over the repeats that did not fail)."""
    rows = []
    for item in items:
        (ka, na), (kb, nb) = _noise(a["by_item"][item]), _noise(b["by_item"][item])
        if na and nb:
            rows.append((item, ka, na, kb, nb))
    return paired("repeat_flip_rate", rows)


def _noise(entry: dict) -> tuple[int, int]:
    if "repeat_noise" in entry:
        return entry["repeat_noise"]["flips"], entry["repeat_noise"]["compared"]
    measured = sum(d["status"] != "failed" for d in entry["baseline"]["decisions"])
    return entry["repeat_flips"], measured if measured > 1 else 0


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
    return "not measured" if not r or r.get("value") is None else f"{100 * r['value']:.1f}%"


def _delta(p: dict) -> str:
    """`B - A <figure> +x.x pp [low, high] over A n, B m`: the difference
    says which figure it subtracts."""
    if p["value"] is None:
        return f"B - A {label(p['figure'])} not measured"
    ci = f" [{100 * p['low']:+.1f}, {100 * p['high']:+.1f}]" if p.get("low") is not None else ""
    counts = f"(A {p['a']}/{p['a_total']}, B {p['b']}/{p['b_total']})"
    return f"B - A {label(p['figure'])} {100 * p['value']:+.1f} pp{ci} {counts}"


def render_text(doc: dict, max_rows: int = 20) -> str:
    a, b = doc["a"], doc["b"]
    lines = [
        f"A: `{a['judge']}` ({a['folder']})   B: `{b['judge']}` ({b['folder']})   sealed {doc['sealed'][:19]}...",
        f"  shared: {doc['shared']['items']} items, {doc['shared']['variants']} variants (only A "
        f"{doc['shared']['only_a']}, only B {doc['shared']['only_b']})",
        f"  {label('repeat_flip_rate'):<40} A {_pct(doc['repeat_flip_rate']['a'])}  B "
        f"{_pct(doc['repeat_flip_rate']['b'])}  {_delta(doc['repeat_flip_rate']['b_minus_a'])}",
    ]

    def rows(title: str, groups: dict) -> None:
        if not groups:
            return
        lines.append(title)
        for name, g in groups.items():
            for relation, r in g.items():
                first = _RATES[relation][0]
                lines.append(
                    f"  {name:<24} {label(first):<15} A {_pct(r['a'][first])}  B {_pct(r['b'][first])}  "
                    f"{_delta(r['b_minus_a'])}"
                )

    rows("Overall:", {"all": doc["overall"]})
    rows("By surface:", doc["by_surface"])
    rows("By operator:", doc["by_operator"])
    if doc["differ"]:
        lines.append(f"Variants whose outcome differs between the audits ({len(doc['differ'])}):")
        lines += [f"  {d['variant']}: A {d['a']}, B {d['b']}" for d in doc["differ"][:max_rows]]
        if len(doc["differ"]) > max_rows:
            lines.append(f"  ... and {len(doc['differ']) - max_rows} more in compare.json")
    lines.append(f"Differences: {doc['differences']}")
    return printable("\n".join(lines) + "\n")
