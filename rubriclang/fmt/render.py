"""Layout tree -> text.

Each item is printed on one line when it fits in `WIDTH` columns and nothing
inside it forces a break (a comment, a multi-line string). Otherwise the
fewest of its groups are exploded that make its own lines fit, preferring the
last group (black's right-hand split): `node q = op(inputs: [a, b]) {` with its
parameters below, before `node q = op(` with its ports below. Comments do not
count towards the width, so where they sit never changes the layout of code.
"""

from __future__ import annotations

import functools
import itertools

from rubriclang.fmt.build import long_literal
from rubriclang.fmt.layout import Group, Item, LongString
from rubriclang.fmt.source import Note, SourceMap

WIDTH = 88
INDENT = "  "


@functools.cache
def _explode_orders(n: int) -> tuple[frozenset[int], ...]:
    """Every set of group indexes, fewest first, later groups preferred."""
    subsets = [frozenset(c) for size in range(n + 1) for c in itertools.combinations(range(n), size)]
    return tuple(sorted(subsets, key=lambda s: (len(s), sorted(-i for i in s))))


class Renderer:
    """Prints one layout tree; caches flat forms, so use one per module."""

    def __init__(self, src: SourceMap):
        self.src = src
        self._flat: dict[int, str | None] = {}

    def module(self, root: Group) -> str:
        out: list[str] = []
        self._body(root, "", out)
        return "\n".join(out) + "\n" if out else ""

    # -- flat forms -------------------------------------------------------------

    def flat_group(self, g: Group) -> str | None:
        """`g` on one line, or None when it cannot be (comments, multi-line strings)."""
        key = id(g)
        if key not in self._flat:
            items = [self.flat_item(i) for i in g.items]
            texts = [t for t in items if t is not None]
            if g.open_notes or g.end_notes or len(texts) < len(items):
                self._flat[key] = None
            elif not texts:
                self._flat[key] = g.open + g.close
            else:
                pad = " " if g.padded else ""
                self._flat[key] = g.open + pad + ", ".join(texts) + pad + g.close
        return self._flat[key]

    def _flat_text(self, g: Group) -> str:
        """`g` on one line, for a group that is not exploded (so it can be)."""
        text = self.flat_group(g)
        assert text is not None, g
        return text

    def flat_item(self, item: Item) -> str | None:
        key = id(item)
        if key not in self._flat:
            parts = [self._flat_part(p) for p in item.parts]
            pieces = [p for p in parts if p is not None]
            commented = item.leading or item.hoisted or item.trailing
            self._flat[key] = None if commented or len(pieces) < len(parts) else "".join(pieces)
        return self._flat[key]

    def _flat_part(self, part: str | Group | LongString) -> str | None:
        if isinstance(part, str):
            return part
        if isinstance(part, LongString):
            return None
        return self.flat_group(part)

    # -- choosing what to explode -------------------------------------------------

    def _choose(self, item: Item, indent: str, suffix: str) -> set[int]:
        """ids of the groups of `item` to explode."""
        groups = item.groups()
        forced = {id(g) for g in groups if self.flat_group(g) is None}
        for order in _explode_orders(len(groups)):
            chosen = {id(groups[i]) for i in order}
            if forced <= chosen and self._fits(item, chosen, len(indent), len(suffix)):
                return chosen
        return {id(g) for g in groups}

    def _fits(self, item: Item, exploded: set[int], indent: int, suffix: int) -> bool:
        width = indent
        for p in item.parts:
            if isinstance(p, str):
                width += len(p)
            elif isinstance(p, LongString):
                if width + 3 > WIDTH:
                    return False
                width = indent + len(INDENT) + 3
            elif id(p) in exploded:
                if width + len(p.open) > WIDTH:
                    return False
                width = indent + len(p.close)
            else:
                width += len(self._flat_text(p))
        return width + suffix <= WIDTH

    # -- printing -------------------------------------------------------------------

    def _body(self, g: Group, indent: str, out: list[str]) -> None:
        """The lines of a group's items and end comments, at `indent`."""
        suffix = "," if g.commas else ""
        above: int | None = None  # the source line the previous unit ended on
        force_blank = False

        def blank(line: int | None) -> bool:
            if above is None:
                return False
            return force_blank or (g.keeps_blanks and self.src.blank_between(above, line))

        for item in g.items:
            for note in item.leading:
                if blank(note.line):
                    out.append("")
                out.append(indent + note.text)
                above, force_blank = note.line, False
            self._item(item, indent, suffix, out, blank(item.start_line))
            ends = [item.end_line, *(n.line for n in item.trailing)]
            above = max((x for x in ends if x is not None), default=None)
            force_blank = item.blank_after
        for note in g.end_notes:
            if blank(note.line):
                out.append("")
            out.append(indent + note.text)
            above, force_blank = note.line, False

    def _item(self, item: Item, indent: str, suffix: str, out: list[str], blank: bool) -> None:
        lines, own = self._item_lines(item, indent, suffix)
        commentable = [(index, notes) for index, notes, in_string in own if not in_string]
        for note in item.trailing:
            # A comment that followed the item's first line stays on its first
            # line; one that followed a later line ends the item's last line.
            target = commentable[0] if note.line == item.start_line else commentable[-1]
            target[1].append(note)
        hoisted = list(item.hoisted)
        for index, notes in commentable:
            if notes:
                notes.sort(key=lambda n: n.at)
                # One comment fits at the end of a line; the others go above the item.
                hoisted += notes[:-1]
                lines[index] += "  " + notes[-1].text
        hoisted.sort(key=lambda n: n.at)

        if blank:
            out.append("")
        out.extend(indent + n.text for n in hoisted)
        out.extend(lines)

    def _item_lines(self, item: Item, indent: str, suffix: str) -> tuple[list[str], list[tuple[int, list[Note], bool]]]:
        """The item's lines, and for each line of its own text (not of the items
        of its exploded groups): its index, the comments of the bracket it
        opens, and whether it ends inside a string (no comment can go there)."""
        exploded = self._choose(item, indent, suffix)
        lines: list[str] = []
        own: list[tuple[int, list[Note], bool]] = []
        current = indent
        for p in item.parts:
            if isinstance(p, str):
                current += p
            elif isinstance(p, LongString):
                # Never None here: the builder made a LongString only for a value
                # that has a literal, and that does not depend on the indent.
                literal = long_literal(p.value, indent + INDENT)
                assert literal is not None
                first, *middle, last = literal.split("\n")
                own.append((len(lines), [], True))
                lines.append(current + first)
                lines.extend(middle)
                current = last
            elif id(p) in exploded:
                own.append((len(lines), list(p.open_notes), False))
                lines.append(current + p.open)
                self._body(p, indent + INDENT, lines)
                current = indent + p.close
            else:
                current += self._flat_text(p)
        own.append((len(lines), [], False))
        lines.append(current + suffix)
        return lines, own
