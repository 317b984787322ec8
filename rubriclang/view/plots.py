"""The viewer's plots as inline SVG, drawn on the server: a scatter of
binned counts with the diagonal, a heat map of counts, a histogram, error
bars of estimates and rates against a noise band.

Each function takes numbers and labels and returns one `<svg>` element:
no script, no outside resource, every text escaped (`markup.el`), the same
bytes for the same data (coordinates rounded to a tenth, marks in a fixed
order). Readable in print: black and greys with one accent (`ACCENT`, for
the reference marks: the diagonal, zero, the noise band), presentation
attributes rather than a stylesheet, a visible title, axis ticks and
labels, a `<title>` and an `aria-label` on the figure and on each mark.
Numbers are spelled by `numbers.readable`, as everywhere in the viewer."""

from __future__ import annotations

import collections
import math
from collections.abc import Sequence

import attrs

from rubriclang.audit.html import fmt
from rubriclang.audit.html.markup import Markup, el, join
from rubriclang.view.numbers import readable

INK = "#1d232a"
GREY = "#5a6570"
GRID = "#d6dbe1"
MARK = "#3b4652"
ACCENT = "#d14900"
FONT = "system-ui, sans-serif"
BIN_PX = 6  # points closer than this on both axes are drawn as one, with their count
MAX_LABEL = 18


@attrs.frozen
class Bin:
    """One bar of a histogram: `[low, high)` (the last one closed), its
    count, and the page of its items (None: no link)."""

    low: float
    high: float
    n: int
    href: str | None = None


@attrs.frozen
class Estimate:
    """One row of an error-bar plot: a point and its 95% interval (either
    bound None: no interval; `value` None: not measured)."""

    label: str
    value: float | None
    low: float | None = None
    high: float | None = None
    note: str = ""  # after the figures (a rate's count/total)


def _c(v: float) -> str:
    """A coordinate, written the same way every time (`330`, `110.5`)."""
    return fmt.number(round(v, 1), 1)


def _clip(text: str, n: int = MAX_LABEL) -> str:
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def _text(
    x: float,
    y: float,
    text: str,
    anchor: str = "start",
    size: int = 11,
    fill: str = INK,
    cls: str | None = None,
    extra: dict[str, object] | None = None,
) -> Markup:
    attrs_ = {"x": _c(x), "y": _c(y), "text-anchor": anchor, "font-size": size, "font-family": FONT, "fill": fill}
    return el("text", {**attrs_, "class": cls, **(extra or {})}, text)


def _line(
    x1: float,
    y1: float,
    x2: float,
    y2: float,
    stroke: str = GRID,
    width: float = 1,
    cls: str | None = None,
    extra: dict[str, object] | None = None,
) -> Markup:
    return el(
        "line",
        {
            "x1": _c(x1),
            "y1": _c(y1),
            "x2": _c(x2),
            "y2": _c(y2),
            "stroke": stroke,
            "stroke-width": width,
            "class": cls,
            **(extra or {}),
        },
    )


def _svg(title: str, width: float, height: float, kind: str, body: list[Markup]) -> Markup:
    # Wide enough for the title (13px bold: about 7.5px a character).
    width = max(width, 16 + 7.5 * len(title))
    return el(
        "svg",
        {
            "xmlns": "http://www.w3.org/2000/svg",
            "viewBox": f"0 0 {_c(width)} {_c(height)}",
            "width": _c(width),
            "height": _c(height),
            "role": "img",
            "aria-label": title,
            "class": f"plot {kind}",
        },
        el("title", None, title),
        _text(8, 16, title, size=13, cls="heading", extra={"font-weight": "600"}),
        body,
    )


def ticks(low: float, high: float, n: int = 5) -> list[float]:
    """About `n` round numbers (1, 2 or 5 times a power of ten apart)
    covering `[low, high]`, from the first at or below `low`."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low]
    raw = (high - low) / max(n - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.floor(low / step + 1e-9)
    last = math.ceil(high / step - 1e-9)
    # Multiples of the step, rounded so that 0.30000000000000004 is 0.3.
    return [round(k * step, 12) for k in range(first, last + 1)]


def _domain(values: Sequence[float]) -> tuple[float, float, list[float]]:
    lo, hi = min(values), max(values)
    if hi - lo < 1e-12:
        lo, hi = lo - 1, hi + 1
    t = ticks(lo, hi)
    return t[0], t[-1], t


@attrs.frozen
class _Scale:
    d0: float
    d1: float
    p0: float
    p1: float

    def __call__(self, v: float) -> float:
        return self.p0 + (self.p1 - self.p0) * (v - self.d0) / ((self.d1 - self.d0) or 1.0)


# --- scatter -----------------------------------------------------------------------


def scatter(title: str, points: Sequence[tuple[float, float]], x_label: str, y_label: str) -> Markup:
    """`points` (x, y) on one scale for both axes, with the diagonal y = x.
    Points closer than `BIN_PX` on both axes are one mark at their mean,
    sized by and labelled with their count: no jitter, every item counted."""
    size, left, top, bottom = 300, 56, 34, 46
    width, height = left + size + 24, top + size + bottom
    if not points:
        return _svg(title, width, 60, "scatter", [_text(8, 44, "No items with both numbers.", fill=GREY)])
    lo, hi, t = _domain([v for p in points for v in p])
    sx, sy = _Scale(lo, hi, left, left + size), _Scale(lo, hi, top + size, top)
    body = _axes(sx, sy, t, t, x_label, y_label, top, size)
    body.append(
        _line(
            sx(lo),
            sy(lo),
            sx(hi),
            sy(hi),
            stroke=ACCENT,
            width=1.5,
            cls="diagonal",
            extra={"stroke-dasharray": "5 4", "aria-label": f"{y_label} = {x_label}"},
        )
    )
    bins: dict[tuple[int, int], list[tuple[float, float]]] = collections.defaultdict(list)
    for x, y in points:
        bins[(int((sx(x) - left) // BIN_PX), int((sy(y) - top) // BIN_PX))].append((x, y))
    for key in sorted(bins):
        members = bins[key]
        n = len(members)
        mx, my = sum(x for x, _ in members) / n, sum(y for _, y in members) / n
        what = f"{x_label} {readable(mx)}, {y_label} {readable(my)}: {n} item{'s' * (n != 1)}"
        px, py = sx(mx), sy(my)
        body.append(
            el(
                "circle",
                {
                    "cx": _c(px),
                    "cy": _c(py),
                    "r": _c(min(2.5 + 1.2 * math.sqrt(n), 11)),
                    "fill": MARK,
                    "fill-opacity": "0.55",
                    "stroke": INK,
                    "stroke-width": "0.6",
                    "class": "point",
                    "data-n": n,
                    "aria-label": what,
                },
                el("title", None, what),
            )
        )
        if n > 1:
            body.append(_text(px + 6 + math.sqrt(n), py - 5, str(n), size=9, fill=INK, cls="count"))
    return _svg(title, width, height, "scatter", body)


def _axes(
    sx: _Scale, sy: _Scale, xt: list[float], yt: list[float], x_label: str, y_label: str, top: float, size: float
) -> list[Markup]:
    """Grid lines, tick labels and axis titles of a square plot."""
    out = []
    for v in xt:
        out.append(_line(sx(v), sy.p1, sx(v), sy.p0))
        out.append(_text(sx(v), sy.p0 + 14, readable(v), anchor="middle", fill=GREY, cls="tick"))
    for v in yt:
        out.append(_line(sx.p0, sy(v), sx.p1, sy(v)))
        out.append(_text(sx.p0 - 6, sy(v) + 4, readable(v), anchor="end", fill=GREY, cls="tick"))
    out.append(_text((sx.p0 + sx.p1) / 2, sy.p0 + 34, x_label, anchor="middle", cls="axis"))
    mid = top + size / 2
    out.append(_text(14, mid, y_label, anchor="middle", cls="axis", extra={"transform": f"rotate(-90 14 {_c(mid)})"}))
    return out


# --- heat map -----------------------------------------------------------------------


def heatmap(
    title: str,
    rows: Sequence[str],
    columns: Sequence[str],
    counts: Sequence[Sequence[int]],
    row_axis: str,
    column_axis: str,
    hrefs: Sequence[Sequence[str | None]] | None = None,
) -> Markup:
    """A matrix of counts, `rows` down and `columns` across, each cell
    shaded by its share of the largest count and labelled with its count;
    the cells whose row and column name the same label (agreement) are
    outlined in the accent; `hrefs` link cells to their items."""
    cell, left, top = 46, max(72, 20 + 7 * min(max((len(r) for r in rows), default=1), MAX_LABEL)), 64
    width = left + cell * max(len(columns), 1) + 16
    height = top + cell * max(len(rows), 1) + 16
    top_count = max((k for row in counts for k in row), default=0) or 1
    body = [_text(left + cell * len(columns) / 2, 34, f"{column_axis} \u2192", anchor="middle", cls="axis")]
    body.append(_text(8, top - 24, f"{row_axis} \u2193", cls="axis"))
    for j, c in enumerate(columns):
        body.append(_text(left + cell * j + cell / 2, top - 8, _clip(c, 7), anchor="middle", fill=GREY, cls="tick"))
    for i, r in enumerate(rows):
        y = top + cell * i
        body.append(_text(left - 6, y + cell / 2 + 4, _clip(r), anchor="end", fill=GREY, cls="tick"))
        for j, c in enumerate(columns):
            k = counts[i][j]
            share = k / top_count
            x = left + cell * j
            what = f"{row_axis} {r}, {column_axis} {c}: {k} item{'s' * (k != 1)}"
            mark = [
                el(
                    "rect",
                    {
                        "x": _c(x),
                        "y": _c(y),
                        "width": cell,
                        "height": cell,
                        "fill": MARK,
                        "fill-opacity": _c(0.08 + 0.82 * share) if k else "0",
                        "stroke": ACCENT if r == c else GRID,
                        "stroke-width": 2 if r == c else 1,
                        "class": "cell",
                        "data-n": k,
                        "aria-label": what,
                    },
                    el("title", None, what),
                ),
                _text(
                    x + cell / 2,
                    y + cell / 2 + 4,
                    str(k),
                    anchor="middle",
                    fill="#ffffff" if share > 0.55 else INK,
                    cls="count",
                ),
            ]
            href = hrefs[i][j] if hrefs is not None else None
            body.append(el("a", {"href": href, "aria-label": what}, mark) if href and k else join(mark))
    return _svg(title, width, height, "heatmap", body)


# --- histogram ----------------------------------------------------------------------


def bins_of(values: Sequence[float], most: int = 20, zero: bool = False) -> list[Bin]:
    """Bins for a histogram of `values`: one per integer when they are all
    integers over a span of fewer than `most`; else up to `most` equal
    ones. `zero`: the bins reach 0 too (a shift's no change)."""
    if not values:
        return []
    lo, hi = min(values), max(values)
    if zero:
        lo, hi = min(lo, 0), max(hi, 0)
    if all(float(v).is_integer() for v in values) and hi - lo < most:
        counts = collections.Counter(int(v) for v in values)
        return [Bin(k - 0.5, k + 0.5, counts.get(k, 0)) for k in range(int(lo), int(hi) + 1)]
    n = max(1, min(most, math.ceil(math.sqrt(len(values)))))
    width = (hi - lo) / n or 1.0
    counts = collections.Counter(min(n - 1, int((v - lo) / width)) for v in values)
    return [Bin(lo + b * width, lo + (b + 1) * width, counts.get(b, 0)) for b in range(n)]


def histogram(title: str, bins: Sequence[Bin], x_label: str, zero: bool = False) -> Markup:
    """One bar per bin, its count above it; `zero`: mark x = 0 in the
    accent (a shift's no-change line)."""
    plot_w, plot_h, left, top, bottom = 420, 200, 48, 34, 46
    width, height = left + plot_w + 20, top + plot_h + bottom
    if not bins:
        return _svg(title, width, 60, "histogram", [_text(8, 44, "Nothing to count.", fill=GREY)])
    lo, hi = bins[0].low, bins[-1].high
    sx = _Scale(lo, hi, left, left + plot_w)
    ymax = max(b.n for b in bins) or 1
    yt = [v for v in ticks(0, ymax, 4) if float(v).is_integer()]
    sy = _Scale(0, yt[-1], top + plot_h, top)
    body = []
    for v in yt:
        body.append(_line(left, sy(v), left + plot_w, sy(v)))
        body.append(_text(left - 6, sy(v) + 4, readable(v), anchor="end", fill=GREY, cls="tick"))
    integers = all(b.high - b.low == 1 and float(b.low + 0.5).is_integer() for b in bins)
    # Bins of one integer each are labelled at their integers; others on round numbers.
    xt = [b.low + 0.5 for b in bins][:: max(1, len(bins) // 10)] if integers else ticks(lo, hi, 6)
    for v in xt:
        if lo - 1e-9 <= v <= hi + 1e-9:
            body.append(_line(sx(v), sy(0), sx(v), sy(0) + 4, stroke=GREY))
            body.append(_text(sx(v), sy(0) + 16, readable(v), anchor="middle", fill=GREY, cls="tick"))
    for b in bins:
        x0, x1 = sx(b.low), sx(b.high)
        what = f"{x_label} {readable(b.low)} to {readable(b.high)}: {b.n} item{'s' * (b.n != 1)}"
        mark = [
            el(
                "rect",
                {
                    "x": _c(x0 + 1),
                    "y": _c(sy(b.n)),
                    "width": _c(max(x1 - x0 - 2, 1)),
                    "height": _c(sy(0) - sy(b.n)),
                    "fill": MARK,
                    "class": "bar",
                    "data-n": b.n,
                    "aria-label": what,
                },
                el("title", None, what),
            )
        ]
        if b.n:
            mark.append(_text((x0 + x1) / 2, sy(b.n) - 4, str(b.n), anchor="middle", size=9, cls="count"))
        body.append(el("a", {"href": b.href, "aria-label": what}, mark) if b.href and b.n else join(mark))
    if zero and lo <= 0 <= hi:
        body.append(
            _line(sx(0), top, sx(0), sy(0), stroke=ACCENT, width=1.5, cls="zero", extra={"stroke-dasharray": "5 4"})
        )
    body.append(_line(left, sy(0), left + plot_w, sy(0), stroke=GREY))
    body.append(_text(left + plot_w / 2, height - 10, x_label, anchor="middle", cls="axis"))
    return _svg(title, width, height, "histogram", body)


# --- error bars ---------------------------------------------------------------------


def estimates(title: str, groups: Sequence[tuple[str, Sequence[Estimate]]], kind: str = "figure") -> Markup:
    """Per group (a metric), one row per estimate (a graph or baseline): the
    point and its 95% interval as a whisker, the figures beside it. Each
    group has its own axis (metrics differ in scale), zero marked in the
    accent where the axis crosses it. `kind`: how the figures are spelled
    (`numbers.readable`)."""
    left, plot_w, text_w, row, head = 210, 260, 230, 22, 40
    width = left + plot_w + text_w
    body: list[Markup] = []
    y = 28.0
    for name, rows in groups:
        measured = [v for e in rows for v in (e.value, e.low, e.high) if v is not None]
        body.append(_text(8, y + 14, name, cls="group", extra={"font-weight": "600"}))
        if not measured:
            body.append(_text(left, y + 14, "not measured", fill=GREY))
            y += head
            continue
        lo, hi, t = _domain(measured)
        sx = _Scale(lo, hi, left, left + plot_w)
        bottom = y + head + row * len(rows) - 14
        for v in t:
            body.append(_line(sx(v), y + 22, sx(v), bottom))
            body.append(_text(sx(v), y + 18, readable(v), anchor="middle", size=9, fill=GREY, cls="tick"))
        if lo < 0 < hi:
            body.append(_line(sx(0), y + 22, sx(0), bottom, stroke=ACCENT, cls="zero"))
        for i, e in enumerate(rows):
            cy = y + head + row * i - 4
            body.append(_text(left - 8, cy + 4, _clip(e.label, 32), anchor="end", cls="label"))
            if e.value is None:
                body.append(_text(left + 4, cy + 4, "not measured", fill=GREY))
                continue
            figures = readable(e.value, kind)
            if e.low is not None and e.high is not None:
                figures += f" [{readable(e.low, kind)}, {readable(e.high, kind)}]"
                body.append(_line(sx(e.low), cy, sx(e.high), cy, stroke=INK, width=1.5, cls="whisker"))
                body += [_line(sx(v), cy - 5, sx(v), cy + 5, stroke=INK, width=1.5) for v in (e.low, e.high)]
            else:
                figures += " [n/a]"
            what = f"{name}, {e.label}: {figures}"
            body.append(
                el(
                    "circle",
                    {
                        "cx": _c(sx(e.value)),
                        "cy": _c(cy),
                        "r": 4,
                        "fill": INK,
                        "class": "estimate",
                        "aria-label": what,
                    },
                    el("title", None, what),
                )
            )
            note = f"  {e.note}" if e.note else ""
            body.append(_text(left + plot_w + 12, cy + 4, figures + note, cls="figures"))
        y = bottom + 18
    return _svg(title, width, y + 4, "estimates", body)


# --- rates against noise ------------------------------------------------------------


def rates(title: str, rows: Sequence[Estimate], band: Estimate | None, band_label: str) -> Markup:
    """Rates on a 0 to 1 axis, one row each with its 95% interval, over a
    shaded band: `band`'s interval (the rate the judge moves at when
    nothing was changed), its value a dashed line."""
    left, plot_w, text_w, row, top = 170, 300, 230, 24, 44
    width = left + plot_w + text_w
    height = top + row * max(len(rows), 1) + 40
    sx = _Scale(0.0, 1.0, left, left + plot_w)
    bottom = top + row * len(rows)
    body: list[Markup] = []
    if band is not None and band.value is not None:
        lo = band.low if band.low is not None else band.value
        hi = band.high if band.high is not None else band.value
        what = f"{band_label}: {readable(band.value, 'figure')} [{readable(lo, 'figure')}, {readable(hi, 'figure')}]"
        body.append(
            el(
                "rect",
                {
                    "x": _c(sx(lo)),
                    "y": top - 6,
                    "width": _c(max(sx(hi) - sx(lo), 1)),
                    "height": _c(bottom - top + 6),
                    "fill": ACCENT,
                    "fill-opacity": "0.15",
                    "class": "band",
                    "aria-label": what,
                },
                el("title", None, what),
            )
        )
        body.append(
            _line(sx(band.value), top - 6, sx(band.value), bottom, stroke=ACCENT, extra={"stroke-dasharray": "4 3"})
        )
        body.append(_text(left, height - 12, what, fill=ACCENT, cls="legend"))
    for v in ticks(0.0, 1.0, 5):
        body.append(_line(sx(v), top - 6, sx(v), bottom, stroke=GRID))
        body.append(_text(sx(v), top - 12, readable(v), anchor="middle", size=9, fill=GREY, cls="tick"))
    for i, e in enumerate(rows):
        cy = top + row * i + row / 2 - 2
        body.append(_text(left - 8, cy + 4, _clip(e.label, 24), anchor="end", cls="label"))
        if e.value is None:
            body.append(_text(left + 4, cy + 4, "not measured" + (f" ({e.note})" if e.note else ""), fill=GREY))
            continue
        figures = readable(e.value, "figure")
        if e.low is not None and e.high is not None:
            figures += f" [{readable(e.low, 'figure')}, {readable(e.high, 'figure')}]"
            body.append(_line(sx(e.low), cy, sx(e.high), cy, stroke=INK, width=1.5, cls="whisker"))
            body += [_line(sx(v), cy - 5, sx(v), cy + 5, stroke=INK, width=1.5) for v in (e.low, e.high)]
        what = f"{e.label}: {figures}" + (f", {e.note}" if e.note else "")
        body.append(
            el(
                "circle",
                {"cx": _c(sx(e.value)), "cy": _c(cy), "r": 4, "fill": INK, "class": "estimate", "aria-label": what},
                el("title", None, what),
            )
        )
        body.append(_text(left + plot_w + 12, cy + 4, figures + (f"  {e.note}" if e.note else ""), cls="figures"))
    return _svg(title, width, height, "rates", body)
