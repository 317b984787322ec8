"""Word-level differences of two texts, for a side-by-side view: the
original's text with its removed words marked, and the perturbed text with
its added words marked. The matching is `review.words.aligned`'s."""

from __future__ import annotations

from rubriclang.audit.html.markup import Markup, el, join
from rubriclang.review.words import EQUAL, aligned


def sides(old: str, new: str) -> tuple[Markup, Markup]:
    """(old with `<del>` around removed tokens, new with `<ins>` around
    added ones). Each side keeps its own text exactly; whitespace counts
    only when it is all that changed, so a reflowed text marks its words."""
    left: list[Markup] = []
    right: list[Markup] = []
    for op, removed, added in aligned(old, new):
        if op == EQUAL:
            left.append(join([removed]))
            right.append(join([added]))
            continue
        if removed:
            left.append(el("del", None, removed))
        if added:
            right.append(el("ins", None, added))
    return join(left), join(right)
