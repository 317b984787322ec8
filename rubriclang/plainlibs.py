"""`RBG_PLAIN_LIBS`: run the plain library path in place of a home-made fast
path that earned its place (benchmarks/README.md, "Home-made parts and what
they earn"), to compare the two, or to rule one out when a run goes wrong.

`RBG_PLAIN_LIBS=1` (or `all`) switches every part; a comma-separated list of
parts switches those: `http` (httpx's client and transport for every server,
not the client's own pool) and `parser` (Lark's parser for every text, not
the generated tables). Read each time a part decides, so a test can set it
with `monkeypatch.setenv`.
"""

from __future__ import annotations

import os

ENV = "RBG_PLAIN_LIBS"


def plain(part: str) -> bool:
    """Whether `part` runs the plain library path."""
    value = os.environ.get(ENV, "").strip().lower()
    if not value or value == "0":
        return False
    return value in ("1", "all") or part in {p.strip() for p in value.split(",")}
