"""Lark's basic lexer, in one tight loop.

The tokens are those of `lark.lexer.BasicLexer` (same terminals, one regex of
them in Lark's order, keywords told from names as Lark tells them, the same
callbacks, the same positions); what goes is the per-token machinery around
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
from lark.lexer import BasicLexer, LexerState, Token, UnlessCallback

# Lark's exception is untyped; the parser catches it to fall back.
_UNEXPECTED: Any = UnexpectedCharacters


class FastBasicLexer(BasicLexer):
    """A drop-in `lexer=` class for a Lark LALR parser."""

    __future_interface__ = 2

    def lex(self, state: LexerState, parser_state: Any) -> Iterator[Token]:
        scanner = self.scanner  # builds `self.callback` too, as Lark's lexer does
        regexes = self.__dict__.get("_regexes")
        if regexes is None:
            skip = "|".join(
                t.pattern.to_regexp() for t in scanner.terminals if t.name in self.ignore_types and t.name not in self.callback
            )
            tokens = "|".join(
                f"(?P<{t.name}>{t.pattern.to_regexp()})"
                for t in scanner.terminals
                if t.name not in self.ignore_types or t.name in self.callback
            )
            skip = f"(?:{skip})*" if skip else ""
            flags = self.g_regex_flags
            regexes = self.__dict__["_regexes"] = (re.compile(f"{skip}(?:{tokens})", flags), re.compile(skip, flags))
        regex, trailing = regexes
        callbacks = dict(self.callback)
        # A keyword the name pattern also matches is retyped by an UnlessCallback:
        # exact strings here, so a lookup does what its full match does.
        keywords: dict[str, dict[str, str]] = {}
        for type_, cb in self.callback.items():
            if isinstance(cb, UnlessCallback) and all(
                t.pattern.type == "str" and not t.pattern.flags for t in cb.scanner.terminals
            ):
                keywords[type_] = {t.pattern.value: t.name for t in cb.scanner.terminals}
                del callbacks[type_]
        ignore, newline_types = self.ignore_types, self.newline_types
        # Most tokens need no retyping, callback or line counting.
        plain = {t.name for t in scanner.terminals} - ignore - newline_types - callbacks.keys() - keywords.keys()
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
                raise _UNEXPECTED(text, pos, line, pos - line_start + 1, allowed=scanner.allowed_types - ignore)
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
                t = token(kw.get(value, name) if kw else name, value, pos, line, pos - line_start + 1, end_line, stop - end_start + 1, stop)
                hook = callbacks.get(name)
                yield hook(t) if hook is not None else t
            elif name in callbacks:
                callbacks[name](token(name, value, pos, line, pos - line_start + 1, end_line, stop - end_start + 1, stop))
            pos, line, line_start = stop, end_line, end_start
