"""`rbg view --export` holds no item and no pending page per item (issue
25, item 8): items are indexed by line and read again for each page, and
each item page is written from its trace's rows as it is rendered. Measured
as the growth of peak memory from 1,000 to 10,000 items, which the
interpreter's and the libraries' share does not enter: 2.7 KB an item
before, about 1.3 now. An item page of the export still reads its item."""

from __future__ import annotations

import pytest

from .peak_memory import GRAPH, RBG, peak_rss, write_items


# Runs the command over 11,000+ items: CI runs it; `make test` keeps test_eval_memory's judging case.
@pytest.mark.slow
def test_exports_memory_grows_by_under_two_kilobytes_an_item(tmp_path):
    graph = tmp_path / "g.rbg"
    graph.write_text(GRAPH)
    peaks = {}
    for n in (1_000, 10_000):
        items = write_items(tmp_path / f"items{n}.jsonl", n)
        traces = tmp_path / f"t{n}.jsonl"
        assert peak_rss(RBG, "run", str(graph), str(items), "--out", str(traces)).status == 0
        out = tmp_path / f"export{n}"
        peak = peak_rss(RBG, "view", str(traces), str(items), "--export", str(out))
        assert peak.status == 0, peak.head
        pages = list(out.glob("item-*.html"))
        assert len(pages) == n  # every item's page, each written as it was rendered
        page = pages[0].read_text()
        assert "What is" in page  # the item's input, read back from its line
        peaks[n] = peak.mb
    per_item_kb = (peaks[10_000] - peaks[1_000]) * 1024 / 9_000
    assert per_item_kb < 2.0, f"{per_item_kb:.2f} KB an item ({peaks})"


def test_viewer_items_are_read_again_from_their_line_and_a_changed_file_is_an_error(tmp_path):
    from rubriclang.interp.items import ItemError
    from rubriclang.view.sources import Items

    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_bytes(
        b'\xef\xbb\xbf{"id": "x", "input": "one", "response": "r"}\n\n{"id": "y", "input": "two", "response": "r"}\n'
    )
    second.write_text('{"id": "y", "input": "three", "response": "r"}\n')
    items = Items()
    items.add(str(first))
    items.add(str(second))
    assert sorted(items) == ["x", "y"]
    assert items["x"].input == "one" and items["x"].line == 1  # after the byte order mark
    assert items["y"].input == "three"  # the later file's item replaces the earlier one's
    second.write_text('{"id": "z", "input": "three", "response": "r"}\n')
    with pytest.raises(ItemError, match="changed since it was read") as err:
        items["y"]
    assert err.value.where == f"{second}:1"
