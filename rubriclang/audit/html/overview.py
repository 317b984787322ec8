"""The page's summary sections: the headline metrics, the judge and the
suite, the operators run or skipped, the criteria, notes, review notes,
and the optional LLM-written summary."""

from __future__ import annotations

from typing import Any

from rubriclang.audit.figures import FIGURES, GOLD_FIGURES, NOT_MEASURED, label
from rubriclang.audit.html import fmt
from rubriclang.audit.html.markup import Markup, anchor, el, join, link

OLD_SCHEMAS = ("rubriclang.audit.report/1", "rubriclang.audit.report/2")
COUNT_KEYS = ("generated", "accepted", "rejected", "unavailable", "failed")


def _table(head: list[str], rows: list[Any], cls: str | None = None) -> Markup:
    return el(
        "table",
        {"class": cls},
        el("thead", None, el("tr", None, [el("th", {"scope": "col"}, h) for h in head])),
        el("tbody", None, rows),
    )


def _title(name: str) -> str:
    text = label(name)
    return text[0].upper() + text[1:]


def _row(name: str, fig: dict | None, missing: str, form=fmt.percent, title: str | None = None) -> Markup:
    """One figure's row, its label and formula from the registry
    (audit/figures.py): value, 95% interval, count, coverage and n; "not
    measured" (and why) when it has no value."""
    head = el("th", {"scope": "row"}, title or _title(name), el("span", {"class": "what"}, FIGURES[name].formula))
    if fig is None or fig.get("value") is None:
        why = missing if fig is None else NOT_MEASURED + (f": {fig['failed']} failed" if fig.get("failed") else "")
        return el("tr", {"class": "muted"}, head, el("td", {"colspan": 5}, why))
    rate = "count" in fig
    return el(
        "tr",
        None,
        head,
        el("td", {"class": "num big"}, form(fig["value"])),
        el("td", {"class": "num"}, fmt.interval(fig, form)),
        el("td", {"class": "num"}, fmt.fraction(fig) if rate else fmt.DASH),
        el(
            "td",
            {"class": "num"},
            fmt.percent(fig["coverage"]) if rate and fig.get("coverage") is not None else fmt.DASH,
        ),
        el("td", {"class": "num"}, fig["n"]),
    )


def _gold(report: dict, gold: dict) -> dict:
    """The gold block by the figures' names (schema /1 and /2 called
    within_tolerance `agreement`)."""
    if report.get("schema") in OLD_SCHEMAS and "within_tolerance" not in gold:
        return {**{k: v for k, v in gold.items() if k != "agreement"}, "within_tolerance": gold.get("agreement")}
    return gold


def metrics(report: dict) -> Markup:
    """The headline figures, each with its 95% interval, count, coverage and n."""
    m = report["metrics"]
    inv, dirs, gold = m["invariant"], m["directional"], m["gold"]
    no_inv, no_dir, no_gold = (
        "not measured: no invariant variants",
        "not measured: no directional variants",
        "not measured: no gold labels",
    )
    rows = []
    if report.get("counts") and report["counts"]["judgments"] == report["counts"]["failed_judgments"]:
        rows.append(
            el(
                "tr",
                {"class": "warn"},
                el("td", {"colspan": 6}, "Nothing was measured: every judgment failed, so no figure has a value."),
            )
        )
    rows.append(_row("repeat_flip_rate", m["repeat_flip_rate"], ""))
    dec = m.get("decisions")
    if dec:
        if dec.get("tie_rate") is not None:
            rows.append(_row("tie_rate", dec["tie_rate"], ""))
        rows.append(_row("abstain_rate", dec["abstain_rate"], ""))
    rows.append(_row("flip_rate", inv and inv["flip_rate"], no_inv))
    rows.append(_row("judgment_flip_rate", inv and inv["judgment_flip_rate"], no_inv))
    rows.append(_row("excess_over_noise", inv and inv["excess_over_noise"], no_inv, fmt.points))
    rows.append(_row("detection_rate", dirs and dirs["detection_rate"], no_dir))
    if dirs and "contradiction_rate" in dirs:
        rows.append(_row("detection_over_noise", dirs["detection_over_noise"], no_dir, fmt.points))
        rows.append(_row("contradiction_rate", dirs["contradiction_rate"], no_dir))
        rows.append(
            _row("score_shift", dirs["score_shift"], "not measured: the judge's verdicts have no scale", fmt.number)
        )
    if not gold:
        rows.append(_row("accuracy", None, no_gold))
    else:
        g = _gold(report, gold)
        for name in GOLD_FIGURES:
            if g.get(name) is not None:
                rows.append(_row(name, g[name], no_gold, fmt.percent if "count" in g[name] else fmt.number))
    if inv and inv.get("gold") and inv["gold"].get("accuracy"):
        rows.append(_row("accuracy", inv["gold"]["accuracy"], no_gold, title="Accuracy vs gold, invariant variants"))
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
    if dec and dec.get("collapsed") is not None:
        detail.append(
            f"Collapsed: every one of the {dec['judgments']} judgments of the original items is "
            f"{fmt.decision(dec['collapsed'])}; a flip rate of 0 then says nothing."
        )
    table = _table(["Metric", "Value", "95% interval", "Count", "Coverage", "n items"], rows, "metrics")
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
        for g, row in zip(table["gold"], table["counts"], strict=True)
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

    # The judge's calls sent, and those a criterion's unchanged prompt reused (docs/audit.md).
    usage = (report.get("usage") or {}).get("judge")
    calls = [("sent", usage["calls"]), ("reused", usage.get("reused", 0))] if usage else None
    return el(
        "div",
        {"class": "countgroups"},
        group("Judged", judged),
        group("Variants, all operators", made),
        group("Judge calls", calls) if calls else None,
    )


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
    for relation, name in (("invariant", "flip_rate"), ("directional", "detection_rate")):
        if block.get(relation):
            r = block[relation][name]
            changes = [
                f"; {label(c)} {fmt.points(block[relation][c]['value'])} {fmt.interval(block[relation][c], fmt.points)}"
                for c in ("tie_rate_change", "abstain_rate_change")
                if block[relation].get(c)
            ]
            return f"{label(name)} {fmt.measured(r)} ({fmt.fraction(r)})" + "".join(changes)
    return fmt.DASH


def operators(report: dict) -> Markup:
    """Every requested operator: what it is, what its variants became, and
    why it was skipped or has no variant judged."""
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
                # A skipped operator's reason, or why one that ran has no variant judged.
                el("td", None, op["reason"] or _result(report, op)),
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
            fmt.measured(r),
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
        _title("repeat_move_rate"),
        _title("invariant_move_rate"),
        _title("directional_move_rate"),
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
    if not any(s.get(section) for section in SECTIONS) and not s.get("text"):
        # A report written before the rules said what they checked: never an empty box.
        body.append(el("p", None, "No entry: the summary names no finding, action, limitation or follow-up."))
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
