"""The page of `rbg audit compare`: `compare.json` as one self-contained
HTML file (the report page's stylesheet and policy; everything escaped)."""

from __future__ import annotations

from rubriclang.audit.figures import label
from rubriclang.audit.html import fmt
from rubriclang.audit.html.markup import Markup, el, join
from rubriclang.audit.html.page import CSP
from rubriclang.audit.html.style import CSS

_FIRST = {"invariant": "flip_rate", "directional": "detection_rate"}


def _delta(p: dict) -> Markup:
    """B - A, naming the figure it subtracts (a rise of a detection rate is
    good, of a flip rate bad: the name says which)."""
    what = el("span", {"class": "what"}, f"B \u2212 A of the {label(p['figure'])}")
    if p["value"] is None:
        return join([fmt.NOT_MEASURED, what])
    return join([f"{fmt.points(p['value'])} {fmt.interval(p, fmt.points)}", what])


def _rows(title: str, groups: dict) -> list[Markup]:
    out = []
    for name, g in groups.items():
        for relation, r in g.items():
            rate = _FIRST[relation]
            a, b = r["a"][rate], r["b"][rate]
            out.append(
                el(
                    "tr",
                    None,
                    el("th", {"scope": "row"}, el("code", None, name)),
                    el("td", None, title),
                    el("td", None, relation),
                    el(
                        "td",
                        {"class": "num"},
                        fmt.measured(a),
                        el("span", {"class": "what"}, fmt.fraction(a)),
                    ),
                    el(
                        "td",
                        {"class": "num"},
                        fmt.measured(b),
                        el("span", {"class": "what"}, fmt.fraction(b)),
                    ),
                    el("td", {"class": "num"}, _delta(r["b_minus_a"])),
                    el("td", {"class": "num"}, r["b_minus_a"]["a_total"]),
                )
            )
    return out


def render_compare(doc: dict) -> str:
    """The HTML page of a comparison document."""
    a, b = doc["a"], doc["b"]
    head = ["Group", "Kind", "Relation", "A", "B", "B \u2212 A (95%)", "Units measured in both"]
    rows = (
        _rows("overall", {"all": doc["overall"]})
        + _rows("surface", doc["by_surface"])
        + _rows("operator", doc["by_operator"])
    )
    r = doc["repeat_flip_rate"]
    rows.insert(
        0,
        el(
            "tr",
            None,
            el("th", {"scope": "row"}, label("repeat_flip_rate")),
            el("td", None, "items"),
            el("td", None, fmt.DASH),
            el("td", {"class": "num"}, fmt.measured(r["a"])),
            el("td", {"class": "num"}, fmt.measured(r["b"])),
            el("td", {"class": "num"}, _delta(r["b_minus_a"])),
            el("td", {"class": "num"}, r["b_minus_a"]["a_total"]),
        ),
    )
    table = el(
        "table",
        {"class": "metrics"},
        el("thead", None, el("tr", None, [el("th", {"scope": "col"}, h) for h in head])),
        el("tbody", None, rows),
    )
    differ = (
        el(
            "ul",
            None,
            [
                el("li", None, el("code", None, d["variant"]), f": A {d['a']}, B {d['b']} ({d['operator']})")
                for d in doc["differ"]
            ],
        )
        if doc["differ"]
        else el("p", None, "None: every shared variant had the same outcome in both audits.")
    )
    sides = el(
        "p",
        None,
        "A: ",
        el("code", None, a["judge"]),
        f" ({a['folder']}, {a['hash']}); B: ",
        el("code", None, b["judge"]),
        f" ({b['folder']}, {b['hash']}). Sealed suite ",
        el("code", {"class": "hash"}, doc["sealed"]),
        ".",
    )
    main = el(
        "main",
        None,
        sides,
        el(
            "p",
            {"class": "note"},
            f"{doc['shared']['variants']} shared variants on {doc['shared']['items']} items; {doc['differences']} "
            "difference(s).",
        ),
        el("section", {"id": "rates"}, el("h2", None, "Rates side by side"), table),
        el("section", {"id": "differ"}, el("h2", None, "Variants whose outcome differs between the audits"), differ),
    )
    page_head = el(
        "head",
        None,
        el("meta", {"charset": "utf-8"}),
        el("meta", {"http-equiv": "Content-Security-Policy", "content": CSP}),
        el("title", None, f"Audit comparison: {a['judge']} vs {b['judge']}"),
        el("style", None, Markup(CSS)),
    )
    body = el(
        "body",
        None,
        el(
            "header",
            {"class": "top"},
            el(
                "div",
                None,
                el(
                    "h1", None, "Audit comparison: ", el("code", None, a["judge"]), " vs ", el("code", None, b["judge"])
                ),
            ),
        ),
        main,
    )
    return "<!DOCTYPE html>\n" + el("html", {"lang": "en"}, page_head, body) + "\n"
