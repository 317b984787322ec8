"""Where rubriclang keeps files of its own on the user's machine."""

from __future__ import annotations

import os


def user_cache_dir() -> str:
    """`$XDG_CACHE_HOME/rubriclang`, else `~/.cache/rubriclang` (it may not exist yet)."""
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "rubriclang")
