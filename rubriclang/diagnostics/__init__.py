"""Diagnostics: positions, the Diagnostic type, the code registry and renderers."""

from rubriclang.diagnostics.diagnostic import Diagnostic, Severity, sorted_diagnostics
from rubriclang.diagnostics.span import Span

__all__ = ["Diagnostic", "Severity", "Span", "sorted_diagnostics"]
