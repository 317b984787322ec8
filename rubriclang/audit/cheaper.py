"""Which criteria can run on a cheaper model (`rbg audit cheaper`, issue 28.4).

Each LLM criterion of a graph is re-judged alone, on every item of a trace
file, on a cheaper model profile, while every other criterion keeps its
recorded judgment (the trace is replayed, `interp.replay.Replayer`), and
the verdict is recomposed. The same criterion is re-judged on its own
profile too, as often: how often that alone moves the verdict is the
repeat noise, what a criterion flips by its model's sampling whatever the
model. Repeat `r` (1..N) samples with the seed + r on both profiles; the
trace's judgment (seed + 0) is the reference both are compared with.

Per criterion: the verdict flip rate on the cheaper profile and the repeat
noise (flipped / measured units, a unit an item and a repeat, a failed
judgment measured nothing: counted apart, with the coverage), each with
its Wilson interval (`evaluation.metrics.proportion`, by item), their
difference with Newcombe's interval, and the cost of the judgments on each
side: calls and tokens as the servers reported them, in USD where the
project config prices the model. Saved is own minus cheaper over the same
judgments, and only where both sides were sent (a side answered from the
call cache reports no cost of its own).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import attrs

from rubriclang.audit.metrics import newcombe
from rubriclang.checker.graph import CheckedGraph, Criterion
from rubriclang.evaluation.metrics import Estimate, proportion
from rubriclang.interp.backend import Judgment, JudgmentRequest
from rubriclang.interp.graphset import Union
from rubriclang.interp.items import Item
from rubriclang.interp.replay import Replayer
from rubriclang.interp.trace import decision_of, judgment_json
from rubriclang.llm.backend import LLMBackend, Profile
from rubriclang.llm.cache import CallCache
from rubriclang.llm.calls import Usage
from rubriclang.llm.client import Sampling
from rubriclang.llm.connect import Connections, Server
from rubriclang.llm.estimate import cost

SCHEMA = "rubriclang.cheaper/1"
SIDES = ("own", "cheaper")


class CheaperError(Exception):
    """The experiment cannot run as asked (and why)."""


@attrs.frozen
class Rate:
    """Verdicts flipped over the units measured, by item; `failed` units measured nothing."""

    flipped: int
    measured: int
    failed: int
    estimate: Estimate

    def to_json(self) -> dict[str, Any]:
        units = self.measured + self.failed
        return {
            **self.estimate.to_json(),
            "flipped": self.flipped,
            "measured": self.measured,
            "failed": self.failed,
            "coverage": round(self.measured / units, 6) if units else None,
        }


@attrs.frozen
class CriterionResult:
    """One criterion's figures: its own profile and model, the cheaper one's
    model, the flip rates and each side's cost."""

    name: str
    profile: str | None
    model: str | None
    cheaper_model: str | None
    flips: Rate
    noise: Rate
    usage: dict[str, dict[str, Any]]  # side -> calls, requests, tokens, usd
    unjudged: int  # items whose traced judgment of it failed: nothing to compare with, left out

    @property
    def excess(self) -> Estimate:
        return newcombe(self.flips.estimate, self.noise.estimate)

    @property
    def saved(self) -> dict[str, Any] | None:
        """Own minus cheaper, or None when a side was not all sent (cache hits cost nothing here)."""
        own, cheap = self.usage["own"], self.usage["cheaper"]
        if not own["calls"] or own["calls"] != own["requests"] or cheap["calls"] != cheap["requests"]:
            return None
        out: dict[str, Any] = {k: own[k] - cheap[k] for k in ("calls", "prompt_tokens", "completion_tokens")}
        out["usd"] = None if own["usd"] is None or cheap["usd"] is None else round(own["usd"] - cheap["usd"], 6)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "criterion": self.name,
            "profile": self.profile,
            "model": self.model,
            "cheaper_model": self.cheaper_model,
            "flip_rate": self.flips.to_json(),
            "repeat_noise": self.noise.to_json(),
            "excess_over_noise": self.excess.to_json(),
            "usage": self.usage,
            "saved": self.saved,
            "unjudged_items": self.unjudged,
        }


@attrs.frozen
class Experiment:
    """What to run: the graph, the trace's records (line, record) with
    their items by id, the cheaper profile, the repeats and the criteria."""

    graph: CheckedGraph
    records: tuple[tuple[int, dict[str, Any]], ...]
    items: dict[str, Item]
    profile: str
    repeats: int
    criteria: tuple[Criterion, ...]
    traces: str
    concurrency: int = 4


def candidates(graph: CheckedGraph, names: Iterable[str], profile: str) -> tuple[tuple[Criterion, ...], list[str]]:
    """The LLM criteria to try (those named, or all), and a note for each
    left out (answered with a group, already on the profile). Raises
    CheaperError on a name the graph has no LLM criterion of."""
    llm = {c.name: c for c in graph.criteria if LLMBackend.handles(c.procedure)}
    if not llm:
        raise CheaperError(f"the graph `{graph.name}` has no LLM criterion: no model to make cheaper")
    wanted = list(names) or list(llm)
    unknown = [n for n in wanted if n not in llm]
    if unknown:
        raise CheaperError(
            f"the graph `{graph.name}` has no LLM criterion {', '.join(f'`{n}`' for n in unknown)}; its LLM criteria: "
            + (", ".join(f"`{n}`" for n in llm) or "none")
        )
    chosen, notes = [], []
    for name in wanted:
        c = llm[name]
        if c.group is not None:
            notes.append(f"`{name}` is answered with its group `{c.group.name}`: not re-judged alone")
        elif c.each is not None:
            notes.append(f"`{name}` is judged per element (`each`): not re-judged alone")
        elif c.params.get("model") == profile:
            notes.append(f"`{name}` already runs on the profile `{profile}`")
        else:
            chosen.append(c)
    return tuple(chosen), notes


def on(c: Criterion, profile: str) -> Criterion:
    """The criterion as judged on `profile` (its prompt unchanged)."""
    return attrs.evolve(c, params={**c.params, "model": profile})


class _Sides:
    """An LLM backend per (criterion, side, repeat), sampling with seed + repeat,
    so that each criterion's and each side's usage is its own."""

    def __init__(self, connections: Connections, exp: Experiment, server: Server, sampling: Sampling, cache):
        shown = Union(tuple(exp.graph.criteria) + tuple(on(c, exp.profile) for c in exp.criteria), exp.graph.path)
        self.client, self.sampling, self.profiles = connections.judges(shown, server, sampling)
        self.cache = cache
        self.backends: dict[tuple[str, str, int], LLMBackend] = {}

    def backend(self, criterion: str, side: str, r: int) -> LLMBackend:
        key = (criterion, side, r)
        if key not in self.backends:

            def seeded(s: Sampling) -> Sampling:
                return attrs.evolve(s, seed=(s.seed or 0) + r)

            profiles = {n: Profile(p.client, seeded(p.sampling)) for n, p in self.profiles.items()}
            self.backends[key] = LLMBackend(self.client, self.cache, seeded(self.sampling), profiles=profiles)
        return self.backends[key]

    def usage(self, criterion: str, side: str) -> tuple[Usage, str | None]:
        """The side's usage over its repeats, and the model that answered."""
        total, models = Usage(), set()
        for (name, s, _), b in self.backends.items():
            if (name, s) == (criterion, side):
                total.add(b.usage)
                models |= {c.client.model for c in b.callers.values() if c.usage.requests}
        return total, (models.pop() if len(models) == 1 else None)


async def run(
    exp: Experiment, connections: Connections, server: Server, sampling: Sampling, cache: CallCache | None, prices
) -> list[CriterionResult]:
    """Re-judge each criterion on each side, `repeats` times, every item of
    the trace; the figures per criterion, in the graph's order."""
    replayer = Replayer(exp.graph)
    for line, rec in exp.records:
        unfit = replayer.unfit(rec)
        if unfit:
            kind, name = unfit[0]
            raise CheaperError(
                f"{exp.traces}:{line}: the record cannot be replayed under `{exp.graph.path}` ({kind}: `{name}`): "
                "give the traces this graph wrote"
            )
        if rec["item"] not in exp.items:
            raise CheaperError(f"{exp.traces}:{line}: item `{rec['item']}` is not in the items file")
    sides = _Sides(connections, exp, server, sampling, cache)
    sem = asyncio.Semaphore(max(1, exp.concurrency))

    async def rejudge(c: Criterion, side: str, r: int, rec: dict[str, Any]) -> dict[str, Judgment]:
        crit = on(c, exp.profile) if side == "cheaper" else c
        item = exp.items[rec["item"]]
        backend = sides.backend(c.name, side, r)
        out = {}
        for cid in rec["candidates"]:
            async with sem:
                out[cid] = await backend.judge(JudgmentRequest(item, cid, crit))
        return out

    # An item whose traced judgment of the criterion failed (e.g. no reference to compare
    # with) has nothing to compare a re-judgment with: left out, and counted.
    judged = {c.name: [(line, rec) for line, rec in exp.records if not _failed(rec, c.name)] for c in exp.criteria}
    jobs = [
        (c, side, r, line, rec)
        for c in exp.criteria
        for side in SIDES
        for r in range(1, exp.repeats + 1)
        for line, rec in judged[c.name]
    ]
    answers = await asyncio.gather(*(rejudge(c, side, r, rec) for c, side, r, _, rec in jobs))
    # (criterion, side) -> item -> [flipped, measured, failed]
    tally: dict[tuple[str, str], dict[str, list[int]]] = {}
    for (c, side, _, _, rec), judgments in zip(jobs, answers, strict=True):
        counts = tally.setdefault((c.name, side), {}).setdefault(rec["item"], [0, 0, 0])
        if any(j.error is not None for j in judgments.values()):
            counts[2] += 1
            continue
        now = {cid: judgment_json(j, c.procedure) for cid, j in judgments.items()}
        new = replayer.decide({**rec, "criteria": {**rec["criteria"], c.name: now}})
        old = decision_of(rec)
        counts[0] += (new.status, new.decision) != (old.status, old.decision)
        counts[1] += 1
    results = []
    for c in exp.criteria:
        rates, usage, models = {}, {}, {}
        for side in SIDES:
            per_item = list(tally.get((c.name, side), {}).values())
            rates[side] = Rate(
                sum(x[0] for x in per_item),
                sum(x[1] for x in per_item),
                sum(x[2] for x in per_item),
                proportion([x[0] for x in per_item], [x[1] for x in per_item]),
            )
            u, model = sides.usage(c.name, side)
            phase = {
                "calls": u.calls,
                "requests": u.requests,
                "prompt_tokens": u.prompt_tokens,
                "completion_tokens": u.completion_tokens,
            }
            usage[side] = {**phase, "usd": cost(phase, (model,), prices) if u.calls == u.requests else None}
            models[side] = model
        results.append(
            CriterionResult(
                c.name,
                c.params.get("model"),
                models["own"],
                models["cheaper"],
                rates["cheaper"],
                rates["own"],
                usage,
                len(exp.records) - len(judged[c.name]),
            )
        )
    return results


def _failed(rec: dict[str, Any], name: str) -> bool:
    return any(j.get("error") for j in rec["criteria"][name].values())


def document(exp: Experiment, results: list[CriterionResult], notes: list[str]) -> dict[str, Any]:
    """The JSON output (schema `rubriclang.cheaper/1`)."""
    return {
        "schema": SCHEMA,
        "graph": exp.graph.path,
        "traces": exp.traces,
        "profile": exp.profile,
        "repeats": exp.repeats,
        "items": len(exp.records),
        "criteria": [r.to_json() for r in results],
        "notes": sorted(notes),
    }


def _pct(e: dict[str, Any]) -> str:
    if e["value"] is None:
        return "not measured"
    return f"{100 * e['value']:.1f}% [{100 * e['low']:.1f}, {100 * e['high']:.1f}]"


def render_text(doc: dict[str, Any]) -> str:
    """The table a team acts on: per criterion, the flips on the cheaper
    profile, the repeat noise, the excess, and what it saves."""
    lines = [
        f"{doc['graph']}: each LLM criterion re-judged on the profile `{doc['profile']}` and on its own, "
        f"{doc['repeats']} repeat(s) x {doc['items']} item(s) of {doc['traces']}, the other criteria replayed",
        "",
        f"{'criterion':<22} {'flip rate (cheaper)':<30} {'repeat noise (own)':<30} {'excess, points':<24} saved",
    ]
    for c in doc["criteria"]:
        f, n, x = c["flip_rate"], c["repeat_noise"], c["excess_over_noise"]
        flips = f"{f['flipped']}/{f['measured']} {_pct(f)}"
        noise = f"{n['flipped']}/{n['measured']} {_pct(n)}"
        excess = (
            "not measured"
            if x["value"] is None
            else f"{100 * x['value']:+.1f} [{100 * x['low']:+.1f}, {100 * x['high']:+.1f}]"
        )
        s, own = c["saved"], c["usage"]["own"]
        if s is None:
            saved = "not measured (answered from the call cache)"
        elif s["usd"] is not None and own["usd"]:
            saved = f"${s['usd']:.6f} of ${own['usd']:.6f}"
        else:
            tokens = own["prompt_tokens"] + own["completion_tokens"]
            saved = f"{s['prompt_tokens'] + s['completion_tokens']} of {tokens} tokens (no price)"
        lines.append(f"{c['criterion']:<22} {flips:<30} {noise:<30} {excess:<24} {saved}")
        for side, label in (("cheaper", "cheaper"), ("own", "own")):
            failed = c["flip_rate" if side == "cheaper" else "repeat_noise"]["failed"]
            if failed:
                lines.append(f"  {failed} {label} judgment(s) failed: measured nothing (coverage above)")
        if c["unjudged_items"]:
            lines.append(
                f"  {c['unjudged_items']} item(s) left out: the traces' judgment of `{c['criterion']}` failed there"
            )
    lines.append("")
    lines.append(
        "flip rate: verdicts that moved when only this criterion was re-judged, over the units measured (item x "
        "repeat); repeat noise: the same on its own profile; excess: flip rate minus noise (Newcombe's interval)"
    )
    lines += [f"note: {n}" for n in doc["notes"]]
    return "\n".join(lines) + "\n"
