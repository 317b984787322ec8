"""`rbg compile SPEC.toml -o OUT.rbg`: compile a prose rubric with a model."""

from __future__ import annotations

import asyncio
import contextlib
import os

import attrs
import click

from rubriclang.cli.errors import DataError, data_error
from rubriclang.cli.estimate import echo_estimate, priced, prices_for, usage_text
from rubriclang.cli.llmoptions import (
    LLMOptions,
    api_key_env_option,
    base_url_option,
    cache_option,
    deadline_option,
    estimate_option,
    max_reply_option,
    max_tokens_option,
    model_file_option,
    model_option,
    no_cache_option,
    sampling_of,
    seed_option,
    temperature_option,
    timeout_option,
)
from rubriclang.cli.options import collect
from rubriclang.safeio import describe_os_error

# The embedded model reads the whole catalog, the spec and a repair; its
# default context (sized for judging) is too small for that.
_EMBEDDED_CONTEXT = 16384


# The options of --from-items: where each row's spec is.
_FIELD_OPTIONS = [
    click.option(
        "--rubric-field",
        "rubric",
        default=None,
        metavar="FIELD",
        help="With --from-items: the rubric's field (a dotted path; an object becomes its `key: value` lines).",
    ),
    click.option(
        "--input-field",
        "input",
        default="input",
        show_default=True,
        metavar="FIELD",
        help="With --from-items: the task input's field.",
    ),
    click.option(
        "--id-field", "id", default="id", show_default=True, metavar="FIELD", help="With --from-items: the id's field."
    ),
    click.option(
        "--reference-field",
        "reference",
        default=None,
        metavar="FIELD",
        help="With --from-items: fixed reference material shown to the compiler.",
    ),
    click.option(
        "--system-field",
        "system_prompt",
        default=None,
        metavar="FIELD",
        help="With --from-items: the task's system prompt.",
    ),
    click.option(
        "--scale", default="ordinal[1, 5]", show_default=True, help="With --from-items: the contract's scale."
    ),
]


def _item_fields(**fields):
    from rubriclang.llm.compiler.batch import ItemFields

    return ItemFields(**fields)


@attrs.frozen
class CompileOptions:
    """How `rbg compile` compiles: specs at once, what it retries, its
    summary's format, the log, the repairs and the decoding."""

    concurrency: int
    retry_failed: bool
    fmt: str
    log_path: str | None
    repairs: int
    constrained: bool


_COMPILE_OPTIONS = [
    click.option(
        "--concurrency",
        type=click.IntRange(min=1),
        default=1,
        show_default=True,
        help="With --out-dir: specs compiled at once.",
    ),
    click.option(
        "--retry-failed",
        is_flag=True,
        help="With --out-dir: compile again the specs that failed within the budget before.",
    ),
    click.option(
        "--format",
        "fmt",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help="With --out-dir: the summary's format.",
    ),
    click.option(
        "--log",
        "log_path",
        type=click.Path(dir_okay=False),
        default=None,
        help="The compile log, JSON Lines (default: next to --out, `OUT.compile.jsonl`).",
    ),
    click.option(
        "--repairs",
        type=click.IntRange(0, 20),
        default=3,
        show_default=True,
        help="How many times the checker's findings are fed back.",
    ),
    click.option(
        "--constrained",
        is_flag=True,
        help="Ask for JSON IR under the server's JSON-schema constrained decoding, then print it as source.",
    ),
]

# The compiler's server and sampling: `rbg run`'s options with the compiler's
# defaults (a longer answer, a longer wait) and no --top-p, --logprobs,
# --max-retries or --per-endpoint.
_LLM_OPTIONS = [
    estimate_option("the compilation"),
    base_url_option("An OpenAI-compatible server. Default: the embedded local model."),
    model_option,
    api_key_env_option("The environment variable holding the API key."),
    temperature_option,
    seed_option,
    max_tokens_option(2048, "The longest answer, in tokens."),
    timeout_option(600.0),
    deadline_option,
    max_reply_option,
    cache_option("The call cache (default: the one `rbg run` uses)."),
    no_cache_option,
    model_file_option("The embedded model's GGUF file (when no --base-url is given)."),
]


@click.command("compile")
@click.argument("spec", required=False, type=click.Path(dir_okay=False))
@click.option(
    "-o", "--out", type=click.Path(dir_okay=False), help="The .rbg file to write (only when compilation succeeds)."
)
@click.option(
    "--out-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Compile every spec of a JSON Lines SPEC (or of --from-items) into this folder, one `ID.rbg` each.",
)
@click.option(
    "--from-items",
    "from_items",
    type=click.Path(dir_okay=False),
    default=None,
    metavar="ITEMS",
    help="Build the specs from an items file whose rows carry their own rubric (with --out-dir).",
)
@collect(_item_fields, _FIELD_OPTIONS, "fields")
@collect(CompileOptions, _COMPILE_OPTIONS, "opts")
@collect(LLMOptions, _LLM_OPTIONS, "llm")
def compile_command(spec, out, out_dir, from_items, fields, opts: CompileOptions, llm: LLMOptions) -> None:
    """Compile the rubric described by SPEC (TOML) into a checked .rbg program.

    The model is shown the language, the catalog and the spec; the checker's
    findings on its program are fed back up to --repairs times. The first
    program that passes is formatted and written to --out; every attempt is
    recorded in the compile log. Exit status: 0 compiled; 1 no program
    passed within the budget (nothing is written); 2 a bad spec, or an
    unusable server or model.

    With --out-dir, SPEC is a JSON Lines file of specs (the TOML tables plus
    an `id`), or --from-items builds them from items that carry their own
    rubric; each compiles into OUT_DIR/ID.rbg with its log beside it, and a
    rerun resumes (docs/compiler.md). Exit status: 0 all compiled, 1 some
    failed or stopped on an error, 2 bad input.
    """
    from rubriclang.cli.backends import open_cache
    from rubriclang.llm.calls import Usage
    from rubriclang.llm.client import LLMError
    from rubriclang.llm.compiler import CompileLog, SpecError, compile_rubric, default_log_path, load_spec
    from rubriclang.llm.connect import ConnectError, Connections

    log_path, fmt, repairs, constrained = opts.log_path, opts.fmt, opts.repairs, opts.constrained

    if out_dir is not None or from_items is not None:
        if out is not None or log_path is not None:
            raise click.UsageError("--out-dir writes one graph and log per spec: give it without -o/--out and --log")
        if out_dir is None:
            raise click.UsageError("--from-items compiles many specs: give the folder with --out-dir")
        if (spec is None) == (from_items is None):
            raise click.UsageError(
                "give a JSON Lines SPECS file or --from-items ITEMS, not both"
                if spec
                else "give a JSON Lines SPECS file, or --from-items ITEMS"
            )
        if from_items is not None and not fields.rubric:
            raise click.UsageError("--from-items needs --rubric-field: the field of each row that holds its rubric")
        specs = _read_many(spec, from_items, fields)
    else:
        if spec is None:
            raise click.UsageError("give the SPEC to compile")
        if out is None and not llm.estimate:
            raise click.UsageError(
                "give the .rbg file to write with -o/--out (or --out-dir for a JSON Lines file of specs)"
            )
        try:
            parsed = load_spec(spec)
        except SpecError as exc:
            raise data_error(exc) from None
    prices = prices_for(spec or from_items)
    if llm.estimate:
        return _estimate(specs if out_dir is not None else [parsed], out_dir, opts, llm, prices)
    server, sampling = llm.server(context=_EMBEDDED_CONTEXT, parallel=1), sampling_of(llm)
    usage = Usage()
    if out_dir is None:
        log_path = log_path or default_log_path(out)
    with contextlib.ExitStack() as stack:
        _outputs(stack, out, log_path, out_dir, spec, from_items, llm.cache, llm.model_file)
        connections = Connections()
        stack.callback(connections.stop)
        try:
            client = connections.client(server)
        except ConnectError as exc:
            if exc.embedded:
                raise DataError(
                    f"no --base-url was given, so compiling needs the embedded model: {exc.message}"
                ) from None
            raise DataError(exc.message + (f"\n  hint: {exc.hint}" if exc.hint else "")) from None
        cache = None if llm.no_cache else open_cache(llm.cache)
        if cache is not None:
            stack.callback(cache.close)

        from rubriclang.cli.progress import Progress

        # One spec at a time can take minutes on a small model: the specs compiled this time, counted.
        progress = Progress("specs", lines=fmt == "text", every=1, command="rbg compile")
        stack.callback(progress.done)

        async def go():
            try:
                await client.check_model()
                if out_dir is not None:
                    from rubriclang.llm.compiler.batch import compile_many

                    progress.phase(f"compiling the specs not yet in {out_dir} (of {len(specs)})", None)
                    return await compile_many(
                        specs,
                        client,
                        out_dir,
                        concurrency=opts.concurrency,
                        retry_failed=opts.retry_failed,
                        progress=lambda _id, _what: progress.tick(),
                        repairs=repairs,
                        constrained=constrained,
                        sampling=sampling,
                        cache=cache,
                        usage=usage,
                    )
                progress.phase(f"compiling {spec} (up to {repairs} repairs)", None)
                assert log_path is not None  # a single spec's log defaults to beside -o (above)
                with CompileLog(log_path) as log:
                    return await compile_rubric(
                        parsed,
                        client,
                        repairs=repairs,
                        constrained=constrained,
                        sampling=sampling,
                        cache=cache,
                        log=log,
                        out=out,
                        usage=usage,
                    )
            finally:
                await connections.aclose()

        try:
            result = asyncio.run(go())
            progress.done()  # its line closed before the summary
        except LLMError as exc:
            raise DataError(
                _explain(exc, constrained) + (f"\n  log: {log_path}" if log_path and os.path.exists(log_path) else "")
            ) from None
        except OSError as exc:
            where = exc.filename or out or out_dir  # an error of a write may name no file
            raise DataError(f"cannot write `{where}`: {describe_os_error(exc)}") from None
    spent = priced(usage.to_json(), client.model, prices)
    if out_dir is not None:
        _many_summary(specs, out_dir, result, fmt, spent)
        return
    n = len(result.attempts)
    if result.ok:
        click.echo(f"Compiled {spec} -> {out} in {n} attempt{'s' if n != 1 else ''}; log: {log_path}")
        click.echo(usage_text(spent))
        return
    click.echo(
        f"Compilation failed: no program passed the checker in {n} attempt{'s' if n != 1 else ''}; nothing written.",
        err=True,
    )
    click.echo(f"  log: {log_path}", err=True)
    click.echo(usage_text(spent), err=True)
    raise SystemExit(1)


def _estimate(specs, out_dir: str | None, opts: CompileOptions, llm: LLMOptions, prices: dict) -> None:
    """`rbg compile --estimate`: each spec to compile (with --out-dir, those
    a run would: not compiled there yet) through the compiler, its requests
    tallied, not sent; every answer unreadable, so `at most` counts every
    repair."""
    from rubriclang.llm.compiler import compile_rubric
    from rubriclang.llm.compiler.batch import to_compile
    from rubriclang.llm.connect import ConnectError, Connections
    from rubriclang.llm.estimate import Estimate

    estimate = Estimate()
    estimate.phase = "compile"
    try:
        client = Connections(estimate).client(llm.server(dry=True))
    except ConnectError as exc:
        raise DataError(exc.message + (f"\n  hint: {exc.hint}" if exc.hint else "")) from None
    notes = [f"at most: every answer repaired, --repairs {opts.repairs} times (1 + {opts.repairs} calls a spec)"]
    if out_dir is not None:
        todo = [s for s in specs if to_compile(out_dir, s, opts.retry_failed)]
        if len(todo) < len(specs):
            notes.append(f"{len(specs) - len(todo)} of {len(specs)} specs are done in {out_dir}: not counted")
        specs = [s.spec for s in todo]

    sampling = sampling_of(llm)

    async def go():
        for s in specs:
            await compile_rubric(s, client, repairs=opts.repairs, constrained=opts.constrained, sampling=sampling)

    asyncio.run(go())
    echo_estimate(estimate, ["compile"], prices, notes, opts.fmt, llm.max_retries)


def _outputs(stack, out, log_path, out_dir, spec, from_items, cache_path, model_file) -> None:
    """Lock what the command writes (-o and --log, or the --out-dir folder),
    once it is known to be none of what it reads (`command_output`)."""
    from rubriclang.cli.outputs import command_output, same_file

    inputs = [
        ("spec file", spec),
        ("--from-items file", from_items),
        ("call cache", cache_path),
        ("--model-file", model_file),
    ]
    if out_dir is not None:
        try:
            os.makedirs(out_dir, exist_ok=True)
        except OSError as exc:
            raise DataError(f"cannot write `{out_dir}`: {describe_os_error(exc)}") from None
        stack.enter_context(command_output(out_dir, inputs, "--out-dir"))
        return
    if same_file(log_path, out):
        raise click.UsageError("--log and -o/--out name the same file: give the log another path")
    for path, option in ((out, "-o"), (log_path, "--log")):
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        except OSError as exc:
            raise DataError(f"cannot write `{path}`: {describe_os_error(exc)}") from None
        stack.enter_context(command_output(path, inputs, option))


def _read_many(spec, from_items, fields):
    """The specs of a JSON Lines file, or built from items (where `fields`,
    an `ItemFields`, say); bad input exits 2."""
    from rubriclang.llm.compiler import SpecError
    from rubriclang.llm.compiler.batch import read_specs, specs_from_items

    try:
        if from_items is not None:
            return specs_from_items(from_items, fields)
        return read_specs(spec)
    except SpecError as exc:
        raise data_error(exc) from None


def _many_summary(specs, out_dir: str, this_run: dict, fmt: str, spent: dict) -> None:
    import json

    from rubriclang.llm.compiler.batch import summarize, summary_text

    s = summarize(specs, out_dir, this_run)
    if fmt == "json":
        click.echo(json.dumps({**s, "llm": spent}, sort_keys=True, indent=2))
    else:
        click.echo(summary_text(s) + "\n" + usage_text(spent))
    if s["compiled"] != s["specs"]:
        raise SystemExit(1)


def _explain(exc, constrained: bool) -> str:
    hint = {
        "unreachable": "is the server running, and is --base-url right?",
        "timeout": "the server is up but slow: try a larger --timeout (or --deadline)",
        "auth": "put the key in the environment variable named by --api-key-env",
        "unknown_model": "name a model the server has with --model",
        "unsupported": "the server refuses JSON-schema constrained output: compile without --constrained"
        if constrained
        else None,
    }.get(exc.kind)
    return "the model could not be asked: " + exc.message + (f"\n  hint: {hint}" if hint else "")
