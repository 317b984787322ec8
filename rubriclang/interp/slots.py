"""`Slots`: at most N criterion calls running at once, in the order asked.

What an `asyncio.Semaphore` around each call would do, at less cost per
call: a call that must wait is kept as what to start, not as a task blocked
on a waiter future, so it costs no task and no wake-up until a slot is free,
and its result goes to its owner by a callback, not through a gather. The
interpreter makes one call per LLM judgment, and at the bound of its
concurrency what each call costs is what limits throughput.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Coroutine
from typing import Any, Protocol


class Owner(Protocol):
    """What submits calls: an item whose judgments are being made."""

    def wanted(self) -> bool:
        """False once the owner's result is no longer awaited (cancelled):
        its calls still waiting are then never started."""

    def call(self, index: int) -> Coroutine[Any, Any, Any]:
        """The coroutine of call `index`, started when a slot is free."""

    def landed(self, index: int, task: asyncio.Task[Any]) -> None:
        """Call `index` finished as `task` (done, possibly cancelled)."""


class Slots:
    """Runs calls at most `limit` at a time, each started as a slot frees
    in the order submitted (first come, first served, as a semaphore's
    waiters are). Shared by several interpreters, it bounds their calls in
    flight together."""

    __slots__ = ("_running", "_waiting", "limit")

    def __init__(self, limit: int):
        self.limit = max(1, limit)
        self._running: dict[asyncio.Task[Any], tuple[Owner, int]] = {}
        self._waiting: collections.deque[tuple[Owner, int]] = collections.deque()

    def submit(self, owner: Owner, index: int) -> None:
        """Start `owner.call(index)` now if a slot is free, else when one is."""
        if len(self._running) < self.limit and not self._waiting:
            self._start(owner, index)
        else:
            self._waiting.append((owner, index))

    def cancel(self, owner: Owner) -> None:
        """Cancel `owner`'s calls running now (those waiting are dropped
        when their turn comes, as `owner.wanted()` is then False)."""
        for task, (o, _) in list(self._running.items()):
            if o is owner:
                task.cancel()

    def _start(self, owner: Owner, index: int) -> None:
        task = asyncio.get_running_loop().create_task(owner.call(index))
        self._running[task] = (owner, index)
        task.add_done_callback(self._landed)

    def _landed(self, task: asyncio.Task[Any]) -> None:
        owner, index = self._running.pop(task)
        waiting = self._waiting
        while waiting and len(self._running) < self.limit:
            o, i = waiting.popleft()
            if o.wanted():
                self._start(o, i)
        owner.landed(index, task)
