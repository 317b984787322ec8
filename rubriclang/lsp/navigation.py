"""Go to definition, find references and rename, for node names."""

from __future__ import annotations

import re

from rubriclang.lsp.analysis import Analysis, Range
from rubriclang.lsp.scanner import KEYWORDS

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Words the language gives a meaning: the parser would take most of them as
# names, but a reader (and a syntax highlighter) would not.
RESERVED = frozenset((*KEYWORDS, "bool", "ordinal", "score", "label", "true", "false"))


class RenameError(Exception):
    """A rename that cannot be done; the message says why, for the user."""


def definition(a: Analysis, offset: int) -> Range | None:
    """Where the node name at `offset` is declared."""
    occ = a.occurrence_at(offset)
    decl = a.declaration(occ.name) if occ else None
    return a.range_of(decl.span) if decl else None


def references(a: Analysis, offset: int, include_declaration: bool = True) -> list[Range]:
    """Every occurrence of the node name at `offset`, in source order."""
    occ = a.occurrence_at(offset)
    if occ is None:
        return []
    return [
        a.range_of(o.span)
        for o in a.occurrences
        if o.name == occ.name and (include_declaration or not o.declaration)
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
        raise RenameError(
            f"`{new_name}` is not a valid name: a name is a letter or `_`, then letters, digits or `_`"
        )
    if new_name in RESERVED:
        raise RenameError(f"`{new_name}` is a word of the language; choose another name")
    if new_name == occ.name:
        return []
    clash = a.declaration(new_name)
    if clash is not None:
        raise RenameError(f"`{new_name}` is already declared at {clash.span}")
    return [a.range_of(o.span) for o in a.occurrences if o.name == occ.name]
