"""Packaged TOML data (the standard catalog, the diagnostic codes), parsed
once and cached on disk, so that a cold `rbg check` parses no TOML (as Lark
caches its grammar).

A cache file holds the texts it was parsed from beside the parse, and is
used only when they equal the files' texts now: an edited catalog file is
never a stale answer. Its name is a CRC of those texts, the Python version,
rubriclang's and this cache's format, so that installs with different data
keep files of their own; a CRC, not a cryptographic hash, because the
comparison makes any collision harmless and hashlib (OpenSSL) costs a cold
check milliseconds to import. The file is data only (marshal: strings,
numbers, lists, dicts), but marshal is not made to read hostile bytes, so it
lives only in a folder this user alone can write
(`rubriclang.paths.private_cache_dir`, as Lark's grammar cache does), never
in the shared temp folder; where there is no such folder nothing is cached.
A missing, unreadable, corrupt or foreign cache file is rebuilt; one that
cannot be written is no error.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sys
import zlib
from collections.abc import Callable
from typing import Any

from rubriclang.paths import private_cache_dir

_FORMAT = "rubriclang-toml-cache-2"


def _header() -> str:
    """What a cache file must have been written by: this format, this Python
    (marshal's format), this rubriclang (a parse is cached only once checked,
    and another version may check differently)."""
    from rubriclang import __version__

    return f"{_FORMAT}\0{sys.version}\0{__version__}"


def cache_path(texts: tuple[str | None, ...]) -> str | None:
    """Where the parse of the files with these contents (None: no such file) is
    cached; None where there is no private folder for it."""
    folder = private_cache_dir("toml")
    if folder is None:
        return None
    crc = zlib.crc32(_header().encode())
    for text in texts:
        crc = zlib.crc32(b"\0" if text is None else b"\1" + text.encode("utf-8") + b"\0", crc)
    return os.path.join(folder, f"{crc:08x}-{len(texts)}.marshal")


def cached_parse(texts: tuple[str | None, ...], parse: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """`parse()` (the files' contents parsed, one dict each), from the cache
    when these `texts` were parsed before. Errors of `parse` propagate and
    nothing is cached."""
    path = cache_path(texts)
    if path is None:
        return parse()
    key = [_header(), *texts]
    try:
        with open(path, "rb") as fh:
            stored = marshal.load(fh)
        if isinstance(stored, list) and len(stored) == 2 and stored[0] == key:
            data = stored[1]
            if isinstance(data, list) and len(data) == len(texts) and all(isinstance(d, dict) for d in data):
                return data
    except (OSError, EOFError, ValueError, TypeError):
        pass
    data = parse()
    with contextlib.suppress(OSError, ValueError):  # ValueError: a value marshal cannot hold
        from rubriclang.safeio import write_atomic  # only on a miss

        write_atomic(path, marshal.dumps([key, data]))
    return data
