"""Every page of the viewer, rendered from Jinja2 templates with escaping
on. The server (`server.py`) and the static export (`export.py`) render the
same pages; they differ only in how a link is spelled (`Site.link`)."""

from __future__ import annotations

import collections
import hashlib
import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from rubriclang.audit.html import render_html, structure
from rubriclang.audit.html.evidence import changes
from rubriclang.audit.html.markup import Markup, el, join
from rubriclang.audit.html.review_queue import ranked
from rubriclang.audit.html.verdicts import Judge, severity
from rubriclang.audit.notes import read_notes
from rubriclang.catalog import load_catalog
from rubriclang.interp.items import Item
from rubriclang.items.shape import ItemShape, shape_of
from rubriclang.review.impact import ItemImpact
from rubriclang.review.view import view
from rubriclang.view import graphsvg, plots
from rubriclang.view.numbers import interval, readable
from rubriclang.view.sources import EvalSource, Sources, TraceSource, items_by_transition
from rubriclang.view.table import Query, TraceTable, shown

# `connect-src 'self'`: a static export's items page reads its rows from a
# JSON file next to it (`data_file`); the live viewer fetches nothing.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
CALIBRATION_BINS = 10
MARGIN_BINS = 12
LISTED_TRANSITIONS = 20  # numeric transitions listed beside the compare's plots; more are drawn only
LARGEST_SHIFTS = 20
_NUMBER = re.compile(r"-?\d+(\.\d+)?(e[-+]?\d+)?")


class NotFound(Exception):
    """No such page, source or item."""


class Site:
    """The pages over `sources`. `export`: links name files of a static
    export, and every page linked is queued in `pending` to be written."""

    def __init__(self, sources: Sources, export: bool = False, form_token: str = ""):
        self.sources = sources
        self.export = export
        self.form_token = form_token
        self.pending: list[tuple[str, dict[str, str]]] = []
        self._seen: set[str] = set()
        self.env = Environment(
            loader=PackageLoader("rubriclang.view", "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters.update(num=readable, interval=interval, text_block=text_block, label=shown_label)
        self.env.globals.update(
            link=self.link,
            static=self.static,
            data_file=self.data_file,
            export=export,
            csp=CSP,
            sources=sources,
            form_token=form_token,
            shown=shown,
        )
        self.routes: dict[str, Callable[[dict[str, str]], str]] = {
            "index": self.index,
            "items": self.items,
            "item": self.item,
            "eval": self.evaluation,
            "compare": self.compare,
            "audit": self.audit,
            "evidence": self.evidence,
            "report": self.report,
        }

    # Links -------------------------------------------------------------

    def link(self, route: str, **params: Any) -> str:
        params = {k: str(v) for k, v in sorted(params.items()) if v not in ("", None)}
        if not self.export:
            return f"/{'' if route == 'index' else route}" + (f"?{urlencode(params)}" if params else "")
        query = ""
        if route == "items" and params.keys() & {"page", "sort", "desc"}:
            # Another page or sort of a listing is the listing's one file
            # read with a query, which view.js renders from the rows file:
            # an export then holds a file per listing, not per page and sort.
            query, params = (
                "?" + urlencode(params),
                {k: v for k, v in params.items() if k not in ("page", "sort", "desc")},
            )
        name = export_name(route, params)
        if route == "item" and self._own_item(params):
            # Written by `export.export` from the trace's rows, one at a
            # time: queued, a page per item would be held for the whole export.
            return name
        if name not in self._seen:
            self._seen.add(name)
            self.pending.append((route, params))
        return name + query

    def _own_item(self, params: dict[str, str]) -> bool:
        """Whether `params` name an item of the trace they name (exactly the
        parameters `src` and `id`): that page is exported with its trace."""
        src = self.sources.trace(params.get("src", ""))
        return params.keys() == {"src", "id"} and src is not None and params["id"] in src.table.by_item

    def static(self, name: str) -> str:
        return f"static/{name}" if self.export else f"/static/{name}"

    def data_file(self, label: str) -> str:
        """In an export, the JSON file with the rows of the trace `label`
        (`export.items_data`), which the items page filters in the browser."""
        return "data/" + export_name("items", {"src": label}).removesuffix(".html") + ".json"

    def render(self, route: str, params: dict[str, str]) -> str:
        page = self.routes.get(route)
        if page is None:
            raise NotFound(f"no page `{route}`")
        return page(params)

    def _page(self, template: str, **values) -> str:
        return self.env.get_template(template).render(**values)

    def _trace(self, params: dict[str, str]):
        src = self.sources.trace(params.get("src", ""))
        if src is None:
            raise NotFound(f"no trace `{params.get('src', '')}`")
        return src

    # Pages ---------------------------------------------------------------

    def index(self, params: dict[str, str]) -> str:
        return self._page("index.html", title="rbg view")

    def items(self, params: dict[str, str]) -> str:
        src = self._trace(params)
        q = Query.parse(params)
        scored, left_out = self.scored(q)
        page = src.table.query(q, left_out=left_out)
        columns = src.table.criteria[:12]
        return self._page(
            "items.html",
            title=f"Items of {src.label}",
            src=src,
            q=q,
            page=page,
            columns=columns,
            quick=_quick_filters(q),
            scored=scored,
        )

    def scored(self, q: Query) -> tuple[str | None, frozenset[str]]:
        """What `q.scored` names in words, and the items that evaluation
        left out (an evaluation's metrics all rest on the same items)."""
        if q.scored_in is None:
            return None, frozenset()
        n, mode = q.scored_in
        if n >= len(self.sources.evals) or mode not in self.sources.evals[n].data.get("modes", {}):
            raise NotFound(f"no {mode} items in evaluation output {n}")
        e = self.sources.evals[n]
        left = e.data["modes"][mode].get("left_out", {}).get("by_item", [])
        return f"scored by {e.label} ({mode})", frozenset(x["item"] for x in left)

    def item(self, params: dict[str, str]) -> str:
        src = self._trace(params)
        rec = src.table.record(params.get("id", ""))
        if rec is None:
            raise NotFound(f"no item `{params.get('id', '')}` in {src.label}")
        item = self.sources.items.get(rec["item"])
        graph = self.sources.graph
        svg = None
        # The graph's drawing and its per-element criteria are this record's only when it judged it.
        judged_by = graph if graph is not None and graph.name == rec["graph"]["name"] else None
        if judged_by is not None:
            svg = graphsvg.render_svg(view(judged_by), graphsvg.node_values(rec), judged_by.sink)
        criteria = [_criterion_view(name, per, rec, item, graph) for name, per in rec["criteria"].items()]
        return self._page(
            "item.html",
            title=f"Item {rec['item']}",
            src=src,
            rec=rec,
            item=item,
            fields=_fields(item, shape_of(graph), _element_judgments(rec, judged_by)) if item is not None else None,
            svg=svg,
            criteria=criteria,
        )

    def evaluation(self, params: dict[str, str]) -> str:
        evals = self.sources.evals
        src = self.sources.trace(params.get("src", "")) or (self.sources.traces[0] if self.sources.traces else None)
        plots = self._plots(src) if src else None
        shapes = [_eval_modes(e.data) for e in evals]
        return self._page(
            "eval.html",
            title="Evaluation",
            evals=evals,
            src=src,
            plots=plots,
            shapes=shapes,
            charts=[_metric_charts(e, shape) for e, shape in zip(evals, shapes, strict=True)],
            confusions=[self._confusions(n, e) for n, e in enumerate(evals)],
            items_of=lambda n, mode: self.link("items", src=src.label, scored=f"{n}:{mode}") if src else None,
        )

    def _plots(self, src: TraceSource) -> dict:
        """The trace's figures (`_plot_data`) and their plots: decision
        against gold, the confusion as a heat map and the margins as a
        histogram, each count linking to its items."""
        data = _plot_data(src.table)

        def items(**query: str) -> str:
            return self.link("items", src=src.label, **query)

        confusion = data["confusion"]
        # Rows the gold labels given, columns the decisions made (an `error` is never gold).
        golds = [x for x in data["labels"] if any(g == x for _, g in confusion)]
        decided = [x for x in data["labels"] if any(d == x for d, _ in confusion)]
        counts = [[confusion.get((d, g), 0) for d in decided] for g in golds]
        return {
            **data,
            "scatter": plots.scatter(f"Decision against gold ({src.label})", data["points"], "gold", "decision")
            if data["points"]
            else None,
            "heatmap": plots.heatmap(
                f"Confusion of decision and gold ({src.label})",
                [shown_label(g) for g in golds],
                [shown_label(d) for d in decided],
                counts,
                "gold",
                "decision",
                [
                    [items(decision=d, gold=g) if k else None for d, k in zip(decided, row, strict=True)]
                    for g, row in zip(golds, counts, strict=True)
                ],
            )
            if data["labels"]
            else None,
            "histogram": plots.histogram(
                f"Margins of pairwise items ({src.label})",
                [
                    plots.Bin(b["low"], b["high"], b["n"], items(**b["query"]) if b["n"] else None)
                    for b in data["margins"]
                ],
                "margin (first − second)",
                zero=True,
            )
            if data["margins"]
            else None,
        }

    def _confusions(self, n: int, e: EvalSource) -> dict[str, list[dict]]:
        """Per mode, each column's confusion matrix as `rbg eval` wrote it
        (rows gold, columns decision) and, per cell, the link to its items:
        drawn from the first trace that holds that column's decisions, a
        trace of the column's graph whose scored items reproduce every
        count; else `why` says what is missing and no cell links."""
        columns = {c.get("name"): c for c in e.data.get("columns", [])}
        out: dict[str, list[dict]] = {}
        for mode, m in e.data.get("modes", {}).items():
            if not m.get("confusion"):
                continue
            q = Query(scored=f"{n}:{mode}")
            left_out = self.scored(q)[1]
            counted = {
                t.label: collections.Counter(
                    (r.gold_label, r.decided)
                    for r in t.table.query(q, size=len(t.table.rows) or 1, left_out=left_out).rows
                )
                for t in self.sources.traces
            }
            for name, c in m["confusion"].items():
                want = collections.Counter(
                    {
                        (g, p): k
                        for g, row in zip(c["gold"], c["counts"], strict=True)
                        for p, k in zip(c["predicted"], row, strict=True)
                        if k
                    }
                )
                col = columns.get(name, {})
                src, why = None, None
                if col.get("kind") != "graph":
                    why = "A baseline's decisions are in no trace, so its cells link nowhere"
                else:
                    src = next(
                        (
                            t
                            for t in self.sources.traces
                            if col.get("graph") in t.table.graphs and counted[t.label] == want
                        ),
                        None,
                    )
                    if src is None:
                        why = (
                            f"No trace given of `{col.get('graph')}` whose items reproduce these counts "
                            "(give the trace this evaluation was made from), so its cells link nowhere"
                        )
                rows = [
                    (
                        g,
                        [
                            (
                                k,
                                self.link("items", src=src.label, scored=q.scored, gold=g, decision=p)
                                if src and k
                                else None,
                            )
                            for p, k in zip(c["predicted"], counts, strict=True)
                        ],
                    )
                    for g, counts in zip(c["gold"], c["counts"], strict=True)
                ]
                out.setdefault(mode, []).append(
                    {
                        "column": name,
                        "predicted": c["predicted"],
                        "rows": rows,
                        "why": why,
                        "src": src.label if src else None,
                    }
                )
        return out

    def compare(self, params: dict[str, str]) -> str:
        try:
            cmp = self.sources.compares[int(params.get("n", "0"))]
        except (ValueError, IndexError):
            raise NotFound("no such comparison") from None
        by = items_by_transition(cmp.impact)
        new_trace = self.sources.trace(cmp.new)
        shifts = _shifts(cmp.impact.differences)
        numeric = {d.transition for d, _, _ in shifts}
        transitions = cmp.impact.transitions()
        # Many one-off numeric transitions (4.6 -> 4.495) read as the plots
        # and the largest shifts; a few are listed as well.
        drawn = sum(t in numeric for t, _ in transitions) > LISTED_TRANSITIONS
        listed = [(t, n) for t, n in transitions if not (drawn and t in numeric)]
        pairs = [(a, b) for _, a, b in shifts]
        return self._page(
            "compare.html",
            title=f"Compare {cmp.label}",
            cmp=cmp,
            by=by,
            transitions=listed,
            unlisted=(len(transitions) - len(listed), sum(n for t, n in transitions if drawn and t in numeric)),
            shifts=shifts,
            largest=sorted(shifts, key=lambda s: (-abs(s[2] - s[1]), s[0].item))[:LARGEST_SHIFTS],
            scatter=plots.scatter(f"New against old decision ({cmp.label})", pairs, "old", "new") if pairs else None,
            histogram=plots.histogram(
                f"Shifts of the decisions that differ, new − old ({cmp.label})",
                plots.bins_of([b - a for a, b in pairs], zero=True),
                "new − old",
                zero=True,
            )
            if pairs
            else None,
            item_src=new_trace.label if new_trace else None,
        )

    def _audit(self, params: dict[str, str]):
        try:
            return self.sources.audits[int(params.get("n", "0"))]
        except (ValueError, IndexError):
            raise NotFound("no such audit") from None

    def audit(self, params: dict[str, str]) -> str:
        a = self._audit(params)
        notes = read_notes(a.folder)
        n = params.get("n", "0")
        flips = {id(f) for f in a.report.get("flips", [])}
        found: dict[str, list[tuple[str, str]]] = {}
        # Worst first, as the report's own queue ranks them (`review_queue.ranked`).
        for item, findings in ranked(a.report):
            for f, sev in findings:
                # A failed variant measured nothing: it is listed as failed, never as a flip or a miss.
                what = "failed" if f["outcome"] == "failed" else "flip" if id(f) in flips else "miss"
                text = f"{what}: {f['operator']} ({f['outcome']}); {sev.describe(f['relation'])}"
                found.setdefault(item, []).append((text, self.link("evidence", n=n, variant=f["variant"])))
        rest = sorted((set(a.report.get("by_item", {})) | set(notes)) - set(found))
        items = [*found, *rest]
        return self._page(
            "audit.html",
            title=f"Audit of {a.report['judge']['name']}",
            a=a,
            n=n,
            items=items,
            found=found,
            notes=notes,
            plot=_noise_plot(a.report),
        )

    def evidence(self, params: dict[str, str]) -> str:
        """One flagged variant's evidence, from the audit's report: the
        original and perturbed fields side by side, both verdicts on every
        repeat, and the criteria that moved."""
        a = self._audit(params)
        variant = params.get("variant", "")
        finding = next((f for k in ("flips", "misses") for f in a.report.get(k, []) if f["variant"] == variant), None)
        if finding is None:
            raise NotFound(f"no flagged variant `{variant}` in {a.label}")
        return self._page(
            "evidence.html",
            title=f"Evidence: {variant}",
            a=a,
            n=params.get("n", "0"),
            f=finding,
            gold=(a.report.get("by_item", {}).get(finding["item"]) or {}).get("gold"),
            verdicts=_verdicts(finding, Judge.of(a.report)),
            changes=changes(finding),
        )

    def report(self, params: dict[str, str]) -> str:
        """The audit's own static report, as `rbg audit` renders it, with
        the notes as saved now (its own stricter CSP: no script at all)."""
        a = self._audit(params)
        return render_html(a.report, read_notes(a.folder))


def _shifts(differences: Sequence[ItemImpact]) -> list[tuple[ItemImpact, float, float]]:
    """The differing decisions that are numbers on both sides, as shown (4
    significant digits): (difference, old, new)."""
    out = []
    for d in differences:
        old, new = _number_text(d.old), _number_text(d.new)
        if old is not None and new is not None:
            out.append((d, old, new))
    return out


def shown_label(text: str) -> str:
    """A label as shown: a gold or decision label that is a number
    (`table.label`'s `4.6666666667`) by the viewer's number rule."""
    x = _number_text(text)
    return text if x is None else readable(x)


def _number_text(text: str) -> float | None:
    """A decision as shown (`readout.describe`), as a number if it is one."""
    if not _NUMBER.fullmatch(text):
        return None
    return float(text)


def export_name(route: str, params: dict[str, str]) -> str:
    """The file of a page in a static export: stable, and safe as a name
    whatever the parameters hold."""
    if not params:
        return f"{route}.html"
    digest = hashlib.sha256(urlencode(sorted(params.items())).encode()).hexdigest()[:12]
    return f"{route}-{digest}.html"


def _quick_filters(q: Query) -> list[tuple[str, dict[str, str]]]:
    base = Query(sort=q.sort, desc=q.desc)
    return [
        ("all", base.params()),
        ("errors", base.params(status="error")),
        ("abstentions", base.params(status="abstain")),
        ("disagree with gold", base.params(disagree=True)),
    ]


def _fields(item: Item, shape: ItemShape | None, judged: dict) -> dict[str, list[tuple[str, Markup]]]:
    """The item's fields as HTML by their declared kinds (`structure.field`):
    `sides`, the input and each candidate side by side, and `more`, the
    reference and every other declared field; each element with the
    judgments of the criteria judged per element (`judged`) beside it. The
    criteria's values stay in their own section below, one per candidate."""

    def kind(name: str) -> str:
        spec = shape.get(name) if shape is not None else None
        return spec.kind if spec is not None else "text"

    def field(kind: str, value: Any, beside: structure.Beside | None = None) -> Markup:
        # An empty text is marked by the viewer's own marker, as in its other texts.
        if kind == "text" and isinstance(value, str) and not value.strip():
            return el("p", None, structure.empty_text(value))
        return structure.field(kind, value, beside=beside)

    def beside(name: str, candidate: str | None = None) -> structure.Beside:
        """Beside each element of the field `name`: its judgments, for
        `candidate` alone when the field is that candidate's response."""
        at = judged.get(name, {})
        pairwise = item.mode == "pairwise" and candidate is None

        def badges(element: str, key: Any) -> Markup | None:
            found = [(c, cid, j) for c, cid, j in at.get((element, key), ()) if candidate in (None, cid)]
            return join(_judged(c, cid if pairwise else None, j) for c, cid, j in found) if found else None

        return badges

    # A structured input or response is kept as read in `fields` (its text is its rendering).
    given = item.fields.get("input") if kind("input") != "text" else item.input
    sides = [("Input", field(kind("input"), given, beside("input")))]
    responses = item.fields.get("response")
    for cid, text in item.candidates.items():
        title = "Response" if item.mode == "pointwise" else f"Candidate {cid}"
        shown_value = responses[cid] if responses else text
        sides.append((title, field(kind("response"), shown_value, beside("response", cid))))
    more = [("Reference", field("text", item.reference))] if item.reference is not None else []
    for spec in shape.extra if shape else ():
        more.append((spec.name, field(spec.kind, item.fields.get(spec.name), beside(spec.name))))
    return {"sides": sides, "more": more}


def _element_judgments(rec: dict, graph) -> dict[str, dict[tuple[str, Any], list[tuple[str, str, dict]]]]:
    """Per field, (element, key) -> (criterion, candidate, the element's
    judgment in the trace) of each criterion judged per element of it."""
    out: dict[str, dict[tuple[str, Any], list[tuple[str, str, dict]]]] = {}
    for c in graph.criteria if graph is not None else ():
        if c.each is None:
            continue
        element, name = c.each
        for cid, j in rec["criteria"].get(c.name, {}).items():
            for e in j.get("elements") or ():
                out.setdefault(name, {}).setdefault((element, e["key"]), []).append((c.name, cid, e))
    return out


def _judged(criterion: str, candidate: str | None, j: dict) -> Markup:
    """One element's judgment, as a badge: the criterion, its value or error."""
    error = j.get("error")
    return el(
        "span",
        {"class": "judged error" if error else "judged"},
        el("code", None, criterion),
        f" ({candidate})" if candidate else None,
        ": ",
        f"error: {error}" if error else shown(j.get("value")),
    )


def text_block(value: Any) -> Markup:
    """A text (or a value, as indented JSON) as a `<pre>` block; an empty
    or all-whitespace text marked (`empty_text`)."""
    text = _pretty(value)
    return el("pre", None, text) if text.strip() else structure.empty_text(text)


def _pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)


def _criterion_view(name: str, per: dict, rec: dict, item, graph) -> dict:
    """One criterion's judgments: per candidate its value, error and reply,
    and the prompts it was asked with, rendered from the template when the
    graph and the item are given (no model is called)."""
    crit = next((c for c in graph.criteria if c.name == name), None) if graph is not None else None
    rows = []
    for cid, j in per.items():
        raw = j.get("raw")
        calls = raw.get("calls") if isinstance(raw, dict) and isinstance(raw.get("calls"), list) else None
        rows.append(
            {
                "cid": cid,
                "j": j,
                "calls": calls,
                "raw": raw,
                "prompts": _prompts(crit, item, cid, calls) if crit is not None and item is not None else [],
            }
        )
    return {"name": name, "rows": rows, "errors": rec.get("criterion_errors", {}).get(name, {})}


def _prompts(crit, item, cid: str, calls) -> list[dict]:
    if load_catalog().hooks(crit.procedure).backend != "llm":
        return []
    from rubriclang.llm.prompting import PromptError, render, side_by_side

    orders = (
        [tuple(c["order"]) for c in calls if isinstance(c, dict) and isinstance(c.get("order"), list)] if calls else []
    )
    if side_by_side(crit) and not orders:
        orders = [tuple(item.candidate_ids)]
    out: list[dict[str, Any]] = []
    shown: list[tuple[str, ...] | str] = [*orders] or [cid]
    for order in shown:
        try:
            r = render(crit, item, order)
        except (PromptError, KeyError, ValueError) as exc:
            out.append({"order": order, "error": str(exc), "messages": []})
            continue
        out.append({"order": order, "error": None, "template": r.template, "messages": list(r.request.messages)})
    return out


def _eval_modes(data: dict) -> dict[str, dict]:
    """Per mode of an `rbg eval --format json` output, the order and names
    the command line prints: `columns` in the report's column order (the
    JSON's objects come with sorted keys), `metrics` in the catalog's order
    (`evaluation.metrics.METRICS`) with each one's formula, and each paired
    difference's column with its subtraction named (`first − column`; an
    output written before `differences_of` subtracted the other way)."""
    from rubriclang.evaluation.metrics import DEFINITIONS, METRICS

    order = [c.get("name") for c in data.get("columns", [])]
    first = data.get("differences_of")
    out = {}
    for mode, m in data.get("modes", {}).items():
        figures = m.get("metrics") or {}
        columns = [c for c in order if c in figures] + [c for c in figures if c not in order]
        present = list(dict.fromkeys(k for ms in figures.values() for k in ms))
        known = [k for k in METRICS.get(m.get("kind", ""), {}) if k in present]
        names = known + [k for k in present if k not in known]
        diffs = m.get("differences") or {}
        head = first or (columns[0] if columns else "")
        minus = [c for c in columns if c in diffs] + [c for c in diffs if c not in columns]
        out[mode] = {
            "columns": columns,
            "metrics": [(k, DEFINITIONS[k].formula if k in DEFINITIONS else "") for k in names],
            "differences": [(c, f"{head} − {c}" if first else f"{c} − {head}") for c in minus],
        }
    return out


def _verdicts(finding: dict, judge: Judge) -> dict:
    """The original's and the variant's judgments, each repeat marked when
    it went the wrong way (as the audit report marks it: differs from the
    original's summary, or, for a degradation, did not fall below it)."""
    base, result = finding["baseline"], finding["result"]
    fell = finding["relation"] != "invariant"
    rows = [
        ("original", base, [(d, not judge.agrees(d, base)) for d in base["decisions"]]),
        (
            "variant",
            result,
            [(d, not (judge.fell(d, base) if fell else judge.agrees(d, base))) for d in result["decisions"]],
        ),
    ]
    key = (
        "marked in the variant's row: did not fall below the original's summary"
        if fell
        else "marked: differs from the original's summary"
    )
    return {"rows": rows, "repeats": max(len(c) for _, _, c in rows), "key": key, "severity": severity(finding, judge)}


def _noise_plot(report: dict) -> Markup | None:
    """Each operator's judgment flip rate (its variants' judgments that
    differ from their item's baseline) with its 95% interval, over the
    repeat flip rate's interval (the judge's own noise) as a band; read
    from the report's figures (`metrics`, `by_operator`), not its items."""
    rows = []
    for name in sorted(report.get("by_operator", {})):
        block = (report["by_operator"][name] or {}).get("invariant")
        if not block:
            continue
        r = block.get("judgment_flip_rate") or {}
        failed = f", {r['failed']} failed" if r.get("failed") else ""
        note = f"{r.get('count', 0)}/{r.get('total', 0)} judgments{failed}" if r else ""
        rows.append(plots.Estimate(name, r.get("value"), r.get("low"), r.get("high"), note))
    if not rows:
        return None
    noise = report.get("metrics", {}).get("repeat_flip_rate") or {}
    band = plots.Estimate("repeat noise", noise.get("value"), noise.get("low"), noise.get("high"))
    return plots.rates(
        "Judgment flip rate per operator (invariant variants), 95% intervals, over the repeat noise",
        rows,
        band if band.value is not None else None,
        "repeat noise (repeat flip rate)",
    )


def _metric_charts(e: EvalSource, shapes: dict[str, dict]) -> dict[str, dict[str, Markup | None]]:
    """Per mode of an eval output, its metrics as error bars (a group per
    metric, a row per column, in the order of its tables) and its paired
    differences likewise, each row named by its subtraction."""

    def groups(block: dict, rows: list[tuple[str, str]], names: list[str]) -> list[tuple[str, list[plots.Estimate]]]:
        out = []
        for name in names:
            found = [(label, (block.get(col) or {}).get(name)) for col, label in rows]
            out.append((name, [_estimate(label, x) for label, x in found if x]))
        return [(name, rows) for name, rows in out if rows]

    charts = {}
    for mode, m in e.data.get("modes", {}).items():
        shape = shapes[mode]
        names = [name for name, _ in shape["metrics"]]
        metrics = groups(m.get("metrics") or {}, [(c, c) for c in shape["columns"]], names)
        diffs = groups(m.get("differences") or {}, shape["differences"], names)
        charts[mode] = {
            "metrics": plots.estimates(f"{e.label}, {mode}: each metric with its 95% interval", metrics)
            if metrics
            else None,
            "differences": plots.estimates(
                f"{e.label}, {mode}: paired differences with their 95% intervals", diffs, kind="difference"
            )
            if diffs
            else None,
        }
    return charts


def _estimate(label: str, x: dict) -> plots.Estimate:
    return plots.Estimate(label, x.get("value"), x.get("low"), x.get("high"), f"n {x['n']}" if "n" in x else "")


def _plot_data(table: TraceTable) -> dict:
    """The (decision, gold) numbers of the pointwise items with both,
    calibration (those in bins of the decision), the confusion of decisions
    and gold, and the margins of pairwise items; every bin carries the
    query of its items."""
    # (decision, gold) of the pointwise items with numbers for both.
    point = [
        (r.number, g)
        for r in table.rows
        if r.mode == "pointwise" and r.number is not None and (g := _num(r.gold)) is not None
    ]
    calibration = []
    if point:
        lo, hi = min(x for x, _ in point), max(x for x, _ in point)
        width = (hi - lo) / CALIBRATION_BINS or 1.0
        bins: collections.defaultdict[int, list[tuple[float, float]]] = collections.defaultdict(list)
        for x, g in point:
            bins[min(CALIBRATION_BINS - 1, int((x - lo) / width))].append((x, g))
        for b in sorted(bins):
            rows = bins[b]
            low, high = lo + b * width, lo + (b + 1) * width
            calibration.append(
                {
                    "low": low,
                    "high": high,
                    "n": len(rows),
                    "decision": sum(x for x, _ in rows) / len(rows),
                    "gold": sum(g for _, g in rows) / len(rows),
                    "query": Query(low=low, high=high).params(),
                }
            )
    confusion = collections.Counter((r.decided, r.gold_label) for r in table.rows if r.gold_label is not None)
    labels = sorted({d for d, _ in confusion} | {g for _, g in confusion}, key=_label_key)
    margins = [r.number for r in table.rows if r.mode == "pairwise" and r.number is not None]
    histogram = []
    if margins:
        lo, hi = min(margins), max(margins)
        width = (hi - lo) / MARGIN_BINS or 1.0
        counts = collections.Counter(min(MARGIN_BINS - 1, int((m - lo) / width)) for m in margins)
        top = max(counts.values())
        histogram = [
            {
                "low": lo + b * width,
                "high": lo + (b + 1) * width,
                "n": counts.get(b, 0),
                "bar": round(100 * counts.get(b, 0) / top),
                "query": Query(low=lo + b * width, high=lo + (b + 1) * width).params(),
            }
            for b in range(MARGIN_BINS)
        ]
    small = len(labels) <= 12
    return {
        "points": point,
        "calibration": calibration,
        "labels": labels if small else [],
        "confusion": confusion if small else {},
        "margins": histogram,
    }


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x) if math.isfinite(x) else None


def _label_key(s: str) -> tuple:
    try:
        return (0, float(s), s)
    except ValueError:
        return (1, 0.0, s)
