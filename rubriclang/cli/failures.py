"""Why items failed, for a command's summary: the failures grouped by their
reason, most frequent first, each with its count and one item that failed
so (`rbg run`, `rbg batch import`). Without it a summary says `error 2` and
the reasons stay inside the trace.

A reason is grouped without its item-specific parts: what the item or the
model's reply put in it (a quoted text, a number outside the rubric's own
`names`). The example keeps the whole text of one such failure.
"""

from __future__ import annotations

import collections
import re

from rubriclang.safetext import one_line

TOP = 5  # reasons listed; the rest are counted together

# Outside a `backquoted` span (the rubric's names and types): a quoted text
# ('...' or "...", as repr writes a reply's words) or a number.
_SPAN = re.compile(r"(`[^`]*`)|'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|(?<![\w.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.])")


def reason_of(error: str) -> str:
    """`error` without the parts that are the item's own."""
    return _SPAN.sub(lambda m: m.group(1) or ("N" if m.group(0)[0] not in "'\"" else "'…'"), error)


class FailureReasons:
    """The failures seen so far, by reason. What it reports does not depend on
    the order items finished in (a concurrent run's): ties rank by reason,
    and a reason's example is its least item id."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.examples: dict[str, dict[str, str]] = {}

    def add(self, item: str, decision) -> None:
        """One judged item and its readout's `Decision`: counted if it failed."""
        if decision.status != "error":
            return
        text = decision.error or "no reason recorded"
        reason = reason_of(text)
        self.counts[reason] += 1
        seen = self.examples.get(reason)
        if seen is None or item < seen["item"]:
            self.examples[reason] = {"item": item, "error": text}

    def to_json(self) -> list[dict]:
        """The `TOP` reasons, most frequent first."""
        return [{"reason": r, "count": n, "example": self.examples[r]} for r, n in self._ranked()[:TOP]]

    def others(self) -> int:
        """Failures whose reason is not among the `TOP` listed."""
        return sum(n for _, n in self._ranked()[TOP:])

    def _ranked(self) -> list[tuple[str, int]]:
        return sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))


def failures_text(failures: list[dict], others: int) -> list[str]:
    """The summary's lines for `FailureReasons.to_json` (none when nothing failed)."""
    if not failures:
        return []
    lines = ["  why items failed (the traces hold every reason):"]
    for f in failures:
        # Data (a reply's words, an item's id): escaped here, on one line.
        lines.append(f"    {f['count']} x {one_line(f['reason'])}  (e.g. item {one_line(f['example']['item'])})")
    if others:
        lines.append(f"    {others} more, for other reasons")
    return lines
