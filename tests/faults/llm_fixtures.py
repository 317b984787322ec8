"""What the fault tests against a loopback LLM server share: the scripted
server's fixture, a client with millisecond backoff, one chat call, and
items for `rbg run`. The graph is `conftest.GOOD` (one `llm.rate`)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from llm.conftest import fault_server  # noqa: F401 (a fixture, for the modules that import it from here)
from llm.fault_server import FaultServer

from rubriclang.llm.client import ChatRequest, Completion, OpenAIClient


def client(server: FaultServer, api_key: str | None = None, **kw) -> OpenAIClient:
    """A client of `server`'s model `judge`, retrying at once (no retry unless asked)."""
    kw = {"timeout": 5.0, "max_retries": 0, "backoff_base": 0.001, "seed": 1, **kw}
    return OpenAIClient([server.url], "judge", api_key, **kw)


def chat(c: OpenAIClient) -> Completion:
    """One chat call, the client closed after it; raises LLMError."""

    async def go():
        try:
            return await c.chat(ChatRequest(({"role": "user", "content": "Rate this."},)))
        finally:
            await c.aclose()

    return asyncio.run(go())


def write_items(folder: Path, n: int) -> Path:
    """`items.jsonl` with `n` items `i0`, `i1`, ..."""
    path = folder / "items.jsonl"
    path.write_text(
        "".join(json.dumps({"id": f"i{k}", "prompt": "Q?", "response": f"answer {k}"}) + "\n" for k in range(n))
    )
    return path
