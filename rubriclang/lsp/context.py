"""Where the cursor is, syntactically, for completion.

Completion runs while a file is being typed, so it cannot wait for a parse:
this walks the scanner's tokens of the declaration around the cursor and
tracks brackets and the few states a declaration goes through.
"""

from __future__ import annotations

import string

import attrs

from rubriclang.lsp.scanner import Token, is_declaration_start, scan

# What may be completed at the cursor.
NONE = "none"
KEYWORD = "keyword"  # a declaration keyword
PROCEDURE = "procedure"  # after `criterion NAME: TYPE =`
OPERATOR = "operator"  # after `node NAME =`
PORT = "port"  # a port name inside `op(...)`
NODE = "node"  # a node name: a port's slot, or after `sink`
PARAM = "param"  # a parameter name inside a declaration's `{ }`
VALUE = "value"  # a parameter's value, or a field's type in `item { }`
AFTER_PROCEDURE = "after_procedure"  # after `criterion NAME: TYPE = PROC`: `each`, or a declaration
ELEMENT = "element"  # after `each`
EACH_IN = "each_in"  # after `each ELEMENT`: `in`
ITEM_FIELD = "item_field"  # after `each ELEMENT in`: a declared field

# The characters of a (dotted) name being typed.
_WORD_CHARS = frozenset(string.ascii_letters + string.digits + "_.")


@attrs.frozen
class Context:
    """What the cursor can be completed with, and about what.

    `start` is where the word being typed begins (completion replaces the
    text from there to the cursor). `decl` is the keyword of the declaration
    the cursor is in, `head` its procedure, operator or readout mode, and
    `own_name` its declared name. `used` holds the ports or parameters that
    are already written (in `item { }`, the fields); `param` is the parameter
    (or field) whose value (or type) is being typed; `element` the element
    named after `each`.
    """

    kind: str
    start: int
    prefix: str = ""
    decl: str | None = None
    head: str | None = None
    own_name: str | None = None
    used: frozenset[str] = frozenset()
    param: str | None = None
    element: str | None = None


def completion_context(text: str, offset: int) -> Context:
    """The completion context at `offset` (an index into `text`)."""
    tokens = scan(text)
    start = offset
    while start > 0 and text[start - 1] in _WORD_CHARS:
        start -= 1
    prefix = text[start:offset]
    if _inside_literal(tokens, offset) or prefix[:1].isdigit():
        return Context(NONE, start, prefix)
    before = [(i, t) for i, t in enumerate(tokens) if t.end <= start and t.kind != "comment"]
    first = next((k for k in range(len(before) - 1, -1, -1) if is_declaration_start(tokens, before[k][0])), None)
    if first is None:
        return Context(KEYWORD if not before else NONE, start, prefix)
    walk = _Walk(before[first][1].text)
    for _, tok in before[first + 1 :]:
        walk.feed(tok)
    return walk.context(start, prefix)


def declared_names(text: str) -> list[tuple[str, str]]:
    """(name, keyword) of each `criterion`/`node` declaration, in source order."""
    tokens = scan(text)
    out = []
    for i, tok in enumerate(tokens[:-1]):
        nxt = tokens[i + 1]
        if tok.text in ("criterion", "node") and is_declaration_start(tokens, i) and nxt.kind == "name":
            out.append((nxt.text, tok.text))
    return out


def declared_fields(text: str) -> list[tuple[str, str]]:
    """(name, kind) of each field of the file's `item { }` declarations, in
    source order: a field's kind is the name after its colon (`list` for
    `list[text]`). Read from tokens, so it works while the file is typed."""
    tokens = scan(text)
    out = []
    for i, tok in enumerate(tokens):
        if tok.text != "item" or not is_declaration_start(tokens, i):
            continue
        if i + 1 >= len(tokens) or not tokens[i + 1].is_punct("{"):
            continue
        depth = 0
        for j in range(i + 1, len(tokens) - 2):
            t = tokens[j]
            depth += t.is_punct("{", "[", "(") - t.is_punct("}", "]", ")")
            if depth == 0:
                break
            nxt, kind = tokens[j + 1], tokens[j + 2]
            if depth == 1 and t.kind == "name" and nxt.is_punct(":") and kind.kind == "name":
                out.append((t.text, kind.text))
    return out


def _inside_literal(tokens: list[Token], offset: int) -> bool:
    for tok in tokens:
        if tok.start >= offset:
            return False
        # A comment or an unclosed string still holds the cursor at its end.
        if tok.kind in ("string", "open_string", "comment") and (
            offset < tok.end or (offset == tok.end and tok.kind != "string")
        ):
            return True
    return False


class _Walk:
    """The state of one declaration, token by token up to the cursor."""

    def __init__(self, keyword: str):
        self.decl = keyword
        self.own_name: str | None = None
        self.head: str | None = None
        self.header_eq = False  # the `=` before a procedure or operator
        self.done = False  # the declaration could end here
        self.stack: list[str] = []  # roles of the open brackets: ports, refs, block, other
        self.slot = "port"  # in ports: port, colon, ref, after
        self.ports: set[str] = set()
        self.state = "name"  # in a block, at its own level: name, eq, value, after
        self.param: str | None = None
        self.params: set[str] = set()
        self.count = 0  # tokens seen at depth 0 after the keyword
        self.each = ""  # a criterion's `each ELEMENT in FIELD`: "", element, in, field, done
        self.element: str | None = None

    def feed(self, tok: Token) -> None:
        role = self.stack[-1] if self.stack else None
        if tok.is_punct("(", "[", "{"):
            self._open(tok.text, role)
        elif tok.is_punct(")", "]", "}"):
            self._close()
        elif role is None:
            self._top(tok)
        elif role in ("ports", "refs"):
            self._port_token(tok, role)
        elif role == "block":
            self._block_token(tok)

    def _open(self, char: str, role: str | None) -> None:
        if role is None and char == "(" and self.decl == "node" and self.head:
            new = "ports"
        elif role is None and char == "{" and self._block_position():
            new = "block"
            self.each = "done"  # `each` comes before the block, never after it
        elif role == "ports" and char == "[" and self.slot == "ref":
            new = "refs"
        else:
            new = "other"
            if role == "block":
                self._block_value()
        self.stack.append(new)

    def _block_position(self) -> bool:
        if self.decl in ("criterion", "node"):
            return self.head is not None
        return self.decl != "sink"

    def _close(self) -> None:
        if not self.stack:
            return
        closed = self.stack.pop()
        if closed == "refs":
            self.slot = "after"
        if not self.stack and closed in ("ports", "block"):
            self.done = True

    def _top(self, tok: Token) -> None:
        self.count += 1
        if tok.kind == "name" and self.count == 1 and self.decl != "contract":
            self.own_name = tok.text
            self.done = self.decl == "sink"
            if self.decl == "readout":
                self.head = tok.text
        elif tok.is_punct("=") and self.decl in ("criterion", "node") and not self.header_eq:
            self.header_eq = True
        elif tok.kind == "name" and self.header_eq and self.head is None:
            self.head = tok.text
            self.done = self.decl == "criterion"  # its block is optional
        elif tok.kind == "name" and self.decl == "criterion" and self.head is not None:
            self._each_token(tok.text)

    def _each_token(self, word: str) -> None:
        if self.each == "" and word == "each":
            self.each = "element"
        elif self.each == "element":
            self.element, self.each = word, "in"
        elif self.each == "in" and word == "in":
            self.each = "field"
        elif self.each == "field":
            self.each = "done"
        self.done = self.each in ("", "done")

    def _port_token(self, tok: Token, role: str) -> None:
        if tok.is_punct(","):
            self.slot = "ref" if role == "refs" else "port"
        elif tok.is_punct(":"):
            self.slot = "ref"
        elif tok.kind == "name" and role == "ports" and self.slot == "port":
            self.ports.add(tok.text)
            self.slot = "colon"
        elif tok.kind == "name":
            self.slot = "after"

    def _block_token(self, tok: Token) -> None:
        if tok.is_punct(","):
            self.state = "name"
        elif tok.is_punct("=") or (tok.is_punct(":") and self.decl == "item"):  # `item { FIELD: TYPE }`
            self.state = "value" if self.state == "eq" else self.state
        elif tok.kind == "name" and self.state in ("name", "after"):
            self.param = tok.text
            self.params.add(tok.text)
            self.state = "eq"
        else:
            self._block_value()

    def _block_value(self) -> None:
        if self.state == "value":
            self.state = "after"

    def context(self, start: int, prefix: str) -> Context:
        def at(kind: str, used: frozenset[str] = frozenset(), param: str | None = None) -> Context:
            return Context(kind, start, prefix, self.decl, self.head, self.own_name, used, param, self.element)

        role = self.stack[-1] if self.stack else None
        if role == "ports":
            if self.slot == "port":
                return at(PORT, used=frozenset(self.ports))
            return at(NODE if self.slot == "ref" else NONE)
        if role == "refs":
            return at(NODE if self.slot == "ref" else NONE)
        if role == "block":
            if self.state in ("name", "after"):
                return at(PARAM, used=frozenset(self.params))
            if self.state == "value":
                return at(VALUE, param=self.param)
            return at(NONE)
        if role is not None:
            return at(NONE)
        if self.decl == "sink" and self.own_name is None:
            return at(NODE)
        if self.header_eq and self.head is None:
            return at(PROCEDURE if self.decl == "criterion" else OPERATOR)
        if self.decl == "criterion" and self.head is not None and self.each != "done":
            return at({"": AFTER_PROCEDURE, "element": ELEMENT, "in": EACH_IN, "field": ITEM_FIELD}[self.each])
        return at(KEYWORD if self.done else NONE)
