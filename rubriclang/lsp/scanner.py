"""A tolerant scanner for editor features that must work while a file is
being typed, i.e. while it does not parse (completion, and hover on catalog
names). It never fails: an unterminated string runs to the end of its line
(a triple-quoted one to the end of the text), and an unknown character is a
token of its own. Anything that needs meaning uses the AST instead.
"""

from __future__ import annotations

import functools
import re

import attrs

from rubriclang.lsp.words import words
from rubriclang.syntax.strings import LONG_STRING_BODY, STRING_BODY


@functools.cache
def _token() -> re.Pattern[str]:
    """The scanner's tokens: the grammar's names, numbers and punctuation
    (`words`), strings as they are being typed, and anything else."""
    w = words()
    return re.compile(
        "|".join(
            [
                r"(?P<comment>#[^\n]*)",
                f'(?P<long>"""{LONG_STRING_BODY}""")',
                r'(?P<open_long>""".*)',
                f'(?P<string>"{STRING_BODY}")',
                f'(?P<open_string>"{STRING_BODY}\\\\?)',
                # Dotted names are one token, which may end in a dot while being typed.
                f"(?P<name>{w.name}(?:\\.{w.name})*\\.?)",
                f"(?P<number>{w.number})",
                f"(?P<punct>[{re.escape(w.punct.replace('.', ''))}])",
                r"(?P<space>\s+)",
                r"(?P<other>.)",
            ]
        ),
        re.DOTALL,
    )


# Triple-quoted strings are strings like any other, once scanned.
_KIND = {"long": "string", "open_long": "open_string"}


@attrs.frozen
class Token:
    """A token: its kind, text, and [start, end) indices into the text.

    `kind` is one of name (dotted names are one token, and may end in a dot
    while being typed), number, string, open_string (one whose closing quote
    is missing), comment, punct, other.
    `line_start` says whether it is the first token on its line.
    """

    kind: str
    text: str
    start: int
    end: int
    line_start: bool = False

    def is_punct(self, *chars: str) -> bool:
        return self.kind == "punct" and self.text in chars


def scan(text: str) -> list[Token]:
    """Every token of `text`, comments included, spaces left out."""
    out: list[Token] = []
    at_line_start = True
    for m in _token().finditer(text):
        group = m.lastgroup
        assert group is not None  # every alternative of _token() is a named group
        kind = _KIND.get(group, group)
        if kind == "space":
            if "\n" in m.group():
                at_line_start = True
            continue
        out.append(Token(kind, m.group(), m.start(), m.end(), at_line_start))
        at_line_start = False
    return out


def token_at(tokens: list[Token], offset: int) -> Token | None:
    """The token under `offset`. A name that ends exactly there wins over the
    token that starts there, so the cursor just after a word points at it."""
    before = None
    for tok in tokens:
        if tok.end == offset and tok.kind == "name":
            before = tok
        elif tok.start <= offset < tok.end:
            return before or tok
        elif tok.start > offset:
            break
    return before


def is_declaration_start(tokens: list[Token], i: int) -> bool:
    """Whether token `i` starts a declaration: a keyword first on its line
    (where the parser, too, resumes after a syntax error, so an unbalanced
    bracket above never swallows the rest of the file), or right after the
    `}` or `)` that ends a declaration on the same line."""
    tok = tokens[i]
    if tok.kind != "name" or tok.text not in words().declarations:
        return False
    # A comment runs to the end of its line, so the token before one that is
    # not first on its line is never a comment.
    return tok.line_start or i == 0 or tokens[i - 1].is_punct("}", ")")
