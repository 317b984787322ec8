"""Parsing: text -> `ast.Module` plus syntax diagnostics.

The LALR parsers (a fast one, and one whose errors are reported: `_build`)
build the AST as they parse (`build.AstBuilder` is their inline
transformer). They are built once per process and cached on disk by Lark in
the user's cache folder (`larkcache`), so a cold `rbg check` does not
re-analyse the grammar.
"""

from __future__ import annotations

import functools
import re
import threading
from importlib import resources
from typing import cast

import attrs
from lark import Lark, Token
from lark.exceptions import UnexpectedEOF, UnexpectedInput, UnexpectedToken

from rubriclang.diagnostics import Diagnostic
from rubriclang.diagnostics.span import Span
from rubriclang.syntax import ast
from rubriclang.syntax.build import AstBuilder
from rubriclang.syntax.errors import describe_unexpected, syntax_diagnostic
from rubriclang.syntax.larkcache import cache_file
from rubriclang.syntax.lexer import FastBasicLexer

# Comments reach us through a lexer callback; the parser object is shared, so
# the list they go to is per thread.
_comment_sink = threading.local()


def _collect_comment(tok: Token) -> Token:
    sink = getattr(_comment_sink, "items", None)
    if sink is not None:
        sink.append(tok)
    return tok


_BUILDER = AstBuilder()


@functools.lru_cache(maxsize=2)
def _parser(lexer: str) -> Lark:
    """The parser with `lexer` ("basic": Lark's basic lexer's tokens, lexed
    faster; or "contextual"); `parse` returns a list of `ast.Decl`."""
    grammar = resources.files("rubriclang.grammar").joinpath("rubric.lark").read_text("utf-8")
    # Every token kept: the builder finds each rule's children at fixed places
    # and its span from the first and last of them.
    return Lark(
        grammar,
        parser="lalr",
        lexer=FastBasicLexer if lexer == "basic" else lexer,
        keep_all_tokens=True,
        maybe_placeholders=True,
        lexer_callbacks={"COMMENT": _collect_comment},
        transformer=_BUILDER,
        cache=cache_file(grammar, "fast-basic" if lexer == "basic" else lexer),
    )


def _lark() -> Lark:
    """The parser whose errors are reported: its contextual lexer knows the
    tokens each parser state accepts, and lexes only those."""
    return _parser("contextual")


def _build(chunk: str, path: str) -> tuple[list[ast.Decl], list[Diagnostic]]:
    """The declarations of `chunk` and what building them reported, or the
    contextual parser's UnexpectedInput.

    A basic lexer (one regex for every terminal) tries first: the contextual
    lexer compiles a regex per parser state, which is most of a cold parse.
    Where the basic lexer's tokens parse, they are the contextual lexer's
    (each accepted token is the first matching terminal of a subset that
    holds it, so that subset picks it too); where they do not (a keyword
    used as a name, or an error), the contextual parser decides and reports.
    """
    build = _BUILDER.begin(path)
    try:
        tree = _parser("basic").parse(chunk)
    except UnexpectedInput:
        _comment_sink.items = []
        build = _BUILDER.begin(path)
        tree = _lark().parse(chunk)
    # Lark types the result as a tree; the transformer's `start` returns the declarations.
    return cast("list[ast.Decl]", tree), build.finish()


@attrs.frozen
class ParseResult:
    """The module (None when the text has syntax errors) and the diagnostics."""

    module: ast.Module | None
    diagnostics: tuple[Diagnostic, ...]
    source: str


# A declaration keyword at the start of a line: where parsing resumes after an error.
_RESYNC = re.compile(r"^[ \t]*(rubric|contract|criterion|node|sink|readout)\b", re.M)
# String literals and comments, so that a prompt line starting with `sink` is not
# taken for a declaration (only triple-quoted strings span lines, but the others
# must be skipped for a `"""` inside them not to count).
_LITERAL = re.compile(r'"""(?:[^"\\]|\\.|"(?!""))*(?:"""|\Z)|"(?:[^"\\\n]|\\.)*"?|#[^\n]*', re.S)


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
    comments: list[Token] = []
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


def _token_span(path: str, t: Token) -> Span:
    # The lexer sets every position of a token (Lark types them optional).
    assert t.line is not None and t.column is not None and t.end_line is not None and t.end_column is not None
    return Span(path, t.line, t.column, t.end_line, t.end_column)


def _parse_chunk(
    chunk: str, path: str, decls: list[ast.Decl], comments: list[Token], diagnostics: list[Diagnostic]
) -> tuple[bool, int]:
    """Parse one chunk; True when it parsed, else False and the error's offset."""
    _comment_sink.items = []
    try:
        built, reported = _build(chunk, path)
    except UnexpectedInput as exc:
        diagnostics.append(_from_lark(exc, chunk, path))
        return False, _error_offset(exc, chunk)
    finally:
        comments.extend(_comment_sink.items)
        _comment_sink.items = None
    decls.extend(built)
    diagnostics.extend(reported)
    return True, 0


def _error_offset(exc: UnexpectedInput, chunk: str) -> int:
    if isinstance(exc, UnexpectedEOF):
        return len(chunk)
    pos = getattr(exc, "pos_in_stream", None)
    if pos is None and isinstance(exc, UnexpectedToken):
        pos = exc.token.start_pos
    return pos if pos is not None else len(chunk)


def _from_lark(exc: UnexpectedInput, chunk: str, path: str) -> Diagnostic:
    code, line, column, end_column, message, notes = describe_unexpected(exc, chunk, _lark)
    return syntax_diagnostic(code, Span(path, line, column, line, end_column), message, notes)


def parse_file(path: str) -> ParseResult:
    """Read and parse a file (UTF-8). I/O errors propagate to the caller."""
    with open(path, encoding="utf-8") as fh:
        return parse(fh.read(), path)
