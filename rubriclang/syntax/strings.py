"""String literal decoding: escapes, and dedenting of triple-quoted prompts."""

from __future__ import annotations

import textwrap

ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "0": "\0"}

# The two string literals' bodies as grammar/rubric.lark spells them (a test
# checks they agree), for the scanners that skip strings. Possessive repeats:
# a backtracking `(?:a|b)*` keeps a frame per character in Python's regex
# engine, about 330 bytes each, so an 8 MB literal took 2.7 GB to lex.
STRING_BODY = r'(?:[^"\\\n]++|\\.)*+'
LONG_STRING_BODY = r'(?:[^"\\]++|\\.|"(?!""))*+'
# Strings, closed or not, and comments: what a scan for syntax skips (re.S).
LITERALS = rf'"""{LONG_STRING_BODY}(?:"""|\Z)|"{STRING_BODY}"?|#[^\n]*'


class BadEscape(ValueError):
    """An unknown escape sequence; `offset` is its index in the literal's text."""

    def __init__(self, offset: int, sequence: str):
        super().__init__(sequence)
        self.offset = offset
        self.sequence = sequence


def _unescape(body: str, base: int) -> str:
    if "\\" not in body:
        return body
    out = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1] if i + 1 < len(body) else ""
        if nxt in ESCAPES:
            out.append(ESCAPES[nxt])
            i += 2
        elif nxt == "u" and _is_hex(body[i + 2 : i + 6], 4):
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
        elif nxt == "\n":  # a backslash at the end of a line joins it with the next
            i += 2
        else:
            raise BadEscape(base + i, "\\" + nxt)
    return "".join(out)


def _is_hex(text: str, n: int) -> bool:
    return len(text) == n and all(c in "0123456789abcdefABCDEF" for c in text)


def decode(literal: str) -> tuple[str, bool]:
    """The value of a string literal, and whether it was triple-quoted.

    Raises BadEscape for an unknown escape sequence. Triple-quoted strings lose
    one leading newline and a closing line of only indentation, and are then
    dedented (before escapes are decoded, so `\\t` never counts as indentation),
    so prompts can be indented with the surrounding code.
    """
    if literal.startswith('"""'):
        body = literal[3:-3]
        _unescape(body, 3)  # report bad escapes at their place in the source
        if body.startswith("\n"):
            body = body[1:]
        head, sep, last = body.rpartition("\n")
        if sep and not last.strip(" \t"):
            body = head
        return _unescape(textwrap.dedent(body), 0), True
    return _unescape(literal[1:-1], 1), False


def quote(value: str) -> str:
    """A one-line literal for `value`."""
    out = ['"']
    for ch in value:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\0":
            out.append("\\0")
        elif ord(ch) < 32:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def quote_long(value: str, indent: str) -> str | None:
    """A triple-quoted literal for `value`, its lines indented by `indent`, or
    None when no such literal decodes back to exactly `value`."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    lines = [(indent + line) if line.strip() else line for line in escaped.split("\n")]
    text = '"""\n' + "\n".join(lines) + "\n" + indent + '"""'
    try:
        decoded, _ = decode(text)
    except BadEscape:
        return None
    return text if decoded == value else None
