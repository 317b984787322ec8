"""`rbg batch import` into an existing --out skips the items traced there
only while they are what was judged: an item whose content changed since
is refused at the trace's line before the file changes (issue 24, item 1)."""

from __future__ import annotations

import json

from .test_batch import ITEMS, export, files, invoke, result_line, write_results  # noqa: F401 - files is a fixture


def test_import_refuses_to_skip_an_item_whose_response_changed_since_it_was_traced(files, tmp_path, unreachable_url):
    graph, items = files
    requests = export(graph, items, tmp_path / "requests.jsonl")
    results = write_results(tmp_path / "results.jsonl", [result_line(req, n) for n, req in enumerate(requests)])
    traces = tmp_path / "batch.jsonl"
    args = [
        "--out",
        traces,
        "--model",
        "judge",
        "--base-url",
        f"{unreachable_url}/v1",
        "--cache",
        tmp_path / "c.sqlite",
    ]
    first = invoke("batch", "import", graph, items, results, *args)
    assert first.exit_code == 0, first.output
    again = invoke("batch", "import", graph, items, results, *args)
    assert again.exit_code == 0, again.output  # unchanged: every item is resumed
    changed = tmp_path / "changed.jsonl"
    rows = [dict(r) for r in ITEMS]
    rows[2]["response"] = "Red."
    changed.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    # Results for every call, the changed item's new ones included: only the trace stands in the way.
    more = export(graph, changed, tmp_path / "more.jsonl")
    both = {q["custom_id"]: q for q in [*requests, *more]}
    results = write_results(tmp_path / "all.jsonl", [result_line(q, n) for n, q in enumerate(both.values())])
    before = traces.read_bytes()
    r = invoke("batch", "import", graph, changed, results, *args)
    assert r.exit_code == 2
    assert f"{traces}:3: 1 trace record(s) judged other content than `{changed}`" in r.output
    assert traces.read_bytes() == before
