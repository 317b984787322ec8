"""Parsing: text -> `ast.Module` plus syntax diagnostics.

A text is parsed first with the LALR tables generated from the grammar
(`lalr`, no Lark needed): one regex lexes every terminal, which is also what
keeps a cold parse fast. Where those tokens parse, they are the contextual
lexer's (each accepted token is the first matching terminal of a subset that
holds it, so that subset picks it too); where they do not (a keyword used as
a name, or an error), Lark's contextual parser decides and reports
(`larkparse`, imported only then). Both build the AST as they parse
(`build.AstBuilder` is their inline transformer). `RBG_PLAIN_LIBS=parser`
(`plainlibs`) leaves every text to Lark.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import attrs

from rubriclang.diagnostics import Diagnostic
from rubriclang.diagnostics.span import Span
from rubriclang.plainlibs import plain
from rubriclang.safeio import open_regular
from rubriclang.syntax import ast
from rubriclang.syntax.build import AstBuilder
from rubriclang.syntax.lalr import NoParse, Parser
from rubriclang.syntax.strings import LITERALS

_BUILDER = AstBuilder()


@functools.lru_cache(maxsize=1)
def tables_parser() -> Parser:
    """The parser of the generated tables, calling the builder's methods."""
    return Parser(_BUILDER)


@attrs.frozen
class ParseResult:
    """The module (None when the text has syntax errors) and the diagnostics."""

    module: ast.Module | None
    diagnostics: tuple[Diagnostic, ...]
    source: str


# A declaration keyword at the start of a line: where parsing resumes after an error.
_RESYNC = re.compile(r"^[ \t]*(rubric|contract|criterion|node|sink|readout|item)\b", re.M)
# String literals and comments, so that a prompt line starting with `sink` is not
# taken for a declaration (only triple-quoted strings span lines, but the others
# must be skipped for a `"""` inside them not to count).
_LITERAL = re.compile(LITERALS, re.S)


def parse(text: str, path: str = "<input>") -> ParseResult:
    """Parse `.rbg` source. Never raises for bad input: errors become diagnostics.

    After a syntax error, parsing resumes at the next line that starts a
    declaration, so one run reports the syntax errors of every declaration.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    # Windows line ends: a `\r` before `\n` is layout, never content (it would
    # otherwise end up inside triple-quoted prompts). Columns are unchanged.
    text = text.replace("\r\n", "\n")
    diagnostics: list[Diagnostic] = []
    decls: list[ast.Decl] = []
    comments: list[Any] = []
    offset = 0
    while True:
        chunk = "\n" * text.count("\n", 0, offset) + text[offset:] if offset else text
        found, error_at = _parse_chunk(chunk, path, decls, comments, diagnostics)
        if found:
            break
        error_at += offset - (len(chunk) - (len(text) - offset))  # back to `text` offsets
        nxt = _next_declaration(text, _line_end(text, max(error_at, offset)))
        if nxt is None:
            break
        offset = nxt
    comment_nodes = tuple(
        ast.Comment(str(t).rstrip(), span=_token_span(path, t))
        for t in sorted(comments, key=lambda t: (t.line, t.column))
    )
    if diagnostics:
        return ParseResult(None, tuple(diagnostics), text)
    return ParseResult(ast.Module(tuple(decls), comment_nodes, path), (), text)


def _next_declaration(text: str, start: int) -> int | None:
    """Where the next line that starts a declaration begins, outside strings."""
    long_strings = [m.span() for m in _LITERAL.finditer(text) if m.group().startswith('"""')]
    found = _RESYNC.search(text, start)
    while found is not None:
        inside = next((end for lo, end in long_strings if lo < found.start() < end), None)
        if inside is None:
            return found.start()
        found = _RESYNC.search(text, inside)
    return None


def _line_end(text: str, index: int) -> int:
    end = text.find("\n", index)
    return len(text) if end < 0 else end


def _token_span(path: str, t: Any) -> Span:
    return Span(path, t.line, t.column, t.end_line, t.end_column)


def _parse_chunk(
    chunk: str, path: str, decls: list[ast.Decl], comments: list[Any], diagnostics: list[Diagnostic]
) -> tuple[bool, int]:
    """Parse one chunk; True when it parsed, else False and the error's offset.
    `comments` gets the chunk's comment tokens (the tables' or Lark's)."""
    build = _BUILDER.begin(path)
    try:
        if plain("parser"):  # RBG_PLAIN_LIBS: Lark alone
            raise NoParse
        built, found = tables_parser().parse(chunk)
    except NoParse:
        from rubriclang.syntax import larkparse  # Lark, only for what the tables do not parse

        return larkparse.parse_chunk(chunk, path, _BUILDER, decls, comments, diagnostics)
    # The start rule's method returns the declarations.
    decls.extend(built)
    comments.extend(found)
    diagnostics.extend(build.finish())
    return True, 0


def parse_file(path: str) -> ParseResult:
    """Read and parse a file (UTF-8). I/O errors propagate to the caller."""
    with open_regular(path, "r", encoding="utf-8") as fh:
        return parse(fh.read(), path)
