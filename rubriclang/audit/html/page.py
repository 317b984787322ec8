"""The whole page: `render_html(report, review_notes) -> str`.

One self-contained document: inline CSS, inline SVG, no script, and a
Content-Security-Policy that forbids scripts and every outside fetch, so
that even a mistake in escaping could not run code or reach the network.
The same report gives the same bytes: nothing depends on time or on the
order of a mapping's keys.
"""

from __future__ import annotations

from rubriclang.audit.figures import FIGURES, label
from rubriclang.audit.html import overview
from rubriclang.audit.html.chart import bar_chart, operator_rows
from rubriclang.audit.html.evidence import evidence
from rubriclang.audit.html.markup import Markup, el, join
from rubriclang.audit.html.review_queue import ranked, review_queue
from rubriclang.audit.html.style import CSS
from rubriclang.audit.html.verdicts import Judge

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; script-src 'none'; base-uri 'none'; "
    "form-action 'none'"
)

SECTIONS = (
    ("overview", "Overview"),
    ("operators", "Operators"),
    ("charts", "By operator"),
    ("criteria", "Criteria"),
    ("queue", "Review queue"),
    ("evidence", "Evidence"),
)
REVIEW_NOTES = ("review-notes", "Review notes")


def _charts(report: dict) -> Markup:
    out = []
    flips = operator_rows(report, "invariant", "flip_rate")
    if flips:
        out.append(
            bar_chart(
                f"{label('flip_rate').capitalize()} per operator ({FIGURES['flip_rate'].formula}; bar: rate, "
                "whisker: 95% interval)",
                flips,
                "flip",
            )
        )
    detects = operator_rows(report, "directional", "detection_rate")
    if detects:
        out.append(
            bar_chart(
                f"{label('detection_rate').capitalize()} per operator ({FIGURES['detection_rate'].formula}; bar: "
                "rate, whisker: 95% interval)",
                detects,
                "detect",
            )
        )
    return join(out) if out else el("p", None, "No variants were judged.")


def _header(report: dict, sections) -> Markup:
    j, c, s = report["judge"], report["counts"], report["suite"]
    sub = (
        f"{j['type']} judge ({j['mode']}{', output ' + j['output'] if j['output'] else ''}); "
        f"{c['items']} items \u00d7 {s['repeats']} repeats; {c['variants']} variants judged; sealed suite "
        f"{s['sealed'][:19]}\u2026"
    )
    nav = el("nav", {"class": "toc"}, [el("a", {"href": "#" + key}, title) for key, title in sections])
    return el(
        "header",
        {"class": "top"},
        el(
            "div",
            None,
            el("h1", None, "Judge audit: ", el("code", None, j["name"])),
            el("p", {"class": "sub"}, sub),
            nav,
        ),
    )


def _section(key: str, title: str, *body) -> Markup:
    return el("section", {"id": key}, el("h2", None, title), *body)


def render_html(report: dict, review_notes: dict[str, str] | None = None) -> str:
    """The HTML page of a `rubriclang.audit.report/1` or `/2` report (docs/audit.md,
    "The HTML report"), with the review notes typed in `rbg view`
    (`audit.notes.read_notes`: item -> note) when there are any."""
    judge = Judge.of(report)
    # The evidence follows the queue's order, worst first.
    queue = ranked(report)
    found = [f for _, entries in queue for f, _ in entries]
    notes = overview.notes(report)
    reviewed = overview.review_notes(review_notes, {item for item, _ in queue}) if review_notes else None
    sections = SECTIONS[:5] + ((REVIEW_NOTES,) if reviewed else ()) + SECTIONS[5:]
    main = el(
        "main",
        None,
        _section(
            "overview",
            "Overview",
            overview.metrics(report),
            overview.confusion(report),
            overview.counts(report),
            overview.judge_and_suite(report),
        ),
        overview.machine_summary(report),
        _section("operators", "Operators", overview.operators(report)),
        _section("charts", "By operator", _charts(report)),
        _section("criteria", "Criteria", overview.criteria(report)),
        _section("notes", "Notes", notes) if notes else None,
        _section(
            "queue",
            "Review queue",
            el(
                "p",
                {"class": "note"},
                "Items whose verdicts went wrong, worst first: weighted by the share of each finding's repeats "
                "that went the wrong way. Each finding links to its evidence.",
            ),
            review_queue(report),
        ),
        _section(*REVIEW_NOTES, reviewed) if reviewed else None,
        _section("evidence", "Evidence", [evidence(f, judge, report) for f in found] or el("p", None, "No findings.")),
        el(
            "footer",
            None,
            f"Rendered by rbg audit from report.json ({report['schema']}); judge {report['judge']['hash']}.",
        ),
    )
    head = el(
        "head",
        None,
        el("meta", {"charset": "utf-8"}),
        el("meta", {"http-equiv": "Content-Security-Policy", "content": CSP}),
        el("meta", {"name": "viewport", "content": "width=device-width, initial-scale=1"}),
        el("title", None, f"Audit of {report['judge']['name']}"),
        el("style", None, Markup(CSS)),
    )
    body = el("body", None, _header(report, sections), main)
    return "<!DOCTYPE html>\n" + el("html", {"lang": "en"}, head, body) + "\n"
