"""Word-level differences of two texts, for a side-by-side view: the
original's text with its removed words marked, and the perturbed text with
its added words marked."""

from __future__ import annotations

import difflib
import re

from rubriclang.audit.html.markup import Markup, el, join

# Words, runs of whitespace and runs of punctuation: a changed comma shows
# as a changed comma, and a letter swapped inside a word marks that word.
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]+")


def sides(old: str, new: str) -> tuple[Markup, Markup]:
    """(old with `<del>` around removed tokens, new with `<ins>` around
    added ones). Each side keeps its own text exactly; whitespace counts
    only when it is all that changed, so a reflowed text marks its words."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    loose = old.split() != new.split()

    def key(t: str) -> str:
        return " " if loose and t.isspace() else t

    left: list[Markup] = []
    right: list[Markup] = []
    matcher = difflib.SequenceMatcher(None, [key(t) for t in a], [key(t) for t in b], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        removed, added = "".join(a[i1:i2]), "".join(b[j1:j2])
        if tag == "equal":
            left.append(join([removed]))
            right.append(join([added]))
            continue
        if removed:
            left.append(el("del", None, removed))
        if added:
            right.append(el("ins", None, added))
    return join(left), join(right)
