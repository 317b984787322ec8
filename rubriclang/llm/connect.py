"""Connecting to models, in one place: how a server setting becomes a client
(its URLs, or the embedded model, started once per model file and shared),
and how a graph's LLM criteria get their judges (the default one, and one
per model profile: `model = "NAME"` on a criterion, `[models.NAME]` in the
project config, docs/judges.md). `rbg run` and `rbg eval` (through
`cli/backends.py: open_llm`), `rbg compile` and `rbg audit` (its judge,
generator, validator and planner) all connect through `Connections`.

Every server URL is read by one function, `rubriclang.urls.parse_base_url`,
which refuses what cannot be used as it stands and shows a refused URL
without its credentials.

Importing this module costs no HTTP client: clients are built on demand.
"""

from __future__ import annotations

import contextlib
import functools
import os

import attrs

from rubriclang.urls import BaseURL, URLError, api_key_problem, parse_base_url


class ConnectError(Exception):
    """A judge that cannot be connected: `message` says why (with the
    criterion's `file:line:col` where one is to blame), `hint` what to do;
    `embedded` when it is the embedded model that cannot start (each
    command says which of its settings asked for it)."""

    def __init__(self, message: str, hint: str = "", embedded: bool = False):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.embedded = embedded


@attrs.frozen
class Server:
    """Where calls go: `base_urls` (none: the embedded model, on `model_file`
    or the default one) and `model` (None: the server's only model). The API
    key is the value read from the environment by the caller."""

    base_urls: tuple[str, ...] = ()
    model: str | None = None
    api_key: str | None = None
    model_file: str | None = None
    timeout: float = 120.0
    max_retries: int = 5
    per_endpoint: int = 16
    deadline: float | None = None  # the longest one request may take in all (None: the client's default)
    max_reply_bytes: int | None = None
    # The embedded model's context and parallel requests (None: its defaults, sized for judging).
    context: int | None = None
    parallel: int | None = None


class Connections:
    """The clients opened here and the embedded servers they use. `aclose()`
    closes the clients (bound to their event loop); `stop()` stops the
    embedded servers."""

    def __init__(self, estimate=None):
        # An `llm.estimate.Estimate`: clients are then `DryClient`s that tally
        # requests and send nothing, and no embedded model starts.
        self.estimate = estimate
        self._embedded: dict[tuple, object] = {}
        self._servers = contextlib.ExitStack()
        self.clients: list = []

    def client(self, server: Server):
        """A client for `server`; raises ConnectError when the embedded
        model is needed and cannot start."""
        from rubriclang.llm.client import OpenAIClient

        if self.estimate is not None:
            from rubriclang.llm.estimate import DryClient

            if not server.base_urls and server.model:
                raise ConnectError(
                    f"the model `{server.model}` is named without a server: the embedded model serves only its own"
                )
            identity = " ".join(sorted(_url(u).url for u in server.base_urls)) or "embedded"
            return DryClient(self.estimate, server.model or (None if server.base_urls else "embedded"), identity)
        problem = api_key_problem(server.api_key) if server.api_key else None
        if problem is not None:
            raise ConnectError(f"the API key cannot be sent: {problem}", "check the variable that holds it")
        make = functools.partial(
            OpenAIClient,
            timeout=server.timeout,
            max_retries=server.max_retries,
            per_endpoint=server.per_endpoint,
            deadline=server.deadline,
            max_reply_bytes=server.max_reply_bytes,
        )
        if server.base_urls:
            for url in server.base_urls:  # the client would refuse it too, as a ValueError
                _url(url)
            client = make(list(server.base_urls), server.model, server.api_key)
        else:
            if server.model:
                raise ConnectError(
                    f"the model `{server.model}` is named without a server: the embedded model serves only its own",
                    "give the server's URL (`--base-url`, or `base_url` in the suite's table), or drop the model name",
                )
            embedded = self._start(server)
            client = make([embedded.base_url], embedded.model, identity=embedded.identity, slots=embedded.parallel)
        self.clients.append(client)
        return client

    def _start(self, server: Server):
        """The embedded server for `server`'s model file and sizes, started once."""
        key = (server.model_file, server.context, server.parallel)
        if key not in self._embedded:
            try:
                from rubriclang.llm.embedded import EmbeddedError, start_embedded
            except ImportError as exc:  # pragma: no cover - a broken install
                raise ConnectError(f"the embedded model is not available ({exc})", embedded=True) from None
            sizes = {k: v for k, v in (("ctx_size", server.context), ("parallel", server.parallel)) if v is not None}
            try:
                self._embedded[key] = self._servers.enter_context(start_embedded(server.model_file, **sizes))
            except EmbeddedError as exc:
                raise ConnectError(f"the embedded model could not start: {exc}", embedded=True) from None
        return self._embedded[key]

    def profile_client(self, profile, base: Server):
        """A client for a model profile of the project config, with `base`'s
        timeouts and retries; its key is read from the profile's variable."""
        key = None
        if profile.api_key_env:
            key = os.environ.get(profile.api_key_env)
            if not key:
                raise ConnectError(
                    f"{profile.where}: profile `{profile.name}` reads its key from `{profile.api_key_env}`, which is "
                    "not set"
                )
            problem = api_key_problem(key)
            if problem is not None:
                raise ConnectError(
                    f"{profile.where}: the key in `{profile.api_key_env}` (profile `{profile.name}`) cannot be sent: "
                    f"{problem}"
                )
        return self.client(
            attrs.evolve(base, base_urls=tuple(profile.base_urls), model=profile.model, api_key=key, model_file=None)
        )

    def judges(self, graph, default: Server, sampling):
        """(client, sampling, profiles) for `graph`'s LLM criteria, as
        `LLMBackend` takes them. Criteria that name a model profile are
        answered by it; the others by `default` when it gives a server,
        else by the config's `default` profile, else by the embedded model.
        A profile the config lacks is an error at the criterion's line,
        before any call."""
        from rubriclang.llm.backend import LLMBackend, Profile

        llm = [c for c in graph.criteria if LLMBackend.handles(c.procedure)]
        named = {c.params.get("model") for c in llm} - {None}
        config = _project_config(graph.path) if named or not default.base_urls else None
        profiles = config.models if config is not None else {}
        for c in llm:
            name = c.params.get("model")
            if name is not None and name not in profiles:
                where = f"{c.span.file}:{c.span.line}:{c.span.column}" if c.span else graph.path
                found = (
                    f"`{config.path}` defines " + (", ".join(f"`{n}`" for n in sorted(profiles)) or "none")
                    if config and config.path
                    else "no rubriclang.toml or [tool.rubriclang] in pyproject.toml was found upward from the graph"
                )
                raise ConnectError(
                    f"{where}: criterion `{c.name}` asks for model profile `{name}`, but {found}",
                    f"add a `[models.{name}]` table with `base_url` and `model` to rubriclang.toml beside the graph "
                    "(docs/judges.md)",
                )
        default_profile = profiles.get("default") if not default.base_urls else None
        needs_default = any(c.params.get("model") in (None, "default") for c in llm) or not named
        client = None
        if default.base_urls:
            client = self.client(default)
        elif default_profile is not None:
            client = self.profile_client(default_profile, default)
            sampling = profile_sampling(default_profile, sampling)
        elif needs_default:
            client = self.client(default)
        extra = {
            name: Profile(self.profile_client(profiles[name], default), profile_sampling(profiles[name], sampling))
            for name in sorted(named - {"default"})
        }
        if default_profile is not None:
            # The config's `default` profile serves the unnamed criteria too: one judge, named so.
            assert client is not None  # made from the default profile above
            extra["default"] = Profile(client, sampling)
        elif "default" in named:
            extra["default"] = Profile(
                self.profile_client(profiles["default"], default), profile_sampling(profiles["default"], sampling)
            )
        if client is None:  # every criterion names a profile: the default serves none
            client = extra[sorted(named)[0]].client
        return client, sampling, extra

    async def aclose(self) -> None:
        for client in self.clients:
            await client.aclose()
        self.clients.clear()

    def stop(self) -> None:
        self._servers.close()
        self._embedded.clear()


def _url(url: str) -> BaseURL:
    """`parse_base_url(url)`, its refusal a ConnectError."""
    try:
        return parse_base_url(url)
    except URLError as exc:
        raise ConnectError(exc.message, exc.hint) from None


def profile_sampling(profile, sampling):
    """The run's sampling with the profile's own settings over it."""
    return attrs.evolve(sampling, **profile.sampling)


def _project_config(graph_path: str):
    from rubriclang.config import ConfigError, load_config

    try:
        return load_config(graph_path if not graph_path.startswith("<") else os.getcwd())
    except ConfigError as exc:
        raise ConnectError(f"{exc.where}: {exc.message}", exc.hint) from None
