"""`rbg compile SPEC.toml -o OUT.rbg`: compile a prose rubric with a model."""

from __future__ import annotations

import asyncio
import contextlib
import os

import click

from rubriclang.cli.execution import DataError, deadline_option, max_reply_option
from rubriclang.cli.params import FiniteFloat

# The embedded model reads the whole catalog, the spec and a repair; its
# default context (sized for judging) is too small for that.
_EMBEDDED_CONTEXT = 16384


@click.command("compile")
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option("-o", "--out", required=True, type=click.Path(dir_okay=False), help="The .rbg file to write (only when compilation succeeds).")
@click.option("--log", "log_path", type=click.Path(dir_okay=False), default=None, help="The compile log, JSON Lines (default: next to --out, `OUT.compile.jsonl`).")
@click.option("--repairs", type=click.IntRange(0, 20), default=3, show_default=True, help="How many times the checker's findings are fed back.")
@click.option("--constrained", is_flag=True, help="Ask for JSON IR under the server's JSON-schema constrained decoding, then print it as source.")
@click.option("--base-url", "base_urls", multiple=True, metavar="URL", help="An OpenAI-compatible server. Default: the embedded local model.")
@click.option("--model", metavar="NAME", help="The model to ask (default: the server's only model).")
@click.option("--api-key-env", metavar="NAME", default="OPENAI_API_KEY", show_default=True, help="The environment variable holding the API key.")
@click.option("--temperature", type=FiniteFloat(min=0), default=0.0, show_default=True, help="Sampling temperature.")
@click.option("--seed", type=int, default=0, show_default=True, help="The sampling seed sent to the server.")
@click.option("--max-tokens", type=click.IntRange(min=1), default=2048, show_default=True, help="The longest answer, in tokens.")
@click.option("--timeout", type=FiniteFloat(min=0, min_open=True), default=600.0, show_default=True, help="Seconds to wait for one answer.")
@deadline_option
@max_reply_option
@click.option("--cache", "cache_path", type=click.Path(dir_okay=False), default=None, help="The call cache (default: the one `rbg run` uses).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the call cache.")
@click.option("--model-file", type=click.Path(dir_okay=False), default=None, metavar="GGUF", help="The embedded model's GGUF file (when no --base-url is given).")
def compile_command(spec, out, log_path, repairs, constrained, base_urls, model, api_key_env, temperature, seed, max_tokens, timeout, deadline, max_reply_bytes, cache_path, no_cache, model_file) -> None:
    """Compile the rubric described by SPEC (TOML) into a checked .rbg program.

    The model is shown the language, the catalog and the spec; the checker's
    findings on its program are fed back up to --repairs times. The first
    program that passes is formatted and written to --out; every attempt is
    recorded in the compile log. Exit status: 0 compiled; 1 no program
    passed within the budget (nothing is written); 2 a bad spec, or an
    unusable server or model.
    """
    from rubriclang.cli.execution import api_key_from_env, checked_url, open_cache
    from rubriclang.llm.client import LLMError, Sampling
    from rubriclang.llm.compiler import DEFAULT_SAMPLING, CompileLog, SpecError, compile_rubric, default_log_path, load_spec
    from rubriclang.llm.connect import ConnectError, Connections, Server

    try:
        parsed = load_spec(spec)
    except SpecError as exc:
        raise DataError(str(exc)) from None
    if base_urls and model_file:
        raise click.UsageError("--model-file runs the embedded model, which --base-url replaces: give one of them")
    sampling = Sampling(temperature=temperature, top_p=DEFAULT_SAMPLING.top_p, max_tokens=max_tokens, seed=seed)
    log_path = log_path or default_log_path(out)
    with contextlib.ExitStack() as stack:
        urls = tuple(checked_url(u) for u in base_urls)
        key = api_key_from_env(api_key_env) if urls else None
        connections = Connections()
        stack.callback(connections.stop)
        try:
            client = connections.client(Server(urls, model, key, model_file, timeout, deadline=deadline, max_reply_bytes=max_reply_bytes, context=_EMBEDDED_CONTEXT, parallel=1))
        except ConnectError as exc:
            if exc.embedded:
                raise DataError(f"no --base-url was given, so compiling needs the embedded model: {exc.message}") from None
            raise DataError(exc.message + (f"\n  hint: {exc.hint}" if exc.hint else "")) from None
        cache = None if no_cache else open_cache(cache_path)
        if cache is not None:
            stack.callback(cache.close)

        async def go():
            try:
                await client.check_model()
                with CompileLog(log_path) as log:
                    return await compile_rubric(
                        parsed, client, repairs=repairs, constrained=constrained, sampling=sampling, cache=cache, log=log, out=out
                    )
            finally:
                await connections.aclose()

        try:
            result = asyncio.run(go())
        except LLMError as exc:
            raise DataError(_explain(exc, constrained) + (f"\n  log: {log_path}" if os.path.exists(log_path) else "")) from None
        except OSError as exc:
            raise DataError(f"cannot write `{exc.filename}`: {exc.strerror}") from None
    n = len(result.attempts)
    if result.ok:
        click.echo(f"Compiled {spec} -> {out} in {n} attempt{'s' if n != 1 else ''}; log: {log_path}")
        return
    click.echo(f"Compilation failed: no program passed the checker in {n} attempt{'s' if n != 1 else ''}; nothing written.", err=True)
    click.echo(f"  log: {log_path}", err=True)
    raise SystemExit(1)


def _explain(exc, constrained: bool) -> str:
    hint = {
        "unreachable": "is the server running, and is --base-url right?",
        "timeout": "the server is up but slow: try a larger --timeout (or --deadline)",
        "auth": "put the key in the environment variable named by --api-key-env",
        "unknown_model": "name a model the server has with --model",
        "unsupported": "the server refuses JSON-schema constrained output: compile without --constrained" if constrained else None,
    }.get(exc.kind)
    return "the model could not be asked: " + exc.message + (f"\n  hint: {hint}" if hint else "")
