"""Go to definition, find references and rename, for node names; go to a
criterion's prompt template file."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from rubriclang.lsp.analysis import Analysis, Range
from rubriclang.lsp.words import words
from rubriclang.syntax import ast

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class RenameError(Exception):
    """A rename that cannot be done; the message says why, for the user."""


def definition(a: Analysis, offset: int) -> Range | None:
    """Where the node name at `offset` is declared."""
    occ = a.occurrence_at(offset)
    decl = a.declaration(occ.name) if occ else None
    return a.range_of(decl.span) if decl else None


def _prompt_paths(a: Analysis) -> Iterator[tuple[Range, str]]:
    """(range of the path string, the file it names) for every `prompt = "PATH"`."""
    if a.module is None:
        return
    base = os.path.dirname(os.path.abspath(a.path)) if not a.path.startswith("<") else os.getcwd()
    for d in a.module.decls:
        for p in getattr(getattr(d, "block", None), "params", ()):
            v = p.value
            if p.name.value == "prompt" and isinstance(v, ast.String) and not v.triple and "\n" not in v.value:
                yield a.range_of(v.span), os.path.normpath(os.path.join(base, v.value))


def template_file(a: Analysis, offset: int) -> str | None:
    """The template file a `prompt = "PATH"` at `offset` names, when it
    exists (the path as the checker resolves it: beside the `.rbg` file)."""
    for (start, end), path in _prompt_paths(a):
        if start <= offset <= end:
            return path if os.path.isfile(path) else None
    return None


def prompt_naming(a: Analysis, file: str) -> Range | None:
    """The range of the `prompt` path that names `file`, if one does."""
    target = os.path.abspath(file)
    return next((r for r, path in _prompt_paths(a) if os.path.abspath(path) == target), None)


def references(a: Analysis, offset: int, include_declaration: bool = True) -> list[Range]:
    """Every occurrence of the node name at `offset`, in source order."""
    occ = a.occurrence_at(offset)
    if occ is None:
        return []
    return [
        a.range_of(o.span) for o in a.occurrences if o.name == occ.name and (include_declaration or not o.declaration)
    ]


def prepare_rename(a: Analysis, offset: int) -> tuple[Range, str] | None:
    """The node name at `offset` and its range, if it can be renamed."""
    occ = a.occurrence_at(offset)
    return (a.range_of(occ.span), occ.name) if occ else None


def rename(a: Analysis, offset: int, new_name: str) -> list[Range]:
    """The ranges to replace with `new_name`: every occurrence of the node
    name at `offset`. Raises RenameError for an invalid or clashing name, or
    a file that does not parse (its references cannot all be known)."""
    if a.module is None:
        raise RenameError("the file has syntax errors: fix them before renaming")
    occ = a.occurrence_at(offset)
    if occ is None:
        raise RenameError("there is no node name here to rename")
    if not _NAME.match(new_name):
        raise RenameError(f"`{new_name}` is not a valid name: a name is a letter or `_`, then letters, digits or `_`")
    # A word the grammar spells out: the parser would take most of them as
    # names, but a reader (and a syntax highlighter) would not.
    if new_name in words().reserved:
        raise RenameError(f"`{new_name}` is a word of the language; choose another name")
    if new_name == occ.name:
        return []
    clash = a.declaration(new_name)
    if clash is not None:
        raise RenameError(f"`{new_name}` is already declared at {clash.span}")
    return [a.range_of(o.span) for o in a.occurrences if o.name == occ.name]
