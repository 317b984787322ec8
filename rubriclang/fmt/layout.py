"""The formatter's layout tree: what can be broken across lines, and where
each comment belongs.

A `Group` is a bracketed list that is printed either flat (`[a, b]`) or
exploded (one item per line). An `Item` is one entry of a group, or one
top-level declaration: a run of fixed text, nested groups and multi-line
strings. The lists of comments are filled in once, by `comments.attach`,
after the tree is built.
"""

from __future__ import annotations

import attrs

from rubriclang.fmt.source import Note


@attrs.frozen(eq=False)
class LongString:
    """A string printed triple-quoted, its lines indented under its item."""

    value: str


@attrs.frozen(eq=False)
class Group:
    open: str
    close: str
    # `{ a = 1 }` rather than `{a = 1}` when printed flat.
    padded: bool
    # Exploded items end in `,` (lists, maps, ports); block parameters do not.
    commas: bool
    # Blank lines the author left between items survive (blocks, the file).
    keeps_blanks: bool
    items: tuple[Item, ...]
    # Source offsets of the brackets: comments between them belong inside.
    open_at: int | None
    close_at: int | None
    # Comments printed after the opening bracket, on its line.
    open_notes: list[Note] = attrs.field(factory=list)
    # Own-line comments after the last item.
    end_notes: list[Note] = attrs.field(factory=list)


Part = str | Group | LongString


@attrs.frozen(eq=False)
class Item:
    parts: tuple[Part, ...]
    start: int | None
    end: int | None
    start_line: int | None
    end_line: int | None
    # A blank line always follows it at top level (the rubric header, the contract).
    blank_after: bool = False
    # Own-line comments before it.
    leading: list[Note] = attrs.field(factory=list)
    # Own-line comments from inside its fixed text, printed just before it.
    hoisted: list[Note] = attrs.field(factory=list)
    # Comments that end one of its lines.
    trailing: list[Note] = attrs.field(factory=list)

    def groups(self) -> list[Group]:
        return [p for p in self.parts if isinstance(p, Group)]
