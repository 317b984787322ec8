"""The command-line options of the LLM backend (`LLMOptions`, added to a
command by `llm_options`, or by `rbg compile`'s own set), with the checks of
its URL and API-key variable, and the server and sampling they name."""

from __future__ import annotations

import os
import re

import attrs
import click

from rubriclang.cli.errors import DataError
from rubriclang.cli.options import collect
from rubriclang.cli.params import FiniteFloat
from rubriclang.config import MAX_SEED, MAX_TOKENS

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@attrs.frozen
class LLMOptions:
    """The command-line settings of the LLM backend; a command without an
    option for a setting has its default here."""

    base_urls: tuple[str, ...]
    model: str | None
    api_key_env: str
    temperature: float
    max_tokens: int
    seed: int | None
    timeout: float
    deadline: float | None
    max_reply_bytes: int | None
    cache: str | None
    no_cache: bool
    model_file: str | None
    top_p: float | None = None
    logprobs: bool = False
    max_retries: int = 5
    per_endpoint: int = 16
    estimate: bool = False  # count what the command would spend, and call nothing

    def server(self, dry: bool = False, **embedded):
        """The server these options name (`llm.connect.Server`), its URLs
        and API key checked (UsageError, BadParameter, DataError); `dry`: an
        estimate's, which sends nothing, so reads no key. `embedded`: the
        embedded model's `context` and `parallel`."""
        from rubriclang.llm.connect import Server

        if self.base_urls and self.model_file:
            raise click.UsageError("--model-file runs the embedded model, which --base-url replaces: give one of them")
        urls = tuple(checked_url(u) for u in self.base_urls)
        key = api_key_from_env(self.api_key_env) if urls and not dry else None
        return Server(
            urls,
            self.model,
            key,
            self.model_file,
            self.timeout,
            self.max_retries,
            self.per_endpoint,
            deadline=self.deadline,
            max_reply_bytes=self.max_reply_bytes,
            **embedded,
        )


# Also `rbg compile`'s: every command that asks a server bounds a request's
# time in all and its answer's size.
deadline_option = click.option(
    "--deadline",
    type=FiniteFloat(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help=(
        "The longest one request may take in all, however slowly the server sends its answer; past it the request "
        "is retried like a timeout (default: 4 x --timeout)."
    ),
)
max_reply_option = click.option(
    "--max-reply-bytes",
    type=click.IntRange(min=1),
    default=None,
    metavar="BYTES",
    help="The largest answer read; a larger one fails its call, and is stored nowhere (default: 8388608, 8 MiB).",
)


def estimate_option(what: str):
    """`--estimate` of a command whose run is `what` (e.g. "the fit")."""
    return click.option(
        "--estimate",
        is_flag=True,
        help=f"Print the calls, tokens and cost {what} would spend, calling no model and writing nothing.",
    )


# Each option of the LLM backend once; those whose default or help differ
# by command (`rbg compile` asks for longer answers, and waits longer) are
# made by a function of what differs.
def base_url_option(help: str):
    return click.option("--base-url", "base_urls", multiple=True, metavar="URL", help=help)


model_option = click.option("--model", metavar="NAME", help="The model to ask (default: the server's only model).")


def api_key_env_option(help: str):
    return click.option("--api-key-env", metavar="NAME", default="OPENAI_API_KEY", show_default=True, help=help)


def max_tokens_option(default: int, help: str):
    return click.option(
        "--max-tokens", type=click.IntRange(1, MAX_TOKENS), default=default, show_default=True, help=help
    )


def timeout_option(default: float):
    return click.option(
        "--timeout",
        type=FiniteFloat(min=0, min_open=True),
        default=default,
        show_default=True,
        help="Seconds to wait for one answer.",
    )


def cache_option(help: str):
    return click.option("--cache", type=click.Path(dir_okay=False), default=None, help=help)


def model_file_option(help: str):
    return click.option("--model-file", type=click.Path(dir_okay=False), default=None, metavar="GGUF", help=help)


temperature_option = click.option(
    "--temperature", type=FiniteFloat(min=0), default=0.0, show_default=True, help="Sampling temperature."
)
seed_option = click.option(
    "--seed",
    type=click.IntRange(0, MAX_SEED),
    default=0,
    show_default=True,
    help="The sampling seed sent to the server.",
)
no_cache_option = click.option("--no-cache", is_flag=True, help="Neither read nor write the call cache.")

# A request's sampling, the same options with the same defaults wherever
# requests are made (`rbg run`, `rbg batch`): it is part of a request's body
# and of its cache key.
SAMPLING_OPTIONS = [
    temperature_option,
    click.option(
        "--top-p", type=FiniteFloat(0, 1, min_open=True), default=None, help="Nucleus sampling (default: not sent)."
    ),
    max_tokens_option(512, "The longest reply, in tokens."),
    seed_option,
]

_LLM_OPTIONS = [
    estimate_option("the command"),
    base_url_option(
        "An OpenAI-compatible server for the LLM criteria; repeat to spread the load. Default: the embedded local "
        "model."
    ),
    model_option,
    api_key_env_option("The environment variable holding the API key (the key itself is never a flag)."),
    *SAMPLING_OPTIONS,
    click.option(
        "--logprobs",
        is_flag=True,
        help="Read `score[lo, hi]` ratings as probability-weighted means of the scale's tokens (G-Eval).",
    ),
    timeout_option(120.0),
    deadline_option,
    max_reply_option,
    click.option(
        "--max-retries",
        type=click.IntRange(0, 100),
        default=5,
        show_default=True,
        help="Retries of a call after 429, 5xx, timeouts and dropped connections.",
    ),
    click.option(
        "--per-endpoint",
        type=click.IntRange(1, 4096),
        default=16,
        show_default=True,
        help="Requests in flight per server.",
    ),
    cache_option("The call cache (default: $XDG_CACHE_HOME/rubriclang/calls.sqlite, else ~/.cache/...)."),
    no_cache_option,
    model_file_option("The embedded model's GGUF file (used when no --base-url is given)."),
]
# Adds the LLM backend's options to a command; they reach it as one `llm: LLMOptions` argument.
llm_options = collect(LLMOptions, _LLM_OPTIONS, "llm")


def sampling_of(opts):
    """The requests' sampling (`llm.client.Sampling`) that options give:
    anything with `temperature`, `top_p`, `max_tokens` and `seed` (an
    `LLMOptions`, `rbg batch`'s requests)."""
    from rubriclang.llm.client import Sampling

    return Sampling(temperature=opts.temperature, top_p=opts.top_p, max_tokens=opts.max_tokens, seed=opts.seed)


def checked_url(url: str) -> str:
    """`url`, when it is a usable server URL (`llm.connect.parse_base_url`);
    else a --base-url error that quotes it without its credentials."""
    from rubriclang.urls import URLError, parse_base_url

    try:
        parse_base_url(url)
    except URLError as exc:
        raise click.BadParameter(
            exc.message + (f" ({exc.hint})" if exc.hint else ""), param_hint="--base-url"
        ) from None
    return url


def api_key_from_env(name: str) -> str | None:
    """The API key in the environment variable `name` (None when unset and
    --api-key-env was left at its default)."""
    # The key is read from the environment, never taken as a flag, and never
    # echoed: a value that is not a variable name may be the key itself.
    if not _ENV_NAME.fullmatch(name):
        raise click.BadParameter(
            "expects the NAME of an environment variable that holds the key, not the key", param_hint="--api-key-env"
        )
    from rubriclang.urls import api_key_problem

    key = os.environ.get(name)
    if user_set("api_key_env") and not key:
        raise DataError(f"the environment variable `{name}` (--api-key-env) is not set")
    problem = api_key_problem(key) if key else None
    if problem is not None:
        raise DataError(f"the API key in `{name}` (--api-key-env) cannot be sent: {problem}")
    return key or None


def user_set(param: str) -> bool:
    """Whether the user set the option, rather than leaving its default."""
    ctx = click.get_current_context(silent=True)
    source = ctx.get_parameter_source(param) if ctx is not None else None
    return source not in (None, click.core.ParameterSource.DEFAULT)
