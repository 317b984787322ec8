"""`IdentityMemo`: what was worked out from an object that is never changed
in place (a criterion, a rendered message tuple, a response format), kept by
that object's identity.

Hashing such an object would cost about what the memo saves; its id costs
nothing, but an id is reused once its object is gone. So each entry keeps
its object (the anchor) alive beside the value, and a lookup checks that the
anchor under the key is that very object. The memo is bounded: when full, it
starts again empty (a run uses a few entries, which are made again at once).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

_V = TypeVar("_V")


class IdentityMemo(Generic[_V]):
    """At most `size` values, each under a key and an anchor object."""

    __slots__ = ("_entries", "_size")

    def __init__(self, size: int) -> None:
        self._entries: dict[Hashable, tuple[object, _V]] = {}
        self._size = size

    def get(self, key: Hashable, anchor: object) -> _V | None:
        """The value kept under `key` with this very `anchor`, else None
        (no value kept is None)."""
        hit = self._entries.get(key)
        return hit[1] if hit is not None and hit[0] is anchor else None

    def pop(self, key: Hashable, anchor: object) -> _V | None:
        """`get`, and the entry is no longer kept."""
        hit = self._entries.get(key)
        if hit is None or hit[0] is not anchor:
            return None
        del self._entries[key]
        return hit[1]

    def put(self, key: Hashable, anchor: object, value: _V) -> _V:
        """Keep `value` under `key`, with `anchor` alive beside it; returns `value`."""
        if len(self._entries) >= self._size:
            self._entries.clear()
        self._entries[key] = (anchor, value)
        return value
