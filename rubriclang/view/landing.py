"""`rbg view` with no path: the landing page of a project (docs/project.md).

It lists what the project's output folders hold, newest first: the runs
(trace files in `runs`, with the `.run.json` that `rbg run` writes beside
a default-named one), the evaluation outputs saved in `evals` (`rbg eval
--format json`) and the audit folders in `audits`. Each row gives its
judge, data, date, headline figures and status: `running` (a live process
holds its output lock), `interrupted` (a trace with fewer records than its
items file has items, an audit folder without report.json) or `finished`;
a file that cannot be read is listed with why, never dropped. Every readable
one is also a source of the viewer, so the row links to its pages.
"""

from __future__ import annotations

import calendar
import collections
import json
import os
import time
from collections.abc import Iterable

import attrs

from rubriclang.audit.html.fmt import measured
from rubriclang.audit.html.write import ReportError, load_report
from rubriclang.config import ProjectConfig
from rubriclang.evaluation.metrics import wilson
from rubriclang.interp.items import ItemError
from rubriclang.safeio import open_regular
from rubriclang.view.numbers import DASH, interval, readable
from rubriclang.view.pages import Site
from rubriclang.view.sources import AuditSource, EvalSource, Sources, TraceSource
from rubriclang.view.table import TraceTable

RUN_META = ".run.json"  # as `rbg run` names it (cli/project.py)
LOCK = ".lock"  # an output file's lock (safeio.output_lock); a folder's is `.rbg.lock` in it
FOLDER_LOCK = ".rbg.lock"


@attrs.frozen
class Entry:
    """One row of the landing page. `route`/`params`: the viewer page it
    links to (None: unreadable, nothing to show)."""

    kind: str  # run, evaluation, audit
    name: str
    path: str
    judge: str
    data: str
    date: str
    status: str  # finished, running, interrupted, unreadable
    why: str  # what the status rests on
    figures: tuple[tuple[str, str], ...]
    route: str | None = None
    params: dict[str, str] = attrs.field(factory=dict)
    when: float = 0.0  # for the order: newest first


@attrs.frozen
class Landing:
    """The project's entries, and the sources the viewer serves for them."""

    root: str
    folders: dict[str, str]  # kind -> the folder looked in, as shown
    entries: tuple[Entry, ...]
    sources: Sources


def find(config: ProjectConfig, shown=os.path.relpath) -> Landing:
    """The landing page's entries under the project's output folders."""
    assert config.root is not None
    sources = Sources()
    folders = {kind: config.folder(kind) for kind in ("runs", "evals", "audits")}
    entries = [
        *_runs(folders["runs"], config.root, sources, shown),
        *_evals(folders["evals"], sources, shown),
        *_audits(folders["audits"], sources, shown),
    ]
    entries.sort(key=lambda e: (-e.when, e.kind, e.name))
    return Landing(shown(config.root), {k: shown(v) for k, v in folders.items()}, tuple(entries), sources)


def render(site: Site, landing: Landing) -> str:
    """The landing page, in the viewer's layout (`templates/landing.html`)."""
    return site.env.get_template("landing.html").render(title="rbg view: project", landing=landing)


# -- runs ------------------------------------------------------------------------


def _runs(folder: str, root: str, sources: Sources, shown) -> Iterable[Entry]:
    counted: dict[str, int | None] = {}  # items files counted once, whatever the runs over them
    for name in _listing(folder, lambda n: n.endswith(".jsonl") and os.path.isfile(os.path.join(folder, n))):
        path = shown(os.path.join(folder, name))  # as messages and the viewer name it
        meta = _run_meta(path)
        graph = meta.get("graph", "")
        items = meta.get("items", "")
        items_path = os.path.join(root, items) if items else ""
        when = _started(meta) or _mtime(path)
        running = _running(path + LOCK)
        try:
            table = TraceTable(path)
        except ItemError as exc:
            status = "running" if running else "unreadable"
            yield Entry(
                "run",
                name,
                path,
                graph or DASH,
                items or DASH,
                _date(when),
                status,
                f"{exc.where}: {exc.message}",
                (),
                when=when,
            )
            continue
        sources.traces.append(TraceSource(name, table))
        if items_path and items_path not in counted:
            counted[items_path] = _count_lines(items_path)
        total = counted.get(items_path) if items_path else None
        status, why = _run_status(len(table.rows), total, running)
        judge = graph or ", ".join(sorted(table.graphs)) or DASH
        yield Entry(
            "run",
            name,
            path,
            judge,
            items or DASH,
            _date(when),
            status,
            why,
            _trace_figures(table),
            "items",
            {"src": name},
            when,
        )


def _run_meta(path: str) -> dict:
    """The `.run.json` beside a default-named run, or {} (none, or unreadable)."""
    meta = path.removesuffix(".traces.jsonl") + RUN_META
    if meta == path + RUN_META or not os.path.isfile(meta):
        return {}
    try:
        with open_regular(meta, "r", encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in doc.items() if isinstance(v, str)} if isinstance(doc, dict) else {}


def _run_status(records: int, items: int | None, running: bool) -> tuple[str, str]:
    if running:
        return "running", "a process holds its output lock"
    if items is not None and records < items:
        return "interrupted", f"{records} of {items} items judged; run again with the same --out to resume"
    return "finished", "" if items is not None else "its items file is unknown or unreadable"


def _trace_figures(table: TraceTable) -> tuple[tuple[str, str], ...]:
    statuses = collections.Counter(r.status for r in table.rows)
    figures = [
        ("items", str(len(table.rows))),
        ("ok / abstain / error", f"{statuses['ok']} / {statuses['abstain']} / {statuses['error']}"),
    ]
    decisions = collections.Counter(r.decision for r in table.rows if r.status == "ok")
    numbers = [r.number for r in table.rows if r.status == "ok" and r.number is not None]
    if numbers and len(decisions) > 5:
        figures.append(("mean decision", readable(sum(numbers) / len(numbers))))
    elif decisions:
        figures.append(("decisions", ", ".join(f"{d}: {n}" for d, n in decisions.most_common(5))))
    with_gold = [r for r in table.rows if r.gold is not None]
    scored = [r for r in with_gold if r.status == "ok"]
    if scored:
        agree = sum(not r.disagrees for r in scored)
        low, high = wilson(agree, len(scored))
        figures.append(
            (
                "agrees with gold",
                f"{readable(agree / len(scored), 'figure')} [{readable(low, 'figure')}, {readable(high, 'figure')}] "
                f"({agree}/{len(scored)} items, coverage {readable(len(scored) / len(with_gold), 'figure')})",
            )
        )
    return tuple(figures)


# -- evaluations -----------------------------------------------------------------


def _evals(folder: str, sources: Sources, shown) -> Iterable[Entry]:
    for name in _listing(folder, lambda n: n.endswith(".json") and os.path.isfile(os.path.join(folder, n))):
        path = os.path.join(folder, name)
        when = _mtime(path)
        try:
            with open_regular(path, "r", encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError) as exc:
            yield Entry("evaluation", name, shown(path), DASH, DASH, _date(when), "unreadable", str(exc), (), when=when)
            continue
        if not (isinstance(data, dict) and "modes" in data and "columns" in data):
            yield Entry(
                "evaluation",
                name,
                shown(path),
                DASH,
                DASH,
                _date(when),
                "unreadable",
                "not the output of `rbg eval --format json`",
                (),
                when=when,
            )
            continue
        sources.evals.append(EvalSource(name, data))
        judges = ", ".join(str(c.get("name")) for c in data["columns"] if c.get("kind") == "graph")
        yield Entry(
            "evaluation",
            name,
            shown(path),
            judges or DASH,
            DASH,
            _date(when),
            "finished",
            "",
            _eval_figures(data),
            "eval",
            {},
            when,
        )


def _eval_figures(data: dict) -> tuple[tuple[str, str], ...]:
    figures = [("items", str(data.get("items", DASH))), ("with gold", str(data.get("items_with_gold", DASH)))]
    first = str(data["columns"][0].get("name")) if data["columns"] else ""
    for mode, block in sorted(data["modes"].items()):
        metrics = block.get("metrics", {}).get(first, {})
        for name, est in list(metrics.items())[:2]:  # the kind's first figures (accuracy, MAE, agreement...)
            if isinstance(est, dict):
                value = readable(est.get("value"), "figure")
                bounds = f" {interval(est)}" if est.get("low") is not None else ""
                figures.append((f"{name} ({mode})", value + bounds))
    return tuple(figures)


# -- audits ----------------------------------------------------------------------


def _audits(folder: str, sources: Sources, shown) -> Iterable[Entry]:
    for name in _listing(folder, lambda n: os.path.isdir(os.path.join(folder, n)) and not n.startswith(".")):
        path = os.path.join(folder, name)
        report_path = os.path.join(path, "report.json")
        running = _running(os.path.join(path, FOLDER_LOCK))
        when = _mtime(report_path if os.path.isfile(report_path) else path)
        if not os.path.isfile(report_path):
            status, why = (
                ("running", "a process holds its lock")
                if running
                else ("interrupted", "no report.json yet: run the same `rbg audit SUITE --out DIR` again to resume")
            )
            yield Entry("audit", name, shown(path), DASH, DASH, _date(when), status, why, (), when=when)
            continue
        try:
            report = load_report(report_path)
        except ReportError as exc:
            yield Entry("audit", name, shown(path), DASH, DASH, _date(when), "unreadable", str(exc), (), when=when)
            continue
        n = len(sources.audits)
        sources.audits.append(AuditSource(name, path, report))
        judge, suite = report.get("judge", {}), report.get("suite", {})
        status = "running" if running else "finished"
        yield Entry(
            "audit",
            name,
            shown(path),
            shown(judge["path"]) if judge.get("path") else str(judge.get("name") or DASH),
            f"suite {suite.get('path', DASH)}",
            _date(when),
            status,
            "",
            _audit_figures(report),
            "audit",
            {"n": str(n)},
            when,
        )


def _audit_figures(report: dict) -> tuple[tuple[str, str], ...]:
    counts, metrics = report.get("counts", {}), report.get("metrics", {})
    figures = [
        ("items / variants", f"{counts.get('items', DASH)} / {counts.get('variants', DASH)}"),
        ("failed judgments", str(counts.get("failed_judgments", DASH))),
        ("repeat flip rate", _rate(metrics.get("repeat_flip_rate"))),
    ]
    if metrics.get("invariant"):
        figures.append(("flip rate", _rate(metrics["invariant"].get("flip_rate"))))
    if metrics.get("directional"):
        figures.append(("detection rate", _rate(metrics["directional"].get("detection_rate"))))
    return tuple(figures)


def _rate(rate: dict | None) -> str:
    """A report's Rate: its value, interval and count/total, or `not measured`."""
    if not rate or rate.get("value") is None:
        return measured(rate)
    return f"{readable(rate['value'], 'figure')} {interval(rate)} ({rate.get('count')}/{rate.get('total')})"


# -- files -----------------------------------------------------------------------


def _listing(folder: str, keep) -> list[str]:
    try:
        return sorted(n for n in os.listdir(folder) if keep(n))
    except OSError:
        return []  # no such folder yet: nothing written there


def _running(lock: str) -> bool:
    """Whether a live process holds the output lock `lock`: the file is
    removed on release, and one left by a killed process names a pid that
    is gone. Read, never locked: a probe must not refuse a starting writer."""
    try:
        with open_regular(lock, "r", encoding="ascii", newline=None) as fh:
            text = fh.read(32).strip()
    except (OSError, UnicodeDecodeError):
        return False
    if not text.isdigit():
        return True  # being written: the holder writes its pid right after taking the lock
    try:
        os.kill(int(text), 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:
        return True  # alive, another user's
    return True


def _count_lines(path: str) -> int | None:
    """The items in an items file (its non-blank lines), or None when it cannot be read."""
    try:
        with open_regular(path) as fh:
            return sum(1 for line in fh if line.strip())
    except OSError:
        return None


def _started(meta: dict) -> float | None:
    try:
        return float(calendar.timegm(time.strptime(meta["started"], "%Y-%m-%dT%H:%M:%SZ")))
    except (KeyError, ValueError, OverflowError):
        return None


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def _date(when: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(when)) if when else DASH
