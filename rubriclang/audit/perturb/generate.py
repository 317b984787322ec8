"""Making and validating every variant of a suite.

Item-side operators give one variant per item; judge-side operators give
patches of the judge (one per operator, or one per style), each judged on
every item. Rule variants are checked structurally; LLM variants by the
validator. Everything, accepted or not, is logged for `validation.jsonl`;
only accepted variants go on to be sealed.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable, Coroutine, Iterator
from random import Random
from typing import Any

import attrs

from rubriclang.audit.applicability import target_fields
from rubriclang.audit.judge import JudgeInfo
from rubriclang.audit.llmcall import Asker
from rubriclang.audit.perturb import deterministic, fields, judge_prompt, llm
from rubriclang.audit.perturbations import Perturbation
from rubriclang.audit.planner import describe_judge
from rubriclang.audit.variants import PROMPT, Patch, Validation, Variant, apply_changes
from rubriclang.checker.graph import Criterion
from rubriclang.interp.items import POINTWISE_CANDIDATE, Item
from rubriclang.llm import prompting

COUNTS = ("generated", "accepted", "rejected", "unavailable", "failed")
_STRUCTURE_OK = Validation("structure", "accept", "the structural check passed")


@attrs.define
class Generated:
    """What generation produced: accepted variants and patches, the log of
    every decision, and counts per operator."""

    variants: list[Variant] = attrs.field(factory=list)
    patches: list[Patch] = attrs.field(factory=list)
    log: list[dict] = attrs.field(factory=list)
    counts: dict[str, collections.Counter] = attrs.field(factory=dict)

    def record(self, op: str, unit: str, v: Validation, item: str | None = None, criterion: str | None = None) -> None:
        c = self.counts.setdefault(op, collections.Counter())
        if v.verdict == "failed":
            c["failed"] += 1
        else:
            c["generated"] += 1
            c[{"accept": "accepted", "reject": "rejected"}.get(v.verdict, "unavailable")] += 1
        self.log.append({"variant": unit, "operator": op, "item": item, "criterion": criterion, **v.to_json()})


def rng_for(seed: int, item: str, op: str, field: str) -> Random:
    """A generator seeded by the suite, the item, the operator and the field
    only (never by the order of work), so a variant is reproducible alone."""
    return Random(f"{seed}\x1f{item}\x1f{op}\x1f{field}")


# --- deterministic perturbations (generator `rule`) ---------------------------


def _typo_variant(op: Perturbation, item: Item, seed: int) -> tuple[dict, Validation]:
    fields = op.changes
    rate = op.options.get("rate", 0.05)
    changes: dict = {}
    if "input" in fields:
        new = deterministic.typo_noise(item.input, rng_for(seed, item.id, op.name, "input"), rate)
        if new is not None:
            changes["input"] = new
    if "response" in fields:
        cands = []
        for cid, text in item.candidates.items():
            new = deterministic.typo_noise(text, rng_for(seed, item.id, op.name, cid), rate)
            cands.append([cid, new if new is not None else text])
        if any(new != text for (_, new), text in zip(cands, item.candidates.values(), strict=True)):
            changes["candidates"] = cands
    if not changes:
        return {}, Validation("structure", "failed", "no word is long enough for a typo")
    problems = []
    if "input" in changes:
        problems.append(deterministic.check_typos(item.input, changes["input"]))
    for cid, new in changes.get("candidates", ()):
        if new != item.candidates[cid]:
            problems.append(deterministic.check_typos(item.candidates[cid], new))
    return changes, _structural(problems)


def _partial_variant(item: Item) -> tuple[dict, Validation, dict]:
    original = item.candidates[POINTWISE_CANDIDATE]
    cut = deterministic.partial_completion(original)
    if cut is None:
        return (
            {},
            Validation("structure", "failed", "the response is one sentence: there is no last part to remove"),
            {},
        )
    kept, unit = cut
    v = _structural([deterministic.check_partial(original, kept, unit)])
    return {"candidates": [[POINTWISE_CANDIDATE, kept]]}, v, {"removed": unit}


def _swap_variant(item: Item) -> tuple[dict, Validation]:
    original = [[cid, text] for cid, text in item.candidates.items()]
    swapped = deterministic.position_swap(original)
    return {"candidates": swapped}, _structural([deterministic.check_swap(original, swapped)])


def _structural(problems) -> Validation:
    problem = next((p for p in problems if p), None)
    return Validation("structure", "reject", problem) if problem else _STRUCTURE_OK


def deterministic_item_variant(op: Perturbation, item: Item, seed: int) -> tuple[dict, Validation, dict]:
    """(changes, validation, detail) of a deterministic perturbation on one item."""
    if op.name == "typo_noise":
        return (*_typo_variant(op, item, seed), {})
    if op.name == "partial_completion":
        return _partial_variant(item)
    if op.name == "position_swap":
        return (*_swap_variant(item), {})
    raise ValueError(f"no rule for item-side operator `{op.name}`")


def deterministic_patch(op: Perturbation, judge: JudgeInfo) -> tuple[Patch | None, list[tuple[str, Validation]]]:
    """The patch of a judge-side deterministic perturbation for a judge of one graph
    (None when it changes nothing), and how each LLM criterion's new prompt
    was checked."""
    results, criteria = [], {}
    for c in judge.llm_criteria:
        if c.group is not None:  # asked with its group's prompt: it has no prompt of its own to reorder
            continue
        original = prompting.criterion_template_text(c)
        if op.name == "instruction_ordering":
            new, why = judge_prompt.format_first(c, original)
            problem = new and judge_prompt.check_format_first(original, new)
        elif op.name == "criterion_reorder":
            new, why = judge_prompt.reverse_points(c, original)
            problem = new and judge_prompt.check_reversed(c, original, new)
        else:
            raise ValueError(f"no rule for judge-side operator `{op.name}`")
        v = Validation("structure", "failed", why or "") if new is None else _structural([problem])
        results.append((c.name, v))
        if v.verdict == "accept":
            criteria[c.name] = {PROMPT: new}
    every = [c.name for c in judge.graph.criteria]
    order = tuple(reversed(every)) if op.name == "criterion_reorder" and len(every) > 1 else None
    if not criteria and order is None:
        return None, results
    changed = f"{len(criteria)} of {len(results)} criterion prompts changed" + (
        "; the criteria in reverse order" if order else ""
    )
    return Patch(op.name, op.name, criteria, order, Validation("structure", "accept", changed)), results


def rewrites(
    op: Perturbation, judge: JudgeInfo, style: str | None = None
) -> tuple[list[tuple[Criterion, str, Any]], list[tuple[Criterion, str]]]:
    """What a judge-side LLM perturbation asks the generator to rewrite in a
    judge of one graph: (criterion, parameter, its current text or map) per
    criterion, and the criteria it leaves as they are, with why (a reasoning
    style keeps a reply format the criterion's model is trained on)."""
    jobs: list[tuple[Criterion, str, Any]] = []
    kept: list[tuple[Criterion, str]] = []
    for c in judge.llm_criteria:
        if op.target == "anchors":
            param = "anchors" if c.params.get("anchors") else "descriptions"
            if c.params.get(param):
                jobs.append((c, param, dict(c.params[param])))
        elif style and (why := judge_prompt.fixed_reply(c)):
            kept.append((c, why))
        elif c.group is not None:
            why = f"asked with its group's prompt (`group {c.group.name}`), which this operator does not rewrite"
            kept.append((c, why))
        else:
            assert op.target is not None  # an llm operator names what it rewrites
            jobs.append((c, op.target, judge_prompt.starting_text(c)))
    return jobs, kept


def styles(op: Perturbation) -> list[str | None]:
    """The patches a judge-side LLM perturbation makes: one per reasoning style, else one."""
    return op.options["styles"] if op.target == "template" and "styles" in op.options else [None]


def assumed_patches(op: Perturbation, judge: JudgeInfo) -> list[Patch]:
    """The patches of a judge-side LLM perturbation of a judge of one graph
    with every rewrite accepted, each text marked as changed: what an
    estimate judges, since it rewrites nothing (a patch per style, named as
    a run names it). The marked texts are a little longer than the
    originals, and a rewrite the validator rejects leaves its criterion's
    prompt as it was (its judgments reused): a run's calls are at most these."""
    out = []
    for style in styles(op):
        criteria: dict[str, dict[str, Any]] = {}
        for c, param, text in rewrites(op, judge, style)[0]:
            if param in ("anchors", "descriptions"):
                criteria[c.name] = {param: {str(k): f"{v} (reworded)" for k, v in text.items()}}
            elif param == "system":
                marked = (judge_prompt.system_text(text) + " (reworded)").strip()
                criteria[c.name] = {PROMPT: judge_prompt.with_system(text, marked)}
            else:
                criteria[c.name] = {PROMPT: text.rstrip() + " (reworded)\n"}
        if criteria:
            pid = f"{op.name}.{style}" if style else op.name
            out.append(Patch(pid, op.name, criteria, None, Validation("llm", "accept", "assumed by the estimate")))
    return out


# --- the whole suite -----------------------------------------------------------


# Units started and not finished at most: their tasks are made as they
# start, not one per item at once (a task and its frame cost about 1 KB).
# Far above any `concurrency`, which bounds the LLM calls among them.
_WINDOW = 1024


async def _bounded(units: Iterator[Coroutine[Any, Any, None]], most: int) -> None:
    """Run `units`, at most `most` at a time, each made as it starts; the
    first to raise ends it (the others are cancelled)."""
    pending: set[asyncio.Future] = set()
    try:
        for unit in units:
            pending.add(asyncio.ensure_future(unit))
            if len(pending) >= most:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    task.result()
        for task in asyncio.as_completed(pending):
            await task
    finally:
        for task in pending:
            task.cancel()


class Generation:
    """Runs every operator over the items, at most `concurrency` LLM units at
    once, calling `tick` as each item's variant is decided (`item_units`
    of them)."""

    def __init__(
        self,
        judge: JudgeInfo,
        seed: int,
        generator: Asker | None,
        validator: Asker | None,
        concurrency: int = 4,
        tick: Callable[[], None] = lambda: None,
        assume: bool = False,
    ):
        """`assume`: an estimate's generation, whose generator rewrites
        nothing: judge-side LLM perturbations give `assumed_patches`."""
        self.judge = judge
        self.assume = assume
        # What generators and validators are shown of the judge, so variants
        # fit what it judges: of an item, its own graph.
        self.described = {gid: describe_judge(judge.only(gid)) for gid in judge.graphs}
        self.judged = judge.judged
        self.seed = seed
        self.generator = generator
        self.validator = validator
        self.sem = asyncio.Semaphore(max(1, concurrency))
        self.out = Generated()
        self.on_fields: fields.RuleVariants | None = None
        self.tick = tick

    @staticmethod
    def item_units(ops: list[Perturbation], items: list[Item]) -> int:
        """The item-side variants `run` decides (and ticks for): one per item
        and item-side operator. Judge-side operators' few criterion texts are
        not counted."""
        return sum(len(items) for op in ops if not op.judge_side)

    async def run(self, ops: list[Perturbation], items: list[Item]) -> Generated:
        self.on_fields = fields.RuleVariants(items)
        for op in ops:
            self.out.counts.setdefault(op.name, collections.Counter())
        units = (
            unit
            for op in ops
            for unit in (
                [self._judge_side(op, items)] if op.judge_side else (self._item_side(op, item) for item in items)
            )
        )
        await _bounded(units, _WINDOW)
        self.out.variants.sort(key=lambda v: v.id)
        self.out.patches.sort(key=lambda p: p.id)
        self.out.log.sort(key=lambda e: (e["operator"], e["variant"], e["criterion"] or ""))
        return self.out

    async def _item_side(self, op: Perturbation, item: Item) -> None:
        vid = f"{item.id}/{op.name}"
        detail: dict = {}
        if op.acts_on:
            changes, v, detail = await self._on_fields(op, item)
        elif op.generator == "rule":
            changes, v, detail = deterministic_item_variant(op, item, self.seed)
        else:
            async with self.sem:
                changes, v = await self._llm_item(op, item)
        self.out.record(op.name, vid, v, item=item.id)
        if v.verdict == "accept":
            self.out.variants.append(Variant(vid, item.id, op.name, changes, None, v, detail))
        self.tick()

    async def _on_fields(self, op: Perturbation, item: Item) -> tuple[dict, Validation, dict]:
        """A variant of the item's declared structured fields (those of the
        graph that judges it)."""
        gid = self.judged.get(item.id, self.judge.graph_id)
        targets = target_fields(op, self.judge.by_id[gid])

        def rng(key: str) -> Random:
            return rng_for(self.seed, item.id, op.name, key)

        if op.generator == "rule":
            assert self.on_fields is not None  # set by run()
            return self.on_fields.variant(op, item, targets, rng)
        site = fields.text_site(op, item, targets, rng)
        if site is None:
            what = "an earlier user or assistant turn" if op.target == "turn" else "a tool result"
            return {}, Validation("structure", "failed", f"no conversation field has {what} with text"), {}
        if self.generator is None:
            return {}, Validation("llm", "failed", "no generator backend"), {}
        spec, cid, index = site
        original = fields.turn_text(item, spec, cid, index)
        async with self.sem:
            new, problem, model = await llm.rewrite_text(
                self.generator, op, self.described[gid], op.target or "turn", original
            )
            if new is None or problem:
                return {}, Validation("llm", "failed", problem or "the generator produced nothing", model), {}
            changes, detail, problem = fields.with_text(item, spec, cid, index, new)
            if problem:
                return {}, Validation("structure", "reject", problem, model), detail
            return changes, await self._validate(op, original, new, self.described[gid]), detail

    async def _llm_item(self, op: Perturbation, item: Item) -> tuple[dict, Validation]:
        if self.generator is None:
            return {}, Validation("llm", "failed", "no generator backend")
        # An item no graph judges is shown the graph the judge's type was read from.
        described = self.described[self.judged.get(item.id, self.judge.graph_id)]
        changes, problem, model = await llm.rewrite_item(self.generator, op, described, item)
        if changes is None or problem:
            return {}, Validation("llm", "failed", problem or "the generator produced nothing", model)
        return changes, await self._validate(op, llm.shown(item), llm.shown(apply_changes(item, changes)), described)

    async def _judge_side(self, op: Perturbation, items: list[Item]) -> None:
        """The operator's patches of each graph that judges some item, each
        judged on that graph's items; with several graphs a patch names its
        graph (its id is `PATCH@GRAPH`)."""
        judged = self.judged
        several = len(self.judge.graphs) > 1
        for gid in sorted(set(judged.values())):
            graph_items = [it for it in items if judged.get(it.id) == gid]
            await self._graph_side(op, self.judge.only(gid), gid if several else None, graph_items)

    async def _graph_side(self, op: Perturbation, judge: JudgeInfo, gid: str | None, items: list[Item]) -> None:
        at = f"@{gid}" if gid is not None else ""
        if op.generator == "rule":
            patch, results = deterministic_patch(op, judge)
            for name, v in results:
                self.out.record(op.name, f"{op.name}{at}:{name}", v, criterion=name)
            patches = [patch] if patch is not None else []
        else:
            patches = [
                p for p in [await self._llm_patch(op, judge, at, style) for style in styles(op)] if p is not None
            ]
            if self.assume:  # the calls above are tallied; what is judged is every rewrite accepted
                patches = assumed_patches(op, judge)
        for p in patches:
            p = attrs.evolve(p, id=p.id + at, graph=gid)
            self.out.patches.append(p)
            for item in items:
                self.out.variants.append(Variant(f"{item.id}/{p.id}", item.id, op.name, {}, p.id, p.validation))

    async def _llm_patch(self, op: Perturbation, judge: JudgeInfo, at: str, style: str | None = None) -> Patch | None:
        """One patch of `judge` (of one graph) with every criterion text the
        validator accepted; a reasoning style names its own patch."""
        pid = f"{op.name}.{style}" if style else op.name
        described = describe_judge(judge)
        jobs, kept = rewrites(op, judge, style)
        for c, why in kept:
            self.out.record(op.name, f"{pid}{at}:{c.name}", Validation("structure", "failed", why), criterion=c.name)
        results = await asyncio.gather(*(self._llm_text(op, described, judge.graph.name, *job, style) for job in jobs))
        criteria = {}
        for (c, param, _), (new, v) in zip(jobs, results, strict=True):
            self.out.record(op.name, f"{pid}{at}:{c.name}", v, criterion=c.name)
            if v.verdict == "accept":
                criteria[c.name] = {param: new} if param in ("anchors", "descriptions") else {PROMPT: new}
        if not criteria:
            return None
        return Patch(
            pid,
            op.name,
            criteria,
            None,
            Validation("llm", "accept", f"{len(criteria)} of {len(jobs)} criterion texts accepted"),
        )

    async def _llm_text(
        self, op: Perturbation, described: str, name: str, c, param: str, text, style: str | None
    ) -> tuple:
        """A new text of criterion `c` of the graph `name` (shown as `described`)."""
        if self.generator is None:
            return None, Validation("llm", "failed", "no generator backend")
        async with self.sem:
            if param == "template":
                return await self._template_text(op, described, name, c, text, style)
            if param == "system":
                return await self._system_text(op, described, c, text)
            new, problem, model = await llm.rewrite_text(self.generator, op, described, param, text)
            if new is None or problem:
                return None, Validation("llm", "failed", problem or "the generator produced nothing", model)
            return new, await self._validate(op, _show_fields(text), _show_fields(new), described)

    async def _template_text(
        self, op: Perturbation, described: str, name: str, c, text: str, style: str | None
    ) -> tuple:
        """A rewrite of the criterion's whole template (paraphrase, reasoning
        style): it must parse and keep every placeholder, then pass the validator."""
        rubric = judge_prompt.rubric_text(c, name)
        assert self.generator is not None  # LLM operators run with a generator
        new, problem, model = await llm.rewrite_template(self.generator, op, described, rubric, text, style)
        if new is None or problem:
            return None, Validation("llm", "failed", problem or "the generator produced nothing", model)
        problem = judge_prompt.check_rewrite(text, new)
        if problem:
            return None, Validation("template", "reject", problem, model)
        return new, await self._validate(op, text, new, described, style)

    async def _system_text(self, op: Perturbation, described: str, c, text: str) -> tuple:
        """A new system section for the criterion's template (added where it has none)."""
        assert self.generator is not None  # LLM operators run with a generator
        new, problem, model = await llm.rewrite_text(
            self.generator, op, described, "system", judge_prompt.system_text(text)
        )
        if new is None or problem:
            return None, Validation("llm", "failed", problem or "the generator produced nothing", model)
        patched = judge_prompt.with_system(text, new)
        roles = ("system", *(r for r in judge_prompt.template_of(text).roles if r != "system"))
        problem = judge_prompt.check_rewrite(text, patched, roles)
        if problem:
            return None, Validation("template", "reject", problem, model)
        return patched, await self._validate(op, judge_prompt.system_text(text), new, described)

    async def _validate(
        self, op: Perturbation, original: str, rewrite: str, described: str, style: str | None = None
    ) -> Validation:
        if self.validator is None:
            return Validation("llm", "unavailable", "no validator backend")
        return await llm.validate(self.validator, op, described, original, rewrite, style)


def _show_fields(fields: dict[str, str]) -> str:
    """A rewritten item's fields as `name: text` lines, for the validator."""
    return "\n".join(f"{k}: {v}" for k, v in fields.items())
