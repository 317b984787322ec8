"""The grammar's words and tokens as the language server needs them, read
once from Lark's analysis of `grammar/rubric.lark`: a keyword, a declaration
or a punctuation mark added to the grammar is known to completion, the
scanner and rename without an edit here."""

from __future__ import annotations

import functools
import re

import attrs
from lark.lexer import PatternStr

from rubriclang.packaged import grammar
from rubriclang.syntax.larkcache import cache_file
from rubriclang.syntax.larkparse import lark_parser

# The rule whose alternatives are the declarations, each starting with its keyword.
_DECL = "decl"


@attrs.frozen
class Words:
    """`declarations`: the keywords that start a declaration, in the
    grammar's order. `reserved`: every word the grammar spells out
    (keywords, type names, `true`, `false`). `name` and `number`: the
    regular expressions of a name and a number. `punct`: the one-character
    tokens."""

    declarations: tuple[str, ...]
    reserved: frozenset[str]
    name: str
    number: str
    punct: str


@functools.cache
def words() -> Words:
    """The grammar's `Words` (Lark's parser is cached on disk, so this is quick)."""
    parser = lark_parser("basic", None, cache_file(grammar(), "basic"))
    patterns = {t.name: t.pattern for t in parser.terminals}
    literals = {name: p.value for name, p in patterns.items() if isinstance(p, PatternStr)}
    name = patterns["NAME"].to_regexp()
    starts: dict[str, str] = {}
    kinds = [r.expansion[0].name for r in parser.rules if r.origin.name == _DECL and len(r.expansion) == 1]
    for kind in kinds:
        first = next(r.expansion[0].name for r in parser.rules if r.origin.name == kind and r.expansion)
        starts[kind] = literals[first]
    return Words(
        declarations=tuple(starts[k] for k in kinds),
        reserved=frozenset(v for v in literals.values() if re.fullmatch(name, v)),
        name=name,
        number=patterns["NUMBER"].to_regexp(),
        punct="".join(sorted(v for v in literals.values() if len(v) == 1 and not re.fullmatch(name, v))),
    )
