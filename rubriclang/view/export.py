"""`rbg view --export DIR`: the viewer's pages as static files.

Starting from the index, each page is rendered as the server would render
it, and every page it links to is rendered in turn (`Site.pending`), so
the export holds exactly the pages reachable by links; a listing's other
pages and sorts are its one file with a query (`Site.link`). The items filters
run in the browser (`static/view.js`) over `DIR/data/items-*.json`, one
file of rows per trace (`items_data`): data read as JSON, never as script.
Notes are shown as they are, read-only: they are typed in the live viewer."""

from __future__ import annotations

import array
import bisect
import os
from collections.abc import Callable, Iterator
from typing import IO, Any

from rubriclang.canonical import canonical_json
from rubriclang.safeio import atomic_file, write_atomic
from rubriclang.view.pages import Site, export_name
from rubriclang.view.server import STATIC, static_file
from rubriclang.view.sources import Sources, TraceSource
from rubriclang.view.table import PAGE_SIZE, SORTS, Query, shown


def export(sources: Sources, folder: str) -> int:
    """Write the pages into `folder` (created if missing); how many. No
    file is written outside `folder`: a symbolic link planted in it is
    replaced, never followed (`safeio.write_atomic`'s `within`)."""
    site = Site(sources, export=True)

    def write(name: str, text: str | bytes) -> None:
        write_atomic(os.path.join(folder, name), text, sync=False, within=folder)

    os.makedirs(os.path.join(folder, "static"), exist_ok=True)
    for name in STATIC:
        write(os.path.join("static", name), static_file(name))
    site.link("index")
    if sources.traces:
        os.makedirs(os.path.join(folder, "data"), exist_ok=True)
    for src in sources.traces:
        # Row by row: a trace's rows as dicts and as one text would be a few KB an item.
        with atomic_file(os.path.join(folder, site.data_file(src.label)), sync=False, within=folder) as fh:
            _write_streamed(fh, items_data(site, src))
            fh.write(b"\n")
    done = _write_pending(site, write, 0)
    items = 0
    for src in sources.traces:
        # Each row's item page, rendered and written one at a time: `Site.link`
        # queues none of them, which would hold a pending page per item.
        for row in src.table.rows:
            params = {"id": row.item, "src": src.label}
            write(export_name("item", params), site.render("item", params))
            items += 1
    # What the item pages link to, if anything is new.
    return _write_pending(site, write, done) + items


def _write_pending(site: Site, write: Callable[[str, str], None], done: int) -> int:
    """Render and write the pages in `site.pending` from the `done`th on,
    and those they queue in turn; how many of `pending` are written."""
    while done < len(site.pending):
        route, params = site.pending[done]
        done += 1
        write(export_name(route, params), site.render(route, params))
    return done


def items_data(site: Site, src: TraceSource) -> dict:
    """The rows of one trace as the export's items page filters them: what
    each row shows and is filtered on (`rows`, an iterator, made as it is
    written), the row order of every sort, and the rows each evaluation
    scored (`Query.scored`). Links name exported pages."""
    table = src.table
    columns = table.criteria[:12]
    # A row's index is found from its line (rows are in line order): a
    # dict of every item's index would be about 100 bytes an item.
    lines = array.array("q", (r.line for r in table.rows))
    everything = len(table.rows) or 1

    def order(q: Query, left_out: frozenset[str] = frozenset()) -> Iterator[int]:
        # Made as it is written: all the orders as lists were 36 bytes an item each.
        for r in table.query(q, size=everything, left_out=left_out).rows:
            yield bisect.bisect_left(lines, r.line)

    scored = {}
    for n, e in enumerate(site.sources.evals):
        for mode in e.data.get("modes", {}):
            q = Query(scored=f"{n}:{mode}")
            scored[q.scored] = order(q, site.scored(q)[1])
    rows = (
        {
            "item": r.item,
            "href": site.link("item", src=src.label, id=r.item),
            "status": r.status,
            "decision": r.decision,
            "decided": r.decided,
            "number": r.number,
            "gold": None if r.gold is None else shown(r.gold),
            "gold_label": r.gold_label,
            "disagrees": r.disagrees,
            "values": [r.values.get(c, "") for c in columns],
            "text": r.text,
        }
        for r in table.rows
    )
    return {
        "schema": "rubriclang.view.items/1",
        "page_size": PAGE_SIZE,
        "rows": rows,
        "orders": {s: order(Query(sort=s)) for s in SORTS if s != "file"},
        "scored": scored,
        "scored_names": {k: site.scored(Query(scored=k))[0] for k in scored},
    }


def _write_streamed(fh: IO[bytes], data: Any) -> None:
    """`canonical_json(data)` into `fh`, an iterator (the rows, the orders)
    as a list written element by element, in a dict at any depth: the same
    bytes, never all in memory."""
    if isinstance(data, dict):
        fh.write(b"{")
        for n, key in enumerate(sorted(data)):
            fh.write(b"," * (n > 0) + canonical_json(key).encode() + b":")
            _write_streamed(fh, data[key])
        fh.write(b"}")
    elif isinstance(data, Iterator):
        fh.write(b"[")
        for i, element in enumerate(data):
            fh.write(b"," * (i > 0) + canonical_json(element).encode())
        fh.write(b"]")
    else:
        fh.write(canonical_json(data).encode())
