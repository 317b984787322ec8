"""The error every reader of user data raises: where (`path:line`), what is
wrong, and a hint at the fix. Each kind of input subclasses it, so a command
can report any of them the same way, with no traceback."""

from __future__ import annotations


class LocatedError(Exception):
    """Bad input at `where` (`path:line`, or a path, or an item id)."""

    def __init__(self, where: str, message: str, hint: str = ""):
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message
        self.hint = hint
