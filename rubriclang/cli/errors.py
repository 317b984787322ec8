"""The error every command raises for unusable input (exit status 2), and
the conversion of a located data error into it."""

from __future__ import annotations

import click


class DataError(click.ClickException):
    """Unusable input (a graph with errors, malformed items): exit status 2."""

    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"Error: {self.message}", err=True)


def data_error(exc) -> DataError:
    """An ItemError (file:line, message, hint) as a DataError."""
    hint = f"\n  hint: {exc.hint}" if getattr(exc, "hint", "") else ""
    return DataError(f"{exc.where}: {exc.message}{hint}")
