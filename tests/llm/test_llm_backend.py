"""LLMBackend: one call per judgment, what the judgment records, parse
retries, structured-output fallback, log-probability scoring, the cache."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import sqlite3

import attrs

from rubriclang.interp.backend import JudgmentRequest
from rubriclang.interp.items import Item
from rubriclang.llm.backend import LLMBackend
from rubriclang.llm.cache import CallCache, call_keys
from rubriclang.llm.client import Completion, Sampling
from rubriclang.llm.prompting import render

from .conftest import criterion
from .fault_server import rate_answer, status

RATE = criterion('criterion c: ordinal[1, 5] = llm.rate { question = "How correct?" }')
ITEM = Item("q1", "What is 2 + 2?", {"response": "4"}, reference="4")


def judge(backend, crit=RATE, item=ITEM, candidates=("response",)):
    async def go():
        try:
            return await asyncio.gather(*(backend.judge(JudgmentRequest(item, cid, crit)) for cid in candidates))
        finally:
            await backend.aclose()

    out = asyncio.run(go())
    return out[0] if len(out) == 1 else out


def replies(*texts):
    """An answer function giving `texts` in turn (the last one repeated)."""
    queue = list(texts)
    return lambda body: queue.pop(0) if len(queue) > 1 else queue[0]


def backend_for(server, make_client, cache=None, **kw):
    return LLMBackend(make_client(server.url), cache, Sampling(), **kw)


def test_a_judgment_records_value_model_prompt_hash_attempts_and_latency(fault_server, make_client):
    server = fault_server(answer=rate_answer(4))
    j = judge(backend_for(server, make_client))
    assert j.value == 4 and j.error is None
    assert j.backend == "openai" and j.model == "judge"
    assert len(j.prompt_hash) == 16 and j.attempts == 1
    assert j.latency_ms is not None and j.latency_ms >= 0
    assert json.loads(j.raw)["score"] == 4
    body = server.chats[0].body
    assert body["temperature"] == 0.0 and body["seed"] == 0
    assert body["response_format"]["json_schema"]["schema"]["properties"]["score"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 5,
    }


def test_each_candidate_is_judged_on_its_own(fault_server, make_client):
    server = fault_server()
    pair = Item("p", "Say hi.", {"a": "hi", "b": "hello"})
    a, b = judge(backend_for(server, make_client), item=pair, candidates=("a", "b"))
    assert len(server.chats) == 2 and a.prompt_hash != b.prompt_hash
    shown = [m["content"] for r in server.chats for m in r.body["messages"] if m["role"] == "user"]
    assert sum("<response>\nhi\n</response>" in s for s in shown) == 1


def test_an_out_of_range_score_is_asked_again_with_a_note_never_clamped(fault_server, make_client):
    server = fault_server(answer=replies('{"reason": "great", "score": 7}', '{"reason": "great", "score": 5}'))
    j = judge(backend_for(server, make_client))
    assert j.value == 5 and j.attempts == 2
    retry = server.chats[1].body["messages"]
    assert retry[-2] == {"role": "assistant", "content": '{"reason": "great", "score": 7}'}
    assert "could not be read" in retry[-1]["content"] and "7 lies outside" in retry[-1]["content"]


def test_an_answer_that_stays_unreadable_is_the_criterion_error(fault_server, make_client):
    server = fault_server(answer=replies("Score: 9"))
    j = judge(backend_for(server, make_client, parse_retries=2))
    assert j.value is None and len(server.chats) == 3 and j.attempts == 3
    assert j.error == "unreadable answer after 3 replies: `score`: 9 lies outside `ordinal[1, 5]`"
    assert j.raw == "Score: 9"


def test_a_retried_call_is_never_served_the_cached_bad_answer(fault_server, make_client, tmp_path):
    server = fault_server(answer=replies("no idea", '{"reason": "ok", "score": 3}'))
    cache = CallCache(str(tmp_path / "c.sqlite"))
    assert judge(backend_for(server, make_client, cache)).value == 3
    assert len(server.chats) == 2
    again = backend_for(server, make_client, cache)
    j = judge(again)
    assert (j.value, j.attempts) == (3, 2)
    assert len(server.chats) == 2 and again.usage.cache_hits == 2 and again.usage.calls == 0


def test_a_call_error_is_the_judgment_error_and_is_never_cached(fault_server, make_client, tmp_path):
    server = fault_server()
    server.script(status(400, "prompt too long"))
    cache = CallCache(str(tmp_path / "c.sqlite"))
    j = judge(backend_for(server, make_client, cache))
    assert j.value is None and j.error.startswith("http: ") and "prompt too long" in j.error
    assert cache.stats()["entries"] == 0
    assert judge(backend_for(server, make_client, cache)).value == 4
    assert len(server.chats) == 2


def test_a_server_without_structured_output_is_asked_in_plain_text_and_remembered(fault_server, make_client, tmp_path):
    server = fault_server(reject_response_format=True, answer=replies("It is right.\nScore: 5"))
    cache = CallCache(str(tmp_path / "c.sqlite"))
    backend = backend_for(server, make_client, cache)
    first = judge(backend, item=Item("p", "Q", {"a": "x", "b": "y"}), candidates=("a", "b"))
    assert [j.value for j in first] == [5, 5]
    refused = [r for r in server.chats if "response_format" in r.body]
    assert 1 <= len(refused) <= 2  # calls already in flight when the refusal came
    n = len(server.chats)
    # Another run against the same server neither rediscovers it nor calls again.
    later = backend_for(server, make_client, cache)
    assert [j.value for j in judge(later, item=Item("p", "Q", {"a": "x", "b": "y"}), candidates=("a", "b"))] == [5, 5]
    assert len(server.chats) == n and later.usage.calls == 0


def test_identical_calls_in_flight_are_made_once(fault_server, make_client):
    server = fault_server()
    twins = Item("t", "Q", {"a": "same", "b": "same"})
    backend = backend_for(server, make_client)
    a, b = judge(backend, item=twins, candidates=("a", "b"))
    assert a.value == b.value == 4 and len(server.chats) == 1
    assert backend.usage.calls == 1 and backend.usage.shared == 1 and backend.usage.cache_hits == 0


def test_a_missing_reference_fails_the_judgment_without_a_call(fault_server, make_client):
    server = fault_server()
    crit = criterion('criterion c: bool = llm.check { question = "Same as the reference?", with_reference = true }')
    j = judge(backend_for(server, make_client), crit=crit, item=Item("n", "Q", {"response": "x"}))
    assert j.value is None and "no `reference`" in j.error and not server.chats


def test_logprobs_weight_a_score_by_the_scale_tokens(fault_server, make_client):
    def answer(body):
        tops = [
            {"token": "4", "logprob": math.log(0.3)},
            {"token": " 5", "logprob": math.log(0.2)},
            {"token": "x", "logprob": -1.0},
        ]
        tokens = [{"token": t, "logprob": -0.01, "top_logprobs": []} for t in ['{"', "score", '":', " "]]
        tokens += [
            {"token": "4", "logprob": math.log(0.3), "top_logprobs": tops},
            {"token": "}", "logprob": 0.0, "top_logprobs": []},
        ]
        return {"text": '{"score": 4}', "logprobs": tokens}

    server = fault_server(answer=answer)
    crit = criterion('criterion c: score[1, 5] = llm.rate { question = "How good?" }')
    j = judge(backend_for(server, make_client, use_logprobs=True), crit=crit)
    assert server.chats[0].body["logprobs"] is True and server.chats[0].body["top_logprobs"] == 20
    assert j.raw["method"] == "logprobs"
    assert j.raw["distribution"] == {"4": 0.6, "5": 0.4}
    assert abs(j.value - 4.4) < 1e-3


def test_logprobs_leave_ordinals_to_the_answer(fault_server, make_client):
    server = fault_server()
    j = judge(backend_for(server, make_client, use_logprobs=True))
    assert "logprobs" not in server.chats[0].body and j.value == 4


def test_usage_counts_tokens_of_calls_made(fault_server, make_client):
    server = fault_server()
    backend = backend_for(server, make_client)
    judge(backend)
    assert backend.usage.calls == 1 and backend.usage.prompt_tokens > 20 and backend.usage.completion_tokens == 5


def test_a_cache_hit_is_known_at_once_as_the_judgment_judge_gives(fault_server, make_client, tmp_path):
    server = fault_server(answer=rate_answer(4))
    cache = CallCache(str(tmp_path / "c.sqlite"))
    first = judge(backend_for(server, make_client, cache))
    again = backend_for(server, make_client, cache)
    other = attrs.evolve(ITEM, input="What is 3 + 3?")
    known = again.judge_known([JudgmentRequest(ITEM, "response", RATE), JudgmentRequest(other, "response", RATE)])
    assert known == [first, None]  # the second was never asked
    assert (again.usage.cache_hits, again.usage.calls, len(server.chats)) == (1, 0, 1)


def test_a_cached_unreadable_reply_is_not_known_at_once_but_asked_again(fault_server, make_client, tmp_path):
    server = fault_server(answer=replies("no idea", '{"reason": "ok", "score": 3}'))
    cache = CallCache(str(tmp_path / "c.sqlite"))
    assert judge(backend_for(server, make_client, cache)).value == 3
    again = backend_for(server, make_client, cache)
    assert again.judge_known([JudgmentRequest(ITEM, "response", RATE)]) == [None]
    assert again.usage.cache_hits == 0  # counted once, by `judge`, which reads both replies
    assert judge(again).attempts == 2 and again.usage.cache_hits == 2 and len(server.chats) == 2


def test_a_cache_written_before_prompt_keys_is_still_read_and_kept_under_the_new_key(
    fault_server, make_client, tmp_path
):
    server = fault_server(answer=rate_answer(4))
    path = str(tmp_path / "c.sqlite")
    first = judge(backend_for(server, make_client, CallCache(path)))
    # The call as an older version cached it: under its messages' key, no prompt hash.
    client = make_client(server.url)
    request = attrs.evolve(render(RATE, ITEM, "response").request, sampling=Sampling())
    new_key, old_key = call_keys(client.identity, client.model, request)
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        (response,) = db.execute("SELECT response FROM calls WHERE key = ?", (new_key,)).fetchone()
        old = {k: v for k, v in json.loads(response).items() if k != "prompt_hash"}
        db.execute("UPDATE calls SET key = ?, response = ?", (old_key, json.dumps(old, sort_keys=True)))
        db.execute("DELETE FROM notes WHERE server = '' AND name = 'keys'")  # no older version wrote it
    older = backend_for(server, make_client, CallCache(path))
    assert older.judge_known([JudgmentRequest(ITEM, "response", RATE)]) == [None]
    assert judge(older) == first and older.usage.cache_hits == 1 and len(server.chats) == 1
    newer = backend_for(server, make_client, CallCache(path))
    assert newer.judge_known([JudgmentRequest(ITEM, "response", RATE)]) == [first]


def test_a_cache_created_with_prompt_keys_has_no_key_of_version_1_to_look_for(fault_server, make_client, tmp_path):
    server = fault_server(answer=rate_answer(4))
    path = str(tmp_path / "c.sqlite")
    client = make_client(server.url)
    request = attrs.evolve(render(RATE, ITEM, "response").request, sampling=Sampling())
    _new_key, old_key = call_keys(client.identity, client.model, request)
    cache = CallCache(path)
    assert not cache.version_1_keys
    # Whatever lies under a key of version 1 is not looked for: no version wrote one into this cache.
    cache.put(old_key, client.identity, Completion('{"reason": "stale", "score": 1}', "m"))
    assert judge(backend_for(server, make_client, cache)).value == 4 and len(server.chats) == 1
    # Emptied, a cache still holds none; one from before the note may.
    assert cache.clear() == 2 and not CallCache(path).version_1_keys
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("DELETE FROM notes")
    assert CallCache(path).version_1_keys
    # A file that has its calls but lost its notes table gets one, unmarked.
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("DROP TABLE notes")
    assert CallCache(path).version_1_keys


def test_a_prompt_prepared_for_a_cache_miss_is_not_prepared_again_to_ask(
    fault_server, make_client, tmp_path, monkeypatch
):
    import rubriclang.llm.backend as backend_module

    server = fault_server(answer=rate_answer(4))
    backend = backend_for(server, make_client, CallCache(str(tmp_path / "c.sqlite")))
    prepared = []
    real = backend_module.prepare

    def recording(*a):
        prepared.append(a)
        return real(*a)

    monkeypatch.setattr(backend_module, "prepare", recording)
    request = JudgmentRequest(ITEM, "response", RATE)
    assert backend.judge_known([request]) == [None]

    async def ask():
        try:
            return await backend.judge(request)
        finally:
            await backend.aclose()

    first = asyncio.run(ask())
    assert first.value == 4 and len(prepared) == 1 and len(server.chats) == 1
    # Another request for the same judgment is its own: prepared anew, then a cache hit.
    again = backend_for(server, make_client, CallCache(str(tmp_path / "c.sqlite")))
    assert again.judge_known([JudgmentRequest(ITEM, "response", RATE)]) == [first] and len(prepared) == 2
