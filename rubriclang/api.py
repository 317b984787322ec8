"""The Python API: load a rubric, evaluate items, get typed results and traces.

    >>> import rubriclang
    >>> rubric = rubriclang.load("examples/gsm8k/rubric.rbg")
    >>> result = rubric.evaluate({"id": "1", "input": "...", "response": "... 42", "reference": "#### 42"})
    >>> result.composition.decision
    Decision(status='ok', decision=True, raw=True, margin=None, error=None)

The readout's verdict is `result.composition.decision.decision`; `result.record`
is the item's trace record. (tests/test_engine.py runs this example from the
repository root.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from rubriclang.checker import CheckedGraph, check_source
from rubriclang.diagnostics import Diagnostic
from rubriclang.interp.backend import CriterionBackend
from rubriclang.interp.engine import Interpreter, ItemResult
from rubriclang.interp.items import Item, item_from_json
from rubriclang.safeio import open_regular


class RubricError(Exception):
    """The rubric does not check; `diagnostics` says why."""

    def __init__(self, path: str, diagnostics: tuple[Diagnostic, ...]):
        first = next(d for d in diagnostics if d.is_error)
        super().__init__(f"{first.span}: {first.code} {first.message}")
        self.path = path
        self.diagnostics = diagnostics


def _as_item(obj: Item | dict[str, Any], n: int, graph: CheckedGraph) -> Item:
    """A dict read as the items file's reader reads it for `graph` (its declared item shape)."""
    return obj if isinstance(obj, Item) else item_from_json(obj, f"item #{n}", n, graph.item_shape)


class Rubric:
    """A checked rubric graph bound to its criterion backends."""

    def __init__(self, graph: CheckedGraph, backends: Iterable[CriterionBackend] = (), concurrency: int = 8):
        self.graph = graph
        self.interpreter = Interpreter(graph, backends, concurrency)

    def evaluate(self, item: Item | dict[str, Any], mode: str | None = None) -> ItemResult:
        """Judge one item (an Item, or a dict in the items format)."""
        return asyncio.run(self.interpreter.evaluate_async(_as_item(item, 1, self.graph), mode))

    def evaluate_many(self, items: Iterable[Item | dict[str, Any]], mode: str | None = None) -> list[ItemResult]:
        """Judge many items concurrently; results in input order."""

        async def go() -> list[ItemResult]:
            stream = (_as_item(x, n, self.graph) for n, x in enumerate(items, 1))
            return [r async for r in self.interpreter.run(stream, mode)]

        return asyncio.run(go())


def load(path: str, backends: Iterable[CriterionBackend] = (), concurrency: int = 8) -> Rubric:
    """Parse and check a `.rbg` file; raises RubricError if it has errors."""
    with open_regular(path, "r", encoding="utf-8") as fh:
        result = check_source(fh.read(), path)
    if result.graph is None:
        raise RubricError(path, result.diagnostics)
    return Rubric(result.graph, backends, concurrency)


def loads(text: str, path: str = "<input>", backends: Iterable[CriterionBackend] = ()) -> Rubric:
    """Like `load`, from source text."""
    result = check_source(text, path)
    if result.graph is None:
        raise RubricError(path, result.diagnostics)
    return Rubric(result.graph, backends)


__all__ = ["Rubric", "RubricError", "load", "loads"]
