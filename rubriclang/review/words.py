"""Word-level differences between two prompt texts (questions, anchors)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable

# Words, runs of whitespace, and runs of punctuation are the tokens: a changed
# comma shows as a changed comma, not as a changed word.
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]+")

EQUAL, DELETE, INSERT, CHANGE = "=", "-", "+", "~"


def is_prose(old: object, new: object) -> bool:
    """Whether a change of value is worth a word diff: both sides text, one of
    them with more than one word."""
    return type(old) is str and type(new) is str and any(c.isspace() for c in old + new)


def aligned(old: str, new: str) -> tuple[tuple[str, str, str], ...]:
    """The stretches `(op, old_text, new_text)` that align `old` with `new`:
    op `=` for an unchanged stretch (each side's own text: they differ only
    in whitespace), `~` for a changed one (either text may be empty). The one
    word matcher, for `word_diff` and the audit report's side-by-side view.

    Words are matched whatever the whitespace between them, so a reflowed
    text shows only its changed words; when whitespace is all that changed,
    it is matched exactly."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    loose = old.split() != new.split()
    key: Callable[[str], str] = (lambda t: " " if t.isspace() else t) if loose else (lambda t: t)
    matcher = difflib.SequenceMatcher(None, [key(t) for t in a], [key(t) for t in b], autojunk=False)
    return tuple(
        (EQUAL if tag == "equal" else CHANGE, "".join(a[i1:i2]), "".join(b[j1:j2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
    )


def word_diff(old: str, new: str) -> tuple[tuple[str, str], ...]:
    """The segments `(op, text)` that turn `old` into `new`: op is `=`, `-` or
    `+`; adjacent segments of one op are merged, and a replacement lists its
    deletion before its insertion. Unchanged stretches show NEW's text (see
    `aligned`)."""
    out: list[list[str]] = []

    def add(op: str, text: str) -> None:
        if not text:
            return
        if out and out[-1][0] == op:
            out[-1][1] += text
        else:
            out.append([op, text])

    for op, removed, added in aligned(old, new):
        if op == EQUAL:
            add(EQUAL, added)
        else:
            add(DELETE, removed)
            add(INSERT, added)
    return tuple((op, text) for op, text in _slide(out))


def _slide(segments: list[list[str]]) -> list[list[str]]:
    """Move a lone insertion's or deletion's leading space to its end when the
    text after it starts with that space too (the same text either way), so
    that it reads `with [-notable-] errors`, not `with[- notable-] errors`."""
    for i in range(1, len(segments) - 1):
        before, seg, after = segments[i - 1], segments[i], segments[i + 1]
        text = seg[1]
        if before[0] == after[0] == EQUAL and text[:1].isspace() and after[1].startswith(text[0]):
            before[1] += text[0]
            seg[1] = text[1:] + text[0]
            after[1] = after[1][1:]
    return [s for s in segments if s[1]]
