"""Word diffs of prompt text: exact for NEW, blind to reflowed whitespace."""

import itertools

from hypothesis import given
from hypothesis import strategies as st

from rubriclang.review.words import DELETE, EQUAL, INSERT, is_prose, word_diff

TEXT = st.lists(st.sampled_from(["the", "claim", "is", "wrong", ",", ".", " ", "  ", "\n"]), max_size=12).map("".join)


def _side(words, ops):
    return "".join(text for op, text in words if op in ops)


@given(TEXT, TEXT)
def test_unchanged_and_inserted_text_spell_new(old, new):
    assert _side(word_diff(old, new), (EQUAL, INSERT)) == new


@given(TEXT, TEXT)
def test_segments_alternate_and_are_never_empty(old, new):
    words = word_diff(old, new)
    assert all(text for _, text in words)
    assert all(a[0] != b[0] for a, b in itertools.pairwise(words))


def test_a_reflowed_prompt_marks_only_the_changed_word():
    old = "How correct is the response? Judge the claims it makes,\nnot how confidently."
    new = "How correct is the answer? Judge the claims\nit makes, not how confidently."
    changed = [(op, text) for op, text in word_diff(old, new) if op != EQUAL]
    assert changed == [(DELETE, "response"), (INSERT, "answer")]


def test_whitespace_alone_is_still_shown_when_it_is_all_that_changed():
    assert word_diff("a b", "a  b") == ((EQUAL, "a"), (DELETE, " "), (INSERT, "  "), (EQUAL, "b"))
    assert _side(word_diff("a b", "a  b"), (EQUAL, DELETE)) == "a b"


def test_a_deleted_word_keeps_its_spaces_outside():
    assert word_diff("with notable errors", "with errors") == (
        (EQUAL, "with "),
        (DELETE, "notable "),
        (EQUAL, "errors"),
    )


def test_only_text_with_several_words_is_prose():
    assert is_prose("two words", "one")
    assert not is_prose("```", "~~~")
    assert not is_prose(4, 3)
