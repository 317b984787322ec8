"""The error every reader of user data raises: where (`path:line`), what is
wrong, and a hint at the fix. Each kind of input subclasses it, so a command
can report any of them the same way, with no traceback."""

from __future__ import annotations

from collections.abc import Callable


class LocatedError(Exception):
    """Bad input at `where` (`path:line`, or a path, or an item id)."""

    def __init__(self, where: str, message: str, hint: str = ""):
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message
        self.hint = hint


def decode_utf8(data: bytes, path: str, error: Callable[..., Exception] = LocatedError, first_line: int = 1) -> str:
    """`data` as UTF-8 text; otherwise `error` at `path:line` (`data` starting
    on line `first_line`) naming the first byte that is not, and its column."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + data.count(b"\n", 0, exc.start)
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        raise error(
            f"{path}:{line}",
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at column {column})",
            "save the file as UTF-8",
        ) from None
