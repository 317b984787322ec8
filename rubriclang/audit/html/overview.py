"""The page's summary sections: the headline metrics, the judge and the
suite, the operators run or skipped, the criteria, notes, review notes,
and the optional LLM-written summary."""

from __future__ import annotations

from typing import Any

from rubriclang.audit.html import fmt
from rubriclang.audit.html.markup import Markup, anchor, el, join, link

COUNT_KEYS = ("generated", "accepted", "rejected", "unavailable", "failed")


def _table(head: list[str], rows: list[Any], cls: str | None = None) -> Markup:
    return el(
        "table",
        {"class": cls},
        el("thead", None, el("tr", None, [el("th", {"scope": "col"}, h) for h in head])),
        el("tbody", None, rows),
    )


def _rate_row(name: str, what: str, rate: dict | None, missing: str) -> Markup:
    if rate is None:
        return el("tr", {"class": "muted"}, el("th", {"scope": "row"}, name), el("td", {"colspan": 4}, missing))
    return el(
        "tr",
        None,
        el("th", {"scope": "row"}, name, el("span", {"class": "what"}, what)),
        el("td", {"class": "num big"}, fmt.percent(rate["value"])),
        el("td", {"class": "num"}, fmt.interval(rate)),
        el("td", {"class": "num"}, fmt.fraction(rate)),
        el("td", {"class": "num"}, rate["n"]),
    )


def _estimate_row(name: str, what: str, est: dict | None, form, missing: str) -> Markup:
    if est is None:
        return el("tr", {"class": "muted"}, el("th", {"scope": "row"}, name), el("td", {"colspan": 4}, missing))
    return el(
        "tr",
        None,
        el("th", {"scope": "row"}, name, el("span", {"class": "what"}, what)),
        el("td", {"class": "num big"}, form(est["value"])),
        el("td", {"class": "num"}, fmt.interval(est, form)),
        el("td", {"class": "num"}, fmt.DASH),
        el("td", {"class": "num"}, est["n"]),
    )


def metrics(report: dict) -> Markup:
    """The headline figures, each with its 95% interval, count and n."""
    m = report["metrics"]
    inv, dirs, gold = m["invariant"], m["directional"], m["gold"]
    no_inv, no_dir, no_gold = (
        "not measured: no invariant variants",
        "not measured: no directional variants",
        "not measured: no gold labels",
    )
    rows = [
        _rate_row(
            "Repeat flip rate",
            "judgments of the original items that differ from their baseline (noise)",
            m["repeat_flip_rate"],
            "",
        )
    ]
    rows.append(_rate_row("Invariant flip rate", "invariant variants not stable", inv and inv["flip_rate"], no_inv))
    rows.append(
        _rate_row(
            "Judgment flip rate",
            "judgments of invariant variants that differ from the baseline",
            inv and inv["judgment_flip_rate"],
            no_inv,
        )
    )
    rows.append(
        _estimate_row(
            "Excess over repeat noise",
            "judgment flip rate minus repeat flip rate, same items",
            inv and inv["excess_over_noise"],
            fmt.points,
            no_inv,
        )
    )
    rows.append(
        _rate_row(
            "Degradation detection rate",
            "eligible degraded variants whose verdict fell",
            dirs and dirs["detection_rate"],
            no_dir,
        )
    )
    if dirs and "contradiction_rate" in dirs:
        rows.append(
            _estimate_row(
                "Detection over repeat noise",
                "judgment-level detection minus the repeats' own falls, same items",
                dirs["detection_over_noise"],
                fmt.points,
                no_dir,
            )
        )
        rows.append(
            _rate_row(
                "Contradiction rate",
                "degraded variants with room to rise whose verdict rose",
                dirs["contradiction_rate"],
                no_dir,
            )
        )
        rows.append(
            _estimate_row(
                "Score shift under degradation",
                "mean change of the verdict's score, variant minus baseline",
                dirs["score_shift"],
                fmt.number,
                "not measured: the judge's verdicts have no scale",
            )
        )
    rows.append(
        _rate_row("Accuracy vs gold", "original items whose verdict equals gold", gold and gold["accuracy"], no_gold)
    )
    if gold and gold.get("agreement"):
        rows.append(_rate_row("Agreement vs gold", "mean within tolerance of gold", gold["agreement"], no_gold))
    if gold and gold.get("mae"):
        rows.append(
            _estimate_row("MAE vs gold", "mean absolute difference from gold", gold["mae"], fmt.number, no_gold)
        )
    if gold and gold.get("rank_correlation"):
        rows.append(
            _estimate_row(
                "Rank correlation vs gold",
                "Spearman's rho of the mean verdict and gold",
                gold["rank_correlation"],
                fmt.number,
                no_gold,
            )
        )
    if inv and inv.get("gold"):
        rows.append(
            _rate_row(
                "Accuracy vs gold, invariant variants",
                "variants whose verdict equals their item's gold",
                inv["gold"]["accuracy"],
                no_gold,
            )
        )
    detail = []
    if inv:
        detail.append(
            f"Invariant variants: {inv['variants']} ({inv['stable']} stable, {inv['flipped']} flipped, "
            f"{inv['failed']} failed)."
        )
    if dirs:
        detail.append(
            f"Directional variants: {dirs['variants']} ({dirs['eligible']} eligible, {dirs['ineligible']} ineligible; "
            f"{dirs['detected']} detected, {dirs['missed']} missed, {dirs['failed']} failed)."
        )
    b = m.get("baselines")
    if b and (b["unstable"] or b["failed"]):
        detail.append(
            f"Baselines: {b['stable']} stable, {b['unstable']} unstable (repeats disagree: "
            f"{', '.join(b['unstable_items'])}), {b['failed']} failed; "
            "flips on unstable baselines are counted against their summary, and again apart."
        )
    table = _table(["Metric", "Value", "95% interval", "Count", "n items"], rows, "metrics")
    return Markup(table + el("p", {"class": "note"}, " ".join(detail))) if detail else table


def confusion(report: dict) -> Markup | None:
    """Gold values by the judge's verdicts on the original items (schema /2), or None."""
    gold = report["metrics"]["gold"]
    table = gold and gold.get("confusion")
    if not table:
        return None
    head = ["gold \\ verdict", *[fmt.decision(p) for p in table["predicted"]]]
    rows = [
        el("tr", None, el("th", {"scope": "row"}, fmt.value(g)), [el("td", {"class": "num"}, n) for n in row])
        for g, row in zip(table["gold"], table["counts"])
    ]
    return _table(head, rows, "confusion")


def counts(report: dict) -> Markup:
    """Items, judgments, and the variants generated, accepted, rejected and unavailable."""
    c = report["counts"]
    totals = {k: sum(op["variants"][k] for op in report["operators"]) for k in COUNT_KEYS}
    judged = [
        ("items", c["items"]),
        ("variants", c["variants"]),
        ("judgments", c["judgments"]),
        ("failed", c["failed_judgments"]),
    ]
    made = [(k if k != "failed" else "generator failed", totals[k]) for k in COUNT_KEYS]

    def group(title: str, cells: list) -> Markup:
        return el(
            "div",
            {"class": "countgroup"},
            el("div", {"class": "grouptitle"}, title),
            el("dl", {"class": "counts"}, [el("div", None, el("dt", None, k), el("dd", None, v)) for k, v in cells]),
        )

    return el("div", {"class": "countgroups"}, group("Judged", judged), group("Variants, all operators", made))


def judge_and_suite(report: dict) -> Markup:
    j, s = report["judge"], report["suite"]
    b = j["backend"]
    backend = (
        f"{b['model'] or 'embedded model'}, temperature {fmt.number(b['temperature'])}, seed {b['seed']}"
        if b
        else "none (no llm.* criteria: a deterministic judge)"
    )
    crits = el(
        "ul",
        {"class": "plain"},
        [el("li", None, el("code", None, c["name"]), f": {c['type']} = {c['procedure']}") for c in j["criteria"]],
    )
    rows = [
        ("Judge", el("code", None, j["name"])),
        ("Graph file", el("code", None, j["path"])),
        ("Graph hash", el("code", {"class": "hash"}, j["hash"])),
        ("Judge type", f"{j['type']} ({j['mode']})"),
        ("Output", fmt.DASH if j["output"] is None else j["output"]),
        ("Positive verdict", fmt.DASH if j["positive"] is None else fmt.value(j["positive"])),
        ("LLM backend", backend),
        ("Criteria", crits),
        ("Suite file", el("code", None, s["path"])),
        ("Sealed suite", el("code", {"class": "hash"}, s["sealed"])),
        ("Repeats", s["repeats"]),
        ("Tolerance", fmt.number(s["tolerance"])),
        ("Seed", s["seed"]),
    ]
    return el(
        "table",
        {"class": "facts"},
        el("tbody", None, [el("tr", None, el("th", {"scope": "row"}, k), el("td", None, v)) for k, v in rows]),
    )


def _result(report: dict, op: dict) -> str:
    block = report["by_operator"].get(op["name"]) or {}
    if block.get("invariant"):
        r = block["invariant"]["flip_rate"]
        return f"flip rate {fmt.percent(r['value'])} ({fmt.fraction(r)})"
    if block.get("directional"):
        r = block["directional"]["detection_rate"]
        return f"detection {fmt.percent(r['value'])} ({fmt.fraction(r)})"
    return fmt.DASH


def operators(report: dict) -> Markup:
    """Every requested operator: what it is, what its variants became, and
    why it was skipped."""
    rows = []
    for op in report["operators"]:
        skipped = op["status"] == "skipped"
        rows.append(
            el(
                "tr",
                {"class": "muted" if skipped else None},
                el("th", {"scope": "row"}, el("code", None, op["name"])),
                el("td", None, op["surface"].replace("_", " ")),
                el("td", None, op["relation"]),
                el("td", None, op["generator"]),
                el("td", None, op["status"]),
                [el("td", {"class": "num"}, op["variants"][k]) for k in COUNT_KEYS],
                el("td", None, op["reason"] if skipped else _result(report, op)),
            )
        )
    head = [
        "Operator",
        "Surface",
        "Relation",
        "Generator",
        "Status",
        "Generated",
        "Accepted",
        "Rejected",
        "Unavailable",
        "Failed",
        "Result, or why skipped",
    ]
    return _table(head, rows, "operators") if rows else el("p", None, "No operators were requested.")


def criteria(report: dict) -> Markup:
    """How often each criterion's judgment moved: by itself, under invariant
    and under directional perturbations."""
    order = [c["name"] for c in report["judge"]["criteria"]]
    names = [n for n in order if n in report["by_criterion"]] + sorted(set(report["by_criterion"]) - set(order))

    def cell(r: dict) -> Markup:
        return el(
            "td",
            {"class": "num"},
            fmt.percent(r["value"]),
            el("span", {"class": "what"}, f"{fmt.fraction(r)} {fmt.interval(r)}"),
        )

    rows = [
        el(
            "tr",
            None,
            el("th", {"scope": "row"}, el("code", None, n)),
            el("td", None, c["procedure"]),
            cell(c["repeat_move_rate"]),
            cell(c["invariant_move_rate"]),
            cell(c["directional_move_rate"]),
            el("td", {"class": "num"}, c["in_flips"]),
            el("td", {"class": "num"}, c["in_detections"]),
        )
        for n in names
        for c in [report["by_criterion"][n]]
    ]
    head = [
        "Criterion",
        "Procedure",
        "Moved across repeats",
        "Moved, invariant variants",
        "Moved, directional variants",
        "In flips",
        "In detections",
    ]
    return _table(head, rows, "criteria") if rows else el("p", None, "The report has no criterion figures.")


def notes(report: dict) -> Markup | None:
    if not report["notes"]:
        return None
    return el("ul", {"class": "notes"}, [el("li", None, n) for n in report["notes"]])


def review_notes(notes: dict[str, str], queued: set[str]) -> Markup:
    """The review notes typed on items in `rbg view` (DIR/notes.json), as
    text; an item in the review queue links to it."""
    rows = []
    for item, text in sorted(notes.items()):
        name = el("code", None, item)
        rows.append(
            el(
                "tr",
                None,
                el("td", None, link(anchor("i", item), name) if item in queued else name),
                el("td", None, el("div", {"class": "text"}, text)),
            )
        )
    return join(
        [
            el("p", {"class": "note"}, "Typed on items in the viewer (rbg view DIR), saved in notes.json."),
            el(
                "table",
                {"class": "review-notes"},
                el("thead", None, el("tr", None, el("th", None, "item"), el("th", None, "note"))),
                el("tbody", None, rows),
            ),
        ]
    )


def machine_summary(report: dict) -> Markup | None:
    """The structured summary (marked as machine-written when a model wrote
    it), each entry with the figures and items it rests on; None when none."""
    from rubriclang.audit.summary import SECTIONS

    s = report.get("summary")
    if not s:
        return None
    body: list = []
    if s["written_by"] == "llm":
        who = f"by the model {s['model']}" if s.get("model") else "by a language model"
        body.append(
            el(
                "p",
                {"class": "warn"},
                el("strong", None, "Machine-written"),
                f" {who}. It may be wrong: check every claim against the figures in this report.",
            )
        )
    old_shape = "text" in s and "findings" not in s  # a report of schema /1: the model's free text
    if s.get("error"):
        body.append(
            el(
                "p",
                {"class": "muted"},
                f"No summary could be written: {s['error']}" if old_shape and not s.get("text") else s["error"],
            )
        )
    if s.get("text"):
        body += [el("p", None, para) for para in s["text"].split("\n\n") if para.strip()]
    titles = {
        "findings": "Findings",
        "actions": "Recommended actions",
        "limitations": "Limitations",
        "follow_ups": "Follow-up audits",
    }
    for section in SECTIONS:
        if s.get(section):
            body += [
                el("h3", None, titles[section]),
                el(
                    "ul",
                    None,
                    [
                        el(
                            "li",
                            None,
                            e["text"],
                            el("span", {"class": "muted"}, " \u2014 " + ", ".join(e["figures"] + e["items"])),
                        )
                        for e in s[section]
                    ],
                ),
            ]
    if s.get("dropped"):
        body += [
            el("h3", None, "Dropped (pointing at figures the report does not hold)"),
            el("ul", None, [el("li", None, d) for d in s["dropped"]]),
        ]
    title = (
        "Summary of findings (written by an LLM)"
        if s["written_by"] == "llm"
        else "Summary of findings (computed from the figures)"
    )
    return el("section", {"id": "summary", "class": "machine"}, el("h2", None, title), body)
