"""What `run`, `replay` and `eval` share: loading a graph (its diagnostics
shown, exit 2 when it has errors), value tables, backends, and turning data
errors into clear messages."""

from __future__ import annotations

import click


class DataError(click.ClickException):
    """Unusable input (a graph with errors, malformed items): exit status 2."""

    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"Error: {self.message}", err=True)


def load_graph(path: str):
    """The checked graph of `path`; on errors prints them and exits 2."""
    from rubriclang.checker import check_source
    from rubriclang.diagnostics.render import render

    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read `{path}`: {exc}") from None
    result = check_source(text, path)
    if result.graph is None:
        errors = [d for d in result.diagnostics if d.is_error]
        click.echo(render("text", errors, sources={path: text}), err=True, nl=False)
        raise DataError(f"`{path}` has {len(errors)} error(s); fix them first (see `rbg check {path}`)")
    return result.graph


def data_error(exc) -> DataError:
    """An ItemError (file:line, message, hint) as a DataError."""
    hint = f"\n  hint: {exc.hint}" if getattr(exc, "hint", "") else ""
    return DataError(f"{exc.where}: {exc.message}{hint}")


def local_backend(annotations: str | None, recorded: str | None):
    from rubriclang.interp.items import ItemError
    from rubriclang.interp.local import LocalBackend
    from rubriclang.interp.tables import ValueTable

    try:
        ann = ValueTable.read(annotations) if annotations else None
        rec = ValueTable.read(recorded) if recorded else None
    except ItemError as exc:
        raise data_error(exc) from None
    except OSError as exc:
        raise DataError(f"cannot read `{exc.filename}`: {exc.strerror}") from None
    return LocalBackend(ann, rec)


def interpreter(graph, backend, concurrency: int):
    from rubriclang.interp.engine import BackendError, Interpreter

    try:
        return Interpreter(graph, [backend], concurrency)
    except BackendError as exc:
        raise DataError(str(exc)) from None


def validated(items, backend):
    """Items, each checked against the value tables (a table naming a
    candidate the item lacks is an error at the table's line)."""
    for item in items:
        backend.annotations.validate(item.id, item.candidate_ids)
        backend.recorded.validate(item.id, item.candidate_ids)
        yield item


mode_option = click.option(
    "--mode",
    type=click.Choice(["pointwise", "pairwise"]),
    default=None,
    help="Which readout to use (default: from each item's shape).",
)
annotations_option = click.option(
    "--annotations", type=click.Path(dir_okay=False), help="JSON Lines of human annotations (item, candidate, key, value)."
)
recorded_option = click.option(
    "--recorded", type=click.Path(dir_okay=False), help="JSON Lines of recorded judgments (item, candidate, key, value)."
)
concurrency_option = click.option(
    "--concurrency", type=click.IntRange(1, 4096), default=8, show_default=True, help="Criterion calls in flight at once."
)
