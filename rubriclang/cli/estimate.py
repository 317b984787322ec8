"""`--estimate` of `rbg run` and `rbg audit`: the calls and tokens a run
would spend, per phase, without calling a model (`rubriclang.llm.estimate`),
and their price where the project config has one."""

from __future__ import annotations

import asyncio
import contextlib
import json

import click

from rubriclang.cli.backends import interpreter, local_backend, open_llm
from rubriclang.cli.errors import DataError, data_error
from rubriclang.cli.loading import ValidatedItems, load_graph
from rubriclang.items.shape import shape_of


def prices_for(graph_path: str) -> dict:
    """`[prices."MODEL"]` of the project config found upward from the graph."""
    from rubriclang.config import ConfigError, load_config

    try:
        return load_config(graph_path).prices
    except ConfigError as exc:
        raise DataError(f"{exc.where}: {exc.message}" + (f"\n  hint: {exc.hint}" if exc.hint else "")) from None


def render(doc: dict, fmt: str) -> str:
    """The estimate as JSON or as a few lines of text: per phase the
    expected figures and the bound, each labelled as what it is."""
    if fmt == "json":
        return json.dumps(doc, sort_keys=True, indent=2)
    lines = [
        f"Estimate (no model was called; prompt tokens by the rule {doc['rule']}, not a tokenizer):",
        "  expected: every reply readable the first time; completion tokens at most max_tokens per call",
        "  at most:  every unreadable reply asked again, as a run does (a bound on calls and completion tokens)",
    ]
    for name, p in doc["phases"].items():
        m = p["at_most"]
        lines.append(f"  {name:<11} expected {_tally(p)}")
        lines.append(f"  {'':<11} at most  {_tally(m)}")
    lines += [f"Note: {n}" for n in doc["notes"]]
    return "\n".join(lines)


def _tally(p: dict) -> str:
    completion = "unbounded" if p["completion_tokens"] is None else f"<= {p['completion_tokens']:,}"
    # Prompt tokens are counted by a rule, not a tokenizer: a price is about, never a bound.
    usd = f"  about ${p['usd']:.4f}" if p["usd"] is not None else ""
    return f"{p['calls']:,} calls, {p['prompt_tokens']:,} prompt tokens, {completion} completion tokens{usd}"


def document(estimate, phases: list[str], prices: dict, notes: list[str]) -> dict:
    """The estimate's JSON: per phase calls, tokens and USD (null without a price)."""
    from rubriclang.llm.estimate import RULE

    out = {}
    for name in phases:
        models = tuple(sorted(estimate.models.get(name, set()), key=str))
        out[name] = estimate.get(name).to_json(models, prices)
    if prices and any(p["usd"] is None and p["calls"] for p in out.values()):
        notes = [
            *notes,
            'a phase without a price has `usd` null: its model has no `[prices."MODEL"]` table in the project config',
        ]
    notes = [
        *notes,
        "not counted: transport retries (`max_retries`), which send a request again after an error or a timeout "
        "that gave no reply; a server may still bill a request that timed out",
    ]
    return {"rule": RULE, "phases": out, "notes": notes}


def run_estimate(graph: str, items: str, judging, fmt: str, llm) -> None:
    """`rbg run --estimate`: every item through the judge with requests tallied, not sent."""
    from rubriclang.interp.items import ItemError, read_items
    from rubriclang.llm.estimate import Estimate

    g = load_graph(graph)
    backend = local_backend(judging.annotations, judging.recorded)
    estimate = Estimate()
    with contextlib.ExitStack() as stack:
        llm_backend = open_llm(stack, g, llm, estimate=estimate)
        interp = interpreter(g, [backend, llm_backend], judging.concurrency)
        checked = ValidatedItems(read_items(items, shape_of(g)), backend)

        async def go():
            async for _ in interp.run(iter(checked), judging.mode):
                pass

        try:
            asyncio.run(go())
        except ItemError as exc:
            raise data_error(exc) from None
    click.echo(render(document(estimate, ["judge"], prices_for(graph), []), fmt))
