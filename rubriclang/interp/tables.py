"""Value tables for `human.annotation` and `recorded.value`, read from files.

A file is JSON Lines, one value per line:
`{"item": ID, "candidate": CID?, "key": KEY, "value": VALUE}` (candidate
defaults to the pointwise candidate). Graphs name only the key; the run
supplies the file, so graphs never embed data paths.
"""

from __future__ import annotations

from collections.abc import Collection, Container
from typing import Any

from rubriclang.interp.items import POINTWISE_CANDIDATE, ItemError
from rubriclang.jsonl import read_jsonl


class ValueTable:
    """(item id, candidate id, key) -> value."""

    def __init__(self, values: dict[tuple[str, str, str], Any] | None = None, path: str | None = None):
        self.values = values or {}
        self.path = path
        # item -> [(candidate, `path:line`)], to name the line of a value for a candidate the item lacks
        self.lines: dict[str, list[tuple[str, str]]] = {}

    def get(self, item: str, candidate: str, key: str) -> tuple[bool, Any]:
        k = (item, candidate, key)
        if k in self.values:
            return True, self.values[k]
        return False, None

    def validate(self, item_id: str, candidates: Collection[str]) -> None:
        """Raise ItemError (at the table's line) if it names a candidate the item lacks."""
        for cid, where in self.lines.get(item_id, ()):
            if cid not in candidates:
                raise ItemError(
                    where,
                    f"candidate `{cid}` of item `{item_id}` is not one of the item's candidates",
                    f"the item's candidates: {', '.join(candidates)}",
                )

    def unknown(self, ids: Container[str]) -> tuple[int, int, str]:
        """(rows, items, `path:line` of the first such row): the rows naming
        an item that is not in `ids`."""
        missing = [i for i in self.lines if i not in ids]
        rows = sum(len(self.lines[i]) for i in missing)
        return rows, len(missing), self.lines[missing[0]][0][1] if missing else ""

    @classmethod
    def read(cls, path: str) -> ValueTable:
        """Read a table; raises ItemError naming the file and line on bad input."""
        table = cls({}, path)
        values = table.values
        for where, obj in read_jsonl(path, ItemError):
            if not isinstance(obj, dict) or "item" not in obj or "key" not in obj or "value" not in obj:
                raise ItemError(where, 'each line needs "item", "key" and "value" (and optionally "candidate")')
            k = (str(obj["item"]), str(obj.get("candidate", POINTWISE_CANDIDATE)), str(obj["key"]))
            if k in values:
                raise ItemError(where, f"a second value for item `{k[0]}`, candidate `{k[1]}`, key `{k[2]}`")
            values[k] = obj["value"]
            table.lines.setdefault(k[0], []).append((k[1], where))
        return table
