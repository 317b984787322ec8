"""OpenAI Batch API files for a graph's LLM criterion calls.

`export` writes one request line per call the live backend would make
(a group's members, `group NAME = [...]`, share one: its first member's)
(`{"custom_id", "method", "url", "body"}`), for `vllm run-batch` or a hosted
batch API; `import` reads the result lines back into the call cache, under
the keys the live backend looks up, so a run then makes no call at all.

The requests are not rebuilt here: each is the one the live `LLMBackend`
itself issues, caught by a client that records it instead of sending it. So
the bodies cannot drift from what `rbg run` sends (prompt, sampling,
structured-output schema, logprobs).

A `custom_id` is a JSON array `[item, candidate, criterion, body_hash]`:
unambiguous whatever the ids contain, and bound to the exact request body, so
a result answering an older version of a request (the graph, the items, the
model or the sampling changed since the export) is never taken for the new one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

import attrs

from rubriclang.canonical import canonical_json
from rubriclang.checker.graph import CheckedGraph, Criterion
from rubriclang.errors import LocatedError
from rubriclang.interp.backend import JudgmentRequest
from rubriclang.interp.each import element_requests, per_element
from rubriclang.interp.items import Item
from rubriclang.jsonl import read_jsonl
from rubriclang.llm.backend import LLMBackend
from rubriclang.llm.cache import CallCache, call_keys
from rubriclang.llm.client import ChatRequest, Completion, LLMError, ReplyShapeError, Sampling, read_completion
from rubriclang.llm.redact import Redactor

BATCH_URL = "/v1/chat/completions"


class BatchError(LocatedError):
    """An unusable batch file; `where` is `path:line`."""


class NoCallClient:
    """A client that never sends: it records each request it is asked to make
    and fails it. Export uses it to catch the backend's requests; import uses
    it to guarantee that judging makes no call."""

    def __init__(self, model: str, identity: str, reason: str):
        self.model = model
        self.identity = identity
        self.reason = reason
        self.requests: list[ChatRequest] = []

    async def chat(self, request: ChatRequest) -> Completion:
        self.requests.append(request)
        # Not `unsupported`: the backend would take that for a server that
        # refuses structured output, and remember it in the cache.
        raise LLMError("unreachable", self.reason)

    async def aclose(self) -> None:
        pass


@attrs.frozen
class BatchCall:
    """One criterion call: whose it is, and the exact request."""

    custom_id: str
    item: str
    candidate: str
    criterion: str
    request: ChatRequest

    def line(self, model: str) -> dict:
        """The Batch API request line."""
        return {"custom_id": self.custom_id, "method": "POST", "url": BATCH_URL, "body": self.request.body(model)}


def body_hash(body: dict) -> str:
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()[:16]


def custom_id(item: str, candidate: str, criterion: str, body: dict) -> str:
    return json.dumps([item, candidate, criterion, body_hash(body)], ensure_ascii=False, separators=(",", ":"))


async def llm_calls(
    graph: CheckedGraph, items: Iterable[Item], model: str, sampling: Sampling, use_logprobs: bool = False
) -> list[BatchCall]:
    """Every call the live backend would make first for each LLM criterion
    of each candidate of each item, in item, criterion, candidate order.
    A criterion the backend judges without a call (an item lacking the
    reference its prompt needs) has none."""
    client = NoCallClient(model, "batch-export", "batch export sends nothing")
    # No cache: its answers would hide calls, and its notes would change them.
    backend = LLMBackend(client, None, sampling, parse_retries=0, use_logprobs=use_logprobs)
    criteria = [c for c in graph.criteria if backend.handles(c.procedure)]
    per = {c.name: per_element(c) for c in criteria if c.each is not None}
    by_name = {c.name: c for c in graph.criteria}
    calls: list[BatchCall] = []
    for item in items:
        for crit in criteria:
            if crit.group is not None and crit.group.members[0] != crit.name:
                continue  # a group's one call is its first member's
            seen: set[str] = set()  # an `llm.compare` call serves both candidates
            for cid in item.candidate_ids:
                before = len(client.requests)
                if crit.group is not None:
                    await backend.judge_group([JudgmentRequest(item, cid, by_name[m]) for m in crit.group.members])
                else:
                    for judged in _requests(item, cid, crit, per):
                        await backend.judge(judged)
                for request in client.requests[before:]:
                    body = request.body(model)
                    if body_hash(body) in seen:
                        continue
                    seen.add(body_hash(body))
                    calls.append(BatchCall(custom_id(item.id, cid, crit.name, body), item.id, cid, crit.name, request))
    return calls


def _requests(item: Item, cid: str, crit: Criterion, per: dict[str, Criterion]) -> list[JudgmentRequest]:
    """The requests a run makes of `crit` for one candidate: one, or one per
    element for a criterion judged per element (`each`)."""
    if crit.each is None:
        return [JudgmentRequest(item, cid, crit)]
    return [request for _, request in element_requests(item, cid, per[crit.name])]


def profiled_criteria(graph: CheckedGraph) -> list[tuple[str, str]]:
    """(criterion, profile) for every LLM criterion on a named model profile:
    a batch file serves one model, so these cannot be exported with it."""
    return [(c.name, c.params["model"]) for c in graph.criteria if c.params.get("model")]


@attrs.frozen
class Results:
    """A results file: the completions of the requests that succeeded, and
    why the others failed."""

    completions: dict[str, Completion]
    failures: dict[str, str]


def read_results(path: str, model: str, redactor: Redactor = Redactor(None)) -> Results:
    """Batch API result lines: `{"custom_id", "response": {"status_code",
    "body"}, "error"}`. Raises BatchError (naming the line) when a line is
    not a result at all; a failed request is recorded, not raised. The
    answers and failures are redacted with `redactor` (the key the batch
    ran with may be echoed in them)."""
    completions: dict[str, Completion] = {}
    failures: dict[str, str] = {}
    for where, row in read_jsonl(path, BatchError):
        if not isinstance(row, dict) or not isinstance(row.get("custom_id"), str):
            raise BatchError(where, "a result line needs a string `custom_id`")
        ident = row["custom_id"]
        response = row.get("response")
        error = row.get("error")
        if error:
            failures[ident] = redactor.text(_error_text(error))
        elif not isinstance(response, dict) or response.get("status_code") != 200:
            status = response.get("status_code") if isinstance(response, dict) else None
            failures[ident] = f"HTTP {status}" if status is not None else "no response"
        else:
            try:  # read as the live client reads an answer
                completions[ident] = redactor.completion(read_completion(response.get("body"), model))
            except ReplyShapeError as exc:
                if not exc.refusal:
                    raise BatchError(where, f"`response.body` is not a chat completion: {exc.reason}") from None
                # No answer, as a failed request gives none: the call is missing.
                failures[ident] = redactor.text(f"the model declined to answer: {exc.reason}")
                continue
            failures.pop(ident, None)
    return Results(completions, failures)


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error.get("code") or error)
    return str(error)


@attrs.frozen
class Loaded:
    """What an import put into the cache, and the calls it could not answer."""

    stored: int
    cached_before: int
    missing: tuple[tuple[BatchCall, str], ...]  # (call, why)


def load_into_cache(calls: list[BatchCall], results: Results, cache: CallCache, identity: str, model: str) -> Loaded:
    """Store each call's result under the key the live backend looks up.
    A call with no successful result is missing, unless the cache already
    answers it."""
    stored = cached_before = 0
    missing = []
    for call in calls:
        keys = call_keys(identity, model, call.request)
        completion = results.completions.get(call.custom_id)
        if completion is not None:
            cache.put(keys[0], identity, attrs.evolve(completion, prompt_hash=call.request.prompt_hash))
            stored += 1
        elif any(cache.get(key) is not None for key in keys):
            cached_before += 1
        else:
            missing.append((call, results.failures.get(call.custom_id, "not in the results")))
    return Loaded(stored, cached_before, tuple(missing))


def import_backend(cache: CallCache, identity: str, model: str, sampling: Sampling, use_logprobs: bool = False):
    """The backend of an import run: answered from the cache only. Returns
    (backend, client); `client.requests` lists any call it would have made
    (a retry after an unreadable answer), which fails its judgment."""
    client = NoCallClient(
        model, identity, "`rbg batch import` makes no calls, and the batch results hold no answer to this request"
    )
    return LLMBackend(client, cache, sampling, use_logprobs=use_logprobs), client
