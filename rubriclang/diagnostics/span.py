"""Source positions shared by every phase."""

from __future__ import annotations

from rubriclang.records import frozen


@frozen(order=True)
class Span:
    """A source range: 1-based lines and columns (in characters), end exclusive."""

    file: str
    line: int
    column: int
    end_line: int
    end_column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"

    def union(self, other: Span) -> Span:
        """The smallest span covering both."""
        start = min((self.line, self.column), (other.line, other.column))
        end = max((self.end_line, self.end_column), (other.end_line, other.end_column))
        return Span(self.file, start[0], start[1], end[0], end[1])
