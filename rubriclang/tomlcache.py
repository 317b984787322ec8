"""Packaged TOML data (the standard catalog, the diagnostic codes), parsed
once and cached on disk, so that a cold `rbg check` parses no TOML (as Lark
caches its grammar).

The key is a hash of the files' bytes, the Python version and this cache's
format: an edited catalog file is a new key, never a stale answer. The cache
file is data only (marshal: strings, numbers, lists, dicts; loading it runs
no code), in the temp folder under a per-user name as Lark's is. A missing,
unreadable or corrupt cache file is rebuilt; one that cannot be written is
no error.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import sys
import tempfile
from collections.abc import Callable

_FORMAT = b"rubriclang-toml-cache-1"


def _user() -> str:
    if hasattr(os, "getuid"):
        return str(os.getuid())
    return os.environ.get("USERNAME") or "anonymous"


def cache_path(texts: tuple[str | None, ...]) -> str:
    """Where the parse of the files with these contents (None: no such file) is
    cached. Keyed by rubriclang's version too: a parse is cached only once
    checked, and another version may check differently."""
    from rubriclang import __version__

    h = hashlib.sha256(_FORMAT + sys.version.encode() + b"\0" + __version__.encode())
    for text in texts:
        h.update(b"\0" if text is None else b"\1" + text.encode("utf-8") + b"\0")
    return os.path.join(tempfile.gettempdir(), f".rubriclang_toml_{_user()}_{h.hexdigest()[:32]}.marshal")


def cached_parse(texts: tuple[str | None, ...], parse: Callable[[], list[dict]]) -> list[dict]:
    """`parse()` (the files' contents parsed, one dict each), from the cache
    when these `texts` were parsed before. Errors of `parse` propagate and
    nothing is cached."""
    path = cache_path(texts)
    try:
        with open(path, "rb") as fh:
            data = marshal.load(fh)
        if isinstance(data, list) and len(data) == len(texts) and all(isinstance(d, dict) for d in data):
            return data
    except (OSError, EOFError, ValueError, TypeError):
        pass
    data = parse()
    with contextlib.suppress(OSError, ValueError):  # ValueError: a value marshal cannot hold
        from rubriclang.safeio import write_atomic  # only on a miss

        write_atomic(path, marshal.dumps(data))
    return data
