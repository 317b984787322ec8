"""The audit's model backends: the judge's, the generator's and the
validator's, each configured on its own (a suite's `[judge]`, `[generator]`
and `[validator]` tables), sharing one call cache and, when several use the
embedded model, one embedded server.

The API key is read from the environment variable a table names; it goes
to the client's header and nowhere else.
"""

from __future__ import annotations

import os
import sqlite3

from rubriclang.audit.llmcall import Answer, JsonAsker
from rubriclang.audit.suite import BackendConfig
from rubriclang.llm.cache import CallCache, default_path
from rubriclang.llm.client import OpenAIClient, Sampling


class BackendUnavailable(Exception):
    """A backend that cannot be started (the embedded model is missing, ...)."""


class Unavailable:
    """Stands in for a generator or validator that could not be started:
    every answer is `unavailable`, with the reason."""

    def __init__(self, reason: str):
        self.reason = reason

    async def ask(self, msgs, fields, name) -> Answer:
        return Answer("unavailable", error=self.reason)


class Backends:
    """Opens clients on demand; `aclose` closes them all, the cache and the
    embedded server."""

    def __init__(self, cache_path: str | None = None, no_cache: bool = False):
        self._cache_path = cache_path
        self._no_cache = no_cache
        self._cache: CallCache | None = None
        self._servers: dict[str | None, object] = {}
        self._clients: list[OpenAIClient] = []

    @property
    def cache(self) -> CallCache | None:
        """The call cache, opened on first use (an audit without LLM calls opens none)."""
        if self._cache is None and not self._no_cache:
            path = self._cache_path or default_path()
            try:
                self._cache = CallCache(path)
            except (sqlite3.Error, OSError) as exc:
                raise BackendUnavailable(f"cannot open the call cache `{path}`: {exc} (give another --cache, or --no-cache)") from None
        return self._cache

    def client(self, cfg: BackendConfig) -> OpenAIClient:
        """A client for `cfg`; raises BackendUnavailable."""
        settings = {"timeout": cfg.timeout, "max_retries": cfg.max_retries}
        if cfg.base_url:
            client = OpenAIClient([cfg.base_url], cfg.model, os.environ.get(cfg.api_key_env) or None, **settings)
        else:
            server = self._server(cfg.model_file)
            client = OpenAIClient([server.base_url], server.model, identity=server.identity, **settings)
        self._clients.append(client)
        return client

    def _server(self, model_file: str | None):
        if model_file not in self._servers:
            try:
                from rubriclang.llm.embedded import EmbeddedError, start_embedded
            except ImportError as exc:  # pragma: no cover - a broken install
                raise BackendUnavailable(f"the embedded model is not available ({exc})") from None
            try:
                self._servers[model_file] = start_embedded(model_file)
            except EmbeddedError as exc:
                raise BackendUnavailable(f"the embedded model could not start: {exc}") from None
        return self._servers[model_file]

    def asker(self, cfg: BackendConfig, retries: int = 2) -> JsonAsker | Unavailable:
        """A generator, validator or planner for `cfg` (its `seed` and
        `temperature` as configured)."""
        try:
            client = self.client(cfg)
            cache = self.cache
        except BackendUnavailable as exc:
            return Unavailable(str(exc))
        sampling = Sampling(temperature=cfg.temperature, max_tokens=cfg.max_tokens, seed=cfg.seed)
        return JsonAsker(client, cache, sampling, retries)

    async def aclose(self) -> None:
        for client in self._clients:
            await client.aclose()
        self._clients.clear()
        for server in self._servers.values():
            server.stop()
        self._servers.clear()
        if self._cache is not None:
            self._cache.close()
