"""Options objects: a family of click options declared once and handed to a
command as one value (`collect`), so that a command's function takes a few
objects rather than each option by position; and the judging options
(`JudgingOptions`) of the commands that judge items."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from rubriclang.cli.params import annotations_option, concurrency_option, mode_option, recorded_option


def collect(make: Callable[..., Any], options: Sequence[Callable], name: str, **fixed: Any):
    """A decorator that adds the click `options` to a command, in this order,
    and hands their values to it as one argument `name`: `make(**values,
    **fixed)`, where `make` is an options class (or a function that builds
    one) and `fixed` gives the fields that this command has no option for."""
    fields = option_names(options)

    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            values = {field: kwargs.pop(field) for field in fields}
            return f(*args, **{name: make(**values, **fixed)}, **kwargs)

        for option in reversed(options):
            wrapper = option(wrapper)
        return wrapper

    return decorate


def option_names(options: Sequence[Callable]) -> list[str]:
    """The parameter names of click `options` (option decorators)."""

    def probe() -> None: ...

    for option in options:
        option(probe)
    return [p.name for p in getattr(probe, "__click_params__", [])]


@attrs.frozen
class JudgingOptions:
    """How a command judges items: the readout mode, the criterion calls in
    flight, and the value tables of the local criteria."""

    mode: str | None
    concurrency: int
    annotations: str | None
    recorded: str | None


judging_options = collect(
    JudgingOptions, [mode_option, concurrency_option, annotations_option, recorded_option], "judging"
)
