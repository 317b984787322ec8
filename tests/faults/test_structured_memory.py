"""`rbg run` over items with a declared conversation shape keeps little per
item (issue 26, "Done when": a 100k-item run over conversation items of 10
turns stays flat in memory). Each item (about 2 KB of JSON: a 10-turn
OpenAI conversation with tool calls, three documents, an answer) is
validated against the shape and judged per tool call; neither the items,
their validated values nor the per-element judgments may stay behind.
Measured as the growth of peak memory from 2,000 to 20,000 items, which the
interpreter's and the libraries' share does not enter: about 0.2 KB an item
(the run's set of seen ids and its trace writer), as for plain items."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .peak_memory import RBG, peak_rss

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_structured import GRAPH, make_items  # type: ignore[import-not-found]  # put on sys.path above


# Runs the command over 11,000+ items: CI runs it; `make test` keeps test_eval_memory's judging case.
@pytest.mark.slow
def test_run_over_conversation_items_grows_by_well_under_a_kilobyte_an_item(tmp_path):
    graph = tmp_path / "g.rbg"
    graph.write_text(GRAPH)
    peaks = {}
    for n in (2_000, 20_000):
        items = tmp_path / f"items{n}.jsonl"
        make_items(str(items), n)
        traces = tmp_path / f"t{n}.jsonl"
        peak = peak_rss(RBG, "run", str(graph), str(items), "--out", str(traces))
        assert peak.status == 0, peak.head
        with traces.open("rb") as fh:
            assert sum(1 for _ in fh) == n  # every item judged and traced
        peaks[n] = peak.mb
    per_item_kb = (peaks[20_000] - peaks[2_000]) * 1024 / 18_000
    # An item's JSON alone is 2 KB; a command that keeps every item read (`rbg view --export`)
    # grows by about 15 KB an item on these items.
    assert per_item_kb < 1.0, f"{per_item_kb:.2f} KB an item ({peaks})"
