"""Position conversion between the parser's code-point columns and the
protocol's code units (UTF-16 by default, UTF-8 and UTF-32 when negotiated)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rubriclang.lsp.positions import UTF8, UTF16, UTF32, LineIndex, Position
from rubriclang.syntax import ast, parse

EMOJI = "😀"  # outside the BMP: 2 UTF-16 units, 4 UTF-8 bytes
CJK = "漢字"  # 1 UTF-16 unit, 3 UTF-8 bytes each
COMBINING = "e\u0301"  # two code points that show as one letter


@pytest.mark.parametrize(
    "prefix, utf16, utf8, utf32",
    [
        ("ab", 2, 2, 2),
        (EMOJI, 2, 4, 1),
        (CJK, 2, 6, 2),
        (COMBINING, 2, 3, 2),
        (EMOJI + CJK + COMBINING, 6, 13, 5),
    ],
)
def test_a_character_after_non_ascii_text_is_counted_in_the_encodings_units(prefix, utf16, utf8, utf32):
    text = f"first line\n{prefix}x"
    offset = text.index("x")
    for encoding, expected in ((UTF16, utf16), (UTF8, utf8), (UTF32, utf32)):
        index = LineIndex(text, encoding)
        assert index.position_at(offset) == Position(1, expected)
        assert index.offset(Position(1, expected)) == offset


def test_a_position_inside_a_surrogate_pair_means_the_whole_character():
    index = LineIndex(f"a{EMOJI}b")
    assert index.offset(Position(0, 2)) == 1  # between the two halves of the emoji


def test_a_character_past_the_end_of_its_line_is_the_line_end():
    index = LineIndex("short\nnext")
    assert index.offset(Position(0, 99)) == len("short")


def test_a_line_past_the_end_of_the_text_is_the_text_end():
    text = "one\ntwo"
    assert LineIndex(text).offset(Position(7, 0)) == len(text)


def test_a_carriage_return_before_a_newline_is_not_part_of_the_line():
    text = "ab\r\ncd"
    index = LineIndex(text)
    assert index.position_at(text.index("\r")) == Position(0, 2)
    assert index.offset(Position(0, 5)) == 2
    assert index.position_at(text.index("d")) == Position(1, 1)


def test_the_end_of_the_text_is_after_its_last_character():
    text = f"x\n{EMOJI}"
    assert LineIndex(text).position_at(len(text)) == Position(1, 2)


def test_parser_columns_count_code_points():
    text = f'q = "{EMOJI}{CJK}{COMBINING}" x'
    index = LineIndex(text)
    column = len(f'q = "{EMOJI}{CJK}{COMBINING}" ') + 1
    assert index.offset_of(1, column) == text.index(" x") + 1


def test_a_byte_order_mark_shifts_the_parsers_first_line_only():
    text = "\ufeffab\ncd"
    index = LineIndex(text)
    assert index.offset_of(1, 1) == 1  # the parser never sees the mark
    assert index.position_at(index.offset_of(1, 2)) == Position(0, 2)  # the editor does
    assert index.offset_of(2, 2) == text.index("d")


def test_a_span_end_past_the_line_is_clamped_to_it():
    assert LineIndex("abc\ndef").offset_of(1, 9) == 3


def test_spans_of_a_parsed_file_land_on_their_names():
    text = (
        f'criterion a: bool = llm.check {{ question = "{EMOJI} {CJK} {COMBINING}" }} '
        "node n = transform.not(value: a)\n"
        "sink n\n"
    )
    module = parse(text).module
    assert module is not None
    node = module.decls[1]
    assert isinstance(node, ast.NodeDecl)
    for encoding in (UTF8, UTF16, UTF32):
        index = LineIndex(text, encoding)
        start = index.offset_of(node.name.span.line, node.name.span.column)
        end = index.offset_of(node.name.span.end_line, node.name.span.end_column)
        assert text[start:end] == "n"
        ref = node.ports[0].refs[0].span
        assert text[index.offset_of(ref.line, ref.column) : index.offset_of(ref.end_line, ref.end_column)] == "a"


def test_an_unknown_encoding_is_refused():
    with pytest.raises(ValueError, match="utf-7"):
        LineIndex("x", "utf-7")


ENCODED = {UTF8: "utf-8", UTF16: "utf-16-le", UTF32: "utf-32-le"}
UNIT = {UTF8: 1, UTF16: 2, UTF32: 4}


@given(
    st.text(alphabet=st.sampled_from(["a", "\n", "\r", EMOJI, "漢", "\u0301", "\t", "é"]), max_size=40),
    st.sampled_from([UTF8, UTF16, UTF32]),
)
def test_positions_round_trip_and_count_what_the_codec_counts(text, encoding):
    index = LineIndex(text, encoding)
    for offset in range(len(text) + 1):
        pos = index.position_at(offset)
        line_start = text.rfind("\n", 0, offset) + 1
        prefix = text[line_start:offset]
        if offset < len(text) and text[offset] == "\n" and prefix.endswith("\r"):
            prefix = prefix[:-1]  # the `\r` of a `\r\n` is not part of the line
        assert pos.line == text.count("\n", 0, offset)
        assert pos.character == len(prefix.encode(ENCODED[encoding])) // UNIT[encoding]
        if not (offset < len(text) and text[offset] == "\n" and text[offset - 1 : offset] == "\r"):
            assert index.offset(pos) == offset
