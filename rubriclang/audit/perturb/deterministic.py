"""Deterministic perturbations (`generator = "rule"` in perturbations.toml),
each with the structural check its variants must pass.

Randomness comes from a `random.Random` seeded by the suite's seed, the
item and the perturbation, so a suite perturbs the same way on every
machine. A check is written independently of its perturbation (it inspects
the original and the variant, not the perturbation's own steps), so a bug in
one is caught rather than confirmed.
"""

from __future__ import annotations

import re
from random import Random

_WORD = re.compile(r"([^\W\d_]+)")  # runs of letters: digits are never inside one
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+\u2022]|\d+[.)])\s+\S")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
# A sentence ends at . ! or ? (with any closing quotes or brackets) before
# spaces, or at a line break; "3.5" and "e.g.x" are not boundaries.
_SENTENCE_BREAK = re.compile(r"[.!?][\"')\]\u201d\u2019]*[ \t]+|[ \t]*\n\s*")


# --- typos -----------------------------------------------------------------


def typo_noise(text: str, rng: Random, rate: float) -> str | None:
    """`text` with about `rate` of its words given a typo: two adjacent inner
    letters swapped (first and last letters, digits, spacing and punctuation
    untouched). None when no word is long enough for one."""
    pieces = _WORD.split(text)
    words = list(range(1, len(pieces), 2))
    eligible = [i for i in words if len(pieces[i]) >= 4 and _swappable(pieces[i])]
    if not eligible:
        return None
    count = min(len(eligible), max(1, round(rate * len(words))))
    for i in sorted(rng.sample(eligible, count)):
        word = pieces[i]
        spots = [j for j in range(1, len(word) - 2) if word[j] != word[j + 1]]
        j = rng.choice(spots)
        pieces[i] = word[:j] + word[j + 1] + word[j] + word[j + 2 :]
    return "".join(pieces)


def _swappable(word: str) -> bool:
    return any(word[j] != word[j + 1] for j in range(1, len(word) - 2))


def check_typos(original: str, variant: str) -> str | None:
    """None when `variant` is `original` with only adjacent inner letters
    swapped inside words, at least once, and every number kept; else why not."""
    if _NUMBER.findall(original) != _NUMBER.findall(variant):
        return "a number or digit changed"
    a, b = _WORD.split(original), _WORD.split(variant)
    if len(a) != len(b) or a[0::2] != b[0::2]:
        return "the words, spacing or punctuation changed, not only letters inside words"
    changed = 0
    for x, y in zip(a[1::2], b[1::2], strict=True):
        if x == y:
            continue
        diff = [j for j in range(len(x)) if j >= len(y) or x[j] != y[j]]
        one_swap = (
            len(x) == len(y)
            and len(diff) == 2
            and diff[1] == diff[0] + 1
            and x[diff[0]] == y[diff[1]]
            and x[diff[1]] == y[diff[0]]
        )
        if not one_swap or diff[0] == 0 or diff[1] == len(x) - 1:
            return f"`{x}` became `{y}`, which is not one swap of two inner letters"
        changed += 1
    return None if changed else "no word changed"


# --- partial completion -------------------------------------------------------


def partial_completion(text: str) -> tuple[str, str] | None:
    """(`text` without its last list item, else its last paragraph, else its
    last sentence; the unit removed), or None when it has only one of each."""
    lines = text.splitlines(keepends=True)
    items = [i for i, line in enumerate(lines) if _LIST_ITEM.match(line)]
    if len(items) >= 2:
        start = items[-1]
        end = start + 1
        while end < len(lines) and lines[end].strip() and lines[end][:1].isspace() and not _LIST_ITEM.match(lines[end]):
            end += 1  # the item's indented continuation lines go with it
        kept = "".join(lines[:start] + lines[end:]).rstrip()
        return kept, "list_item"
    body = text.rstrip()
    breaks = list(_PARAGRAPH_BREAK.finditer(body))
    if breaks:
        return body[: breaks[-1].start()].rstrip(), "paragraph"
    cuts = _sentence_cuts(body)
    if cuts:
        return body[: cuts[-1]].rstrip(), "sentence"
    return None


def _sentence_cuts(body: str) -> list[int]:
    """Where each sentence but the last ends (after its punctuation)."""
    cuts = []
    for m in _SENTENCE_BREAK.finditer(body):
        if m.end() < len(body):
            cuts.append(m.start() + len(m.group().rstrip()) if m.group()[:1] in ".!?" else m.start())
    return cuts


def check_partial(original: str, variant: str, unit: str) -> str | None:
    """None when `variant` is `original` without exactly its last `unit`
    (list_item, paragraph or sentence) and nothing else; else why not."""
    if not variant.strip():
        return "nothing is left"
    if unit == "list_item":
        a, b = original.rstrip().splitlines(), variant.splitlines()
        start = next((i for i in range(len(b)) if i >= len(a) or a[i] != b[i]), len(b))
        removed = len(a) - len(b)
        if removed < 1 or a[:start] + a[start + removed :] != b:
            return "the variant is not the original with one block of lines removed"
        block = [line for line in a[start : start + removed] if line.strip()]
        if (
            not block
            or not _LIST_ITEM.match(block[0])
            or any(_LIST_ITEM.match(line) for line in block[1:] + a[start + removed :])
        ):
            return "the removed lines are not the last list item"
        return None
    body = original.rstrip()
    if not body.startswith(variant) or len(variant) >= len(body):
        return "the variant is not a shorter beginning of the original"
    if unit == "paragraph":
        breaks = list(_PARAGRAPH_BREAK.finditer(body))
        if not breaks or body[: breaks[-1].start()].rstrip() != variant:
            return "the removed text is not exactly the last paragraph"
        return None
    cuts = _sentence_cuts(body)
    if _PARAGRAPH_BREAK.search(body) or not cuts or body[: cuts[-1]].rstrip() != variant:
        return "the removed text is not exactly the last sentence"
    return None


# --- position swap -----------------------------------------------------------


def position_swap(candidates: list[list[str]]) -> list[list[str]]:
    """The two candidates in the other order, ids and texts kept."""
    return [list(c) for c in reversed(candidates)]


def check_swap(original: list[list[str]], variant: list[list[str]]) -> str | None:
    if len(original) != 2:
        return "a swap needs exactly two candidates"
    if [list(c) for c in variant] != [list(c) for c in reversed(original)]:
        return "the variant is not exactly the two candidates swapped (same ids, same texts)"
    return None
