"""What the commands write besides their results: the summary lines of a
resumed output and of the LLM usage, and the lock on an output."""

from __future__ import annotations

import contextlib

from rubriclang.cli.errors import DataError


def earlier_text(out: str, counts: dict[str, int]) -> str:
    """The summary line of what a resumed --out already held."""
    return f"  earlier in {out}: ok {counts['ok']}   abstain {counts['abstain']}   error {counts['error']}" + (
        "  (`rbg run --retry-errors` judges them again)" if counts["error"] else ""
    )


def usage_json(backend) -> dict | None:
    """What the LLM backend spent, for a run's summary: in all, and per
    model profile when the graph names profiles."""
    if backend is None:
        return None
    out = {"model": backend.client.model, **backend.usage.to_json()}
    if len(backend.profiles) > 1:
        out["profiles"] = {
            name or "default": {"model": model, **usage.to_json()}
            for name, (model, usage) in backend.usage_by_profile().items()
            if name is not None or usage.calls or usage.cache_hits
        }
    cache = backend.cache
    if cache is not None and cache.write_error is not None:
        out["cache_error"] = cache.write_error  # the calls after it were made, kept, and not cached
    return out


def usage_text(usage: dict) -> str:
    lines = []
    for name, u in (usage.get("profiles") or {"": usage}).items():
        label = f"LLM `{u['model']}`" + (f" (profile `{name}`)" if name else "")
        lines.append(
            f"  {label}: {u['calls']} calls, {u['cache_hits']} cache hits"
            + (f", {u['shared']} shared with a call in flight" if u.get("shared") else "")
            + ";"
            f" tokens {u['prompt_tokens']} prompt, {u['completion_tokens']} completion"
        )
    if usage.get("cache_error"):
        lines.append(f"  call cache: not written since it failed ({usage['cache_error']}); every answer is kept")
    return "\n".join(lines)


def locked_output(out: str) -> contextlib.ExitStack:
    """The exclusive lock of an output (rubriclang.safeio), to use as a
    context manager; another process holding it, or an output that cannot
    be written, is a DataError."""
    from rubriclang.safeio import OutputBusy, describe_os_error, output_lock

    stack = contextlib.ExitStack()
    try:
        stack.enter_context(output_lock(out))
    except OutputBusy as exc:
        raise DataError(f"{exc.message}; wait for it to finish, or give another --out") from None
    except OSError as exc:
        raise DataError(f"cannot write `{out}`: {describe_os_error(exc)}") from None
    return stack
