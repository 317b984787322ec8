"""Reading user TOML files (audit suites, compile specs) so that every
mistake can name its line: tomllib keeps no positions, so the lines of
tables and keys are found by scanning the text."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from rubriclang.safeio import open_regular

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(r"^\s*\"?([A-Za-z0-9_.-]+)\"?\s*=")


class Lines:
    """Finds the line of a key in a TOML text, table by table."""

    def __init__(self, path: str, text: str):
        self.path = path
        self.keys: dict[tuple[str, int, str], int] = {}
        self.tables: dict[tuple[str, int], int] = {}
        table, index = "", 0
        counts: dict[str, int] = {}
        for n, line in enumerate(text.splitlines(), 1):
            m = _HEADER.match(line)
            if m:
                table = m.group(2).replace('"', "")
                index = counts.get(table, 0)
                counts[table] = index + 1
                self.tables.setdefault((table, index), n)
                continue
            k = _KEY.match(line)
            if k:
                # A dotted key (`judge.timeout = 5`) is a key of a sub-table.
                parent, _, key = k.group(1).rpartition(".")
                sub = ".".join(p for p in (table, parent) if p)
                self.keys.setdefault((sub, index if sub == table else 0, key), n)

    def at(self, key: str | None = None, table: str = "", index: int = 0) -> str:
        """`path:line` of `key` in `table` (its `index`-th, for [[arrays]]),
        or of the sub-table `[table.key]`, else of the table, else just the path."""
        n = self.keys.get((table, index, key)) if key else None
        if not n and key:  # a key that is a table of its own (`[table.key]`)
            n = self.tables.get((f"{table}.{key}" if table else key, 0))
        n = n or self.tables.get((table, index))
        if not n and table:
            # An inline table (`judge = { ... }`): the line of its own key.
            parent, _, name = table.rpartition(".")
            n = self.keys.get((parent, 0, name))
        return f"{self.path}:{n}" if n else self.path


def read_toml(path: str, error: Callable[[str, str], Exception], what: str) -> tuple[dict[str, Any], str]:
    """(decoded data, text) of the TOML file at `path`; a file that cannot
    be read or is not TOML raises `error(where, message)`, `where` being
    `path:line` when the line is known; `what` names the file in messages."""
    try:
        with open_regular(path) as fh:
            data = fh.read()
    except OSError as exc:
        raise error(path, f"cannot read the {what}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(f"{path}:{line}", f"the {what} is not UTF-8 text (byte 0x{data[exc.start]:02x})") from None
    import tomllib  # here, not above: a command that reads no TOML file (a clean `rbg check`) never imports it

    try:
        return tomllib.loads(text), text
    except RecursionError:
        raise error(
            f"{path}:{deepest_line(text)}", f"the {what} nests arrays or inline tables too deeply to read"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        at: str | int | None = m.group(1) if m else len(text.splitlines()) if "end of document" in str(exc) else None
        where = f"{path}:{at}" if at else path
        detail = re.sub(r" \(at (line|end of).*\)", "", str(exc))
        raise error(where, f"not valid TOML: {detail}") from None


def deepest_line(text: str) -> int:
    """The line where brackets and braces nest deepest (strings not told
    apart: it points at a nesting too deep for tomllib, which recurses once
    per level; nothing else rests on it)."""
    depth = deepest = 0
    line = at = 1
    for ch in text:
        if ch == "\n":
            line += 1
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest, at = depth, line
        elif ch in "]}":
            depth -= 1
    return at
