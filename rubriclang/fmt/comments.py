"""Giving every comment a home in the layout tree.

A comment between the items of a group is *leading* (on its own line: it
belongs to the next item, or to the group's end) or *trailing* (after code:
it belongs to the previous item, or to the opening bracket). A comment inside
an item's fixed text is hoisted above the item when it sits on its own line;
otherwise it ends the line of the next bracket the item opens, or the item's
own line. Either way a trailing comment stays on a line with the code it
followed, which `# rbg: ignore[...]` relies on.
"""

from __future__ import annotations

from rubriclang.fmt.layout import Group, Item
from rubriclang.fmt.source import Note


def attach(root: Group, notes: tuple[Note, ...]) -> None:
    """File each note (in source order) under the group or item it belongs to."""
    for note in notes:
        _in_group(root, note)


def _in_group(group: Group, note: Note) -> None:
    for item in group.items:
        if item.start is not None and item.end is not None and item.start <= note.at < item.end:
            _in_item(item, note)
            return
    if note.own_line:
        following = next((i for i in group.items if i.start is not None and i.start > note.at), None)
        (group.end_notes if following is None else following.leading).append(note)
        return
    preceding = [i for i in group.items if i.end is not None and i.end <= note.at]
    (preceding[-1].trailing if preceding else group.open_notes).append(note)


def _in_item(item: Item, note: Note) -> None:
    groups = item.groups()
    for g in groups:
        if g.open_at is not None and g.close_at is not None and g.open_at < note.at < g.close_at:
            _in_group(g, note)
            return
    if note.own_line:
        item.hoisted.append(note)
        return
    opened_after = next((g for g in groups if g.open_at is not None and g.open_at > note.at), None)
    (item.trailing if opened_after is None else opened_after.open_notes).append(note)
