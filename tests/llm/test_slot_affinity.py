"""Slot affinity: to a llama.cpp server with slots, the calls of one item
and candidate go to one slot (`id_slot`, with `cache_prompt`), so the server
evaluates their shared prompt prefix once; other servers get neither field,
and the call cache never depends on it."""

from __future__ import annotations

import asyncio

from rubriclang.checker import check_source
from rubriclang.interp.engine import Interpreter
from rubriclang.interp.items import Item
from rubriclang.llm.backend import LLMBackend
from rubriclang.llm.cache import CallCache
from rubriclang.llm.client import Sampling

from .fault_server import rate_answer

GRAPH = """rubric s { version = 1 }
contract { scale = score[1, 5] }
criterion a: ordinal[1, 5] = llm.rate { question = "How correct?" }
criterion b: ordinal[1, 5] = llm.rate { question = "How clear?" }
criterion c: ordinal[1, 5] = llm.rate { question = "How complete?" }
node m = reduce.mean(inputs: [a, b, c])
sink m
readout pointwise { output = ordinal[1, 5] }
"""
ITEMS = [Item(f"i{n}", f"Task {n}?", {"response": f"Answer {n}."}) for n in range(5)]


def run(backend, items=ITEMS):
    async def go():
        try:
            graph = check_source(GRAPH, "s.rbg").graph
            assert graph is not None
            return [r async for r in Interpreter(graph, [backend], 4).run(items)]
        finally:
            await backend.aclose()

    return asyncio.run(go())


def _slots_by_item(server):
    seen: dict[str, set] = {}
    for chat in server.chats:
        task = next(m["content"] for m in chat.body["messages"] if m["role"] == "user").split("Task ")[1][0]
        seen.setdefault(task, set()).add(chat.body.get("id_slot"))
        assert chat.body.get("cache_prompt") is True
    return seen


def test_each_item_s_calls_go_to_one_slot_and_items_take_the_slots_in_turn(fault_server, make_client):
    server = fault_server(answer=rate_answer(3))
    run(LLMBackend(make_client(server.url, slots=2), None, Sampling()))
    seen = _slots_by_item(server)
    assert len(server.chats) == 15
    assert all(len(slots) == 1 for slots in seen.values())
    assert [seen[str(n)].pop() for n in range(5)] == [0, 1, 0, 1, 0]


def test_a_server_not_known_to_be_llama_cpp_gets_no_slot_fields(fault_server, make_client):
    server = fault_server(answer=rate_answer(3))
    run(LLMBackend(make_client(server.url), None, Sampling()))
    assert server.chats and all("id_slot" not in c.body and "cache_prompt" not in c.body for c in server.chats)


def test_affinity_leaves_the_call_cache_alone(fault_server, make_client, tmp_path):
    server = fault_server(answer=rate_answer(3))
    cache = CallCache(str(tmp_path / "c.sqlite"))
    run(LLMBackend(make_client(server.url, slots=2), cache, Sampling()))
    first = len(server.chats)
    # The same items in another order take other slots; every call is still a hit.
    backend = LLMBackend(make_client(server.url), cache, Sampling())
    run(backend, ITEMS[::-1])
    assert len(server.chats) == first and backend.usage.cache_hits == 15


def _checked(client):
    async def go():
        try:
            await client.check_model()
            return client.slots
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_a_llama_cpp_server_is_recognised_by_its_model_list_and_tells_its_slots(fault_server, make_client):
    server = fault_server(owned_by="llamacpp", props={"total_slots": 4})
    assert _checked(make_client(server.url)) == 4
    assert [r.path for r in server.requests] == ["/v1/models", "/props"]


def test_other_servers_are_never_asked_for_props_and_a_bad_answer_leaves_affinity_off(fault_server, make_client):
    other = fault_server(owned_by="vllm", props={"total_slots": 4})
    assert _checked(make_client(other.url)) is None
    assert [r.path for r in other.requests] == ["/v1/models"]
    for props in (None, {"total_slots": "4"}, {"total_slots": 0}, {}):
        odd = fault_server(owned_by="llamacpp", props=props)
        assert _checked(make_client(odd.url)) is None


def test_several_servers_get_no_slot_affinity(fault_server, make_client):
    a, b = (fault_server(owned_by="llamacpp", props={"total_slots": 2}) for _ in range(2))
    assert _checked(make_client([a.url, b.url])) is None
