"""The one diagnostic type used by every phase (syntax, checker, formatter, runs)."""

from __future__ import annotations

import enum
from collections.abc import Iterable

from rubriclang.diagnostics.span import Span
from rubriclang.records import frozen


class Severity(str, enum.Enum):  # noqa: UP042 (StrEnum changes str() of a member, which output relies on)
    ERROR = "error"
    WARNING = "warning"

    def __str__(self) -> str:
        return self.value


@frozen
class Diagnostic:
    """A finding: a stable code, a severity, where, what is wrong, and notes on fixing it."""

    code: str
    severity: Severity
    span: Span
    message: str
    notes: tuple[str, ...] = ()

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def sort_key(self) -> tuple[str, int, int, str, str]:
        s = self.span
        return (s.file, s.line, s.column, self.code, self.message)


def sorted_diagnostics(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Diagnostics in a stable, source order."""
    return sorted(diags, key=Diagnostic.sort_key)
