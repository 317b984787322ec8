"""The canonical JSON (`rubriclang.canonical.canonical_json`) is what every
hash (graph, trace, call key, prompt, audit seal) is taken of, so its bytes
never change: they are, whatever the value, what the former implementation
(a C encoder made once from `json.encoder.c_make_encoder`, a private API,
rebuilt here as the reference) wrote, and a few pinned texts and hashes hold
them where that API is gone."""

from __future__ import annotations

import hashlib
import json
import json.encoder

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rubriclang.canonical import canonical_json


def _unencodable(obj):
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


_MAKE = getattr(json.encoder, "c_make_encoder", None)
_FORMER = (
    None
    if _MAKE is None
    else _MAKE(None, _unencodable, json.encoder.encode_basestring, None, ":", ",", True, False, False)
)


def former(value) -> str:
    """What canonical_json wrote before it was `json.dumps`."""
    assert _FORMER is not None
    return "".join(_FORMER(value, 0))


text = st.text(st.characters(blacklist_categories=["Cs"]))
scalars = st.none() | st.booleans() | st.integers() | st.floats() | text
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4) | st.tuples(inner, inner),
    max_leaves=20,
)


@pytest.mark.skipif(_MAKE is None, reason="this Python has no json.encoder.c_make_encoder")
@settings(max_examples=400, deadline=None)
@given(values)
def test_canonical_json_writes_the_bytes_the_former_encoder_wrote_or_the_same_error(value):
    try:
        expected = former(value)
    except ValueError:  # NaN or an infinity somewhere
        with pytest.raises(ValueError, match="not JSON compliant"):
            canonical_json(value)
        return
    assert canonical_json(value) == expected


@pytest.mark.skipif(_MAKE is None, reason="this Python has no json.encoder.c_make_encoder")
def test_non_string_keys_are_written_as_the_former_encoder_wrote_them():
    value = {2: "b", 1: "a", 1.5: [None]}
    assert canonical_json(value) == former(value)


@pytest.mark.parametrize(
    "value, text",
    [
        ({"b": [1, 2.5, None], "a": "é\u2028\"\\\n", "c": {"z": True, "y": False}},
         '{"a":"é\u2028\\"\\\\\\n","b":[1,2.5,null],"c":{"y":false,"z":true}}'),
        ([1e16, 1e-7, -0.0, 10**20, 0.1], "[1e+16,1e-07,-0.0,100000000000000000000,0.1]"),
        ({"emoji": "\U0001f600", "ctl": "\x01"}, '{"ctl":"\\u0001","emoji":"\U0001f600"}'),
    ],
)  # fmt: skip
def test_pinned_values_are_written_as_ever(value, text):
    assert canonical_json(value) == text


def test_a_hash_of_a_trace_like_record_is_as_ever():
    record = {"item": "i1", "values": {"helpful": 4, "harmful": False}, "text": "Grass is green.", "score": 3.5}
    digest = hashlib.sha256(canonical_json(record).encode("utf-8")).hexdigest()
    assert digest == "5e8d89e960c781932de828afff8ca4c94261e4e80a8177cb2e46dbb8be00e059"


@pytest.mark.parametrize(
    "value, error",
    [({"a": object()}, TypeError), ({1: 1, "a": 2}, TypeError), ({"x": [float("-inf")]}, ValueError)],
)
def test_what_cannot_be_written_canonically_is_refused(value, error):
    with pytest.raises(error):
        canonical_json(value)
