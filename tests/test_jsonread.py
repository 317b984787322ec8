"""`jsonread.loads` gives what `json.loads` gives, value or error, on any
text or bytes: the scanner's shortcut never changes an answer."""

from __future__ import annotations

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from rubriclang.jsonread import loads

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


def _outcome(f, data):
    try:
        return ("value", _comparable(f(data)))
    except Exception as exc:  # the same error, type and message, is the point
        return ("error", type(exc).__name__, str(exc))


def _comparable(v):
    # NaN is never equal to itself: compare its JSON instead.
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, list):
        return [_comparable(x) for x in v]
    if isinstance(v, dict):
        return {k: _comparable(x) for k, x in v.items()}
    return v


@st.composite
def documents(draw):
    text = json.dumps(
        draw(values), ensure_ascii=draw(st.booleans()), separators=draw(st.sampled_from([None, (",", ":")]))
    )
    text = draw(st.sampled_from(["", " ", "\n"])) + text + draw(st.sampled_from(["", " ", "\n", "x", "}"]))
    if draw(st.booleans()):
        cut = draw(st.integers(0, len(text)))
        text = text[:cut]
    kind = draw(st.sampled_from(["str", "utf-8", "utf-8-sig", "utf-16", "utf-32-le"]))
    return text if kind == "str" else text.encode(kind, "surrogatepass")


@settings(max_examples=400, deadline=None)
@given(documents())
def test_loads_equals_json_loads_on_json_texts(data):
    assert _outcome(loads, data) == _outcome(json.loads, data)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=24) | st.text(max_size=12))
def test_loads_equals_json_loads_on_any_bytes_or_text(data):
    assert _outcome(loads, data) == _outcome(json.loads, data)


def test_loads_reads_what_servers_send_and_refuses_what_json_loads_refuses():
    assert loads(b'{"choices": [{"message": {"content": "\xc3\xa9"}}]}') == {"choices": [{"message": {"content": "é"}}]}
    assert loads(b'\xef\xbb\xbf{"a": 1}') == {"a": 1}  # a BOM, as json.loads reads it
    assert _outcome(loads, b'{"a": 1} {"b": 2}') == _outcome(json.loads, b'{"a": 1} {"b": 2}')
    assert _outcome(loads, bytearray(b"[1]")) == ("value", [1])
    for odd in (b'"\xff"', b'"\xed\xa0\x80"', b'"a\x80b"'):  # not UTF-8; a surrogate json.loads lets through
        assert _outcome(loads, odd) == _outcome(json.loads, odd)
