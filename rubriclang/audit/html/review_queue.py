"""The review queue: the items whose verdicts went wrong, worst first,
each finding linking to its evidence.

A finding's weight is the share of its variant's repeats that went the
wrong way (differ from the baseline, for an invariant flip; did not fall,
for a missed degradation). Items are ranked by their worst finding's
weight, then by the sum of their findings' weights, then by the largest
move of an ordinal verdict, then by id: the same report gives the same
order."""

from __future__ import annotations

from rubriclang.audit.html import fmt
from rubriclang.audit.html.markup import Markup, anchor, el, link
from rubriclang.audit.html.verdicts import Judge, Severity, severity


def ranked(report: dict) -> list[tuple[str, list[tuple[dict, Severity]]]]:
    """(item, its findings with their severities) pairs: worst item first,
    and each item's worst finding first."""
    judge = Judge.of(report)
    per_item: dict[str, list[tuple[dict, Severity]]] = {}
    for f in report["flips"] + report["misses"]:
        per_item.setdefault(f["item"], []).append((f, severity(f, judge)))
    for found in per_item.values():
        found.sort(key=lambda fs: (-round(fs[1].share, 9), -round(abs(fs[1].shift or 0.0), 9), fs[0]["variant"]))

    def key(entry: tuple[str, list[tuple[dict, Severity]]]):
        item, found = entry
        shifts = [abs(s.shift) for _, s in found if s.shift is not None]
        worst = max(s.share for _, s in found)
        return (-round(worst, 9), -round(sum(s.share for _, s in found), 9), -round(max(shifts, default=0.0), 9), item)

    return sorted(per_item.items(), key=key)


def moved_summary(f: dict) -> str:
    loc = f["localization"]
    crits = []
    for m in loc["moved"]:
        if m["kind"] == "criterion" and m["node"] not in crits:
            crits.append(m["node"])
    where = f"moved: {', '.join(crits)}" if crits else "no criterion moved"
    return where + ("; reached the sink" if loc["reached_sink"] else "")


def _entry(f: dict, s: Severity) -> Markup:
    shift = f" (\u0394 {fmt.number(s.shift)})" if s.shift is not None else ""
    return el(
        "li",
        None,
        link(anchor("v", f["variant"]), el("code", None, f["variant"])),
        " ",
        el("span", {"class": f"badge {f['outcome']}"}, f["outcome"]),
        " ",
        el("span", {"class": "verdict"}, f"{fmt.summary(f['baseline'])} \u2192 {fmt.summary(f['result'])}{shift}"),
        el(
            "span",
            {"class": "what"},
            f"{f['operator']} ({f['relation']}); {s.describe(f['relation'])}; {moved_summary(f)}",
        ),
    )


def _item_facts(report: dict, item: str) -> str:
    info = report["by_item"].get(item)
    if not info:
        return ""
    facts = [
        f"baseline {fmt.summary(info['baseline'])}",
        f"{info['repeat_flips']}/{info['repeats']} repeats differ from it",
    ]
    if info.get("baseline_stability") == "unstable":
        facts.append("unstable baseline: its repeats disagree, flips on it are counted against their summary")
    if info.get("gold") is not None:
        verdict = "" if info.get("correct") is None else (", correct" if info["correct"] else ", wrong")
        facts.append(f"gold {fmt.value(info['gold'])}{verdict}")
    return "; ".join(facts)


def review_queue(report: dict) -> Markup:
    """The ranked list, or a line saying there is nothing to review."""
    entries = ranked(report)
    if not entries:
        return el("p", None, "Nothing to review: no invariant variant flipped and no eligible degradation was missed.")
    items = []
    for rank, (item, found) in enumerate(entries, 1):
        n = len(found)
        items.append(
            el(
                "li",
                {"id": anchor("i", item), "class": "qitem"},
                el(
                    "div",
                    {"class": "qhead"},
                    el("span", {"class": "rank"}, f"{rank}."),
                    " ",
                    el("code", None, item),
                    " ",
                    el("span", {"class": "what"}, f"{n} finding{'s' if n != 1 else ''}; {_item_facts(report, item)}"),
                ),
                el("ul", None, [_entry(f, s) for f, s in found]),
            )
        )
    return el("ol", {"class": "queue"}, items)
