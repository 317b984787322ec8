"""Money, for every command that calls a model: what it would spend
(`--estimate`: calls, tokens and cost per phase, without calling a model;
`rubriclang.llm.estimate`) and what it spent (the LLM usage of its summary:
calls, the server's token counts, cost). Prices are the project config's
`[prices."MODEL"]`; a model without one is said to have none, never $0."""

from __future__ import annotations

import json

import click

from rubriclang.cli.errors import DataError


def prices_for(path: str) -> dict:
    """`[prices."MODEL"]` of the project config found upward from `path`."""
    from rubriclang.config import ConfigError, load_config

    try:
        return load_config(path).prices
    except ConfigError as exc:
        raise DataError(f"{exc.where}: {exc.message}" + (f"\n  hint: {exc.hint}" if exc.hint else "")) from None


# -- before: the estimate -------------------------------------------------------------


def render(doc: dict, fmt: str) -> str:
    """The estimate as JSON or as a few lines of text: per phase the
    expected figures and the bound, each labelled as what it is, and why a
    phase has no cost."""
    if fmt == "json":
        return json.dumps(doc, sort_keys=True, indent=2)
    lines = [
        f"Estimate (no model was called; prompt tokens by the rule {doc['rule']}, not a tokenizer):",
        "  expected: every reply readable the first time; completion tokens at most max_tokens per call",
        "  at most:  every unreadable reply asked again, as a run does (a bound on calls and completion tokens)",
    ]
    if any(p["calls_exact"] and p["calls"] for p in doc["phases"].values()):
        lines.append("  calls marked exact: none of their replies is ever asked again, so a run makes exactly these")
    for name, p in doc["phases"].items():
        lines.append(f"  {name:<11} expected {_tally(p, p['calls_exact'])}")
        lines.append(f"  {'':<11} at most  {_tally(p['at_most'], p['calls_exact'])}")
        if p["price_note"]:
            lines.append(f"  {'':<11} cost: {p['price_note']}")
    lines += [f"Note: {n}" for n in doc["notes"]]
    return "\n".join(lines)


def _tally(p: dict, exact: bool) -> str:
    completion = "unbounded" if p["completion_tokens"] is None else f"<= {p['completion_tokens']:,}"
    # Prompt tokens are counted by a rule, not a tokenizer: a price is about, never a bound.
    usd = f"  about ${p['usd']:.4f}" if p["usd"] is not None else ""
    calls = f"{p['calls']:,} calls" + (" (exact)" if exact else "")
    return f"{calls}, {p['prompt_tokens']:,} prompt tokens, {completion} completion tokens{usd}"


def document(estimate, phases: list[str], prices: dict, notes: list[str], max_retries: int | None = None) -> dict:
    """The estimate's JSON: per phase calls, tokens and USD (null, with
    `price_note` saying why, when it has no price); with `max_retries`
    (the transport's retries of a call), `requests_at_most`: the requests
    that could be sent, every call of the bound retried that often."""
    from rubriclang.llm.estimate import RULE

    out = {}
    for name in phases:
        models = tuple(sorted(estimate.models.get(name, set()), key=str))
        out[name] = estimate.get(name).to_json(models, prices)
    retries = (
        "not counted: transport retries (`max_retries`), which send a request again after an error or a timeout "
        "that gave no reply; a server may still bill a request that timed out"
    )
    doc = {"rule": RULE, "phases": out}
    if max_retries is not None:
        doc["requests_at_most"] = sum(p["at_most"]["calls"] for p in out.values()) * (1 + max_retries)
        retries += f"; with them ({max_retries} a call), at most {doc['requests_at_most']:,} requests could be sent"
    return {**doc, "notes": [*notes, retries]}


def echo_estimate(
    estimate, phases: list[str], prices: dict, notes: list[str], fmt: str, max_retries: int | None = None
) -> None:
    """Print the estimate's document, as JSON or text."""
    click.echo(render(document(estimate, phases, prices, notes, max_retries), fmt))


def no_calls(command: str, why: str, fmt: str) -> None:
    """The estimate of a command that calls no model: nothing, exactly."""
    from rubriclang.llm.estimate import Estimate

    echo_estimate(Estimate(), ["judge"], {}, [f"{command} calls no model: {why}"], fmt)


# -- after: what a command spent --------------------------------------------------------


def priced(usage: dict, model: str | None, prices: dict) -> dict:
    """`usage` (a `Usage`'s JSON) with its model and cost: `usd`, and
    `price_note` saying why it is null."""
    from rubriclang.llm.estimate import cost, price_note

    return {
        "model": model,
        **usage,
        "usd": cost(usage, (model,), prices),
        "price_note": price_note(usage, (model,), prices),
    }


def usage_json(backend, prices: dict) -> dict | None:
    """What the LLM backend spent, for a command's summary: in all, and per
    model profile when the graph names profiles, priced."""
    if backend is None:
        return None
    out = priced(backend.usage.to_json(), backend.client.model, prices)
    if len(backend.profiles) > 1:
        profiles = {
            name or "default": priced(usage.to_json(), model, prices)
            for name, (model, usage) in backend.usage_by_profile().items()
            if name is not None or usage.requests
        }
        out["profiles"] = profiles
        # In all: the profiles' sum, unless one of them has no price.
        notes = [p["price_note"] for p in profiles.values() if p["price_note"]]
        usd = None if notes else round(sum(p["usd"] for p in profiles.values()), 6)
        out.update(usd=usd, price_note=notes[0] if notes else None)
    cache = backend.cache
    if cache is not None and cache.write_error is not None:
        out["cache_error"] = cache.write_error  # the calls after it were made, kept, and not cached
    return out


def usage_text(usage: dict) -> str:
    """The summary lines of what was spent: requests, calls, tokens, cost."""
    lines = []
    for name, u in (usage.get("profiles") or {"": usage}).items():
        label = f"LLM `{u['model']}`" + (f" (profile `{name}`)" if name else "")
        # One accounting, live or from the cache: every request is a call
        # to the server, a cache hit, or shared with an identical one.
        lines.append(
            f"  {label}: {u['requests']} requests: {u['calls']} calls to the server, {u['cache_hits']} cache hits, "
            f"{u['shared']} shared with an identical request; tokens {u['prompt_tokens']} prompt, "
            f"{u['completion_tokens']} completion (the server's counts); {cost_text(u)}"
        )
    if usage.get("profiles"):
        lines.append(f"  LLM in all: {cost_text(usage)}")
    if usage.get("cache_error"):
        lines.append(f"  call cache: not written since it failed ({usage['cache_error']}); every answer is kept")
    return "\n".join(lines)


def cost_text(u: dict) -> str:
    """`cost $X`, or why there is none."""
    return f"cost ${u['usd']:.6f}" if u["usd"] is not None else f"cost unknown: {u['price_note']}"


def phases_text(phases: dict, models: dict, prices: dict) -> str:
    """The summary lines of what each phase of an audit spent (its report's
    `usage`: calls and the servers' token counts, priced), `models` naming
    the model each phase was configured with, for a missing price's note."""
    from rubriclang.llm.estimate import price_note

    lines = ["  LLM spent by the runs into this folder (calls to servers, the servers' token counts):"]
    for name, p in phases.items():
        note = price_note(p, (models.get(name),), prices)
        cost = f"cost ${p['usd']:.6f}" if p["usd"] is not None else f"cost unknown: {note or 'no one price'}"
        lines.append(
            f"    {name:<9} {p['calls']} calls, tokens {p['prompt_tokens']} prompt, {p['completion_tokens']} "
            f"completion; {cost}"
        )
    return "\n".join(lines)
