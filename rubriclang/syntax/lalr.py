"""Parsing without Lark: a lexer loop and an LALR loop over generated tables.

`lalr_tables` holds what Lark's LALR parser with its basic lexer works from
(scripts/gen_parse_tables.py takes it from Lark's parser of the grammar, and a
test checks it is current). This module does with it what Lark does: the
basic lexer (one regex of the terminals in Lark's order, keywords retyped
from names, Lark's positions), the LALR loop (shift, reduce, goto, `$END`),
and Lark's parse-tree builder around the AST builder's methods (children
kept, `_rule` children inlined, a `?rule`'s single child passed through,
`None` for an absent `[x]`). So a text parses here exactly where Lark's
basic-lexer parser parses it, to the same AST, and importing this imports no
Lark. Anything else raises `NoParse`, and the caller leaves the text to
Lark's contextual parser (`larkparse`), which parses keywords used as names
and reports errors.

Ignored terminals without a callback (white space) are skipped inside the
regex, before each token: this assumes no terminal Lark would try before them
matches where they do (true of `rubric.lark`, whose white space starts no
other terminal; a test compares every token with Lark's lexer).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from itertools import chain
from operator import itemgetter
from typing import Any

from rubriclang.syntax import lalr_tables as tables


class Token(str):
    """A token: its text, with the attributes Lark's tokens have (the AST
    builder reads them from either kind)."""

    __slots__ = ("column", "end_column", "end_line", "end_pos", "line", "start_pos", "type")
    type: str
    start_pos: int
    line: int
    column: int
    end_line: int
    end_column: int
    end_pos: int


class NoParse(Exception):
    """The text does not lex or parse with the tables: Lark's contextual parser decides."""


_SKIP = "|".join(tables.SKIPPED)
_SKIP = f"(?:{_SKIP})*" if _SKIP else ""
_REGEX = re.compile(
    _SKIP + "(?:" + "|".join(f"(?P<{name}>{pattern})" for name, pattern in tables.TERMINALS) + ")",
    tables.REGEX_FLAGS,
)
_TRAILING = re.compile(_SKIP, tables.REGEX_FLAGS)
# Most tokens need no retyping, collecting or line counting.
_PLAIN = frozenset(name for name, _ in tables.TERMINALS) - tables.COLLECTED - tables.NEWLINES - tables.KEYWORDS.keys()


def lex(text: str, comments: list[Token]) -> Iterator[Token]:
    """The tokens of `text`, as Lark's basic lexer gives them; comments go to
    `comments` instead. Raises `NoParse` where no terminal matches."""
    keywords, collected, plain, newline_types = tables.KEYWORDS, tables.COLLECTED, _PLAIN, tables.NEWLINES
    new = str.__new__
    match = _REGEX.match
    pos, line, line_start, end = 0, 1, 0, len(text)
    while pos < end:
        m = match(text, pos)
        if m is None:
            if _TRAILING.fullmatch(text, pos) is not None:
                return  # white space to the end
            raise NoParse
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
        end_line, end_start = line, line_start
        if name in plain:
            kind = name
        else:
            if name in newline_types:
                newlines = value.count("\n")
                if newlines:
                    end_line += newlines
                    end_start = pos + value.rindex("\n") + 1
            by_value = keywords.get(name)
            kind = by_value.get(value, name) if by_value else name
        t = new(Token, value)
        t.type = kind
        t.start_pos = pos
        t.line = line
        t.column = pos - line_start + 1
        t.end_line = end_line
        t.end_column = stop - end_start + 1
        t.end_pos = stop
        if name in collected:
            comments.append(t)
        else:
            yield t
        pos, line, line_start = stop, end_line, end_start


# A rule's reduction: its children (the popped values) to its value; None
# where the value is the children themselves (an inlined `_rule`).
_Reduce = Callable[[list[Any]], Any] | None


def _keep(
    include: tuple[tuple[int, bool, int], ...], after: int, then: Callable[[list[Any]], Any]
) -> Callable[[list[Any]], Any]:
    """Lark's `ChildFilterLALR`: the kept children, inlined ones spliced in, Nones for absent `[x]`."""

    def reduce(children: list[Any]) -> Any:
        kept: list[Any] = []
        for i, inline, nones in include:
            if nones:
                kept += [None] * nones
            if inline:
                if kept:
                    kept += children[i]
                else:  # Lark's shortcut for left recursion: the inlined list itself
                    kept = children[i]
            else:
                kept.append(children[i])
        if after:
            kept += [None] * after
        return then(kept)

    return reduce


def _identity(children: list[Any]) -> list[Any]:
    return children


_Rule = tuple[str, int, str, bool, tuple[tuple[int, bool, int], ...] | None, int]


def _reduction(builder: object, rule: _Rule) -> _Reduce:
    origin, _, callback, single, include, after = rule
    method = getattr(builder, callback, None)
    inlined = origin.startswith("_")
    if method is None and not (inlined or single):
        # Lark would build a tree here, which the tables' parser cannot.
        raise TypeError(f"the AST builder has no method {callback!r} for rule {origin!r}")
    if inlined and method is not None:
        raise TypeError(f"rule {origin!r} is inlined, yet the AST builder has a method for it")
    then: Callable[[list[Any]], Any] = itemgetter(0) if single else method or _identity
    if include is not None:
        return _keep(include, after, then)
    return None if then is _identity else then


# What the lexer's tokens end with, for the parser.
_END = str.__new__(Token, "")
_END.type = "$END"


class Parser:
    """The LALR parser of the tables, calling `builder`'s methods as Lark's
    parse-tree builder would call them (a `transformer=`)."""

    def __init__(self, builder: object):
        terminals = {name for name, _ in tables.TERMINALS} | {k for by in tables.KEYWORDS.values() for k in by.values()}
        if any(hasattr(builder, name) for name in terminals):
            raise TypeError("the AST builder has a method named after a terminal, which Lark would call for it")
        self._rules = tuple((rule[0], rule[1], _reduction(builder, rule)) for rule in tables.RULES)

    def parse(self, text: str) -> tuple[Any, list[Token]]:
        """The value of the start rule for `text`, and its comments. Raises
        `NoParse` where Lark's basic-lexer parser would raise."""
        comments: list[Token] = []
        actions, rules, end_state = tables.ACTIONS, self._rules, tables.END_STATE
        states = [tables.START_STATE]
        values: list[Any] = []
        for tok in chain(lex(text, comments), (_END,)):
            kind = tok.type
            while True:
                act = actions[states[-1]].get(kind)
                if act is None:
                    raise NoParse
                if act >= 0:  # shift (never `$END`: the generator checks)
                    states.append(act)
                    values.append(tok)
                    break
                origin, size, reduce = rules[~act]
                if size:
                    children = values[-size:]
                    del states[-size:]
                    del values[-size:]
                else:
                    children = []
                states.append(actions[states[-1]][origin])
                values.append(children if reduce is None else reduce(children))
                if kind == "$END" and states[-1] == end_state:
                    return values[-1], comments
        raise AssertionError("unreachable: `$END` reduces to the end state or raises")
