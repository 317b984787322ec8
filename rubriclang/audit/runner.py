"""Judging every item and every accepted variant `repeats` times, resumably.

Each judgment is one line of `runs.jsonl`: which item, which variant (null
for the original), which repeat, and the interpreter's trace record. Lines
are written in a fixed order (item, variant, repeat), whatever order the
judgments finish in, and flushed one by one, so an interrupted audit keeps
all it finished and a rerun judges only what is missing.

What is kept of each judgment for the report is its compact form
(`Compact`): the readout's status and decision and each node's value, the
parts many judgments share held once, in one table keyed by (item,
variant, repeat) (`Records`), so that an audit's memory grows by little
more than a key and a reference per judgment.

Repeat `r` of an LLM judge samples with the judge's seed + r: repeats are
distinct samples and distinct cache entries, while a rerun of the same
repeat is answered from the cache.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
from collections.abc import Callable, Iterable
from typing import Any, TextIO

import attrs

from rubriclang.audit.seal import Sealed
from rubriclang.canonical import canonical_json
from rubriclang.checker.graph import CheckedGraph
from rubriclang.interp.engine import Interpreter
from rubriclang.interp.graphset import Resolved
from rubriclang.interp.items import Item
from rubriclang.interp.trace import STALE_SHOWN, item_hash
from rubriclang.jsonl import JsonLines
from rubriclang.safeio import cut_torn_line, write_atomic

SCHEMA = "rubriclang.audit.run/1"


class RunsError(Exception):
    """`runs.jsonl` has a line that is not an audit run record."""


@attrs.frozen
class Arm:
    """What one set of repeats judges: an item as it is (`variant` None) or
    a variant of it, with the judge patched by `patch` or not. The item, and
    the variant's changes, are read from the sealed suite when it is judged
    (`subject`), not held for the whole audit."""

    item: str
    variant: str | None
    patch: str | None
    sealed: Sealed

    @property
    def key(self) -> tuple[str, str | None]:
        return (self.item, self.variant)

    @property
    def subject(self) -> Item:
        item = self.sealed.items_by_id[self.item]
        if self.variant is None or self.patch is not None:  # a patch changes the judge, never the item
            return item
        return self.sealed.variants_by_id[self.variant].apply(item)


# (item, variant or None, repeat) -> a judgment's compact trace (`Compact`).
Records = dict[tuple[str, str | None, int], dict]

# Distinct parts shared at most; past it a part is kept unshared, so the
# table of shared parts stays small whatever the judgments' values.
_SHARED_MAX = 4096


class Shared:
    """Equal JSON values held once: `share(part)` is the first equal part
    it was given (never to be changed), or `part` itself."""

    def __init__(self) -> None:
        self._shared: dict[str, Any] = {}

    def __call__(self, part: Any) -> Any:
        key = canonical_json(part)
        got = self._shared.get(key)
        if got is not None:
            return got
        if len(self._shared) < _SHARED_MAX:
            self._shared[key] = part
        return part


class Compact:
    """A trace record reduced to what the report reads of it (`readout`'s
    status and decision, `candidates`, each criterion's value or error and
    each operator's value), with equal parts shared: a rule judge's
    judgments take a few distinct forms, each then held once."""

    def __init__(self) -> None:
        self._share = Shared()

    def __call__(self, trace: dict) -> dict:
        readout = trace["readout"]
        criteria = {
            name: {cid: {"error": True} if j.get("error") else {"value": j.get("value")} for cid, j in per.items()}
            for name, per in (trace.get("criteria") or {}).items()
        }
        return self._share(
            {
                "readout": self._share({"status": readout.get("status"), "decision": readout.get("decision")}),
                "candidates": self._share(list(trace.get("candidates") or ())),
                "criteria": self._share(criteria),
                "operators": self._share(trace.get("operators") or {}),
            }
        )


class RunStore:
    """`runs.jsonl`: read back for resuming, appended to while running."""

    def __init__(self, path: str):
        self.path = path
        self._fh: TextIO | None = None
        self.lines: dict[tuple[str, str | None, int], int] = {}  # (item, variant, repeat) -> line, once loaded
        self.hashes: dict[tuple[str, str | None, int], str] = {}  # (item, variant, repeat) -> item_hash, once loaded
        self.compact = Compact()

    def load(self, drop_failed: bool = False) -> Records:
        """(item, variant, repeat) -> compact trace (`Compact`). A torn last line (a killed
        run) is cut off in place; with `drop_failed`, failed judgments are
        removed from the file (rewritten atomically) so that they are judged
        again. Either way no complete line is ever lost, whenever a kill comes."""
        if not os.path.exists(self.path):
            return {}
        cut_torn_line(self.path)
        out: Records = {}
        lines: dict[tuple[str, str | None, int], tuple[int, int]] = {}
        kept: list[int] = []
        dropped = False
        # After the cut no line is torn: every one must be a record.
        records = JsonLines(self.path, self._error, what="run record", keep_torn=True)
        for where, rec in records:
            self._check(rec, where)
            if drop_failed and rec["trace"]["readout"].get("status") == "error":
                dropped = True
                continue
            key = (rec["item"], rec["variant"], rec["repeat"])
            trace = rec["trace"]
            out[key] = self.compact(trace)
            if "item_hash" in trace:
                self.hashes[key] = trace["item_hash"]
            kept.append(records.count)
            lines[key] = (records.count, len(kept))
        if dropped:
            self._keep(set(kept))
        # Lines as the file now has them: renumbered when it was rewritten.
        self.lines = {k: kept_at if dropped else n for k, (n, kept_at) in lines.items()}
        return out

    def _keep(self, kept: set[int]) -> None:
        """Rewrite the file (atomically) with only the lines numbered in `kept`, byte for byte."""
        with open(self.path, "rb") as fh:
            data = b"".join(line for n, line in enumerate(fh, 1) if n in kept)
        write_atomic(self.path, data)

    def check_subjects(self, arms: Iterable[Arm]) -> None:
        """RunsError when a loaded judgment is of other content than its
        arm's subject now (its trace's `item_hash`, kept by `load`): resuming would keep
        judgments of what is no longer audited. Judgments recorded without
        an `item_hash` cannot be checked, and are kept."""
        recorded: dict[tuple[str, str | None], list[int]] = {}
        for item, variant, r in self.hashes:
            recorded.setdefault((item, variant), []).append(r)
        stale = []
        for arm in arms:
            if arm.key not in recorded:
                continue
            now = item_hash(arm.subject)
            for r in sorted(recorded[arm.key]):
                if self.hashes[(arm.item, arm.variant, r)] != now:
                    stale.append((self.lines.get((arm.item, arm.variant, r), 0), arm))
        if stale:
            stale.sort(key=lambda s: s[0])
            shown = ", ".join(f"line {n} (`{a.variant or a.item}`)" for n, a in stale[:STALE_SHOWN])
            raise RunsError(
                f"{self.path}:{stale[0][0]}: {len(stale)} judgment(s) are of other content than the item or variant "
                f"of the sealed suite they are recorded for: {shown}"
                + (f" and {len(stale) - STALE_SHOWN} more" if len(stale) > STALE_SHOWN else "")
            )

    @staticmethod
    def _error(where: str, message: str, hint: str = "") -> RunsError:
        return RunsError(f"{where}: {message}")

    @staticmethod
    def _check(rec: Any, where: str) -> None:
        """RunsError at `where` unless `rec` is an audit run record."""
        if not isinstance(rec, dict) or rec.get("schema") != SCHEMA:
            raise RunsError(f"{where}: not a {SCHEMA} record")
        trace = rec.get("trace")
        ok = (
            isinstance(rec.get("item"), str)
            and (rec.get("variant") is None or isinstance(rec.get("variant"), str))
            and type(rec.get("repeat")) is int
            and isinstance(trace, dict)
            and isinstance(trace.get("readout"), dict)
        )
        if not ok:
            raise RunsError(
                f"{where}: a {SCHEMA} record needs `item`, `variant`, `repeat` and a `trace` with a `readout`"
            )

    def write(self, item: str, variant: str | None, repeat: int, trace: dict) -> None:
        if self._fh is None:
            self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - held open across writes; close() closes it
        fh = self._fh
        rec = {"schema": SCHEMA, "item": item, "variant": variant, "repeat": repeat, "trace": trace}
        try:
            fh.write(canonical_json(rec) + "\n")
            fh.flush()
        except OSError:
            # A full disk: what did not reach the file is dropped here, so
            # that closing does not fail a second time (a torn last line is
            # cut when the audit resumes).
            with contextlib.suppress(OSError):
                fh.close()
            self._fh = None
            raise

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class Runner:
    """Judges arms with one interpreter per (graph id, patch, repeat): each
    item by its own graph (`routes`, interp.graphset.Resolved), patched as
    its arm says; an item no graph judges gets its compile-failure (or
    abstention) record, with no interpreter."""

    def __init__(
        self,
        graphs: dict[tuple[str, str | None], CheckedGraph],
        routes: dict[str, Resolved],
        backends_for: Callable[[int], list],
        mode: str,
        concurrency: int = 4,
    ):
        self.graphs = graphs
        self.routes = routes
        self.backends_for = backends_for
        self.mode = mode
        self.concurrency = max(1, concurrency)
        self._interps: dict[tuple[str, str | None, int], Interpreter] = {}
        self.compact = Compact()
        self._backends: dict[int, list] = {}

    def interpreter(self, gid: str, patch: str | None, repeat: int) -> Interpreter:
        """Raises interp.engine.BackendError when no backend runs a procedure."""
        key = (gid, patch, repeat)
        if key not in self._interps:
            if repeat not in self._backends:
                self._backends[repeat] = self.backends_for(repeat)
            self._interps[key] = Interpreter(self.graphs[(gid, patch)], self._backends[repeat], self.concurrency)
        return self._interps[key]

    async def judge(self, arm: Arm, repeat: int) -> dict:
        """One judgment's trace record."""
        how = self.routes[arm.item]
        if how.gid is None:
            return how.unjudged(arm.subject, self.mode)
        result = await self.interpreter(how.gid, arm.patch, repeat).evaluate_async(arm.subject, self.mode)
        return how.mark(result.record)

    async def run(
        self,
        arms: Iterable[Arm],
        repeats: int,
        done: Records,
        store: RunStore,
        tick: Callable[[], None] = lambda: None,
    ) -> None:
        """Judge every (arm, repeat) not in `done`, writing each (and adding
        its compact form to `done`) as it is reached in order."""
        todo = [(arm, r) for arm in arms for r in range(repeats) if (arm.item, arm.variant, r) not in done]
        sem = asyncio.Semaphore(self.concurrency)

        async def judge(arm: Arm, r: int) -> dict:
            async with sem:
                return await self.judge(arm, r)

        window: collections.deque = collections.deque()
        it = iter(todo)
        try:
            while True:
                while len(window) < self.concurrency * 2 + 1:
                    nxt = next(it, None)
                    if nxt is None:
                        break
                    window.append((nxt, asyncio.ensure_future(judge(*nxt))))
                if not window:
                    break
                (arm, r), future = window.popleft()
                trace = await future
                store.write(arm.item, arm.variant, r, trace)
                done[(arm.item, arm.variant, r)] = self.compact(trace)
                tick()
        finally:
            for _, future in window:
                future.cancel()
