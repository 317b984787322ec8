"""The canonical JSON (`rubriclang.canonical.canonical_json`, one encoder made
once) is byte for byte what `json.dumps` with its options writes, and refuses
what it refuses, whatever the value."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rubriclang.canonical import canonical_json


def dumps(value):
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


text = st.text(st.characters(blacklist_categories=("Cs",)))
scalars = st.none() | st.booleans() | st.integers() | st.floats() | text
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4) | st.tuples(inner, inner),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(values)
def test_canonical_json_is_json_dumps_with_its_options_or_the_same_error(value):
    try:
        expected = dumps(value)
    except ValueError:  # NaN or an infinity somewhere
        with pytest.raises(ValueError, match="not JSON compliant"):
            canonical_json(value)
        return
    assert canonical_json(value) == expected


@pytest.mark.parametrize(
    "value, error",
    [({"a": object()}, TypeError), ({1: 1, "a": 2}, TypeError), ({"x": [float("-inf")]}, ValueError)],
)
def test_what_json_dumps_refuses_canonical_json_refuses_alike(value, error):
    with pytest.raises(error) as ours:
        canonical_json(value)
    with pytest.raises(error) as theirs:
        dumps(value)
    assert str(ours.value) == str(theirs.value)


def test_non_string_keys_are_written_as_json_dumps_writes_them():
    value = {2: "b", 1: "a", 1.5: [None]}
    assert canonical_json(value) == dumps(value)
