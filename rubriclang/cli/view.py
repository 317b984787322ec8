"""`rbg view PATHS...`: a local viewer over traces, evaluation outputs,
audit directories and pairs of rubric versions (docs/view.md); with no
path, over a project's runs, evaluations and audits (docs/project.md)."""

from __future__ import annotations

import contextlib
import itertools
import json
import os

import click

from rubriclang.cli.errors import DataError, data_error
from rubriclang.safeio import file_kind

EXTRA = "`rbg view` needs the optional extra: pip install 'rubriclang[view]'"


def _kind(path: str) -> str:
    """What a path on the command line is: audit, graph, eval, trace or items."""
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "report.json")):
            return "audit"
        raise DataError(f"`{path}` is a folder without report.json; an audit directory is the --out of `rbg audit`")
    if path.endswith(".rbg") or (":" in path and not os.path.exists(path)):
        return "graph"
    if not os.path.isfile(path):
        if os.path.exists(path):  # a pipe or a device: reading it could wait for ever
            raise DataError(f"`{path}` is {file_kind(os.stat(path).st_mode)}: give a file or a folder")
        raise DataError(f"`{path}`: no such file or folder")
    try:
        with open(path, encoding="utf-8") as fh:
            first = next((line for line in fh if line.strip()), "")
            if path.endswith(".json"):
                fh.seek(0)
                data = json.load(fh)
                if isinstance(data, dict) and "modes" in data and "columns" in data:
                    return "eval"
                raise DataError(f"`{path}` is JSON but not the output of `rbg eval --format json`")
        rec = json.loads(first) if first else {}
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(
            f"`{path}:{getattr(exc, 'lineno', 1)}`: not JSON ({exc}); expected a trace, items (JSON Lines) or an eval "
            "output (JSON)"
        ) from None
    except OSError as exc:
        raise DataError(f"`{path}` cannot be read: {exc.strerror or exc}") from None
    if isinstance(rec, dict) and rec.get("schema", "").startswith("rubriclang.trace/"):
        return "trace"
    if isinstance(rec, dict) and "id" in rec:
        return "items"
    raise DataError(
        f"`{path}:1`: neither a trace record (`rbg run --out`) nor an item (an `id`); give traces, items, an eval "
        "output (JSON), a graph or an audit directory"
    )


def _labels(paths: list[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        label = os.path.basename(p) or p
        while label in out:
            label = f"{label}~{len(out)}"
        out.append(label)
    return out


def load_sources(paths: tuple[str, ...]):
    from rubriclang.audit.html.write import ReportError, load_report
    from rubriclang.cli.diff import load_sides
    from rubriclang.interp.items import ItemError
    from rubriclang.interp.trace import ItemsNow
    from rubriclang.items.shape import shape_of
    from rubriclang.review.impact import verdict_impact
    from rubriclang.view.sources import (
        AuditSource,
        CompareSource,
        EvalSource,
        Items,
        ItemTexts,
        Sources,
        TraceSource,
        compare_traces,
    )
    from rubriclang.view.table import TraceTable

    by: dict[str, list[str]] = {"audit": [], "graph": [], "eval": [], "trace": [], "items": []}
    for p in paths:
        by[_kind(p)].append(p)
    if len(by["graph"]) > 2:
        raise DataError(
            "give one graph (to draw it and render prompts) or two versions of it (to compare them over a trace)"
        )
    s = Sources()
    graphs = [g for _, _, g in load_sides(tuple(by["graph"]))] if by["graph"] else []
    s.graph = graphs[-1] if graphs else None
    try:
        # Indexed, not held: each item is read again when its text or page is wanted.
        s.items = items = Items(shape_of(s.graph))
        for p in by["items"]:
            items.add(p)
        texts = ItemTexts(items)
        # A trace is shown beside the items' texts only if it judged them as they are now.
        now = ItemsNow(items, ", ".join(by["items"])) if items else None
        for label, p in zip(_labels(by["trace"]), by["trace"], strict=True):
            s.traces.append(TraceSource(label, TraceTable(p, texts, now)))
        if len(graphs) == 2:
            if not s.traces:
                raise DataError("two graph versions are compared over a trace: give a trace file too")
            t = s.traces[0]
            s.compares.append(
                CompareSource(
                    f"{by['graph'][0]} → {by['graph'][1]}",
                    t.label,
                    t.label,
                    verdict_impact(graphs[0], graphs[1], t.table.path),
                )
            )
        for a, b in itertools.pairwise(s.traces):
            s.compares.append(
                CompareSource(f"{a.label} → {b.label}", a.label, b.label, compare_traces(a.table.path, b.table.path))
            )
    except ItemError as exc:
        raise data_error(exc) from None
    if now is not None:
        from rubriclang.cli.replay import warn_unverified

        warn_unverified(now.warnings())
    for label, p in zip(_labels(by["eval"]), by["eval"], strict=True):
        with open(p, encoding="utf-8") as fh:
            s.evals.append(EvalSource(label, json.load(fh)))
    for label, p in zip(_labels(by["audit"]), by["audit"], strict=True):
        try:
            s.audits.append(AuditSource(label, p, load_report(os.path.join(p, "report.json"))))
        except ReportError as exc:
            raise DataError(str(exc)) from None
    return s


def project_landing():
    """The landing page of the project the current folder is in
    (`view.landing.find`); outside a project, a DataError saying what was
    looked for."""
    from rubriclang.cli.project import project_config, shown
    from rubriclang.view.landing import find

    config = project_config(os.curdir)
    if config.path is None:
        raise DataError(
            "`rbg view` with no path shows a project's runs, evaluations and audits, but no project config "
            "(rubriclang.toml, or [tool.rubriclang] in pyproject.toml) was found in the current folder or above it"
            "\n  hint: give the files to show (traces, items, `rbg eval --format json` outputs, audit folders), "
            "or start a project with `rbg init`"
        )
    return find(config, shown)


def project_workbench():
    """The audit workbench of the current folder's project (`view.workbench`),
    saving suites with `rbg audit init`'s own writer, estimating them with
    `rbg audit --estimate`'s own code and asking `rbg audit plan`'s planner
    as that command does (a profile's server, model and key variable)."""
    from rubriclang.audit.planner import PlanError
    from rubriclang.audit.planner import plan as propose
    from rubriclang.cli.audit import _Asking, _load_judge, _suite, _write_toml, ask_model, estimate_text, run_preview
    from rubriclang.cli.project import default_output, project_config
    from rubriclang.view.workbench import CommandRefused, Workbench

    def save(path: str, text: str, graph: str, items: str, overwrite: bool) -> None:
        try:
            _write_toml(path, overwrite, lambda: text, graph, items, "the suite file")
        except DataError as exc:
            raise CommandRefused(str(exc)) from None

    def estimate(path: str) -> str:
        try:
            s = _suite(path)
            return estimate_text(s, _load_judge(s.judge), None, "text")
        except DataError as exc:
            raise CommandRefused(str(exc)) from None

    def ask(judge, items, profile):
        key = profile.api_key_env or "OPENAI_API_KEY"
        asking = _Asking(profile.base_urls[0], profile.model, key, None, None, False)
        try:
            return ask_model(asking, 0.0, lambda asker: propose(asker, judge, items))
        except PlanError as exc:
            raise CommandRefused(f"the planner: {exc}") from None

    def preview(path: str) -> tuple[str, dict]:
        # A new folder in the project's audits, as `rbg audit SUITE` names one;
        # `rbg audit SUITE --out FOLDER` then judges exactly these variants.
        try:
            stem = os.path.basename(path).removesuffix(".toml")
            out = default_output(project_config(path), "audits", stem, "", "--out", "rbg view")
            return out, run_preview(path, out, None, False)
        except DataError as exc:
            raise CommandRefused(str(exc)) from None

    return Workbench(project_config(os.curdir), save, estimate, ask, preview)


@click.command()
@click.argument("paths", nargs=-1, metavar="[PATHS...]")
@click.option("--open", "open_browser", is_flag=True, help="Open the viewer in the browser.")
@click.option(
    "--export",
    "export_dir",
    type=click.Path(file_okay=False),
    help="Write the pages as static files into DIR instead of serving them.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Port on 127.0.0.1 (0: a free one at random).",
)
def view(paths, open_browser, export_dir, port) -> None:
    """Look at traces, items, eval outputs (`rbg eval --format json`), audit
    directories and one or two graph versions in a browser. Serves on
    127.0.0.1 with a one-time token in the printed URL; reads its inputs and
    writes nothing but review notes (`AUDIT_DIR/notes.json`).

    With no PATHS, it opens on the runs, evaluations and audits of the
    project the current folder is in (rubriclang.toml: docs/project.md),
    newest first, with their status and headline figures.
    """
    try:
        import jinja2  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise DataError(EXTRA) from None
    landing = project_landing() if not paths else None
    sources = landing.sources if landing is not None else load_sources(paths)
    render_landing = None
    if landing is not None:
        from rubriclang.view import landing as pages

        def render_landing(site):
            return pages.render(site, landing)

        paths = tuple(e.path for e in landing.entries)
    if export_dir:
        from rubriclang.cli.outputs import command_output
        from rubriclang.interp.items import ItemError
        from rubriclang.safeio import describe_os_error
        from rubriclang.view.export import export

        try:
            os.makedirs(export_dir, exist_ok=True)
            with command_output(export_dir, [("input", p) for p in paths], "--export"):
                n = export(sources, export_dir)
                if render_landing is not None:
                    # The landing page replaces the plain index: it links to
                    # the same pages (each source's), which the export wrote.
                    from rubriclang.safeio import write_atomic
                    from rubriclang.view.pages import Site

                    page = render_landing(Site(sources, export=True))
                    write_atomic(os.path.join(export_dir, "index.html"), page, sync=False, within=export_dir)
        except ItemError as exc:  # an items file changed while its pages were written
            raise data_error(exc) from None
        except OSError as exc:
            where = exc.filename or export_dir
            raise DataError(f"`{where}` cannot be written: {describe_os_error(exc)}") from None
        click.echo(f"wrote {n} pages to {export_dir}/index.html")
        return
    from rubriclang.view.server import HOST, free_port, new_token, serve

    token = new_token()
    port = port or free_port()
    url = f"http://{HOST}:{port}/?token={token}"

    def ready():
        click.echo(f"rbg view: serving on {url}\n(Ctrl-C to stop)", err=False)
        if open_browser:
            import webbrowser

            webbrowser.open(url)

    workbench = project_workbench() if landing is not None else None
    with contextlib.suppress(KeyboardInterrupt):
        serve(sources, port, token, ready, render_landing, workbench)
