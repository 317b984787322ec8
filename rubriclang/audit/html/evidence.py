"""The evidence for one finding: what the perturbation changed (word
differences marked, side by side), the judge's verdict on every repeat of
the original and of the variant, and which node judgments moved on the way
to the sink."""

from __future__ import annotations

import json
from typing import Any

from rubriclang.audit.html import fmt, structure
from rubriclang.audit.html.markup import Markup, anchor, el, link
from rubriclang.audit.html.textdiff import sides
from rubriclang.audit.html.verdicts import Judge
from rubriclang.audit.report_json import element_words

# --- what changed ----------------------------------------------------------------


def _text(x: Any) -> str:
    return x if isinstance(x, str) else json.dumps(x, sort_keys=True, ensure_ascii=False)


def _structured(x: Any) -> bool:
    return x is not None and not isinstance(x, str)


def _pane(title: str, old: Any, new: Any, item: bool) -> Markup:
    """The field before and after: texts with their changed words marked;
    an item's structured value (a conversation, documents, JSON:
    `structure.field`) with the turns and documents the other side lacks
    marked. A judge's parameters (`item` false) are diffed as text."""
    left, right = (
        (structure.field(None, old, new), structure.field(None, new, old))
        if item and (_structured(old) or _structured(new))
        else sides(_text(old), _text(new))
        if old is not None and new is not None
        else (
            el("span", {"class": "absent"}, "(absent)") if old is None else el("span", None, _text(old)),
            el("span", {"class": "absent"}, "(absent)") if new is None else el("span", None, _text(new)),
        )
    )
    return el(
        "div",
        {"class": "field"},
        el("h5", None, title),
        el(
            "div",
            {"class": "pair"},
            el(
                "div",
                {"class": "side"},
                el("div", {"class": "side-label"}, "original"),
                el("div", {"class": "text"}, left),
            ),
            el(
                "div",
                {"class": "side"},
                el("div", {"class": "side-label"}, "perturbed"),
                el("div", {"class": "text"}, right),
            ),
        ),
    )


def _plain(title: str, text: Any, item: bool) -> Markup:
    return el(
        "div",
        {"class": "field"},
        el("h5", None, title),
        structure.field(None, text)
        if item and _structured(text)
        else el("div", {"class": "text"}, el("span", {"class": "absent"}, "(absent)") if text is None else _text(text)),
    )


def _item_fields(original: dict, perturbed: dict) -> list[tuple[str, Any, Any]]:
    """(title, original, perturbed) per field; candidates matched by id,
    with a change of position in the title (a swap keeps its texts); then
    the item's other declared fields (`fields`), by name."""
    fields = [("input", original.get("input"), perturbed.get("input"))]
    old = {cid: (i, text) for i, (cid, text) in enumerate(original.get("candidates", []))}
    new = {cid: (i, text) for i, (cid, text) in enumerate(perturbed.get("candidates", []))}
    ids = [cid for cid, _ in original.get("candidates", [])] + [
        cid for cid, _ in perturbed.get("candidates", []) if cid not in old
    ]
    for cid in ids:
        a, b = old.get(cid), new.get(cid)
        title = "response" if ids == ["response"] else f"candidate {cid}"
        if a and b and a[0] != b[0]:
            title += f" (position {a[0] + 1} \u2192 {b[0] + 1})"
        fields.append((title, a and a[1], b and b[1]))
    fields.append(("reference", original.get("reference"), perturbed.get("reference")))
    # The other declared fields (documents, lists, JSON...), as read, by name.
    old_fields, new_fields = original.get("fields") or {}, perturbed.get("fields") or {}
    names = list(old_fields) + [name for name in new_fields if name not in old_fields]
    fields += [(name, old_fields.get(name), new_fields.get(name)) for name in names]
    old_order, new_order = (", ".join(cid for cid, _ in t.get("candidates", [])) for t in (original, perturbed))
    if old_order != new_order:
        fields.insert(1, ("order of the candidates", old_order, new_order))
    return fields


def _flatten(prefix: str, x: Any, out: dict[str, Any]) -> None:
    if isinstance(x, dict) and x:
        for k in sorted(x, key=str):
            _flatten(f"{prefix}.{k}", x[k], out)
    else:
        out[prefix] = x


def _judge_fields(original: dict, perturbed: dict) -> list[tuple[str, Any, Any]]:
    """(parameter path, original, perturbed) for every criterion parameter
    of a judge-side variant, and the criterion order."""
    a: dict[str, Any] = {}
    b: dict[str, Any] = {}
    _flatten("criterion", original.get("criteria") or {}, a)
    _flatten("criterion", perturbed.get("criteria") or {}, b)
    fields = [(path, a.get(path), b.get(path)) for path in sorted(set(a) | set(b))]
    old, new = (o.get("criterion_order") for o in (original, perturbed))
    if old or new:
        fields.append(("criterion order", ", ".join(old) if old else None, ", ".join(new) if new else None))
    return fields


def changes(finding: dict) -> Markup:
    """The changed fields side by side; the unchanged ones folded away."""
    original, perturbed = finding["original"], finding["perturbed"]
    judge_side = "criteria" in original or "criteria" in perturbed
    fields = (_judge_fields if judge_side else _item_fields)(original, perturbed)
    changed = [_pane(t, a, b, not judge_side) for t, a, b in fields if a != b]
    same = [(t, a) for t, a, b in fields if a == b and (a is not None)]
    out = changed or [el("p", {"class": "muted"}, "The variant's texts equal the original's.")]
    if same:
        out.append(
            el(
                "details",
                {"class": "unchanged"},
                el("summary", None, "Unchanged: " + ", ".join(t for t, _ in same)),
                [_plain(t, a, not judge_side) for t, a in same],
            )
        )
    return el("div", {"class": "changes"}, out)


# --- verdicts ------------------------------------------------------------------


def verdicts(finding: dict, judge: Judge, gold: Any) -> Markup:
    """Each repeat's decision for the original and the variant; a repeat
    that went the wrong way is marked."""
    base, result = finding["baseline"], finding["result"]
    invariant = finding["relation"] == "invariant"
    repeats = max(len(base["decisions"]), len(result["decisions"]))
    head = el(
        "tr",
        None,
        el("th", {"scope": "col"}, ""),
        [el("th", {"scope": "col", "class": "num"}, f"r{i + 1}") for i in range(repeats)],
        el("th", {"scope": "col"}, "summary"),
    )

    def row(name: str, s: dict, wrong) -> Markup:
        cells = [
            el(
                "td",
                {"class": "dec off" if wrong(d) else "dec", "title": "differs from the baseline" if wrong(d) else None},
                fmt.decision(d),
            )
            for d in s["decisions"]
        ]
        return el(
            "tr",
            None,
            el("th", {"scope": "row"}, name),
            cells,
            [el("td", None, "") for _ in range(repeats - len(cells))],
            el("td", {"class": "sum"}, fmt.summary(s)),
        )

    rows = [
        row("original", base, lambda d: not judge.agrees(d, base)),
        row(
            "variant",
            result,
            (lambda d: not judge.agrees(d, base)) if invariant else (lambda d: not judge.fell(d, base)),
        ),
    ]
    key = (
        "marked: differs from the original's summary"
        if invariant
        else "marked in the variant's row: did not fall below the original's summary"
    )
    extra = f"; gold {fmt.value(gold)}" if gold is not None else ""
    return el(
        "div",
        {"class": "verdicts"},
        el("table", {"class": "decisions"}, el("thead", None, head), el("tbody", None, rows)),
        el("p", {"class": "what"}, f"Each column is one repeat ({key}){extra}."),
    )


# --- localization ----------------------------------------------------------------


def localization(finding: dict) -> Markup:
    """The node summaries that moved, in graph order, the operators that
    absorbed a move, and whether it reached the sink."""
    loc = finding["localization"]
    if not loc["moved"]:
        why = {
            "flipped": ": the verdict changed although no node's typical value did (in the readout, e.g. a tie "
            "resolved by "
            "position, or within the spread of the repeats).",
            "missed": ": no criterion registered the degradation.",
        }.get(finding["outcome"], ".")
        body: list[Markup] = [el("p", None, "No node's summary moved" + why)]
    else:
        rows = [
            el(
                "tr",
                {"class": m["kind"]},
                el("td", None, el("code", None, m["node"])),
                el("td", None, m["kind"]),
                el("td", None, m["candidate"]),
                el("td", {"class": "num"}, fmt.value(m["original"])),
                el("td", {"class": "num"}, "\u2192 ", fmt.value(m["perturbed"])),
            )
            for m in loc["moved"]
        ]
        body = [
            el(
                "table",
                {"class": "moved"},
                el(
                    "thead",
                    None,
                    el(
                        "tr",
                        None,
                        [el("th", {"scope": "col"}, h) for h in ("Node", "Kind", "Candidate", "Original", "Perturbed")],
                    ),
                ),
                el("tbody", None, rows),
            )
        ]
    for a in loc["absorbed"]:
        body.append(
            el(
                "p",
                {"class": "absorbed"},
                el("code", None, a["node"]),
                f" (candidate {a['candidate']}) absorbed the move of {', '.join(a['inputs'])}: its value did not "
                "change.",
            )
        )
    body.append(
        el(
            "p",
            {"class": "sink " + ("reached" if loc["reached_sink"] else "held")},
            "The move reached the sink." if loc["reached_sink"] else "The sink's summary did not move.",
        )
    )
    if finding.get("elements"):
        # An operator on structured fields: the element it changed, beside the criteria that moved.
        body.insert(0, el("p", {"class": "elements"}, "Changed: ", element_words(finding["elements"]), "."))
    return el("div", {"class": "localization"}, body)


# --- the whole finding ------------------------------------------------------------


def evidence(finding: dict, judge: Judge, report: dict) -> Markup:
    """One finding's article; its id is the target of the review queue's link."""
    v = finding["validation"]
    checked = (
        f"validated by {v['by']}"
        + (f" ({v['model']})" if v.get("model") else "")
        + f": {v['verdict']}"
        + (f", {v['reason']}" if v.get("reason") else "")
    )
    gold = (report["by_item"].get(finding["item"]) or {}).get("gold")
    meta = el(
        "p",
        {"class": "meta"},
        "Item ",
        link(anchor("i", finding["item"]), el("code", None, finding["item"])),
        f"; operator {finding['operator']} ({finding['surface'].replace('_', ' ')}, {finding['relation']}, "
        f"{finding['generator']}); "
        f"changed {', '.join(finding['changed']) or 'nothing'}; {checked}.",
    )
    return el(
        "article",
        {"id": anchor("v", finding["variant"]), "class": "finding"},
        el(
            "h3",
            None,
            el("span", {"class": f"badge {finding['outcome']}"}, finding["outcome"]),
            " ",
            el("code", None, finding["variant"]),
        ),
        meta,
        el("h4", None, "The judge's verdicts"),
        verdicts(finding, judge, gold),
        el("h4", None, "Where it moved"),
        localization(finding),
        el("h4", None, "What the perturbation changed"),
        changes(finding),
        el("p", {"class": "back"}, link(anchor("i", finding["item"]), "\u2191 back to the item in the queue")),
    )
