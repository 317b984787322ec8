"""The one prompt-template engine: built-in prompts, user prompt templates,
the audit's generator prompts and the compiler's all use it.

A template is chat messages written as Markdown sections: `## system` (at
most one, first), then `## user` / `## assistant` turns that alternate and
end with `## user` (the turns before the last are few-shot examples). Text
with no heading at all is one user message; a leading `<!-- ... -->` comment
is a note for authors, never sent.

In the text, `{{name}}` is replaced by a value, `{{#name}} ... {{/name}}` is
kept only when `name` is not empty and `{{^name}} ... {{/name}}` only when it
is; sections nest. A tag alone at the end of its line takes that newline
with it, so a section leaves no blank line behind. Each message is stripped.

A value may be a `ListValue`: text (what `{{name}}` shows) with elements,
each a dict of its own values. A `{{#name}} ... {{/name}}` section over one
is shown once per element, in order, its tags reading the element's values
first (`{{#documents}}[{{id}}] {{text}}{{/documents}}`); an element's value
may be a `ListValue` again (a turn's tool calls). `{{^name}}` over one is
shown only when it has no elements.

The template is parsed once, before any value is known: sections are split
and tags found in the template's own text, so a value that contains `{{...}}`
or `## user` is inserted as written and can neither expand nor start a
message. Nothing here executes code.

It sits below the checker, which reads templates too (placeholders, roles),
and the LLM layer, which fills them: importing it costs no HTTP client.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import attrs

from rubriclang.items.values import ListValue

_COMMENT = re.compile(r"\A(\s*<!--.*?-->\s*)", re.S)
_HEADING = re.compile(r"^## (system|user|assistant)[ \t]*$", re.M)
_ANY_HEADING = re.compile(r"^##[ \t]+(\S+)[ \t]*$", re.M)
_TAG = re.compile(r"\{\{([#^/]?)([A-Za-z_][A-Za-z0-9_]*)\}\}(\n?)")
_OPEN = re.compile(r"\{\{")
_BLANK = re.compile(r"\n[ \t]*\n\s*")
# The version of what `fill` makes of a template and values: part of every
# `fill_digest`, so call keys taken of a template and values (not of the
# messages) change when it does. Bump it with any change to what `fill` makes.
FILL_VERSION = 1


@attrs.frozen
class Problem:
    """What is wrong with a template, where (1-based, in the template's own
    text) and what would fix it."""

    line: int
    column: int
    length: int
    message: str
    fix: str = ""


class TemplateError(ValueError):
    """A template with problems (raised where problems cannot be reported)."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        first = problems[0]
        super().__init__(f"{first.line}:{first.column}: {first.message}")


# A parsed message body: text pieces, fields, and sections of pieces.
@attrs.frozen
class _Field:
    name: str


@attrs.frozen
class _Section:
    name: str
    inverted: bool
    body: Body


Body = tuple["str | _Field | _Section", ...]


@attrs.frozen
class Message:
    role: str
    body: Body
    line: int  # the line of its heading (or of its first text)
    text: str = ""  # its source text, tags included, without the heading
    # Every section's name, in order of first mention, and the body flattened
    # for each combination of their values' truth met so far (`_flat`).
    sections: tuple[str, ...] = attrs.field(init=False, eq=False, repr=False)
    flats: dict[tuple[bool, ...], _Flat] = attrs.field(init=False, eq=False, repr=False, factory=dict)

    def __attrs_post_init__(self) -> None:
        names: dict[str, None] = {}

        def walk(body: Body) -> None:
            for part in body:
                if type(part) is _Section:
                    names[part.name] = None
                    walk(part.body)

        walk(self.body)
        object.__setattr__(self, "sections", tuple(names))

    def render(self, values: dict[str, str]) -> str:
        """The message's text with `values` filled in, before stripping."""
        truth = tuple([bool(values.get(n)) for n in self.sections])
        lists = {n: v for n in self.sections if type(v := values.get(n)) is ListValue}
        flat = None if lists else self.flats.get(truth)
        if flat is None:
            flat = _flat(self.body, dict(zip(self.sections, truth, strict=True)), lists)
            # A list's elements are flattened in as text: that body is this fill's alone.
            if not lists and len(self.flats) < _FLATS_KEPT:  # past that, flattened each time
                self.flats[truth] = flat
        texts, fields = flat
        if not fields:
            return texts[0]
        out = [*texts, *texts[:-1]]  # the right length: texts at even places, values at odd ones
        out[0::2] = texts
        out[1::2] = [values[name] for name in fields]
        return "".join(out)


@attrs.frozen
class Template:
    """A parsed template: `id` names it in traces (`rate@v1`, or a content
    hash for a user's template), `messages` in order."""

    id: str
    messages: tuple[Message, ...]

    @property
    def names(self) -> frozenset[str]:
        """Every value name the template mentions."""
        out: set[str] = set()

        def walk(body: Body) -> None:
            for part in body:
                if isinstance(part, _Field):
                    out.add(part.name)
                elif isinstance(part, _Section):
                    out.add(part.name)
                    walk(part.body)

        for m in self.messages:
            walk(m.body)
        return frozenset(out)

    @property
    def roles(self) -> tuple[str, ...]:
        return tuple(m.role for m in self.messages)

    @property
    def sections(self) -> tuple[tuple[str, str], ...]:
        """(role, source text) of each message: what `compose` writes back."""
        return tuple((m.role, m.text.strip("\n")) for m in self.messages)

    def fill(self, values: dict[str, str]) -> tuple[dict[str, str], ...]:
        """The chat messages with `values` filled in (every field the
        template shows must be in `values`; a section whose name is not
        counts as empty)."""
        return tuple([{"role": m.role, "content": m.render(values).strip()} for m in self.messages])

    def fill_parts(self, values: dict[str, str]) -> tuple[tuple[str, str], ...]:
        """(role, content) pairs: `fill` as plain tuples."""
        return tuple((m["role"], m["content"]) for m in self.fill(values))


def fill_digest(template: Template) -> str:
    """A SHA-256 of everything `fill` reads of `template` (each message's
    role and parsed body) and of FILL_VERSION: two templates with one digest
    fill any values to the same messages."""
    import hashlib  # here: the checker imports this module, and never needs them

    from rubriclang.canonical import canonical_json

    def plain(body: Body) -> list[Any]:
        out: list[Any] = []
        for part in body:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, _Field):
                out.append(["field", part.name])
            else:
                out.append(["section", part.name, part.inverted, plain(part.body)])
        return out

    shape = {"fill": FILL_VERSION, "messages": [[m.role, plain(m.body)] for m in template.messages]}
    return hashlib.sha256(canonical_json(shape).encode()).hexdigest()


_FLATS_KEPT = 64  # flattened bodies kept per message


# A body flattened for one combination of its sections' truth: the texts
# between fields, and the fields' names.
_Flat = tuple[tuple[str, ...], tuple[str, ...]]


def _flat(body: Body, truth: dict[str, bool], lists: dict[str, ListValue] | None = None) -> _Flat:
    """`body` with its sections kept or dropped by `truth` (each section
    name's value's truth): the texts between fields and the fields' names,
    one text more than fields. `Message.render` fills it in one join.
    A section over one of `lists` is flattened once per element, the
    element's values written in as text (an element's own values first)."""
    texts: list[str] = []
    fields: list[str] = []
    text: list[str] = []

    def walk(parts: Body, scope: dict[str, str | ListValue]) -> None:
        for part in parts:
            if type(part) is str:
                text.append(part)
            elif type(part) is _Field:
                if part.name in scope:
                    text.append(scope[part.name])
                else:
                    texts.append("".join(text))
                    text.clear()
                    fields.append(part.name)
            elif type(part) is _Section:
                value = scope[part.name] if part.name in scope else (lists or {}).get(part.name)
                if type(value) is ListValue and not part.inverted:
                    for element in value.elements:
                        walk(part.body, {**scope, **element})
                elif (bool(value) if part.name in scope else truth[part.name]) != part.inverted:
                    walk(part.body, scope)

    walk(body, {})
    texts.append("".join(text))
    return tuple(texts), tuple(fields)


def _position(text: str, offset: int, line0: int) -> tuple[int, int]:
    before = text[:offset]
    return line0 + before.count("\n"), offset - (before.rfind("\n") + 1) + 1


def parse(text: str, template_id: str) -> tuple[Template | None, list[Problem]]:
    """The template in `text`, or None and every problem found."""
    problems: list[Problem] = []
    m = _COMMENT.match(text)
    start = m.end(1) if m else 0
    if "<!--" in text[:start] and "-->" not in text[:start]:
        start = 0
    headings = list(_HEADING.finditer(text, start))
    for bad in _ANY_HEADING.finditer(text, start):
        if bad.group(1) not in ("system", "user", "assistant"):
            line, col = _position(text, bad.start(1), 1)
            problems.append(
                Problem(
                    line,
                    col,
                    len(bad.group(1)),
                    f"unknown section `## {bad.group(1)}`",
                    "the sections are `## system`, `## user` and `## assistant`",
                )
            )
    chunks: list[tuple[str, int, int]] = []  # (role, body start, body end)
    if not headings:
        chunks.append(("user", start, len(text)))
    else:
        lead = text[start : headings[0].start()]
        if lead.strip():
            line, col = _position(text, start + len(lead) - len(lead.lstrip()), 1)
            problems.append(
                Problem(
                    line,
                    col,
                    1,
                    "text before the first section heading is never sent",
                    "start the template with `## system` or `## user`, or move the text into a section",
                )
            )
        for i, h in enumerate(headings):
            end = headings[i + 1].start() if i + 1 < len(headings) else len(text)
            chunks.append((h.group(1), h.end(), end))
    problems += _check_roles(text, chunks, headings)
    messages = []
    for role, begin, end in chunks:
        body, found = _parse_body(text, begin, end)
        problems += found
        messages.append(Message(role, body, _position(text, begin, 1)[0], text[begin:end]))
    if problems:
        return None, sorted(problems, key=lambda p: (p.line, p.column))
    return Template(template_id, tuple(messages)), []


def _check_roles(text: str, chunks: list[tuple[str, int, int]], headings: list[re.Match[str]]) -> list[Problem]:
    out = []

    def at(i: int, message: str, fix: str) -> None:
        if headings:
            line, col = _position(text, headings[i].start(), 1)
            out.append(Problem(line, col, len(headings[i].group(0)), message, fix))

    roles = [c[0] for c in chunks]
    turns = [(i, role) for i, role in enumerate(roles) if role != "system"]
    for i, role in enumerate(roles):
        if role == "system" and i > 0:
            at(i, "`## system` must come first, and only once", "move the system text to the top of the template")
    for j, (i, role) in enumerate(turns):
        want = "user" if j % 2 == 0 else "assistant"
        if role != want:
            at(
                i,
                f"expected a `## {want}` turn here: turns alternate, user first",
                "few-shot examples are `## user` / `## assistant` pairs before the last `## user`",
            )
            break
    if not turns:
        out.append(
            Problem(1, 1, 1, "the template has no `## user` message", "add a `## user` section that shows the response")
        )
    elif turns[-1][1] != "user":
        at(
            turns[-1][0],
            "the template must end with a `## user` message",
            "the last turn is the question the judge answers; an `## assistant` turn belongs to a few-shot pair "
            "before it",
        )
    for i, (role, begin, end) in enumerate(chunks):
        if not text[begin:end].strip():
            at(i, f"the `## {role}` section is empty", "write its text, or remove the heading")
    return out


def _parse_body(text: str, begin: int, end: int) -> tuple[Body, list[Problem]]:
    problems: list[Problem] = []
    stack: list[tuple[str, bool, int, list[str | _Field | _Section]]] = []  # (name, inverted, offset, parts)
    parts: list[str | _Field | _Section] = []
    pos = begin
    for m in _TAG.finditer(text, begin, end):
        parts.append(text[pos : m.start()])
        _malformed(text, pos, m.start(), problems)
        pos = m.end()
        kind, name, newline = m.group(1), m.group(2), m.group(3)
        if kind == "":
            parts.append(_Field(name))
            parts.append(newline)
        elif kind in "#^":
            stack.append((name, kind == "^", m.start(), parts))
            parts = []
        else:
            if not stack or stack[-1][0] != name:
                line, col = _position(text, m.start(), 1)
                expected = f"`{{{{/{stack[-1][0]}}}}}` first" if stack else "no section open"
                problems.append(
                    Problem(
                        line,
                        col,
                        len(m.group(0).rstrip()),
                        f"`{{{{/{name}}}}}` closes a section that is not open ({expected})",
                        "every `{{#name}}` or `{{^name}}` is closed by its own `{{/name}}`, innermost first",
                    )
                )
                continue
            open_name, inverted, _, outer = stack.pop()
            outer.append(_Section(open_name, inverted, tuple(p for p in parts if p != "")))
            parts = outer
    parts.append(text[pos:end])
    _malformed(text, pos, end, problems)
    for name, inverted, offset, _ in stack:
        line, col = _position(text, offset, 1)
        tag = f"{{{{{'^' if inverted else '#'}{name}}}}}"
        problems.append(
            Problem(
                line,
                col,
                len(tag),
                f"section `{tag}` is never closed in this message",
                f"close it with `{{{{/{name}}}}}` before the next `##` heading",
            )
        )
    return tuple(p for p in parts if p != ""), problems


def _malformed(text: str, begin: int, end: int, problems: list[Problem]) -> None:
    for m in _OPEN.finditer(text, begin, end):
        line, col = _position(text, m.start(), 1)
        snippet = text[m.start() : m.start() + 24].split("\n", 1)[0]
        problems.append(
            Problem(
                line,
                col,
                2,
                f"`{snippet}` is not a placeholder",
                "placeholders are `{{name}}`, `{{#name}}`, `{{^name}}` and `{{/name}}` (letters, digits and `_`, no "
                "spaces)",
            )
        )


def mentions(template: Template) -> tuple[tuple[str, tuple[str, ...], bool], ...]:
    """Each tag's name, the names of the sections around it (outermost
    first), and whether it opens a section; in order, repeats kept."""
    out: list[tuple[str, tuple[str, ...], bool]] = []

    def walk(body: Body, outer: tuple[str, ...]) -> None:
        for part in body:
            if isinstance(part, _Field):
                out.append((part.name, outer, False))
            elif isinstance(part, _Section):
                out.append((part.name, outer, True))
                walk(part.body, (*outer, part.name))

    for m in template.messages:
        walk(m.body, ())
    return tuple(out)


def unknown_names(template: Template, known: Iterable[str]) -> list[str]:
    """The names the template mentions that no value has."""
    known = set(known)
    return sorted(n for n in template.names if n not in known)


def locate(text: str, name: str) -> tuple[int, int, int]:
    """Where `name` is first mentioned as a tag in `text`: (line, column, length)."""
    for m in _TAG.finditer(text):
        if m.group(2) == name:
            line, col = _position(text, m.start(), 1)
            return line, col, len(m.group(0).rstrip("\n"))
    return 1, 1, 1


def compose(sections: Iterable[tuple[str, str]]) -> str:
    """Template text with one `## role` section per (role, source text):
    `Template.sections` composed back parses to the same messages (the
    author's comment, never sent, is not kept)."""
    return "\n\n".join(f"## {role}\n{text}" for role, text in sections) + "\n"


def paragraph_breaks(text: str) -> list[tuple[int, int]]:
    """(start, end) of each blank-line break in a message's source text
    that lies outside every `{{#...}}` / `{{^...}}` section, so the text can
    be cut there into paragraphs that are each well formed."""
    depth, pos, out = 0, 0, []
    for m in [*_TAG.finditer(text), None]:
        stop = m.start() if m else len(text)
        if depth == 0:
            out += [(pos + b.start(), pos + b.end()) for b in _BLANK.finditer(text[pos:stop])]
        if m is None:
            break
        depth += {"#": 1, "^": 1, "/": -1}.get(m.group(1), 0)
        pos = m.end() - len(m.group(3))  # the newline a tag takes may start a break
    return out


def packaged_text(package: str, stem: str) -> str:
    """The text of a template shipped in `package`'s `prompts/` folder."""
    import importlib.resources

    return importlib.resources.files(package).joinpath("prompts", f"{stem}.md").read_text(encoding="utf-8")


def load_packaged(package: str, stem: str) -> Template:
    """A template shipped in `package`'s `prompts/` folder, e.g. `rate.v1`,
    named `rate@v1`. Raises TemplateError (a packaging bug) when malformed."""
    text = packaged_text(package, stem)
    name, version = stem.rsplit(".", 1)
    template, problems = parse(text, f"{name}@{version}")
    if template is None:
        raise TemplateError(problems)
    return template
