"""The JSON of a chat request, assembled per call from remembered parts
(`client.body_json`, `client.messages_json`), is byte for byte the JSON of
the whole: the body httpx's `json=` would send, and the canonical JSON that
prompt hashes and call keys are taken of, whatever the messages hold."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from rubriclang.canonical import canonical_json
from rubriclang.llm.client import ChatRequest, Sampling, body_json, messages_json


def sent(body: dict) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


# Text with what JSON escapes (quotes, backslashes, control characters),
# non-ASCII, and the placeholder the assembly splits at.
text = st.text(st.characters(blacklist_categories=["Cs"])) | st.sampled_from(["\x00messages\x00", '"', "\\", ""])
roles = st.sampled_from(["system", "user", "assistant"])
plain_message = st.builds(lambda r, c: {"role": r, "content": c}, roles, text)
other_message = st.one_of(
    st.builds(lambda c, r: {"content": c, "role": r}, text, text),  # the other key order
    st.builds(lambda r, c, n: {"role": r, "content": c, "name": n}, text, text, text),  # a third key
    st.builds(lambda r: {"role": r, "content": [{"type": "text", "text": "x"}]}, text),  # content parts
    st.builds(lambda r: {"role": r, "content": None}, text),
)
messages = st.lists(plain_message | other_message, max_size=4).map(tuple)
samplings = st.builds(
    Sampling,
    temperature=st.none() | st.sampled_from([0, 0.0, 1, 1.0, 0.7]),
    top_p=st.none() | st.floats(0, 1),
    max_tokens=st.none() | st.integers(1, 4096),
    seed=st.none() | st.integers(-5, 5),
    logprobs=st.booleans(),
    top_logprobs=st.none() | st.integers(0, 20),
)
formats = st.none() | st.sampled_from(
    [
        {"type": "json_schema", "json_schema": {"name": "llm_rate", "strict": True, "schema": {"type": "object"}}},
        {"type": "json_object", "note": "\x00messages\x00 é"},
    ]
)


@settings(max_examples=300, deadline=None)
@given(messages, samplings, formats, st.sampled_from(["judge", "é-model", "\x00messages\x00"]), st.booleans())
def test_the_assembled_body_is_the_json_of_the_whole_body(msgs, sampling, response_format, model, slot):
    body = ChatRequest(msgs, sampling, response_format).body(model)
    if slot:
        body["id_slot"], body["cache_prompt"] = 1, True
    assert body_json(body, msgs) == sent(body)
    assert body_json(body, msgs) == sent(body)  # again, from what was remembered


@settings(max_examples=300, deadline=None)
@given(messages)
def test_the_assembled_canonical_messages_are_their_canonical_json(msgs):
    assert messages_json(msgs) == canonical_json(list(msgs))
    assert messages_json(msgs) == canonical_json(list(msgs))


def test_equal_values_of_other_types_never_share_a_remembered_body():
    msgs = ({"role": "user", "content": "hi"},)
    for temperature in (1, 1.0, True, 0, 0.0, False):
        body = {"model": "m", "messages": list(msgs), "temperature": temperature}
        assert body_json(body, msgs) == sent(body)


def test_a_response_format_changed_for_another_is_never_mistaken_for_it():
    msgs = ({"role": "user", "content": "hi"},)
    for name in ("a", "b", "c"):
        body = ChatRequest(msgs, Sampling(), {"type": "json_schema", "name": name}).body("m")
        assert body_json(body, msgs) == sent(body)
