"""The criterion backend for the `llm.*` procedures.

One chat-completion call per criterion per candidate (for `llm.compare`, one
per item and presentation order; for a group's members, `group NAME = [...]`,
one per candidate for them all, `judge_group`), through the one call path
(`rubriclang.llm.calls`): a call made before is answered from the cache, so
reruns and resumed runs repeat no call, and the two candidates of an
`llm.compare` share one call. A reply that cannot be read is asked again at
most `parse_retries` times, each time after a note saying what was wrong (a
different request, so never the same cached answer); then the judgment
fails with the reason, under the criterion's `on_error` policy. A failure is
a Judgment, never an exception.

Each criterion is answered by its model profile (`model = "NAME"`; None is
the run's default), so one graph can mix judges; every judgment records the
profile, the served model and a fingerprint of server, model and sampling.

A judgment's `raw` is the model's last reply; a criterion whose prompt is not
the default one records `{"template": ID, "text": ...}`, so the trace names
the prompt the reply answers, and `llm.compare` records every call with the
order the candidates were shown in: `{"calls": [{"order": [...], "text": ...}]}`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import attrs

from rubriclang.catalog import load_catalog
from rubriclang.checker.graph import Criterion, GroupRef
from rubriclang.interp.backend import Judgment, JudgmentRequest
from rubriclang.llm.cache import CallCache
from rubriclang.llm.calls import Caller, Usage
from rubriclang.llm.client import ChatClient, ChatRequest, Completion, LLMError, Sampling
from rubriclang.llm.parsing import ParseResult, parse, parse_group, weighted_points
from rubriclang.llm.prompting import (
    Prompt,
    PromptError,
    Rendered,
    group_nudge,
    nudge,
    prepare,
    prepare_group,
    side_by_side,
    template_choice,
)
from rubriclang.llm.reask import ask_until_read
from rubriclang.memo import IdentityMemo

_TOP_LOGPROBS = 20  # the most OpenAI allows; enough to see every one-digit point

__all__ = ["LLMBackend", "Profile", "Usage"]


@attrs.frozen
class Profile:
    """A judge: a client (server and model) and its sampling settings."""

    client: ChatClient
    sampling: Sampling


@attrs.frozen
class _Plan:
    """How a criterion is judged, the same for every item: worked out once."""

    caller: Caller | None  # None: a model profile the backend was not given
    sampling: Sampling | None
    compare: bool  # `side_by_side(criterion)`


@attrs.frozen
class _Known:
    """Requests one cached call may answer at once: one criterion's, or every
    member's of a group for one candidate (`indexes` beside `members`)."""

    indexes: tuple[int, ...]
    members: tuple[Criterion, ...]
    prompt: Prompt
    sampling: Sampling


@attrs.frozen
class _Asked:
    """One prompt's outcome: the parsed answer or the failure."""

    result: ParseResult | None
    reply: str
    attempts: int
    latency_ms: float | None
    model: str | None
    error: str | None = None

    @property
    def parsed(self) -> ParseResult:
        """The parsed answer (there is one when there is no error)."""
        assert self.result is not None, self.error
        return self.result


class LLMBackend:
    """Judges LLM criteria with OpenAI-compatible servers."""

    name = "openai"

    def __init__(
        self,
        client: ChatClient,
        cache: CallCache | None,
        sampling: Sampling,
        parse_retries: int = 2,
        use_logprobs: bool = False,
        profiles: Mapping[str, Profile] | None = None,
    ):
        self.client = client  # the default profile's
        self.cache = cache
        self.sampling = sampling
        self.parse_retries = parse_retries
        self.use_logprobs = use_logprobs
        self.profiles: dict[str | None, Profile] = {None: Profile(client, sampling)}
        for name, profile in (profiles or {}).items():
            self.profiles[name] = profile
        self.callers: dict[str | None, Caller] = {
            name: Caller(p.client, cache, name) for name, p in self.profiles.items() if name is not None
        }
        named_default = self.profiles.get("default")
        if named_default is not None and named_default.client is client:
            # The `default` profile serves the criteria that name none: they are its judgments.
            self.profiles[None] = named_default
            self.callers[None] = self.callers["default"]
        else:
            self.callers[None] = Caller(client, cache, None)
        # Each criterion's _Plan; bounded for an audit's many variants of a graph.
        self._plans: IdentityMemo[_Plan] = IdentityMemo(1024)
        # The prompts `judge_known` prepared and did not find in the cache, by
        # request: `judge`, which the interpreter calls next for them, reuses them.
        self._prepared: IdentityMemo[Prompt] = IdentityMemo(4096)

    @property
    def usage(self) -> Usage:
        total = Usage()
        for caller in {id(c): c for c in self.callers.values()}.values():
            total.add(caller.usage)
        return total

    def usage_by_profile(self) -> dict[str | None, tuple[str | None, Usage]]:
        """Each profile's (model, usage)."""
        return {
            name: (c.client.model, c.usage)
            for name, c in self.callers.items()
            if name is None or c is not self.callers[None]
        }

    @property
    def clients(self) -> list[ChatClient]:
        return [p.client for p in self.profiles.values()]

    @staticmethod
    def handles(procedure: str) -> bool:
        """Whether the procedure's catalog entry names this backend (`llm`)."""
        return load_catalog().hooks(procedure).backend == "llm"

    async def aclose(self) -> None:
        seen = set()
        for client in self.clients:
            if id(client) not in seen:
                seen.add(id(client))
                await client.aclose()

    def _sampling_for(self, criterion, profile: Profile) -> Sampling:
        # A group's one reply holds several answers: no one answer's token to weigh.
        if self.use_logprobs and criterion.group is None and weighted_points(criterion):
            return attrs.evolve(profile.sampling, logprobs=True, top_logprobs=_TOP_LOGPROBS)
        return profile.sampling

    def _plan(self, crit: Criterion) -> _Plan:
        hit = self._plans.get(id(crit), crit)
        if hit is not None:
            return hit
        name = crit.params.get("model")
        caller = self.callers.get(name)
        sampling = None if caller is None else self._sampling_for(crit, self.profiles[name])
        return self._plans.put(id(crit), crit, _Plan(caller, sampling, side_by_side(crit)))

    def fingerprint(self, crit: Criterion) -> str | None:
        """The fingerprint this backend's judgments of `crit` will carry
        (None for a criterion on a profile it was not given)."""
        name = crit.params.get("model")
        if name not in self.callers:
            return None
        return self.callers[name].fingerprint(self._sampling_for(crit, self.profiles[name]))

    def _meta(self, crit: Criterion, caller: Caller, sampling: Sampling) -> dict[str, Any]:
        return {
            "backend": self.name,
            "model": caller.client.model,
            "profile": caller.profile,
            "fingerprint": caller.fingerprint(sampling),
        }

    async def judge(self, request: JudgmentRequest) -> Judgment:
        crit = request.criterion
        plan = self._plan(crit)
        caller, sampling = plan.caller, plan.sampling
        if caller is None or sampling is None:  # the command line refuses this before any call; the API may not
            return Judgment.failed(
                f"no model profile `{crit.params.get('model')}` was given to the LLM backend (criterion `{crit.name}`)",
                attempts=0,
                backend=self.name,
            )
        if crit.group is not None:
            return Judgment.failed(
                f"`{crit.name}` is answered with its group `{crit.group.name}`: judge the group's members "
                "together (`judge_group`)",
                attempts=0,
                backend=self.name,
            )
        meta = self._meta(crit, caller, sampling)
        if plan.compare:
            return await self._compare(request, caller, sampling, meta)
        prompt = self._prepared.pop(id(request), request)
        if prompt is None:
            try:
                prompt = prepare(crit, request.item, request.candidate)
            except PromptError as exc:
                return Judgment.failed(str(exc), attempts=0, **meta)
        rendered = prompt.render(sampling, _affinity(request.item, (request.candidate,)))
        meta["prompt_hash"] = rendered.prompt_hash
        return _judged(crit, rendered.template, await self._ask(crit, rendered, caller), meta)

    def judge_known(self, requests: list[JudgmentRequest]) -> list[Judgment | None]:
        """The judgment of each request that the call cache answers, at once:
        no task, no rendering (the key is the prompt's digest, the prompt
        hash is cached with the call), one cache query per model profile.
        None for every other request (a call to make, an `llm.compare`, a
        reply that needs asking again, an item lacking what the prompt
        needs), and for all from a subclass with its own `judge`: `judge`
        gives those, as it would have given these."""
        out: list[Judgment | None] = [None] * len(requests)
        if type(self).judge is not LLMBackend.judge or self.cache is None:
            return out
        by_caller: dict[int, tuple[Caller, list[_Known]]] = {}
        # (item, candidate, group) -> the group, its judge, and its members' requests
        grouped: dict[tuple[int, str, str], tuple[GroupRef, Caller, Sampling, list[int]]] = {}
        for i, request in enumerate(requests):
            crit = request.criterion
            plan = self._plan(crit)
            caller, sampling = plan.caller, plan.sampling
            if caller is None or sampling is None or caller.cache is None or plan.compare:
                continue
            if crit.group is not None:
                key = (id(request.item), request.candidate, crit.group.name)
                grouped.setdefault(key, (crit.group, caller, sampling, []))[3].append(i)
                continue
            try:
                prompt = prepare(crit, request.item, request.candidate)
            except PromptError:
                continue
            by_caller.setdefault(id(caller), (caller, []))[1].append(_Known((i,), (crit,), prompt, sampling))
        for group, caller, sampling, indexes in grouped.values():
            members = tuple(requests[i].criterion for i in indexes)
            if len(members) != len(group.members):  # not the whole group: `judge_group` gives it
                continue
            first = requests[indexes[0]]
            try:
                prompt = prepare_group(members, first.item, first.candidate)
            except PromptError:
                continue
            by_caller.setdefault(id(caller), (caller, []))[1].append(_Known(tuple(indexes), members, prompt, sampling))
        for caller, asks in by_caller.values():
            found = caller.cached([(k.sampling, k.prompt.response_format, k.prompt.digest) for k in asks])
            for k, completion in zip(asks, found, strict=True):
                if completion is None or completion.prompt_hash is None:
                    self._keep_prepared(requests, k)
                    continue
                sampling = k.sampling
                if len(k.indexes) == 1 and k.members[0].group is None:
                    results = [parse(k.members[0], completion.text, completion.logprobs if sampling.logprobs else None)]
                else:
                    results = parse_group(k.members, completion.text)
                if any(r.error is not None for r in results):
                    # An unreadable reply to ask again after a note: `judge` (`judge_group`) gives it.
                    self._keep_prepared(requests, k)
                    continue
                caller.reused(sampling, k.prompt.response_format, k.prompt.digest)
                model = completion.model or caller.client.model
                latency = round(completion.latency_ms or 0.0, 1)
                for i, crit, result in zip(k.indexes, k.members, results, strict=True):
                    meta = self._meta(crit, caller, sampling)
                    meta["prompt_hash"] = completion.prompt_hash
                    asked = _Asked(result, completion.text, completion.attempts, latency, model)
                    out[i] = _judged(crit, k.prompt.template.id, asked, meta)
        return out

    def _keep_prepared(self, requests: list[JudgmentRequest], k: _Known) -> None:
        """Keep a single criterion's prepared prompt for `judge`, which the
        interpreter calls next for its request (a group's is prepared again)."""
        if len(k.indexes) == 1 and k.members[0].group is None:
            self._prepared.put(id(requests[k.indexes[0]]), requests[k.indexes[0]], k.prompt)

    async def judge_group(self, requests: list[JudgmentRequest]) -> list[Judgment]:
        """The judgments of a group's members (`group NAME = [...]`) for one
        candidate of one item, from one call: `requests` hold every member,
        in the group's order. A reply that leaves some members unanswered or
        unreadable is followed by a note asking for those only, at most
        `parse_retries` times; each member is judged from the reply that
        answered it."""
        members = tuple(r.criterion for r in requests)
        first = requests[0]
        plan = self._plan(members[0])
        caller, sampling = plan.caller, plan.sampling
        if caller is None or sampling is None:
            message = f"no model profile `{members[0].params.get('model')}` was given to the LLM backend"
            return [
                Judgment.failed(f"{message} (criterion `{m.name}`)", attempts=0, backend=self.name) for m in members
            ]
        meta = self._meta(members[0], caller, sampling)
        try:
            prompt = prepare_group(members, first.item, first.candidate)
        except PromptError as exc:
            return [Judgment.failed(str(exc), attempts=0, **meta) for _ in members]
        rendered = prompt.render(sampling, _affinity(first.item, (first.candidate,)))
        meta["prompt_hash"] = rendered.prompt_hash
        asked = await self._ask_group(members, rendered, caller)
        return [_judged(m, rendered.template, a, dict(meta)) for m, a in zip(members, asked, strict=True)]

    async def _ask_group(self, members: tuple[Criterion, ...], rendered: Rendered, caller: Caller) -> list[_Asked]:
        """Ask a group's prompt, then, while some members' answers are
        missing or unreadable, ask again for those only (`group_nudge`).
        Each member's outcome counts the requests up to the reply that
        answered it."""
        call = rendered.request
        attempts, latency = 0, 0.0
        reply, model = "", None
        out: list[_Asked | None] = [None] * len(members)
        open_ = list(range(len(members)))
        failed: list[tuple[int, ParseResult]] = []
        for _ in range(self.parse_retries + 1):
            try:
                completion = await caller.complete(call)
            except LLMError as err:
                for i in open_:
                    out[i] = _Asked(None, reply, attempts + err.attempts, None, model, f"{err.kind}: {err.message}")
                return [a for a in out if a is not None]
            attempts += completion.attempts
            latency += completion.latency_ms or 0.0
            model = completion.model or caller.client.model
            reply = completion.text
            failed = []
            for i, result in zip(open_, parse_group(tuple(members[i] for i in open_), reply), strict=True):
                if result.error is None:
                    out[i] = _Asked(result, reply, attempts, round(latency, 1), model)
                else:
                    failed.append((i, result))
            if not failed:
                return [a for a in out if a is not None]
            open_ = [i for i, _ in failed]
            problem = "; ".join(str(r.error) for _, r in failed)
            call = group_nudge(call, reply, problem, tuple(members[i] for i in open_))
        n = self.parse_retries + 1
        for i, result in failed:
            error = f"unreadable answer after {n} {'reply' if n == 1 else 'replies'}: {result.error}"
            out[i] = _Asked(result, reply, attempts, round(latency, 1), model, error)
        return [a for a in out if a is not None]

    async def _ask(self, crit: Criterion, rendered: Rendered, caller: Caller) -> _Asked:
        """Ask `rendered` (rendered with the run's sampling and its affinity),
        and again after a note while the reply is unreadable."""

        def read(call: ChatRequest, completion: Completion) -> tuple[ParseResult, str | None]:
            result = parse(crit, completion.text, completion.logprobs if call.sampling.logprobs else None)
            return result, result.error

        def again(call: ChatRequest, reply: str, problem: str) -> ChatRequest:
            return nudge(call, reply, problem, rendered.nudge)

        out = await ask_until_read(caller, rendered.request, read, again, self.parse_retries + 1)
        last = out.completion
        reply, model = (last.text, last.model or caller.client.model) if last is not None else ("", None)
        if out.failure is not None:
            err = out.failure
            return _Asked(None, reply, out.attempts + err.attempts, None, model, f"{err.kind}: {err.message}")
        if out.problem is None:
            return _Asked(out.value, reply, out.attempts, round(out.latency_ms, 1), model)
        n = self.parse_retries + 1
        error = f"unreadable answer after {n} {'reply' if n == 1 else 'replies'}: {out.problem}"
        return _Asked(out.value, reply, out.attempts, round(out.latency_ms, 1), model, error)

    async def _compare(self, request: JudgmentRequest, caller: Caller, sampling: Sampling, meta: dict) -> Judgment:
        """`llm.compare`: ask in each presentation order the criterion asks
        for (the two candidates' judgments share these calls), then this
        candidate's value from the combined answers."""
        crit, item = request.criterion, request.item
        given = tuple(item.candidate_ids)
        order = crit.params.get("order", "as_given")
        orders = {"as_given": [given], "swapped": [given[::-1]], "both": [given, given[::-1]]}[order]
        try:
            prompts = [prepare(crit, item, shown) for shown in orders]
        except PromptError as exc:
            return Judgment.failed(str(exc), attempts=0, **meta)
        rendered = [p.render(sampling, _affinity(item, shown)) for p, shown in zip(prompts, orders, strict=True)]
        # The orders are asked at once; each answer is read independently of the other.
        asked = await asyncio.gather(*(self._ask(crit, r, caller) for r in rendered))
        meta["prompt_hash"] = ",".join(r.prompt_hash for r in rendered)
        calls, answers, error = [], [], None
        for shown, r, a in zip(orders, rendered, asked, strict=True):
            entry = {"order": list(shown), "template": r.template, "text": a.reply}
            if a.error is None:
                value = a.parsed.value
                entry["answer"] = list(value) if isinstance(value, tuple) else value
                answers.append((shown, value))
            error = error or a.error
            calls.append(entry)
        attempts = sum(a.attempts for a in asked)
        latency = round(sum(a.latency_ms or 0.0 for a in asked), 1)
        meta["model"] = next((a.model for a in asked if a.model), meta["model"])
        if error is not None:
            return Judgment.failed(error, raw={"calls": calls}, attempts=attempts, latency_ms=latency, **meta)
        value = combine(crit, answers, request.candidate)
        return Judgment(value, raw={"calls": calls}, attempts=attempts, latency_ms=latency, **meta)


def combine(crit: Criterion, answers: list[tuple[tuple[str, ...], Any]], candidate: str) -> float | int:
    """A candidate's `llm.compare` value from the answers in each order shown.
    A preference gives the preferred candidate 1, the other 0, and each 0.5 on
    a tie; preferences that disagree between orders are a tie (MT-Bench's
    rule). Ratings are the mean of the candidate's rating in each order."""
    if crit.params.get("reply") == "ratings":
        mine = [pair[shown.index(candidate)] for shown, pair in answers]
        return mine[0] if len(mine) == 1 else sum(mine) / len(mine)
    winners = set()
    for shown, choice in answers:
        winners.add({"first": shown[0], "second": shown[1]}.get(choice, "tie"))
    winner = winners.pop() if len(winners) == 1 else "tie"
    if winner == "tie":
        return 0.5
    return 1.0 if winner == candidate else 0.0


def _affinity(item, shown: tuple[str, ...]) -> str:
    """What the calls sharing a prompt prefix have in common: the item and
    the candidates shown, in order (the built-in prompts put them first)."""
    return "\x00".join((item.id, *shown))


def _judged(crit: Criterion, template: str, asked: _Asked, meta: dict[str, Any]) -> Judgment:
    """The judgment of one asked prompt (of template `template`), with
    `meta` (`LLMBackend._meta`, and the prompt hash)."""
    meta["model"] = asked.model or meta["model"]
    raw = _raw(crit, template, asked.reply) if asked.reply else None
    if asked.error is not None:
        return Judgment.failed(asked.error, raw=raw, attempts=asked.attempts, latency_ms=asked.latency_ms, **meta)
    result = asked.parsed
    if result.method == "logprobs":
        raw = {"text": asked.reply, "method": "logprobs", "distribution": result.distribution}
    return Judgment(result.value, raw=raw, attempts=asked.attempts, latency_ms=asked.latency_ms, **meta)


def _raw(criterion: Criterion, template: str, reply: str) -> str | dict:
    """What the trace keeps of a reply: the text, with the template's name
    and version when the criterion's prompt is not the default one, and the
    group's name for a grouped criterion (each member keeps the reply that
    answered it)."""
    if criterion.group is not None:
        return {"template": template, "group": criterion.group.name, "text": reply}
    if criterion.prompt is None and template_choice(criterion) == "default":
        return reply
    return {"template": template, "text": reply}
