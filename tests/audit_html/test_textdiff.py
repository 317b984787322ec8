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


def test_the_side_by_side_view_marks_the_words_the_rubric_diff_marks():
    # One word matcher serves both views; they differ only in presentation.
    from rubriclang.review.words import DELETE, INSERT, word_diff

    old, new = "Is the answer\nfully correct, with no errors?", "Is the answer correct with no notable errors?"
    left, right = sides(old, new)
    segments = word_diff(old, new)
    assert [m.strip() for m in re.findall(r"<del>(.*?)</del>", left)] == [
        t.strip() for op, t in segments if op == DELETE
    ]
    assert [m.strip() for m in re.findall(r"<ins>(.*?)</ins>", right)] == [
        t.strip() for op, t in segments if op == INSERT
    ]
    assert "<del>fully" in left and "<ins>notable" in right
