"""'Did you mean': the options closest to a name a user typed, bounded in
what it costs whatever the name's length."""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def difflib_match(name: str, options: Iterable[str], n: int = 1, cutoff: float = 0.6) -> list[str]:
    """The (at most `n`) options closest to `name` with a similarity ratio of
    at least `cutoff`, as `difflib.get_close_matches` finds them, best first."""
    import difflib  # only on the error path

    options = sorted(options)
    # No ratio can exceed 2 * min(len) / (sum of lens), difflib's own first
    # test (`real_quick_ratio`), reckoned the same way here: a name that
    # fails it for every option matches nothing, and difflib would still
    # index every character of it (300 MB for an 8 MB name).
    if not any(_bound(len(name), len(o)) >= cutoff for o in options):
        return []
    return difflib.get_close_matches(name, options, n=n, cutoff=cutoff)


def _bound(a: int, b: int) -> float:
    return 2.0 * min(a, b) / (a + b) if a + b else 1.0


def nearest_named(name: str, spellings: Mapping[str, Iterable[str]], n: int = 1, cutoff: float = 0.6) -> list[str]:
    """The (at most `n`) keys of `spellings` closest to `name`, best first,
    each reckoned by its closest spelling: its own name or one of the other
    names it lists (a catalog entry's `aliases`). An alias of a dotted name
    keeps the name's prefix (`average` of `reduce.mean` reads as
    `reduce.average`), so a name a user reached for by meaning finds the
    entry even when another is closer in letters (`reduce.midrange`)."""
    owner: dict[str, str] = {}
    for option, others in spellings.items():
        owner.setdefault(option, option)
        prefix = option.rpartition(".")[0]
        for other in others:
            owner.setdefault(f"{prefix}.{other}" if prefix and "." not in other else other, option)
    found: list[str] = []
    for spelling in difflib_match(name, owner, n=len(owner), cutoff=cutoff):
        if owner[spelling] not in found:
            found.append(owner[spelling])
    return found[:n]
