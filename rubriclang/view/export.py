"""`rbg view --export DIR`: the viewer's pages as static files.

Starting from the index, each page is rendered as the server would render
it, and every page it links to is rendered in turn (`Site.pending`), so
the export holds exactly the pages reachable by links; forms (filters,
notes) need the server and are left out."""

from __future__ import annotations

import os

from rubriclang.safeio import write_atomic
from rubriclang.view.pages import Site, export_name
from rubriclang.view.server import STATIC, static_file
from rubriclang.view.sources import Sources


def export(sources: Sources, folder: str) -> int:
    """Write the pages into `folder` (created if missing); how many."""
    site = Site(sources, export=True)
    os.makedirs(os.path.join(folder, "static"), exist_ok=True)
    for name in STATIC:
        write_atomic(os.path.join(folder, "static", name), static_file(name))
    site.link("index")
    done = 0
    while done < len(site.pending):
        route, params = site.pending[done]
        done += 1
        write_atomic(os.path.join(folder, export_name(route, params)), site.render(route, params))
    return done

