"""Diagnostics: positions, the Diagnostic type, the code registry and renderers."""

from rubriclang.diagnostics.diagnostic import Diagnostic, Severity, sorted_diagnostics
from rubriclang.diagnostics.span import Span

# The output formats of `rubriclang.diagnostics.render.render` (here, so that
# `rbg check` can offer them without importing the renderers).
FORMATS = ("text", "json", "sarif", "github")

__all__ = ["FORMATS", "Diagnostic", "Severity", "Span", "sorted_diagnostics"]
