"""`rbg items convert`'s engine over arbitrary JSON records: every record
converts, or is refused at its `file:line`; never another exception."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abxy"), inner, max_size=3),
    max_leaves=12,
)
SPECS = st.sampled_from(
    [
        "response=a",
        "response=a.b",
        "input=a[*]",
        "input=a[*][*]",
        "response={a} {b.x}",
        "id=x[0].y",
        "annotations.k=b",
        "documents=a",
        "recorded.k=y[1]",
    ]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=st.lists(st.dictionaries(st.sampled_from("abxy"), JSON, max_size=4), min_size=1, max_size=3),
    specs=st.lists(SPECS, min_size=1, max_size=4, unique=True),
    conversation=st.booleans(),
    keep=st.booleans(),
)
def test_any_json_record_under_any_mapping_converts_or_is_refused_at_its_line(records, specs, conversation, keep):
    from rubriclang.evaluation.convert import Converter, Mapping, parse_field
    from rubriclang.interp.items import ItemError

    fields = dict(parse_field(s) for s in specs)
    if "response" not in fields:
        fields["response"] = parse_field("response=a")[1]
    convs = ("input",) if conversation and "input" in fields else ()
    docs = ("documents",) if "documents" in fields else ()
    mapping = Mapping(fields, ("y",), conversations=convs, documents=docs, keep_unmapped=keep)
    converter = Converter(mapping, records[0])
    try:
        out = list(converter.items((f"src.json:{i + 1}", r, None) for i, r in enumerate(records)))
    except ItemError as exc:
        assert exc.where.startswith("src.json:") and exc.message
    else:
        assert len(out) == len(records) and all("id" in row for row in out)
        json.dumps(out)  # plain JSON, writable as items
