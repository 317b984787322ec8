"""Fixtures for the LLM backend tests: a scripted loopback server, a
client with fast backoff, and checked criteria from small graphs."""

from __future__ import annotations

import pytest

from rubriclang.checker import check_source
from rubriclang.llm.client import OpenAIClient

from .fault_server import FaultServer


def criterion(decl: str):
    """The checked criterion of a one-criterion graph, e.g.
    `criterion c: bool = llm.check { question = "Q?" }`."""
    t = decl.split(":", 1)[1].split("=", 1)[0].strip().rstrip("?")
    source = (
        f"rubric t {{ version = 1 }}\ncontract {{ scale = {t} }}\n{decl}\nsink c\n"
        f"readout pointwise {{ output = {t} }}\n"
    )
    result = check_source(source, "t.rbg")
    assert result.graph is not None, result.diagnostics
    return result.graph.criteria[0]


@pytest.fixture
def fault_server():
    """fault_server(**options) -> a started FaultServer, stopped after the test."""
    started = []

    def make(**kw) -> FaultServer:
        server = FaultServer(**kw).__enter__()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


@pytest.fixture
def make_client():
    """make_client(url_or_urls, **options) -> an OpenAIClient with millisecond backoff."""

    def make(urls, model="judge", **kw) -> OpenAIClient:
        urls = [urls] if isinstance(urls, str) else urls
        kw = {"timeout": 5.0, "max_retries": 3, "backoff_base": 0.001, "backoff_max": 5.0, "seed": 1, **kw}
        return OpenAIClient(urls, model, **kw)

    return make
