"""The error every command raises for unusable input (exit status 2), the
conversion of a located data error into it, and of a disk that cannot take
a command's output."""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator

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


# What no command can work around: the machine's disk, not the user's input.
_DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})


@contextlib.contextmanager
def disk_errors() -> Iterator[None]:
    """A full disk, an exhausted quota or a read-only file system that a
    command did not report itself becomes one clear error, exit status 2,
    never a traceback (each writer still leaves its output whole or absent)."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in _DISK_FULL:
            raise
        from rubriclang.safeio import describe_os_error

        where = f" `{exc.filename}`" if isinstance(exc.filename, str) else ""
        raise DataError(f"cannot write{where}: {describe_os_error(exc)}") from None
