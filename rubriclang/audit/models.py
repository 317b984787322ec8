"""The audit's models: the judge's, the generator's and the
validator's, each configured on its own (a suite's `[judge]`, `[generator]`
and `[validator]` tables), sharing one call cache and, when several use the
embedded model, one embedded server. The judge's criteria that name a model
profile (`model = "NAME"`) are answered by the project config's profile, as
in `rbg run`. (A criterion backend, `interp.backend.CriterionBackend`, is another
thing: what runs a procedure.)

The API key is read from the environment variable a table names; it goes
to the client's header and nowhere else.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile

from rubriclang.audit.llmcall import Answer, JsonAsker
from rubriclang.audit.suite import ModelConfig
from rubriclang.llm.cache import CallCache, default_path
from rubriclang.llm.client import OpenAIClient, Sampling
from rubriclang.llm.connect import ConnectError, Connections, Server


class ModelUnavailable(Exception):
    """A model that cannot be started (the embedded model is missing, ...)."""


class Unavailable:
    """Stands in for a generator or validator that could not be started:
    every answer is `unavailable`, with the reason."""

    def __init__(self, reason: str):
        self.reason = reason

    async def ask(self, msgs, fields, name) -> Answer:
        return Answer("unavailable", error=self.reason)


class Models:
    """Opens clients on demand (through `rubriclang.llm.connect`, as `rbg run`
    does); `aclose` closes them all, the cache and the embedded servers."""

    def __init__(self, cache_path: str | None = None, no_cache: bool = False, estimate=None, reuse: bool = True):
        """`estimate`: an `llm.estimate.Estimate` that tallies every request
        instead of sending it (no cache is then read). `reuse` (see
        `judge_cache`): off, every judge request asks the server."""
        self._cache_path = cache_path
        self._no_cache = no_cache or estimate is not None
        self._cache: CallCache | None = None
        self._reuse = reuse and estimate is None  # an estimate counts an identical request once by itself
        self._private: tempfile.TemporaryDirectory | None = None
        self._private_cache: CallCache | None = None
        self.connections = Connections(estimate)
        self.askers: dict[str, list] = {}  # role -> the askers made for it, for their usage

    @property
    def cache(self) -> CallCache | None:
        """The call cache, opened on first use (an audit without LLM calls opens none)."""
        if self._cache is None and not self._no_cache:
            path = self._cache_path or default_path()
            try:
                self._cache = CallCache(path)
            except (sqlite3.Error, OSError) as exc:
                raise ModelUnavailable(
                    f"cannot open the call cache `{path}`: {exc} (give another --cache, or --no-cache)"
                ) from None
        return self._cache

    @property
    def judge_cache(self) -> CallCache | None:
        """What answers a judge request identical to one made before, so
        that a variant's criterion whose rendered prompt did not change
        reuses the baseline's judgment of the same repeat (the key holds the
        prompt's digest and the repeat's seed): the call cache; with
        --no-cache, a private cache of this audit alone, deleted when it
        ends; None without `reuse` (every request asks the server)."""
        if not self._reuse:
            return None
        if not self._no_cache:
            return self.cache
        if self._private_cache is None:
            try:
                self._private = tempfile.TemporaryDirectory(prefix="rbg-audit-")
                self._private_cache = CallCache(os.path.join(self._private.name, "calls.sqlite"))
            except (sqlite3.Error, OSError) as exc:
                raise ModelUnavailable(
                    f"cannot make the audit's private call cache in {tempfile.gettempdir()}: {exc} (free some space "
                    "there or set TMPDIR, or give --no-reuse to ask the server for every judgment)"
                ) from None
        return self._private_cache

    @property
    def judge_cache_private(self) -> bool:
        """Whether the judge's cache is this audit's own: every hit in it is then a reuse."""
        return self._private_cache is not None

    def client(self, cfg: ModelConfig) -> OpenAIClient:
        """A client for `cfg`; raises ModelUnavailable."""
        try:
            return self.connections.client(server(cfg))
        except ConnectError as exc:
            raise ModelUnavailable(exc.message) from None

    def judges(self, graph, cfg: ModelConfig, sampling: Sampling):
        """(client, sampling, profiles) for the judge `graph`: criteria that
        name a model profile go to it, the others to `cfg`'s server (else the
        config's `default` profile, else the embedded model), as in `rbg run`.
        Raises ModelUnavailable."""
        try:
            return self.connections.judges(graph, server(cfg), sampling)
        except ConnectError as exc:
            raise ModelUnavailable(exc.message + (f" ({exc.hint})" if exc.hint else "")) from None

    def asker(self, cfg: ModelConfig, retries: int = 2, role: str = "other") -> JsonAsker | Unavailable:
        """A generator, validator or planner for `cfg` (its `seed` and
        `temperature` as configured); `role` names its phase for the usage."""
        try:
            client = self.client(cfg)
            cache = self.cache
        except ModelUnavailable as exc:
            return Unavailable(str(exc))
        sampling = Sampling(temperature=cfg.temperature, max_tokens=cfg.max_tokens, seed=cfg.seed)
        asker = JsonAsker(client, cache, sampling, retries)
        self.askers.setdefault(role, []).append(asker)
        return asker

    async def aclose(self) -> None:
        await self.connections.aclose()
        self.connections.stop()
        if self._cache is not None:
            self._cache.close()
        if self._private_cache is not None:
            self._private_cache.close()
        if self._private is not None:
            self._private.cleanup()


def server(cfg: ModelConfig) -> Server:
    """A suite table's server, its API key read from the variable it names;
    without `base_url`, the embedded model (whose model is its own)."""
    if not cfg.base_url:
        return Server(model_file=cfg.model_file, timeout=cfg.timeout, max_retries=cfg.max_retries)
    return Server(
        (cfg.base_url,), cfg.model, os.environ.get(cfg.api_key_env) or None, None, cfg.timeout, cfg.max_retries
    )
