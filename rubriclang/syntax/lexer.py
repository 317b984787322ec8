"""Lark's basic lexer, in one tight loop.

The tokens are those of `lark.lexer.BasicLexer` (same terminals, one regex of
them in Lark's order, keywords told from names as Lark tells them, the same
callbacks, the same positions; Lark's own scanner, whose regex compiles as
slowly as ours, is never built); what goes is the per-token machinery around
them (a scanner call, a line counter, keyword arguments), which costs more
than the regex match itself. Ignored terminals without a callback (white
space) are skipped inside the regex, before each token: this assumes no
terminal Lark would try before them matches where they do (true of
`rubric.lark`, whose white space starts no other terminal; a test compares
every token with Lark's lexer). Any failure raises `UnexpectedCharacters`,
and `parser` then leaves the text to the contextual parser, which reports
errors.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from lark.exceptions import UnexpectedCharacters
from lark.lexer import BasicLexer, LexerState, Token

# Lark's exception is untyped; the parser catches it to fall back.
_UNEXPECTED: Any = UnexpectedCharacters


class _Tables:
    """What the lexer works from, built once per lexer (compiling the regex
    is most of a cold lexer's cost, so Lark's own scanner is never built)."""

    def __init__(self, lexer: BasicLexer):
        flags = lexer.g_regex_flags
        terminals = list(lexer.terminals)  # in Lark's order
        # As Lark's `_create_unless`: a string terminal that a regex terminal of
        # the same priority matches whole (a keyword the name pattern matches)
        # is lexed as that terminal and retyped, and leaves the regex (it has
        # no flags, so none the regex terminal lacks).
        self.keywords: dict[str, dict[str, str]] = {}
        embedded: set[str] = set()
        strings = [t for t in terminals if t.pattern.type == "str"]
        for r in terminals:
            if r.pattern.type != "re":
                continue
            for k in strings:
                if k.priority != r.priority:
                    continue
                value = k.pattern.value
                m = re.match(r.pattern.to_regexp(), value, flags)
                if m is not None and m.group(0) == value:
                    if k.pattern.flags:  # a lookup by value would not do a flagged match
                        raise NotImplementedError(f"keyword {k.name} has flags {k.pattern.flags}")
                    self.keywords.setdefault(r.name, {})[value] = k.name
                    embedded.add(k.name)
        kept = [t for t in terminals if t.name not in embedded]
        self.callbacks = dict(lexer.user_callbacks)
        self.names = {t.name for t in kept}
        ignore = lexer.ignore_types
        skip = "|".join(t.pattern.to_regexp() for t in kept if t.name in ignore and t.name not in self.callbacks)
        tokens = "|".join(
            f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in kept if t.name not in ignore or t.name in self.callbacks
        )
        skip = f"(?:{skip})*" if skip else ""
        self.regex = re.compile(f"{skip}(?:{tokens})", flags)
        self.trailing = re.compile(skip, flags)
        # Most tokens need no retyping, callback or line counting.
        self.plain = self.names - ignore - lexer.newline_types - self.callbacks.keys() - self.keywords.keys()


class FastBasicLexer(BasicLexer):
    """A drop-in `lexer=` class for a Lark LALR parser."""

    __future_interface__ = 2

    def lex(self, state: LexerState, parser_state: Any) -> Iterator[Token]:
        tables = self.__dict__.get("_tables")
        if tables is None:
            tables = self.__dict__["_tables"] = _Tables(self)
        regex, trailing, keywords, callbacks, plain = (
            tables.regex,
            tables.trailing,
            tables.keywords,
            tables.callbacks,
            tables.plain,
        )
        ignore, newline_types = self.ignore_types, self.newline_types
        text_slice = state.text
        text, end = text_slice.text, text_slice.end
        ctr = state.line_ctr
        pos, line, line_start = ctr.char_pos, ctr.line, ctr.line_start_pos
        match = regex.match
        # What `Token(...)` calls, minus its shim for a deprecated keyword.
        token: Any = Token._future_new
        while pos < end:
            m = match(text, pos, end)
            if m is None:
                if trailing.fullmatch(text, pos, end) is not None:
                    return  # white space to the end
                raise _UNEXPECTED(text, pos, line, pos - line_start + 1, allowed=tables.names - ignore)
            name = m.lastgroup
            assert name is not None  # every alternative is a named group
            start = m.start(name)
            if start != pos:  # white space skipped: count its lines
                newlines = text.count("\n", pos, start)
                if newlines:
                    line += newlines
                    line_start = text.rindex("\n", pos, start) + 1
                pos = start
            value = m.group(name)
            stop = m.end()
            if name in plain:
                yield token(name, value, pos, line, pos - line_start + 1, line, stop - line_start + 1, stop)
                pos = stop
                continue
            end_line, end_start = line, line_start
            if name in newline_types:
                newlines = value.count("\n")
                if newlines:
                    end_line += newlines
                    end_start = pos + value.rindex("\n") + 1
            if name not in ignore:
                kw = keywords.get(name)
                kind = kw.get(value, name) if kw else name
                t = token(kind, value, pos, line, pos - line_start + 1, end_line, stop - end_start + 1, stop)
                # As Lark's chained callbacks: a retyped keyword skips its name's callback.
                hook = callbacks.get(name) if kind == name else None
                yield hook(t) if hook is not None else t
            elif name in callbacks:
                callbacks[name](
                    token(name, value, pos, line, pos - line_start + 1, end_line, stop - end_start + 1, stop)
                )
            pos, line, line_start = stop, end_line, end_start
