"""The HTTP client against injected faults: what is retried, how often, how
long it waits, and what it says when it gives up."""

from __future__ import annotations

import asyncio
import time

import pytest

from rubriclang.llm.client import ChatRequest, LLMError

from .fault_server import auth_failure, delay, drop, malformed, status, unknown_model

REQUEST = ChatRequest(({"role": "user", "content": "Rate this."},))


def chat(client, request=REQUEST):
    async def go():
        try:
            return await client.chat(request)
        finally:
            await client.aclose()

    return asyncio.run(go())


def failure(client, request=REQUEST) -> LLMError:
    with pytest.raises(LLMError) as info:
        chat(client, request)
    return info.value


def test_transient_statuses_are_retried_until_an_answer(fault_server, make_client):
    server = fault_server()
    server.script(status(500), status(503), status(429))
    completion = chat(make_client(server.url))
    assert completion.text.startswith("{")
    assert completion.attempts == 4
    assert len(server.chats) == 4


def test_retry_after_is_honoured(fault_server, make_client):
    server = fault_server()
    server.script(status(429, retry_after="1"))
    started = time.monotonic()
    completion = chat(make_client(server.url))
    assert time.monotonic() - started >= 0.95
    assert completion.attempts == 2


def test_giving_up_says_why_and_after_how_many_attempts(fault_server, make_client):
    server = fault_server()
    server.script(*[status(503)] * 3)
    err = failure(make_client(server.url, max_retries=2))
    assert err.kind == "http" and err.status == 503 and err.attempts == 3
    assert "HTTP 503" in err.message and "gave up after 3 attempts" in err.message
    assert len(server.chats) == 3


def test_an_answer_slower_than_the_timeout_is_retried_then_reported(fault_server, make_client):
    server = fault_server()
    server.script(delay(1.0), delay(1.0))
    err = failure(make_client(server.url, timeout=0.2, max_retries=1))
    assert err.kind == "timeout" and err.attempts == 2
    assert "did not answer in time" in err.message


def test_a_slow_answer_then_a_prompt_one_succeeds(fault_server, make_client):
    server = fault_server()
    server.script(delay(1.0))
    assert chat(make_client(server.url, timeout=0.2)).attempts == 2


def test_dropped_connections_and_malformed_bodies_are_retried(fault_server, make_client):
    server = fault_server()
    server.script(drop(), malformed())
    completion = chat(make_client(server.url))
    assert completion.attempts == 3 and len(server.chats) == 3


def test_a_body_that_is_never_a_completion_is_a_bad_response(fault_server, make_client):
    server = fault_server()
    server.script(*[malformed()] * 2)
    err = failure(make_client(server.url, max_retries=1))
    assert err.kind == "bad_response" and "not a chat completion" in err.message


@pytest.mark.parametrize(
    ("fault", "kind"),
    [(unknown_model(), "unknown_model"), (auth_failure(), "auth"), (status(400, "context too long"), "http")],
)
def test_permanent_errors_are_not_retried(fault_server, make_client, fault, kind):
    server = fault_server()
    server.script(fault)
    err = failure(make_client(server.url))
    assert err.kind == kind and err.attempts == 1
    assert len(server.chats) == 1


def test_a_refused_response_format_is_reported_as_unsupported(fault_server, make_client):
    server = fault_server(reject_response_format=True)
    err = failure(make_client(server.url), ChatRequest(REQUEST.messages, response_format={"type": "json_object"}))
    assert err.kind == "unsupported" and "response_format" in err.message


def test_check_model_names_the_missing_model_and_what_the_server_has(fault_server, make_client):
    server = fault_server(models=("llama", "qwen"))
    client = make_client(server.url, model="judge")
    with pytest.raises(LLMError) as info:
        asyncio.run(client.check_model())
    assert info.value.kind == "unknown_model"
    assert "no model `judge`" in info.value.message and "llama, qwen" in info.value.message


def test_check_model_picks_the_only_model_when_none_is_named(fault_server, make_client):
    server = fault_server(models=("solo",))
    client = make_client(server.url, model=None)
    asyncio.run(client.check_model())
    assert client.model == "solo"


def test_check_model_checks_every_server(fault_server, make_client):
    good, other = fault_server(), fault_server(models=("other",))
    client = make_client([good.url, other.url])
    with pytest.raises(LLMError, match=other.url):
        asyncio.run(client.check_model())


def test_an_unreachable_server_is_reported_clearly(make_client, unreachable_url):
    client = make_client(unreachable_url)
    with pytest.raises(LLMError) as info:
        asyncio.run(client.check_model())
    assert info.value.kind == "unreachable" and f"cannot reach {unreachable_url}/v1" in info.value.message


def test_the_key_is_sent_but_never_appears_in_an_error(fault_server, make_client):
    secret = "sk-SENTINEL-1234567890"
    server = fault_server(api_key=secret)
    # A server that quotes what it was sent back in its error message.
    server.script(status(400, f"bad request from Bearer {secret}"))
    err = failure(make_client(server.url, api_key=secret))
    assert server.chats[0].authorization == f"Bearer {secret}"
    assert secret not in err.message and secret not in str(err)
    assert "***" in err.message


def test_load_spreads_over_several_servers(fault_server, make_client):
    a, b = fault_server(), fault_server()
    client = make_client([a.url, b.url])

    async def go():
        try:
            await asyncio.gather(*(client.chat(REQUEST) for _ in range(10)))
        finally:
            await client.aclose()

    asyncio.run(go())
    assert len(a.chats) + len(b.chats) == 10
    assert len(a.chats) >= 3 and len(b.chats) >= 3
