"""The embedded local model: llama.cpp's own OpenAI-compatible HTTP server,
run inside this process by the `xllamacpp` wheel on a free loopback port.

`rbg run` without `--base-url` starts one, talks to it through the same HTTP
client as to any remote server, and stops it at the end. Nothing but
127.0.0.1 is ever bound, and the port is chosen by the operating system
(port 0), so two runs never collide.

    with start_embedded() as server:
        client = OpenAIClient([server.base_url], server.model, identity=server.identity)
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from types import ModuleType, TracebackType

import httpx

from rubriclang.llm import models

STARTUP_TIMEOUT = 60.0
LOOPBACK = "127.0.0.1"

# llama.cpp keeps the states of recent prompts in RAM to reuse their prefixes
# (every item of a criterion shares its instructions); its default of 8 GiB
# is far more than a judge needs.
_PROMPT_CACHE_MIB = 256


class EmbeddedError(Exception):
    """The embedded model cannot run; the message says why and what to do."""


class EmbeddedServer:
    """A running embedded llama.cpp server; a context manager (sync or async)
    that stops it on exit.

    `base_url` is "http://127.0.0.1:PORT" (clients append /v1), `model` the
    model id the server reports in /v1/models (the GGUF file name), and
    `identity` names the model file by content, independent of the port, so
    calls cached in one run are found in the next.
    """

    def __init__(
        self, model_file: Path, *, threads: int, ctx_size: int, parallel: int, timeout: float = STARTUP_TIMEOUT
    ):
        self.model_file = model_file
        self.threads = threads
        self.ctx_size = ctx_size
        self.parallel = parallel
        self.timeout = timeout
        self.base_url = ""
        self.model = ""
        self.identity = ""
        self._server = None

    @property
    def running(self) -> bool:
        """Whether the server is started and not yet stopped."""
        return self._server is not None

    def start(self) -> EmbeddedServer:
        """Load the model, start serving, and return once the server answers
        /health and /v1/models; raises EmbeddedError otherwise."""
        if self._server is not None:
            return self
        xlc = _import_xllamacpp()
        _check_model_file(self.model_file)
        # Loading takes seconds to a minute: said on stderr, never silent.
        started = time.monotonic()
        _say(
            f"starting the embedded model {self.model_file.name} ({self.model_file.stat().st_size / 1e6:.0f} MB, "
            f"{self.threads} threads, {self.parallel} slots) ..."
        )
        digest = models.file_digest(self.model_file)
        try:
            # Blocks (holding the GIL) until the model is loaded and the HTTP
            # listener is up, or fails fast on a file llama.cpp cannot load.
            server = self._server = xlc.Server(self._params(xlc))
        except (RuntimeError, ValueError) as exc:
            raise EmbeddedError(
                f"llama.cpp could not load {self.model_file} ({exc})\n"
                "  hint: is it a GGUF model this llama.cpp supports, and is there enough memory "
                f"for a context of {self.ctx_size} tokens x {self.parallel} slots?"
            ) from None
        try:
            address = server.listening_address
            if not address.startswith(f"http://{LOOPBACK}:"):
                raise EmbeddedError(f"the embedded server listens on {address!r}, not on {LOOPBACK}")
            self.base_url = address
            self.model = _wait_ready(address, self.timeout)
        except BaseException:
            self.stop()
            raise
        self.identity = f"embedded:{self.model_file.name}:{digest[:16]}"
        _say(f"the embedded model is ready ({time.monotonic() - started:.1f} s)")
        return self

    def stop(self) -> None:
        """Stop serving and free the model, its threads and the port. Idempotent."""
        server, self._server = self._server, None
        # The last reference: its C++ destructor ends the inference loop,
        # stops the HTTP listener and joins their threads before returning.
        del server

    def _params(self, xlc: ModuleType) -> object:
        p = xlc.CommonParams()
        p.model.path = str(self.model_file)
        # The id /v1/models reports: the file name rather than its full path.
        p.model_alias = {self.model_file.name}
        p.hostnames = [LOOPBACK]
        p.port = 0
        # llama.cpp splits n_ctx between its slots; ctx_size is per request.
        p.n_ctx = self.ctx_size * self.parallel
        p.n_parallel = self.parallel
        p.cpuparams.n_threads = self.threads
        p.cpuparams_batch.n_threads = self.threads
        p.cache_ram_mib = _PROMPT_CACHE_MIB
        p.ui = False
        p.verbosity = 0
        return p

    def __enter__(self) -> EmbeddedServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    async def __aenter__(self) -> EmbeddedServer:
        return self.start()

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def start_embedded(
    model_file: str | os.PathLike[str] | None = None,
    *,
    threads: int | None = None,
    ctx_size: int = 4096,
    parallel: int = 2,
    timeout: float = STARTUP_TIMEOUT,
) -> EmbeddedServer:
    """Start the embedded server on `model_file` (default:
    `models.default_model_path()`) and return it, running.

    `threads`: CPU threads for inference (default: all usable cores but one,
    at least 1); `ctx_size`: the context of one request in tokens;
    `parallel`: requests decoded together. Raises EmbeddedError.
    """
    if threads is not None and threads < 1:
        raise EmbeddedError(f"threads must be at least 1, not {threads}")
    if ctx_size < 256:
        raise EmbeddedError(f"ctx_size must be at least 256 tokens, not {ctx_size}")
    if parallel < 1:
        raise EmbeddedError(f"parallel must be at least 1, not {parallel}")
    path = Path(model_file).expanduser() if model_file is not None else models.default_model_path()
    server = EmbeddedServer(
        path.resolve(),
        threads=threads or default_threads(),
        ctx_size=ctx_size,
        parallel=parallel,
        timeout=timeout,
    )
    return server.start()


def _say(text: str) -> None:
    """A line on stderr, where the commands' progress goes (stdout is their output)."""
    sys.stderr.write(f"rbg: {text}\n")
    sys.stderr.flush()


def default_threads() -> int:
    """All usable cores but one, at least 1.

    ggml's worker threads spin while they wait for each other; when they
    outnumber the free cores (this process's own HTTP client and JSON work
    need one) every step waits for a descheduled thread, and decoding
    becomes several times slower rather than faster.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, cores - 1)


def _import_xllamacpp() -> ModuleType:
    try:
        import xllamacpp
    except ImportError:
        raise EmbeddedError(
            "the embedded local model needs the xllamacpp package\n"
            "  hint: pip install 'rubriclang[local]', or pass --base-url to use a running OpenAI-compatible server"
        ) from None
    module: ModuleType = xllamacpp  # untyped: its objects are the C++ server's
    return module


def _check_model_file(path: Path) -> None:
    if not path.is_file():
        raise EmbeddedError(models.pull_hint(path))
    try:
        with open(path, "rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise EmbeddedError(f"cannot read the model file {path}: {exc.strerror}") from None
    if magic != b"GGUF":
        raise EmbeddedError(f"{path} is not a GGUF model file (it does not start with the GGUF signature)")


def _wait_ready(base_url: str, timeout: float) -> str:
    """Poll until the server is healthy; return the id of its model."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    # trust_env=False: a proxy configured for the outside world must not
    # intercept loopback requests.
    with httpx.Client(base_url=base_url, timeout=5.0, trust_env=False) as http:
        while True:
            try:
                health = http.get("/health")
                if health.status_code == 200:
                    ids: list[str] = [m["id"] for m in http.get("/v1/models").json()["data"]]
                    if ids:
                        return ids[0]
                    last = "/v1/models lists no model"
                else:
                    last = f"/health answered HTTP {health.status_code}"
            except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
                last = type(exc).__name__
            if time.monotonic() >= deadline:
                raise EmbeddedError(f"the embedded server at {base_url} was not ready within {timeout:g} s ({last})")
            time.sleep(0.05)


__all__ = ["EmbeddedError", "EmbeddedServer", "default_threads", "start_embedded"]
