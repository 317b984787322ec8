"""'Did you mean': the options closest to a name a user typed, bounded in
what it costs whatever the name's length."""

from __future__ import annotations

from collections.abc import Iterable


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
