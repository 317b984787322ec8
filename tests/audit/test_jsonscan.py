"""`audit.jsonscan` reads a JSON file's top-level object a value at a time
and its large arrays an element at a time: what it gives back is what
`json.load` gives, whatever the layout, the blocks the file is read in (a
number or a multi-byte character cut between two), and each element is read
back from its byte span."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rubriclang.audit import jsonscan

leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3))
docs = st.dictionaries(
    st.sampled_from(["items", "variants", "hash", "é", "other"]), st.lists(values, max_size=5) | values
)


@settings(max_examples=150, deadline=None)
@given(docs, st.sampled_from([None, 0, 1, 2]), st.sampled_from([1, 3, 7, 1 << 20]), st.booleans())
def test_a_scan_gives_what_json_load_gives(tmp_path_factory, doc, indent, block, ascii_only):
    path = tmp_path_factory.mktemp("scan") / "doc.json"
    path.write_text(json.dumps(doc, indent=indent, ensure_ascii=ascii_only), encoding="utf-8")
    jsonscan._BLOCK, saved = block, jsonscan._BLOCK
    try:
        head, spans = jsonscan.scan(str(path), ("items", "variants"))
        read = {**head, **{k: list(jsonscan.Elements(str(path), s)) for k, s in spans.items()}}
    finally:
        jsonscan._BLOCK = saved
    assert read == json.loads(path.read_text(encoding="utf-8"))
    for key, found in spans.items():
        elements = jsonscan.Elements(str(path), found)
        assert [elements[n] for n in range(len(elements))] == doc[key]


@pytest.mark.parametrize(
    "text, said",
    [
        ("", "expected `{`"),
        ("[1]", "expected `{`"),
        ('{"items": [1, 2}', "expected `,` or `]`"),
        ('{"a": 1} x', "extra data"),
        ('{"a": tru}', "Expecting value"),
        ("{1: 2}", "expected a key"),
        ('{"items": [1,]}', "Expecting value"),
    ],
)
def test_a_file_that_is_not_one_json_object_is_a_scan_error(tmp_path, text, said):
    path = tmp_path / "doc.json"
    path.write_text(text)
    with pytest.raises(jsonscan.ScanError, match=said):
        jsonscan.scan(str(path), ("items",))
