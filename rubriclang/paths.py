"""Where rubriclang keeps files of its own on the user's machine."""

from __future__ import annotations

import os
import stat


def user_cache_dir() -> str:
    """`$XDG_CACHE_HOME/rubriclang`, else `~/.cache/rubriclang` (it may not exist yet)."""
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "rubriclang")


def private_cache_dir(name: str) -> str | None:
    """`user_cache_dir()/name`, made private (0700) if missing, for files we
    load without trusting their contents to be ours otherwise (a pickle, a
    marshal): None where it is not safe (owned by another user, or writable
    by others) or cannot be made."""
    folder = os.path.join(user_cache_dir(), name)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.stat(folder)
    except OSError:
        return None
    getuid = getattr(os, "getuid", None)
    if getuid is not None and (info.st_uid != getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
        return None
    return folder
