"""Lark's parser of the grammar: where the generated tables' parse fails.

`parser` parses with the tables of `lalr_tables` first, which needs no Lark;
where that fails (a keyword used as a name, or a syntax error), this module
parses with Lark's contextual parser, whose lexer knows the tokens each parser
state accepts, and turns its errors into diagnostics. Only then is Lark
imported. The parser builds the AST as it parses (`build.AstBuilder` is its
inline transformer), and is cached on disk by Lark in the user's cache folder
(`larkcache`), so it does not re-analyse the grammar each time.

`lark_parser` is also where scripts/gen_parse_tables.py gets the grammar's
tables from: one definition of the parser's options for both paths.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, cast

from lark import Lark, Token
from lark.exceptions import UnexpectedEOF, UnexpectedInput, UnexpectedToken

from rubriclang.diagnostics import Diagnostic
from rubriclang.diagnostics.span import Span
from rubriclang.packaged import grammar
from rubriclang.syntax import ast
from rubriclang.syntax.build import AstBuilder
from rubriclang.syntax.errors import describe_unexpected, syntax_diagnostic
from rubriclang.syntax.larkcache import cache_file

# Comments reach us through a lexer callback; the parser object is shared, so
# the list they go to is per thread.
_comment_sink = threading.local()


def _collect_comment(tok: Token) -> Token:
    sink = getattr(_comment_sink, "items", None)
    if sink is not None:
        sink.append(tok)
    return tok


def lark_parser(lexer: str, transformer: AstBuilder | None, cache: str | bool = False) -> Lark:
    """Lark's LALR parser of the grammar with `lexer`, calling `transformer` as it reduces."""
    # Every token kept: the builder finds each rule's children at fixed places
    # and its span from the first and last of them.
    return Lark(
        grammar(),
        parser="lalr",
        lexer=lexer,
        keep_all_tokens=True,
        maybe_placeholders=True,
        lexer_callbacks={"COMMENT": _collect_comment},
        transformer=transformer,
        cache=cache,
    )


@functools.lru_cache(maxsize=1)
def _contextual(builder: AstBuilder) -> Lark:
    """The parser whose errors are reported; `parse` returns a list of `ast.Decl`."""
    return lark_parser("contextual", builder, cache_file(grammar(), "contextual"))


def parse_chunk(
    chunk: str,
    path: str,
    builder: AstBuilder,
    decls: list[ast.Decl],
    comments: list[Any],
    diagnostics: list[Diagnostic],
) -> tuple[bool, int]:
    """Parse one chunk with Lark's contextual parser, as `parser._parse_chunk`:
    True when it parsed, else False and the error's offset. `comments` gets
    Lark's tokens (the tables' parser gives its own, with the same attributes)."""
    _comment_sink.items = []
    build = builder.begin(path)
    try:
        tree = _contextual(builder).parse(chunk)
    except UnexpectedInput as exc:
        diagnostics.append(_from_lark(exc, chunk, path, builder))
        return False, _error_offset(exc, chunk)
    finally:
        comments.extend(_comment_sink.items)
        _comment_sink.items = None
    # Lark types the result as a tree; the transformer's `start` returns the declarations.
    decls.extend(cast("list[ast.Decl]", tree))
    diagnostics.extend(build.finish())
    return True, 0


def _error_offset(exc: UnexpectedInput, chunk: str) -> int:
    if isinstance(exc, UnexpectedEOF):
        return len(chunk)
    pos = getattr(exc, "pos_in_stream", None)
    if pos is None and isinstance(exc, UnexpectedToken):
        pos = exc.token.start_pos
    return pos if pos is not None else len(chunk)


def _from_lark(exc: UnexpectedInput, chunk: str, path: str, builder: AstBuilder) -> Diagnostic:
    code, line, column, end_column, message, notes = describe_unexpected(exc, chunk, lambda: _contextual(builder))
    return syntax_diagnostic(code, Span(path, line, column, line, end_column), message, notes)
