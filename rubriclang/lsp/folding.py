"""Folding ranges: every bracket pair and triple-quoted prompt that spans lines.

A closing bracket, or the closing quotes of a prompt, that begins its line
stays visible when folded, as in other languages' editors.

From the scanner, so folding keeps working while a file does not parse;
an editor without this folds by indentation instead.
"""

from __future__ import annotations

from rubriclang.lsp.positions import LineIndex
from rubriclang.lsp.scanner import scan

_CLOSES = {"}": "{", "]": "[", ")": "("}


def folding_ranges(text: str, lines: LineIndex) -> list[tuple[int, int]]:
    """(first line, last line), 0-based, of each foldable region, sorted."""
    out = []
    open_at: list[tuple[str, int]] = []
    for tok in scan(text):
        if tok.is_punct("{", "[", "("):
            open_at.append((tok.text, tok.start))
        elif tok.is_punct("}", "]", ")"):
            # Drop brackets that were never closed (the file is being edited).
            while open_at and open_at[-1][0] != _CLOSES[tok.text]:
                open_at.pop()
            if open_at:
                out.append((open_at.pop()[1], tok.start))
        elif tok.kind == "string" and tok.text.startswith('"""'):
            out.append((tok.start, tok.end - 3))
    ranges = {(lines.position_at(a).line, _last_line(text, lines, b)) for a, b in out}
    return sorted((first, last) for first, last in ranges if last > first)


def _last_line(text: str, lines: LineIndex, close: int) -> int:
    line = lines.position_at(close).line
    line_start = text.rfind("\n", 0, close) + 1
    # Only closers before it on its line (`])`): the line still just closes.
    return line - 1 if not text[line_start:close].strip(" \t)]}") else line
