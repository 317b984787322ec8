"""`rbg audit`: audit a judge under controlled perturbations.

rbg audit SUITE.toml --out DIR        run (or resume) an audit
rbg audit init GRAPH ITEMS            write a starting suite
rbg audit plan GRAPH ITEMS            an LLM proposes operators (runs nothing)
rbg audit catalog                     list the perturbation operators
rbg audit compare DIR_A DIR_B         two audits of one sealed suite side by side
rbg audit preview SUITE --out DIR     make and validate the variants, judge nothing
rbg audit cheaper GRAPH ITEMS --traces T --profile NAME   which criteria can run on a cheaper model
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import sys

import attrs
import click

from rubriclang.cli.cheaper import cheaper
from rubriclang.cli.errors import DataError
from rubriclang.cli.estimate import phases_text, prices_for
from rubriclang.cli.gates import FAIL_IF_HELP, GateParam, at_option, audit_gates, check_audit, report_failures
from rubriclang.cli.gates import render_text as render_gates
from rubriclang.cli.llmoptions import (
    api_key_env_option,
    cache_option,
    estimate_option,
    model_file_option,
    no_cache_option,
)
from rubriclang.cli.loading import load_graph, load_graph_set
from rubriclang.cli.options import collect
from rubriclang.items.shape import shape_of


class _AuditGroup(click.Group):
    """A group whose default subcommand is `run`: `rbg audit SUITE --out DIR`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_AuditGroup)
def audit() -> None:
    """Audit a judge under controlled perturbations (see docs/audit.md).

    `rbg audit SUITE.toml --out DIR` runs the audit the suite describes.
    """


audit.add_command(cheaper)


def _suite(path: str):
    from rubriclang.audit.suite import SuiteError, load_suite

    try:
        return load_suite(path)
    except SuiteError as exc:
        raise DataError(f"{exc.where}: {exc.message}" + (f"\n  hint: {exc.hint}" if exc.hint else "")) from None


def _load_judge(path: str):
    """The judge at `path`: one graph, or a folder of graphs compiled per
    instance (with the fallback policy its compile logs record)."""
    return load_graph_set(path, None) if os.path.isdir(path) else load_graph(path)


@audit.command("run")
@click.argument("suite", type=click.Path(dir_okay=False))
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False),
    help="The audit's folder; an existing one is resumed. Default, in a project: a new folder in its audits folder.",
)
@click.option(
    "--sealed",
    type=click.Path(dir_okay=False),
    help="Reuse this sealed suite (DIR/sealed.json of an earlier audit): the same variants.",
)
@click.option(
    "--cache",
    type=click.Path(dir_okay=False),
    help="The call cache (default: $XDG_CACHE_HOME/rubriclang/calls.sqlite).",
)
@click.option("--no-cache", is_flag=True, help="Neither read nor write the call cache.")
@click.option("--retry-errors", is_flag=True, help="Judge again the repeats that failed.")
@click.option(
    "--no-reuse",
    is_flag=True,
    help=(
        "Ask the judge's server for every judgment: a variant's criterion whose prompt did not change is asked again "
        "instead of reusing the baseline's judgment of the same repeat (the judge then reads no call cache)."
    ),
)
@click.option(
    "--reseal",
    is_flag=True,
    help=(
        "When --out holds an audit of the suite as it was before an edit, seal the suite anew there (the earlier "
        "audit is moved to a superseded-* subfolder, and the report notes it) instead of refusing."
    ),
)
@click.option(
    "--summary", is_flag=True, help="Add a short LLM-written summary of the findings (the generator's model)."
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="What to print."
)
@estimate_option("per phase the audit")
@click.option(
    "--fail-if",
    multiple=True,
    type=GateParam(),
    metavar="FIGURE[SCOPE]<VALUE|>VALUE",
    help=(
        "A CI gate on a figure of the report, e.g. 'repeat_flip_rate>0.1', 'invariant.flip_rate[typo_noise]>0.05', "
        f"or 'invariant.flip_rate[*]' (held to the repeat noise): {FAIL_IF_HELP}."
    ),
)
def run(suite, out, sealed, cache, no_cache, retry_errors, no_reuse, reseal, summary, fmt, estimate, fail_if) -> None:
    """Run the audit SUITE describes, writing everything under --out.

    Running it again with the same --out resumes: recorded judgments are
    kept and calls already made come from the cache. Exit status: 0 the
    audit ran, 1 some judgments failed (or, with a folder of graphs, some
    items' graphs did not compile and have no fallback), 2 bad input or an
    unusable judge backend, 3 nothing was measured (every judgment failed:
    no figure of the report has a value), 4 a gate (--fail-if) failed.
    """
    from rubriclang.audit.pipeline import Audit, AuditError, AuditRequest

    s = _suite(suite)
    graph = _load_judge(s.judge)
    if estimate and fail_if:
        raise click.UsageError("--estimate runs nothing, so there is nothing for --fail-if to gate: give one of them")
    if estimate and no_reuse:
        raise click.UsageError(
            "--estimate counts what an audit with reuse sends (an identical request once): drop --no-reuse"
        )
    if estimate:
        return _estimate(s, graph, sealed, fmt)
    at_option("--fail-if", audit_gates, fail_if, s.requested())
    if reseal and sealed:
        raise click.UsageError("--reseal seals the suite anew, --sealed reuses a sealed suite: give one of them")
    from rubriclang.cli.project import cache_options, default_output, project_config

    project = project_config(suite)
    cache, no_cache = cache_options(cache, no_cache, project)
    if not out:
        stem = os.path.basename(suite).removesuffix(".toml")
        out = default_output(project, "audits", stem, "", "--out", "rbg audit")
    req = AuditRequest(s, out, sealed, cache, no_cache, retry_errors, summary, reseal, reuse=not no_reuse)
    from rubriclang.cli.progress import Progress

    # With `--format json` only a terminal gets progress.
    progress = Progress("judgments", lines=fmt == "text", command="rbg audit")
    try:
        report = asyncio.run(Audit(req, graph, tick=progress.tick, phase=progress.phase).run())
    except AuditError as exc:
        raise DataError(exc.message + (f"\n  hint: {exc.hint}" if exc.hint else "")) from None
    except KeyboardInterrupt:
        progress.done()
        click.echo(f"Interrupted; run the same command again to resume from {out}.", err=True)
        sys.exit(130)
    progress.done()
    results = check_audit(fail_if, report)
    if fmt == "json":
        from rubriclang.audit.files import json_chunks

        gated = {**report, "gates": [r.to_json() for r in results]} if results else report
        # Written as encoded: the report's `by_item` is made entry by entry (audit.report_json.ByItem).
        for chunk in json_chunks(gated, indent=2):
            click.echo(chunk, nl=False)
        click.echo()
    else:
        from rubriclang.audit.report_json import render_text

        click.echo(render_text(report), nl=False)
        click.echo(phases_text(report["usage"], _phase_models(s), prices_for(s.judge)))
        if results:
            click.echo(render_gates(results))
        click.echo(f"Report: {os.path.join(out, 'report.json')}")
    from rubriclang.audit.summary import nothing_measured

    if nothing_measured(report):
        click.echo(
            f"Error: nothing was measured: all {report['counts']['judgments']} judgment(s) failed (runs.jsonl says "
            "why); fix the judge or its server, then run again with --retry-errors",
            err=True,
        )
        sys.exit(3)
    report_failures(results)
    if report["counts"]["failed_judgments"] or report["judge"]["compile"]["failed"]:
        sys.exit(1)


def _phase_models(s) -> dict:
    """The model each phase of the audit is configured with (None: the server's only one)."""
    return {
        phase: cfg.model or (None if cfg.base_url else "embedded")
        for phase, cfg in (("judge", s.judge_model), ("generate", s.generator), ("validate", s.validator))
    }


def _estimate(s, graph, sealed, fmt) -> None:
    click.echo(estimate_text(s, graph, sealed, fmt))


def estimate_text(s, graph, sealed, fmt: str) -> str:
    """`rbg audit SUITE --estimate`'s output for the loaded suite `s` and its
    judge `graph` (`rbg view`'s workbench shows the same); nothing is called."""
    from rubriclang.audit.pipeline import Audit, AuditError, AuditRequest
    from rubriclang.cli.estimate import document, render

    prices = prices_for(s.judge)
    try:
        est, phases, notes = asyncio.run(Audit(AuditRequest(s, "", sealed), graph).estimate())
    except AuditError as exc:
        raise DataError(exc.message + (f"\n  hint: {exc.hint}" if exc.hint else "")) from None
    return render(document(est, phases, prices, notes), fmt)


def run_preview(suite: str, out: str, cache: str | None, no_cache: bool) -> dict:
    """`rbg audit preview`'s work (`rbg view`'s workbench does the same):
    the variants of the suite at `suite` made, validated and sealed into
    `out`, with DIR/preview.json and DIR/preview.html; the preview's document."""
    from rubriclang.audit.pipeline import Audit, AuditError, AuditRequest

    s = _suite(suite)
    graph = _load_judge(s.judge)
    try:
        return asyncio.run(Audit(AuditRequest(s, out, cache=cache, no_cache=no_cache), graph).run(preview=True))
    except AuditError as exc:
        raise DataError(exc.message + (f"\n  hint: {exc.hint}" if exc.hint else "")) from None


@audit.command("preview")
@click.argument("suite", type=click.Path(dir_okay=False))
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(file_okay=False),
    help="The audit's folder: the run then reuses these variants.",
)
@click.option("--cache", type=click.Path(dir_okay=False), help="The call cache.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the call cache.")
def preview(suite, out, cache, no_cache) -> None:
    """Make and validate the variants SUITE asks for, without judging, and
    write DIR/preview.html and DIR/preview.json to review them. `rbg audit
    SUITE --out DIR` then judges exactly these (the folder's sealed suite)."""
    doc = run_preview(suite, out, cache, no_cache)
    verdicts = collections.Counter(r["verdict"] for r in doc["validation"])
    click.echo(
        f"Sealed {doc['sealed'][:19]}...: {len(doc['variants'])} variant(s) accepted"
        + "".join(f", {n} {k}" for k, n in sorted(verdicts.items()) if k != "accept")
        + f"; review {os.path.join(out, 'preview.html')}, then run `rbg audit {suite} --out {out}`."
    )


@audit.command("compare")
@click.argument("dir_a", type=click.Path(file_okay=False))
@click.argument("dir_b", type=click.Path(file_okay=False))
@click.option(
    "--out", "out", type=click.Path(file_okay=False), help="Write compare.json, compare.txt and compare.html here."
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="What to print."
)
def compare_cmd(dir_a, dir_b, out, fmt) -> None:
    """Compare two audits of one sealed suite (two judges, or two versions
    of a rubric): every rate side by side per surface and operator, the
    paired difference B - A over the shared variants, and the variants that
    went wrong in one audit only. Exit status: 0 no difference, 1
    differences, 2 folders that cannot be compared."""
    from rubriclang.audit.compare import CompareError, compare, load, render_text

    try:
        doc = compare(load(dir_a), load(dir_b), (dir_a, dir_b))
    except CompareError as exc:
        raise DataError(str(exc)) from None
    text = render_text(doc)
    if out:
        from rubriclang.audit.files import write_json
        from rubriclang.audit.html.compare_page import render_compare
        from rubriclang.cli.outputs import command_output
        from rubriclang.safeio import check_folder, describe_os_error, write_atomic

        try:
            os.makedirs(out, exist_ok=True)
            with command_output(out, [("audit folder A", dir_a), ("audit folder B", dir_b)]):
                check_folder(out)
                write_json(os.path.join(out, "compare.json"), doc, indent=2)
                write_atomic(os.path.join(out, "compare.txt"), text)
                write_atomic(os.path.join(out, "compare.html"), render_compare(doc))
        except OSError as exc:
            raise DataError(f"`{exc.filename or out}`: {describe_os_error(exc)}") from None
    click.echo(json.dumps(doc, sort_keys=True, indent=2) if fmt == "json" else text, nl=fmt == "json")
    if doc["differences"]:
        sys.exit(1)


@audit.command("catalog")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def catalog(fmt) -> None:
    """List the perturbation operators: surface, relation, generator, what
    each preserves or breaks, when it applies and how it is validated."""
    from rubriclang.audit.applicability import conditions
    from rubriclang.audit.perturbations import load_perturbations

    ops = load_perturbations()
    if fmt == "json":
        click.echo(json.dumps([op.to_json() for op in ops.values()], indent=2, sort_keys=True))
        return
    for op in ops.values():
        click.echo(f"{op.name}  ({op.surface}, {op.relation}, {op.generator})")
        click.echo(f"    {op.summary}")
        click.echo(f"    preserves: {op.preserves}")
        if op.breaks:
            click.echo(f"    breaks: {op.breaks}")
        click.echo(f"    applies when: {'; '.join(conditions(op)) or 'always'}")
        click.echo(f"    validation: {op.validation}")
        if op.options:
            click.echo(f"    options: {', '.join(f'{k} = {json.dumps(v)}' for k, v in op.options.items())}")


def _judge_and_items(graph_path: str, items_path: str):
    from rubriclang.audit.judge import JudgeError, judge_info
    from rubriclang.interp.items import ItemError, read_items

    graph = _load_judge(graph_path)
    if not os.path.isfile(items_path):
        raise DataError(f"`{items_path}`: no such file")
    try:
        items = list(read_items(items_path, shape_of(graph)))
    except ItemError as exc:
        raise DataError(f"{exc.where}: {exc.message}") from None
    try:
        return judge_info(graph, items), items
    except JudgeError as exc:
        raise DataError(str(exc)) from None


def _write_toml(path: str, force: bool, render, graph: str, items: str, option: str = "-o/--output") -> None:
    """Write the TOML text `render()` makes to `path`, never over a file
    unless `force`, and never over the GRAPH or ITEMS it was made from, even
    with --force (`cli.outputs.command_output`)."""
    from rubriclang.audit.suite_writer import SuiteTextError
    from rubriclang.cli.outputs import command_output
    from rubriclang.safeio import describe_os_error, write_atomic

    if os.path.exists(path) and not force:
        raise DataError(f"`{path}` exists; give another path, or --force to overwrite it")
    try:
        text = render()
    except SuiteTextError as exc:
        raise DataError(str(exc)) from None
    try:
        with command_output(path, [("graph", graph), ("items file", items)], option):
            write_atomic(path, text)
    except OSError as exc:
        raise DataError(f"cannot write `{path}`: {describe_os_error(exc)}") from None


_output = click.option(
    "-o",
    "--output",
    default="audit.toml",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="Where to write the suite.",
)
_force = click.option("--force", is_flag=True, help="Overwrite an existing suite file.")


@audit.command("init")
@click.argument("graph", type=click.Path())
@click.argument("items", type=click.Path(dir_okay=False))
@_output
@_force
@click.option(
    "--base-url",
    metavar="URL",
    help="The server the judge, generator and validator use; without it the suite is sized for the embedded model.",
)
def init(graph, items, output, force, base_url) -> None:
    """Write a starting suite for auditing GRAPH on ITEMS: every operator
    that applies to this judge, and why the others do not.

    Sized to the backend: with --base-url (or a `default` model profile in
    the project config) every applicable operator and 5 repeats; on the
    embedded model the rule operators only (the 135M model writes poor
    variants) and 2 repeats, and the suite's comments say so."""
    from rubriclang.audit.starting import starting_suite
    from rubriclang.audit.suite_writer import SuiteTextError
    from rubriclang.config import ConfigError, load_config

    judge, _ = _judge_and_items(graph, items)
    try:
        profiled = "default" in load_config(graph).models
    except ConfigError as exc:
        raise DataError(f"{exc.where}: {exc.message}") from None
    try:
        start = starting_suite(output, graph, items, judge, base_url, profiled)
    except SuiteTextError as exc:
        raise DataError(str(exc)) from None
    _write_toml(output, force, lambda: start.text, graph, items)
    ok, skipped, embedded = start.chosen, start.skipped, start.embedded
    sized = " (sized for the embedded model: rule operators and 2 repeats)" if embedded and judge.llm_criteria else ""
    click.echo(
        f"Wrote {output}: {len(ok)} operators for `{judge.graph.name}` ({judge.type} judge){sized}; {len(skipped)} do "
        "not apply."
    )


@attrs.frozen
class _Asking:
    """The model `plan` and `suggest` ask, and their call cache."""

    base_url: str | None
    model: str | None
    api_key_env: str
    model_file: str | None
    cache: str | None
    no_cache: bool

    def config(self, temperature: float):
        """The model as a suite table would name it (`audit.suite.ModelConfig`)."""
        from rubriclang.audit.suite import ModelConfig

        return ModelConfig(
            base_url=self.base_url,
            model=self.model,
            api_key_env=self.api_key_env,
            model_file=self.model_file,
            temperature=temperature,
            max_tokens=1024,
        )


def _model_options(role: str):
    """The options naming the model of `plan` and `suggest`: one `asking` argument."""
    return collect(
        _Asking,
        [
            click.option(
                "--base-url",
                metavar="URL",
                help=f"The {role}'s OpenAI-compatible server (default: the embedded local model).",
            ),
            click.option("--model", metavar="NAME", help=f"The {role}'s model (default: the server's only model)."),
            api_key_env_option("The environment variable holding the API key."),
            model_file_option("The embedded model's GGUF file."),
            cache_option("The call cache."),
            no_cache_option,
        ],
        "asking",
    )


def ask_model(asking: _Asking, temperature: float, propose):
    """propose(asker) run against the model `asking` names, sampling at
    `temperature` (`rbg view`'s workbench asks the planner through it);
    raises PlanError."""
    from rubriclang.audit.models import Models

    async def go():
        models = Models(asking.cache, asking.no_cache)
        try:
            return await propose(models.asker(asking.config(temperature)))
        finally:
            await models.aclose()

    return asyncio.run(go())


def _ask(asking: _Asking, temperature: float, propose):
    """`ask_model`, a PlanError exiting 1."""
    from rubriclang.audit.planner import PlanError

    try:
        return ask_model(asking, temperature, propose)
    except PlanError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(1)


@audit.command("plan")
@click.argument("graph", type=click.Path())
@click.argument("items", type=click.Path(dir_okay=False))
@_output
@_force
@_model_options("planner")
def plan(graph, items, output, force, asking: _Asking) -> None:
    """Ask a model to propose operators for auditing GRAPH on ITEMS, each
    with a one-line rationale, and write them into an editable suite. It
    runs nothing: review the suite, then `rbg audit SUITE --out DIR`."""
    from rubriclang.audit.planner import plan as propose
    from rubriclang.audit.starting import planned_suite

    judge, item_list = _judge_and_items(graph, items)
    chosen, dropped, skipped = _ask(asking, 0.0, lambda asker: propose(asker, judge, item_list))
    _write_toml(output, force, lambda: planned_suite(output, graph, items, judge, chosen, skipped), graph, items)
    click.echo(f"Wrote {output}: {len(chosen)} operators proposed for `{judge.graph.name}`; nothing was run.")
    for name, why in dropped:
        click.echo(f"  dropped `{name}`: {why}", err=True)


@audit.command("suggest")
@click.argument("graph", type=click.Path())
@click.argument("items", type=click.Path(dir_okay=False))
@click.option(
    "--out",
    "output",
    default="custom.toml",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="Where to write the proposed [[custom]] tables.",
)
@_force
@_model_options("generator")
def suggest(graph, items, output, force, asking: _Asking) -> None:
    """Ask the generator model for custom operators that fit GRAPH's task
    (shown its criteria and a few ITEMS), each with a surface, relation,
    instruction and rationale, and write them as [[custom]] tables to
    review. It runs nothing."""
    from rubriclang.audit.suggest import suggest as propose
    from rubriclang.audit.suite_writer import render_custom

    judge, item_list = _judge_and_items(graph, items)
    kept, dropped = _ask(asking, 0.7, lambda asker: propose(asker, judge, item_list))
    _write_toml(output, force, lambda: render_custom(kept, "rbg audit suggest"), graph, items, "--out")
    click.echo(
        f"Wrote {output}: {len(kept)} custom operator(s) proposed for `{judge.graph.name}`; review them, then paste "
        "them into a suite."
    )
    for name, why in dropped:
        click.echo(f"  dropped `{name}`: {why}", err=True)
