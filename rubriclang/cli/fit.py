"""`rbg fit GRAPH ITEMS -o FITTED.rbg`: fit a graph's numbers on a dev split,
cross-validated, and report the held-out split (docs/fit.md)."""

from __future__ import annotations

import asyncio
import json

import attrs
import click

from rubriclang.cli.backends import local_backend, uses_llm
from rubriclang.cli.errors import DataError, data_error
from rubriclang.cli.estimate import no_calls
from rubriclang.cli.llmoptions import estimate_option
from rubriclang.cli.loading import load_graph
from rubriclang.cli.options import JudgingOptions, collect, judging_options
from rubriclang.cli.outputs import check_output, command_output, graph_inputs
from rubriclang.evaluation.fit import FIT_METRICS
from rubriclang.items.shape import shape_of


def _inputs(graph, items, opts: FitOptions, judging: JudgingOptions) -> list[tuple[str, str | None]]:
    """What `rbg fit` reads, which -o must not be."""
    return [
        ("graph", graph),
        ("items file", items),
        *(("--compare graph", p) for p in opts.compare),
        ("--traces file", opts.traces),
        ("--split-file", opts.split_file),
        ("--annotations table", judging.annotations),
        ("--recorded table", judging.recorded),
    ]


def _split(ctx, param, value):
    if value is None:
        return None
    key, _, share = value.partition("=")
    try:
        x = float(share)
    except ValueError:
        x = None
    if key.strip() != "dev" or x is None or not 0 < x < 1:
        raise click.BadParameter(f"`{value}` is not dev=FRACTION with 0 < FRACTION < 1 (e.g. dev=0.7)", ctx, param)
    return x


@attrs.frozen
class FitOptions:
    """What `rbg fit` writes, how it splits the items and searches, and
    what it reports beside the fitted graph."""

    out: str
    share: float | None  # --split's dev share; None: not given
    split_file: str | None
    metric: str | None
    folds: int
    seed: int
    repeats: int
    refuse_worse: bool
    max_iter: int
    compare: tuple[str, ...]
    traces: str | None
    labels: tuple[str, ...]


_FIT_OPTIONS = [
    click.option(
        "-o",
        "--out",
        required=True,
        type=click.Path(dir_okay=False),
        help="The fitted graph to write (canonical .rbg).",
    ),
    click.option(
        "--split",
        "share",
        callback=_split,
        default=None,
        metavar="dev=FRACTION",
        help="The dev share of the items, by a hash of each id with --seed (default dev=0.7).",
    ),
    click.option(
        "--split-file",
        type=click.Path(exists=True, dir_okay=False),
        default=None,
        help="The dev item ids, one a line; every other item is held out.",
    ),
    click.option(
        "--metric",
        type=click.Choice(list(FIT_METRICS)),
        default=None,
        help=(
            "What the fit optimises on dev, an rbg eval figure, with undecided items counted as wrong (default: "
            "agreement_without_ties for pairwise judges, accuracy for bool and label, exact for ordinal, spearman for "
            "score outputs)."
        ),
    ),
    click.option(
        "--folds",
        type=click.IntRange(min=0),
        default=5,
        show_default=True,
        help="k-fold cross-validation on the dev split (0: none).",
    ),
    click.option("--seed", type=int, default=0, show_default=True, help="Seed of the split, the folds and the search."),
    click.option(
        "--repeats",
        type=click.IntRange(min=1),
        default=1,
        show_default=True,
        help=(
            "Fit on this many random splits (seeds --seed, --seed+1, ...) and report each figure's mean, sd and range "
            "across them; FITTED is the first split's."
        ),
    ),
    click.option(
        "--refuse-worse",
        is_flag=True,
        help=(
            "Exit 1 without writing FITTED when cross-validation or the held-out split says the fitted numbers are "
            "worse than GRAPH's as written (default: write it and warn)."
        ),
    ),
    click.option(
        "--max-iter",
        type=click.IntRange(min=1),
        default=60,
        show_default=True,
        help="Generations of the differential evolution search.",
    ),
    click.option(
        "--compare",
        multiple=True,
        type=click.Path(exists=True, dir_okay=False),
        help="Another graph to report beside the fitted one on the held-out split; repeat.",
    ),
    click.option(
        "--traces",
        type=click.Path(exists=True, dir_okay=False),
        default=None,
        help="Recorded judgments to compose (replayed under each graph), instead of annotations and recorded values.",
    ),
    click.option(
        "--label",
        "labels",
        multiple=True,
        metavar="CODE=VALUE,...",
        help="Map the gold codes of a data set onto gold values (as in rbg eval).",
    ),
]


@click.command()
@click.argument("graph", type=click.Path(exists=True, dir_okay=False))
@click.argument("items", type=click.Path(exists=True, dir_okay=False))
@collect(FitOptions, _FIT_OPTIONS, "opts")
@judging_options
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@estimate_option("the fit")
def fit(graph, items, opts: FitOptions, judging: JudgingOptions, fmt, estimate) -> None:
    """Fit the numbers of GRAPH (weights, thresholds, caps, map values) on the
    dev split of ITEMS and write FITTED: the same structure, the same
    comments, only numbers changed; nodes marked `# rbg: fixed` keep theirs.

    No LLM is called: the criteria's judgments come from --annotations,
    --recorded or --traces, and only their composition is recomputed. The
    held-out split's labels are read only after FITTED is written, to report
    the fitted graph, GRAPH as written, the equal-weight baseline and every
    --compare graph on exactly the same held-out items, with the paired
    difference fitted minus each (positive: the fitted graph is higher).

    When cross-validation or the held-out split says the fitted numbers are
    worse than GRAPH's as written, rbg fit warns on stderr (JSON:
    `warnings`); with --refuse-worse it then writes nothing and exits 1.
    --repeats N fits on N random splits and reports how much every figure
    moves with the split. Exit status: 0 (FITTED written), 1 refused by
    --refuse-worse, 2 bad input.
    """
    if opts.folds == 1:
        raise click.BadParameter(
            "one fold leaves nothing to fit on: give 2 or more, or 0 for no cross-validation", param_hint="--folds"
        )
    if opts.share is not None and opts.split_file:
        raise click.UsageError("give --split or --split-file, not both")
    if opts.repeats > 1 and opts.split_file:
        raise click.UsageError("--repeats draws random splits, and --split-file is one fixed split: give one of them")
    if estimate:
        return no_calls("rbg fit", "the criteria's judgments come from --annotations, --recorded or --traces", fmt)
    check_output(opts.out, _inputs(graph, items, opts, judging), "-o")
    from rubriclang.cli.progress import Progress

    # Each phase named, its time shown, on a terminal only: a log's output stays the same from run to run.
    progress = Progress("items", lines=False, command="rbg fit")
    try:
        _fit(graph, items, opts, judging, fmt, progress)
    finally:
        progress.done()


def _fit(graph_path, items_path, opts: FitOptions, judging: JudgingOptions, fmt, progress) -> None:
    from rubriclang.errors import LocatedError
    from rubriclang.evaluation import fit as F
    from rubriclang.evaluation.gold import GoldValueError, parse_label_map
    from rubriclang.evaluation.params import fixed_nodes, free_params
    from rubriclang.interp.items import read_items
    from rubriclang.syntax import parse

    out, compare, traces, mode = opts.out, opts.compare, opts.traces, judging.mode
    seed, repeats, refuse_worse = opts.seed, opts.repeats, opts.refuse_worse
    share = 0.7 if opts.share is None else opts.share
    g = load_graph(graph_path)
    graphs = [g] + [load_graph(p) for p in compare]
    if not traces:
        for p, x in zip((graph_path, *compare), graphs, strict=True):
            if uses_llm(x):
                raise DataError(
                    f"`{p}` has LLM criteria, and rbg fit calls no LLM: record their judgments with `rbg run` and "
                    "give the traces with --traces"
                )
    try:
        label_map = parse_label_map(opts.labels) if opts.labels else None
    except GoldValueError as exc:
        raise click.BadParameter(exc.message, param_hint="--label") from None
    with open(graph_path, encoding="utf-8") as fh:
        parsed = parse(fh.read(), graph_path)
    assert parsed.module is not None  # the graph loaded above, so it parses
    fixed, stray = fixed_nodes(parsed.module, parsed.source)
    if stray:
        raise DataError(
            f"{stray[0]}: this `# rbg: fixed` marks no node\n"
            "  hint: put it on the line above a node, or at the end of its declaration"
        )
    params = free_params(g, parsed.module, fixed)
    try:
        item_list = list(read_items(items_path, shape_of(g)))
        ids = [it.id for it in item_list]
        splits = [_dev_ids(opts.split_file, ids, share, seed + r) for r in range(repeats)]
        for r, dev in enumerate(splits):
            if not dev or len(dev) == len(ids):
                which = f" of seed {seed + r}" if repeats > 1 else ""
                raise DataError(
                    f"the split{which} leaves {len(dev)} dev and {len(ids) - len(dev)} held-out items: both need some "
                    "(change --split or --split-file)"
                )
        _check_modes(graphs, (graph_path, *compare), item_list, mode)
        progress.phase(
            f"{'replaying' if traces else 'judging'} {len(item_list)} items with {len(graphs)} graph(s)",
            len(item_list) * len(graphs),
        )
        judged = _judged(g, graphs, (graph_path, *compare), item_list, items_path, traces, judging, progress.tick)
    except LocatedError as exc:
        raise data_error(exc) from None
    splitter = _Splitter(
        g,
        graphs,
        (graph_path, *compare),
        parsed.source,
        params,
        item_list,
        judged,
        items_path=items_path,
        mode=mode,
        label_map=label_map,
        out=out,
        max_iter=opts.max_iter,
        folds=opts.folds,
        progress=progress,
    )
    inputs = _inputs(graph_path, items_path, opts, judging)
    summary, text, fitted, fit_mode = splitter.fit_split(splits[0], seed, opts.metric)
    if not refuse_worse:  # written before the held-out labels are read: its numbers cannot depend on them
        _write(out, text, inputs, g, graph_path)
    try:
        report = splitter.held_out(splits[0], fitted)
        runs = [(summary, report)]
        for r in range(1, repeats):
            s_r, _, fitted_r, _ = splitter.fit_split(splits[r], seed + r, summary.metric)
            runs.append((s_r, splitter.held_out(splits[r], fitted_r)))
    except LocatedError as exc:
        state = (
            "is not written"
            if refuse_worse
            else "was written before the held-out labels were read; its numbers do not depend on them"
        )
        raise DataError(f"{data_error(exc).message}\n  note: {out} {state}") from None
    repeated = F.Repeats(tuple(seed + r for r in range(repeats)), tuple(runs)) if repeats > 1 else None
    warnings = F.worse(summary, report, fit_mode, graph_path, repeated)
    refused = refuse_worse and bool(warnings)
    if refuse_worse and not refused:
        _write(out, text, inputs, g, graph_path)
    progress.done()  # its status line closed before the report
    _echo(fmt, summary, report, repeated, warnings, refused)
    for w in warnings:
        click.echo(f"warning: {w}", err=True)
    if refused:
        click.echo(f"rbg fit: {out} not written: the fit is worse than the graph as written (--refuse-worse)", err=True)
        raise SystemExit(1)
    if warnings:
        click.echo(f"rbg fit: {out} was written all the same (--refuse-worse does not write it)", err=True)


class _Splitter:
    """One fit per dev/held-out split, over judgments recorded once."""

    def __init__(
        self,
        g,
        graphs,
        paths,
        source,
        params,
        items,
        judged,
        *,
        items_path,
        mode,
        label_map,
        out,
        max_iter,
        folds,
        progress,
    ):
        self.g, self.graphs, self.paths, self.source, self.params = g, graphs, paths, source, params
        self.items = items
        self.items_path, self.mode, self.label_map = items_path, mode, label_map
        self.out, self.max_iter, self.folds, self.progress = out, max_iter, folds, progress
        self.ids = [it.id for it in items]
        self.by_id = {it.id: it for it in items}
        self.cases, self.judged, self.columns = judged.cases, judged.judged, judged.columns

    def gold_of(self, ids: list[str]) -> dict:
        """The gold of these items (LocatedError on a bad value)."""
        from rubriclang.evaluation.gold import item_gold

        return {
            i: gv
            for i in ids
            if (
                gv := item_gold(
                    self.by_id[i], self.g, f"{self.items_path}:{self.by_id[i].line}", self.mode, self.label_map
                )
            )
            is not None
        }

    def fit_split(self, dev: set[str], seed: int, metric: str | None):
        """(Summary, FITTED's text, FITTED checked, the fit's mode): the numbers
        fitted on one split's dev items, from their labels only."""
        from rubriclang.checker import check_source
        from rubriclang.errors import LocatedError
        from rubriclang.evaluation import fit as F

        g, params, cases = self.g, self.params, self.cases
        dev_ids = [i for i in self.ids if i in dev]
        try:
            dev_gold = self.gold_of(dev_ids)
        except LocatedError as exc:
            raise data_error(exc) from None
        fit_ids = [i for i in dev_gold if i in cases]
        if not fit_ids:
            raise DataError("no dev item has both gold and recorded judgments: nothing to fit on")
        fit_mode = cases[fit_ids[0]].mode
        metric = metric or F.default_metric(g, fit_mode)
        if problem := F.metric_problem(g, fit_mode, metric):
            raise click.BadParameter(problem, param_hint="--metric")
        settings = F.Settings(metric, seed, self.max_iter)
        self.progress.phase(f"fitting {len(params)} numbers on {len(fit_ids)} dev items (seed {seed})", None)
        result = F.fit(g, params, [cases[i] for i in fit_ids], [dev_gold[i] for i in fit_ids], settings)
        cv = None
        if self.folds >= 2:
            self.progress.phase(f"cross-validation: {self.folds} folds over the {len(fit_ids)} dev items", None)
            cv = F.cross_validate(g, params, cases, fit_ids, dev_gold, settings, self.folds)
        text = F.fitted_source(self.source, self.paths[0], params, result.values)
        checked = check_source(text, self.out)
        if checked.graph is None:  # types are kept by construction (fit._Validity); never write one that does not check
            raise DataError(
                f"the fitted numbers do not check in `{self.paths[0]}` (so {self.out} is not written): "
                f"{'; '.join(d.message for d in checked.diagnostics if d.is_error)}\n"
                "  hint: mark the node whose numbers break it `# rbg: fixed`"
            )
        left_out = F.left_out(dev_ids, dev_gold, cases, self.judged)
        held = len(self.ids) - len(dev)
        summary = F.Summary(self.out, metric, seed, params, result, cv, len(dev), len(fit_ids), held, left_out)
        return summary, text, checked.graph, fit_mode

    def held_out(self, dev: set[str], fitted):
        """One split's held-out evaluation: its labels are read here, after fitting."""
        from rubriclang.evaluation import fit as F

        held_items = [it for it in self.items if it.id not in dev]
        self.progress.phase(f"the held-out split: {len(held_items)} items", None)
        held_gold = self.gold_of([it.id for it in held_items])
        return F.held_out_report(self.g, fitted, self.columns, self.cases, held_items, held_gold, self.mode)


def _write(out, text, inputs, g, graph_path) -> None:
    from rubriclang.safeio import describe_os_error, write_atomic

    try:
        with command_output(out, [*inputs, *graph_inputs(g, graph_path)], "-o"):
            write_atomic(out, text)
    except OSError as exc:
        raise DataError(f"cannot write `{out}`: {describe_os_error(exc)}") from None


def _echo(fmt, summary, report, repeated, warnings, refused) -> None:
    """The report on stdout: the fit, the held-out split, the repeats."""
    if fmt == "json":
        doc = {
            **summary.to_json(),
            "held_out": report.to_json(),
            "written": not refused,
            "warnings": warnings,
            "repeats": repeated.to_json() if repeated else None,
        }
        click.echo(json.dumps(doc, sort_keys=True, indent=2))
        return
    from rubriclang.evaluation.evaluate import render_text

    click.echo(summary.text(wrote=not refused))
    click.echo("")
    if repeated is None:
        click.echo(
            f"Held-out split ({summary.held} items), reported once, after fitting (one split: --repeats N shows how "
            "much each figure moves with the split):"
        )
    else:
        click.echo(f"Held-out split of seed {summary.seed} ({summary.held} items), reported once, after fitting:")
    click.echo(render_text(report))
    if repeated is not None:
        click.echo("")
        click.echo(repeated.text(summary.metric))


def _check_modes(graphs, paths, items, mode) -> None:
    """Every graph has a readout for every item's mode (checked before judging)."""
    modes = sorted({mode or it.mode for it in items})
    for g, p in zip(graphs, paths, strict=True):
        missing = [m for m in modes if m not in g.readouts]
        if missing:
            raise DataError(
                f"`{p}` has no `{missing[0]}` readout, and the items are {missing[0]}: add `readout {missing[0]} {{ "
                "... }` to it, or leave it out"
            )


def _dev_ids(split_file, ids, share, seed) -> set[str]:
    from rubriclang.evaluation.fit import dev_ids
    from rubriclang.interp.items import ItemError

    if not split_file:
        return dev_ids(ids, share, seed)
    from rubriclang.safeio import open_regular

    known = set(ids)
    out = set()
    try:
        fh = open_regular(split_file, "r", encoding="utf-8")
    except OSError as exc:  # a pipe would be waited on for ever
        raise ItemError(split_file, f"cannot read it: {exc.strerror or exc}") from None
    with fh:
        for n, line in enumerate(fh, 1):
            item_id = line.strip()
            if not item_id or item_id.startswith("#"):
                continue
            if item_id not in known:
                raise ItemError(f"{split_file}:{n}", f"item `{item_id}` is not in the items file")
            out.add(item_id)
    return out


def _judged(g, graphs, paths, item_list, items_path, traces, judging: JudgingOptions, tick):
    """What the fit keeps (`fit.Judged`) of each graph's compositions of the
    items, taken as they come, from traces (refused when a record judged
    other content than its item now has) or the local backend; `tick` is
    called for each."""
    from rubriclang.cli.replay import warn_unverified
    from rubriclang.evaluation import fit as F
    from rubriclang.evaluation.evaluate import replayed
    from rubriclang.interp.trace import ItemsNow

    judged = F.Judged(g, graphs, paths)

    def add(i: int, outcome) -> None:
        judged.add(i, outcome)
        tick()

    if traces:
        now = ItemsNow(item_list, items_path)
        for i, graph in enumerate(graphs):
            for outcome in replayed(graph, traces, now):
                add(i, outcome)
        warn_unverified(now.warnings())
        return judged
    from rubriclang.cli.evaluate import judge_graphs

    backend = local_backend(judging.annotations, judging.recorded)
    asyncio.run(judge_graphs(graphs, item_list, backend, None, judging.concurrency, judging.mode, each=add))
    return judged
