"""Turning Lark's parse errors into diagnostics a person can act on.

Lark reports the terminals it expected; we name them in words, and for common
mistakes (recognised with Lark's `match_examples`, as in its error-reporting
example) add a hint that shows the right form.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from lark import Lark
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from rubriclang.diagnostics import Diagnostic
from rubriclang.diagnostics.codes import make
from rubriclang.diagnostics.span import Span
from rubriclang.syntax.strings import LITERALS

_WORDS = {
    "NAME": "a name",
    "STRING": "a string",
    "LONG_STRING": "a string",
    "NUMBER": "a number",
    "BOOL_T": "a type",
    "ORDINAL_T": "a type",
    "SCORE_T": "a type",
    "LABEL_T": "a type",
    "TRUE": "`true`",
    "FALSE": "`false`",
    "OPTIONAL": "`?`",
    "$END": "the end of the file",
}

# Typical mistakes and the hint each deserves. Each example must fail at the
# parser state the hint is about.
_HINTS = {
    "a criterion needs a type after its name, e.g. `criterion fluent: ordinal[1, 5] = llm.rate {...}`": [
        "criterion fluent = llm.rate",
        "criterion fluent llm.rate",
        "criterion fluent {",
    ],
    "a criterion names its procedure after `=`, e.g. `criterion safe: bool = llm.check {...}`": [
        "criterion safe: bool llm.check",
        "criterion safe: bool = {",
        "criterion safe: bool = 3",
    ],
    "a type is `bool`, `ordinal[lo, hi]`, `score[lo, hi]` or `label{a, b}`, optionally followed by `?`": [
        "criterion a: int = llm.rate",
        "criterion a: ordinal = llm.rate",
        "criterion a: ordinal[1] = llm.rate",
        "criterion a: ordinal[1 5] = llm.rate",
        "criterion a: score(1, 5) = llm.rate",
    ],
    "ports are named: `reduce.mean(inputs: [a, b])`, `gate.cap(value: q, when: long)`": [
        "node n = reduce.mean([a, b])",
        "node n = reduce.mean(a)",
        "node n = gate.cap(value: q, long)",
    ],
    "a node applies an operator to named ports in parentheses, e.g. `node q = reduce.mean(inputs: [a, b])`": [
        "node n = reduce.mean { }",
        "node n = reduce.mean inputs",
        "node n reduce.mean(inputs: [a])",
    ],
    "parameters are written `name = value` inside `{ }`": [
        'criterion a: bool = llm.check { question: "x" }',
        "contract { scale score[1, 5] }",
        'criterion a: bool = llm.check { "x" }',
    ],
    "a list of nodes is written in brackets and separated by commas: `[a, b, c]`": [
        "node n = reduce.mean(inputs: [a b])",
        "node n = reduce.mean(inputs: [a, 3])",
    ],
    "a declaration starts with `rubric`, `contract`, `criterion`, `node`, `sink`, `readout` or `item`": [
        "crit a: bool = llm.check",
        "}",
        "a = 3",
    ],
}


def _word(name: str, lark_factory: Callable[[], Lark]) -> str:
    if name in _WORDS:
        return _WORDS[name]
    try:
        pattern = lark_factory().get_terminal(name).pattern
    except KeyError:
        return name.lower()
    if pattern.type == "str":
        return f"`{pattern.value}`"
    return name.lower()


def _expected_words(names: Iterable[str], lark_factory: Callable[[], Lark]) -> str:
    words = sorted({_word(n, lark_factory) for n in names})
    if not words:
        return "something else"
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


# Lark matches an example by the depth of the parser's stack, which is one less
# in a file's first declaration than in the later ones; the examples are tried
# both alone and after a declaration, so a hint fires wherever the mistake is.
_AFTER_A_DECLARATION = "sink x\n"


def _hint(exc: UnexpectedInput, lark_factory: Callable[[], Lark]) -> str | None:
    if not isinstance(exc, UnexpectedToken):
        return None
    for prefix in ("", _AFTER_A_DECLARATION):
        examples = {label: [prefix + e for e in ex] for label, ex in _HINTS.items()}
        try:
            hint = exc.match_examples(lark_factory().parse, examples, use_accepts=True)
        except Exception:  # a hint is a courtesy; never let it mask the error itself
            return None
        if hint:
            return hint
    return None


# Brackets, with strings and comments skipped so that brackets inside them do not count.
_BRACKETS = re.compile(LITERALS + r"|[{}\[\]()]", re.S)
_OPENER = {"}": "{", "]": "[", ")": "("}


def _unclosed(text: str) -> str | None:
    """A note naming the innermost bracket that is never closed, if any."""
    stack: list[int] = []
    for m in _BRACKETS.finditer(text):
        tok = m.group()
        if tok in ("{", "[", "("):
            stack.append(m.start())
        elif tok in _OPENER:
            opener = _OPENER[tok]
            while stack and text[stack[-1]] != opener:
                stack.pop()
            if stack:
                stack.pop()
    if not stack:
        return None
    at = stack[-1]
    line = text.count("\n", 0, at) + 1
    column = at - (text.rfind("\n", 0, at) + 1) + 1
    return f"the `{text[at]}` at line {line}, column {column} is never closed"


def describe_unexpected(
    exc: UnexpectedInput, text: str, lark_factory: Callable[[], Lark]
) -> tuple[str, int, int, int, str, tuple[str, ...]]:
    """(code, line, column, end_column, message, notes) for a Lark error."""
    if isinstance(exc, UnexpectedCharacters):
        pos = exc.pos_in_stream
        assert pos is not None  # the lexer always says where it stopped
        char = text[pos]
        if text.startswith('"""', pos) or (char == '"' and pos >= 2 and text.startswith('""', pos - 2)):
            return (
                "RB003",
                exc.line,
                exc.column,
                exc.column + 1,
                "unterminated triple-quoted string",
                ('close it with `"""`',),
            )
        if char == '"':
            return (
                "RB003",
                exc.line,
                exc.column,
                exc.column + 1,
                "unterminated string",
                ('a `"` string ends on the line it starts; use `"""` for text over several lines',),
            )
        shown = repr(char)[1:-1] if not char.isprintable() else char
        notes: tuple[str, ...] = (f"expected {_expected_words(exc.allowed, lark_factory)}",) if exc.allowed else ()
        return ("RB005", exc.line, exc.column, exc.column + 1, f"unexpected character `{shown}`", notes)
    if isinstance(exc, UnexpectedEOF) or (isinstance(exc, UnexpectedToken) and exc.token.type == "$END"):
        expected = _expected_words(getattr(exc, "accepts", None) or exc.expected, lark_factory)
        lines = text.split("\n")
        line = len(lines)
        column = len(lines[-1]) + 1
        notes = tuple(n for n in (_unclosed(text), _hint(exc, lark_factory)) if n)
        return ("RB002", line, column, column, f"unexpected end of file: expected {expected}", notes)
    assert isinstance(exc, UnexpectedToken)
    tok = exc.token
    expected = _expected_words(exc.accepts or exc.expected, lark_factory)
    hint = _hint(exc, lark_factory)
    notes = (hint,) if hint else ()
    shown = str(tok).replace("\n", "\\n")
    if len(shown) > 40:
        shown = shown[:37] + "..."
    assert tok.line is not None and tok.column is not None  # a real token, not `$END`
    end = (
        tok.end_column
        if tok.end_line == tok.line and tok.end_column is not None
        else tok.column + len(str(tok).split("\n")[0])
    )
    return ("RB001", tok.line, tok.column, end, f"unexpected `{shown}`: expected {expected}", notes)


def syntax_diagnostic(code: str, span: Span, message: str, notes: Sequence[str] = ()) -> Diagnostic:
    return make(code, span, message, notes)
