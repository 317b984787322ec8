"""Hand-written inline SVG: one horizontal bar per operator (and one per
surface, above its operators) with the rate's 95% interval as a whisker."""

from __future__ import annotations

import attrs

from rubriclang.audit.html import fmt
from rubriclang.audit.html.markup import Markup, el

SURFACE_ORDER = ("judge_prompt", "rubric", "input", "output", "paired")

WIDTH = 860
LABEL_X = 8  # labels start here, left-aligned
PLOT_X0, PLOT_X1 = 250, 580  # the 0% and 100% positions
TEXT_X = 594  # the figures right of the plot
ROW = 24
TOP = 30  # room for the axis labels
MAX_LABEL = 34


@attrs.frozen
class Row:
    """One line of a chart: a surface heading (rate None, heading True), or
    a bar for `rate` (a Rate of report.json)."""

    label: str
    rate: dict | None = None
    heading: bool = False
    total: bool = False  # the surface's own bar, over all its operators


def _x(v: float) -> float:
    return round(PLOT_X0 + (PLOT_X1 - PLOT_X0) * min(max(v, 0.0), 1.0), 1)


def _n(v: float) -> str:
    """A coordinate, written the same way every time (`330`, `110.5`)."""
    return fmt.number(v, 1)


def _label(text: str) -> str:
    return text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "\u2026"


def _axis(height: int) -> list[Markup]:
    out = []
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = _x(tick)
        out.append(el("line", {"x1": _n(x), "x2": _n(x), "y1": TOP - 6, "y2": height - 4, "class": "grid"}))
        out.append(
            el("text", {"x": _n(x), "y": TOP - 12, "text-anchor": "middle", "class": "tick"}, f"{round(100 * tick)}%")
        )
    return out


def _bar(row: Row, y: int) -> list[Markup]:
    mid = y + ROW // 2
    cls = "bar total" if row.total else "bar"
    out = [
        el(
            "text",
            {"x": LABEL_X + (0 if row.total else 12), "y": mid + 4, "class": "label total" if row.total else "label"},
            el("title", None, row.label),
            _label(row.label),
        )
    ]
    rate = row.rate or {}
    if rate.get("value") is None:
        why = f"not measured ({rate['failed']} failed)" if rate.get("failed") else "not measured"
        out.append(el("text", {"x": PLOT_X0 + 4, "y": mid + 4, "class": "none"}, why))
        return out
    out.append(
        el(
            "rect",
            {"x": PLOT_X0, "y": y + 5, "width": _n(_x(rate["value"]) - PLOT_X0), "height": ROW - 10, "class": cls},
        )
    )
    if rate.get("low") is not None and rate.get("high") is not None:
        lo, hi = _x(rate["low"]), _x(rate["high"])
        out.append(el("line", {"x1": _n(lo), "x2": _n(hi), "y1": mid, "y2": mid, "class": "whisker"}))
        out += [
            el("line", {"x1": _n(x), "x2": _n(x), "y1": mid - 5, "y2": mid + 5, "class": "whisker"}) for x in (lo, hi)
        ]
    cover = f", {fmt.coverage(rate)}" if rate.get("coverage") is not None else ""
    figures = f"{fmt.percent(rate['value'])}  {fmt.interval(rate)}  {fmt.fraction(rate)}{cover}, n={rate.get('n', 0)}"
    out.append(el("text", {"x": TEXT_X, "y": mid + 4, "class": "figures"}, figures))
    return out


def bar_chart(title: str, rows: list[Row], kind: str) -> Markup:
    """A figure: `title` as caption, one line per row. `kind` (a CSS class:
    `flip` or `detect`) colours the bars."""
    height = TOP + ROW * len(rows) + 6
    body: list[Markup] = _axis(height)
    for i, row in enumerate(rows):
        y = TOP + ROW * i
        if row.heading:
            body.append(el("text", {"x": LABEL_X, "y": y + ROW // 2 + 5, "class": "surface"}, row.label))
        else:
            body += _bar(row, y)
    svg = el(
        "svg",
        {
            "xmlns": "http://www.w3.org/2000/svg",
            "viewBox": f"0 0 {WIDTH} {height}",
            "width": WIDTH,
            "height": height,
            "role": "img",
            "class": f"chart {kind}",
        },
        el("title", None, title),
        body,
    )
    return el("figure", {"class": "chart"}, el("figcaption", None, title), svg)


def operator_rows(report: dict, relation: str, rate_key: str) -> list[Row]:
    """The rows for one relation (`invariant` or `directional`): for each
    surface with such variants, its heading, its total and its operators."""
    surfaces = {op["name"]: op["surface"] for op in report["operators"]}
    rows: list[Row] = []
    for surface in SURFACE_ORDER:
        block = (report["by_surface"].get(surface) or {}).get(relation)
        if not block:
            continue
        rows.append(Row(surface.replace("_", " "), heading=True))
        rows.append(Row(f"all {surface.replace('_', ' ')} operators", block[rate_key], total=True))
        for name in sorted(report["by_operator"]):
            op_block = report["by_operator"][name].get(relation)
            if op_block and surfaces.get(name) == surface:
                rows.append(Row(name, op_block[rate_key]))
    return rows
