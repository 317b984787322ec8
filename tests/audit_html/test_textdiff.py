"""Side-by-side word differences."""

from __future__ import annotations

import html
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from rubriclang.audit.html.textdiff import sides


def _text(markup: str, tag: str) -> str:
    assert re.sub(r"</?(del|ins)>", "", markup) == re.sub(r"</?" + tag + ">", "", markup)
    return html.unescape(re.sub(r"</?(del|ins)>", "", markup))


@settings(max_examples=80, deadline=None)
@given(st.text(alphabet="ab <>&\"'\n.,", max_size=40), st.text(alphabet="ab <>&\"'\n.,", max_size=40))
def test_each_side_is_its_own_text_exactly_with_only_its_own_marks(old, new):
    left, right = sides(old, new)
    assert _text(left, "del") == old
    assert _text(right, "ins") == new


def test_a_changed_word_is_marked_on_both_sides():
    assert sides("the quick fox", "the quikc fox") == ("the <del>quick</del> fox", "the <ins>quikc</ins> fox")


def test_a_reflowed_text_marks_only_its_changed_words():
    assert sides("one two\nthree", "one two three four") == ("one two\nthree", "one two three<ins> four</ins>")


def test_a_change_of_spacing_alone_is_marked():
    assert sides("a  b", "a b") == ("a<del>  </del>b", "a<ins> </ins>b")
