"""The registry of diagnostic codes, read from `codes.toml` (data, not code).

`rbg explain`, `docs/diagnostics.md` and every phase that reports a finding
use this one table, so a code's severity and explanation live in one place.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterable
from typing import Any

from rubriclang import packaged
from rubriclang.diagnostics.diagnostic import Diagnostic, Severity
from rubriclang.diagnostics.span import Span
from rubriclang.records import frozen
from rubriclang.tomlcache import cached_parse


@frozen
class CodeInfo:
    code: str
    name: str
    severity: Severity
    summary: str
    explanation: str
    wrong: str
    right: str

    @property
    def group(self) -> str:
        return GROUPS[self.code[:3]]


GROUPS = {
    "RB0": "Syntax",
    "RB1": "Names, ports, arity and parameters",
    "RB2": "Types and values",
    "RB3": "Graph structure",
    "RB4": "Header, contract and readouts",
    "RB5": "Style (warnings)",
    "RB6": "Item shape",
    "RB7": "Groups (several criteria in one call)",
}


@functools.cache
def registry() -> dict[str, CodeInfo]:
    """Every known code, in code order."""
    text = packaged.read_text(sys.modules[__package__], "codes.toml")
    (data,) = cached_parse((text,), lambda: [_parse(text)])
    out = {}
    for code, entry in sorted(data.items()):
        out[code] = CodeInfo(
            code=code,
            name=entry["name"],
            severity=Severity(entry["severity"]),
            summary=entry["summary"],
            explanation=entry["explanation"].strip(),
            wrong=entry["wrong"].strip("\n"),
            right=entry["right"].strip("\n"),
        )
    return out


def _parse(text: str) -> dict[str, Any]:
    import tomllib  # only when the cache misses

    return tomllib.loads(text)


def make(code: str, span: Span, message: str, notes: Iterable[str] = ()) -> Diagnostic:
    """A diagnostic for `code`, with the severity the registry gives it."""
    return Diagnostic(code, registry()[code].severity, span, message, tuple(notes))
