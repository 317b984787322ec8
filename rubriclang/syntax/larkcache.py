"""Where Lark keeps its analysed grammar between runs: a pickle, so only in a
folder that this user alone can write.

Lark's own default (`cache=True`) is the shared temp folder, where another
user could leave a file for us to unpickle. Ours is
`$XDG_CACHE_HOME/rubriclang/lark` (else `~/.cache/...`), created private, and
used only while it is owned by this user and writable by no one else; the
file's name is keyed by the grammar, the lexer, Lark's version and Python's,
and Lark checks the grammar's hash inside it too.
"""

from __future__ import annotations

import hashlib
import os
import sys

import lark

from rubriclang.paths import private_cache_dir


def private_folder() -> str | None:
    """The cache folder, made if missing; None where it is not safe or not possible."""
    return private_cache_dir("lark")


def cache_file(grammar: str, lexer: str) -> str | bool:
    """The `cache=` argument for a Lark LALR parser of `grammar` with `lexer`:
    a file in the private cache folder, or False (no cache) where there is none."""
    folder = private_folder()
    if folder is None:
        return False
    key = hashlib.sha256(
        "\0".join((grammar, lexer, lark.__version__, f"{sys.version_info[0]}.{sys.version_info[1]}")).encode("utf-8")
    ).hexdigest()[:32]
    return os.path.join(folder, f"{lexer}_{key}.pickle")
