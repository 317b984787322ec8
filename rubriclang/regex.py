"""Regular expressions for `rule.regex`, in RE2 syntax.

RE2 matches in time linear in the text, so no pattern can backtrack
catastrophically; it has no backreferences or lookaround. The checker
compiles patterns with this same function, so a pattern that passes `rbg
check` also runs.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    import re


@functools.lru_cache(maxsize=256)
def compile_regex(pattern: str, ignore_case: bool = False) -> re.Pattern[str]:
    """An RE2 pattern, compiled once per (pattern, flags); raises ValueError
    with RE2's explanation when the pattern is invalid."""
    import re2

    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not ignore_case
    try:
        # RE2's patterns and matches have re's interface; re2 ships no types.
        return cast("re.Pattern[str]", re2.compile(pattern, options))
    except re2.error as exc:
        msg = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ValueError(msg) from None
