"""'Did you mean': the options closest to a name a user typed, bounded in
what it costs whatever the name's length."""

from __future__ import annotations

from collections.abc import Iterable


def difflib_match(name: str, options: Iterable[str], n: int = 1, cutoff: float = 0.6) -> list[str]:
    """The (at most `n`) options closest to `name` with a similarity ratio of
    at least `cutoff`, as `difflib.get_close_matches` finds them, best first."""
    import difflib  # only on the error path

    options = sorted(options)
    # A ratio is 2 * matches / (len(a) + len(b)) <= 2 * len(b) / (len(a) + len(b)):
    # a name more than (2 - cutoff) / cutoff times the longest option (7/3 at
    # 0.6) reaches no cutoff, and difflib would still index every character of
    # it (300 MB for an 8 MB name).
    if cutoff > 0 and len(name) * cutoff > (2 - cutoff) * max(map(len, options), default=0):
        return []
    return difflib.get_close_matches(name, options, n=n, cutoff=cutoff)
