"""Folding ranges, from brackets and prompts, even in a file being edited."""

from __future__ import annotations

from rubriclang.lsp.folding import folding_ranges
from rubriclang.lsp.positions import LineIndex

TEXT = """\
criterion a: ordinal[1, 5] = llm.rate {
  question = \"\"\"
    A prompt 😀
    over lines.
    \"\"\"
  anchors = {
    1: "No.", 5: "Yes." }
}
node n = reduce.mean(inputs: [
  a,
])
sink n
"""


def ranges(text: str) -> list[tuple[int, int]]:
    return folding_ranges(text, LineIndex(text))


def test_brackets_and_prompts_that_span_lines_fold_and_closing_lines_stay_visible():
    assert ranges(TEXT) == [(0, 6), (1, 3), (5, 6), (8, 9)]


def test_one_line_brackets_do_not_fold():
    assert ranges('criterion a: bool = llm.check { question = "x" }\n') == []


def test_an_unclosed_bracket_does_not_hide_the_pairs_after_it():
    text = "node n = reduce.mean(inputs: [a,\n" + TEXT
    assert ranges(text) == [(first + 1, last + 1) for first, last in ranges(TEXT)]
