"""Loading what `run`, `replay`, `eval` and the other commands judge: a
checked graph (its diagnostics shown, exit 2 when it has errors), a folder
of compiled graphs, and items checked against the value tables as they pass."""

from __future__ import annotations

import os

import click

from rubriclang.cli.errors import DataError, data_error


def load_graph(path: str):
    """The checked graph of `path`; on errors prints them and exits 2."""
    from rubriclang.checker import check_source
    from rubriclang.diagnostics.render import render
    from rubriclang.errors import LocatedError, decode_utf8
    from rubriclang.safeio import open_regular

    try:
        with open_regular(path) as fh:
            text = decode_utf8(fh.read(), path)
    except OSError as exc:
        raise DataError(f"cannot read `{path}`: {exc.strerror or exc}") from None
    except LocatedError as exc:
        raise data_error(exc) from None
    result = check_source(text, path)
    if result.graph is None:
        errors = [d for d in result.diagnostics if d.is_error]
        click.echo(render("text", errors, sources={**result.sources, path: text}), err=True, nl=False)
        raise DataError(f"`{path}` has {len(errors)} error(s); fix them first (see `rbg check {path}`)")
    return result.graph


def load_graph_set(path: str, fallback: str | None):
    """The compiled graphs of the folder `path` (rubriclang.interp.graphset),
    with the fallback (a .rbg path or `abstain`); bad input exits 2."""
    from rubriclang.interp.graphset import ABSTAIN, GraphSetError
    from rubriclang.interp.graphset import load_graph_set as load

    if fallback not in (None, ABSTAIN) and not os.path.isfile(fallback):
        raise DataError(f"--fallback `{fallback}`: no such graph file (give a .rbg file, or `abstain`)")
    try:
        return load(path, fallback, load_graph)
    except GraphSetError as exc:
        raise data_error(exc) from None
    except OSError as exc:
        raise DataError(f"cannot read `{path}`: {exc.strerror or exc}") from None


class ValidatedItems:
    """Items, each checked against the value tables as it passes (a table
    naming a candidate the item lacks is an error at the table's line).
    Remembers the ids it saw, so that, once every item has passed, table
    rows for items the file does not have are reported (`warn_unknown`)."""

    def __init__(self, items, backend):
        self.items, self.backend = items, backend
        self.seen: set[str] = set()
        self.count = 0

    def __iter__(self):
        tables = (self.backend.annotations, self.backend.recorded)
        track = any(t.lines for t in tables)  # without table rows, no id need be kept
        for item in self.items:
            for table in tables:
                table.validate(item.id, item.candidate_ids)
            if track:
                self.seen.add(item.id)
            self.count += 1
            yield item

    def check_not_empty(self, items_path: str) -> None:
        """DataError when no item passed: an empty file, or a pipe whose
        writer failed, must not look like a finished run."""
        if not self.count:
            raise DataError(f"`{items_path}` holds no items (is it empty, or did the command feeding it fail?)")

    def warn_unknown(self, items_path: str) -> None:
        """A warning on stderr, with counts, for each table with rows naming
        items that are not in `items_path`."""
        for table, option in ((self.backend.annotations, "--annotations"), (self.backend.recorded, "--recorded")):
            rows, items, first = table.unknown(self.seen)
            if rows:
                click.echo(
                    f"warning: {rows} row(s) of `{table.path}` ({option}) name {items} item(s) that `{items_path}`"
                    f" does not have, first at {first}; they were not used (are the item ids right?)",
                    err=True,
                )
