"""Rubrics without an `item` declaration keep their meaning: the graph and
criterion hashes of every example and corpus file, the item hashes of the
examples' items and the prompt digests and hashes (cache keys) of every LLM
criterion are those recorded, in `fixtures/hashes_before_item_shapes.json`,
on the tree before declared item shapes were added (by this module's
`current_hashes`, run then)."""

from __future__ import annotations

import json
from pathlib import Path

from rubriclang.checker import check_source
from rubriclang.interp.items import Item, ItemError, read_items
from rubriclang.interp.trace import criterion_hashes, graph_hash, item_hash
from rubriclang.llm import prompting

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "hashes_before_item_shapes.json"
_POINT = Item("p", "What is 2+2?", {"response": "4, as {{input}} says"}, reference="4", rubric="Score 1: bad")
_PAIR = Item("q", "Pick one", {"a": "first answer", "b": "second answer"}, reference="ref")


def _rbgs() -> list[Path]:
    return sorted([*ROOT.glob("examples/**/*.rbg"), *ROOT.glob("tests/corpus/**/*.rbg")])


def current_hashes() -> dict:
    """The hashes the fixture holds, as the tree computes them now."""
    out: dict = {"graphs": {}, "items": {}, "prompts": {}}
    for p in _rbgs():
        rel = p.relative_to(ROOT).as_posix()
        graph = check_source(p.read_text("utf-8"), rel).graph
        if graph is None:
            continue
        out["graphs"][rel] = {"graph": graph_hash(graph), "criteria": criterion_hashes(graph)}
        if graph.item_shape is not None:  # new since the fixture: its items are another shape
            continue
        prompts = {}
        for c in graph.criteria:
            if not c.procedure.startswith("llm."):
                continue
            try:
                if prompting.side_by_side(c):
                    pr = prompting.prepare(c, _PAIR, ("a", "b"))
                else:
                    pr = prompting.prepare(c, _POINT, "response")
            except prompting.PromptError:
                continue
            prompts[c.name] = [pr.digest, pr.render().prompt_hash]
        if prompts:
            out["prompts"][rel] = prompts
    for p in sorted(ROOT.glob("examples/**/*.jsonl")):
        try:
            hashes = {}
            for i, it in enumerate(read_items(str(p))):
                if i >= 20:
                    break
                hashes[it.id] = item_hash(it)
        except ItemError:
            continue
        out["items"][p.relative_to(ROOT).as_posix()] = hashes
    return out


def test_undeclared_rubrics_keep_their_graph_criterion_item_and_prompt_hashes():
    before = json.loads(FIXTURE.read_text("utf-8"))
    now = current_hashes()
    for part in ("graphs", "items", "prompts"):
        common = set(before[part]) & set(now[part])
        # Every file measured before is still measured (none vanished unseen).
        assert set(before[part]) <= set(now[part]), part
        assert {k: now[part][k] for k in common} == {k: before[part][k] for k in common}, part
