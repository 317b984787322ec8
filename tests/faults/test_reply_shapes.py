"""A chat completion is read in every shape the OpenAI format allows (a
`content` string, null, or a list of parts whose text parts are joined), by
one reader for live calls and batch imports alike; any other shape, a
refusal, or JSON nested past the decoder's depth is a failure told in the
product's words, never a Python exception's."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import GOOD
from llm.fault_server import Fault

from rubriclang.cli.main import cli
from rubriclang.llm.cache import CallCache
from rubriclang.llm.client import Completion, LLMError

from .llm_fixtures import chat, client, fault_server, write_items  # noqa: F401 (fault_server: a fixture)

ANSWER = json.dumps({"score": 4, "reason": "fine"})
PYTHON_WORDS = ("Error:", "object has no attribute", "NoneType", "Traceback", "'list'", "not subscriptable")


def _body(message: dict, **extra) -> bytes:
    choice = {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}
    return json.dumps({"model": "judge", "choices": [choice], **extra}).encode()


def _answer(message: dict, **extra) -> Fault:
    return Fault(status=200, body=_body(message, **extra))


def _parts(text: str) -> list[dict]:
    half = len(text) // 2
    return [{"type": "text", "text": text[:half]}, {"type": "text", "text": text[half:]}]


@pytest.mark.parametrize(
    "message,text",
    [
        ({"content": _parts(ANSWER)}, ANSWER),
        ({"content": [{"type": "image_url", "image_url": {"url": "data:,"}}, *_parts(ANSWER)]}, ANSWER),
        ({"content": [{"type": "output_text", "text": ANSWER}]}, ANSWER),
        ({"content": None}, ""),
        ({"content": ANSWER, "refusal": None}, ANSWER),
    ],
    ids=["text-parts", "image-and-text-parts", "output-text-part", "null", "string-with-null-refusal"],
)
def test_every_standard_content_shape_is_read_as_text(fault_server, message, text):
    server = fault_server()
    server.script(_answer(message))
    completion = chat(client(server))
    assert completion.text == text


def test_token_counts_and_logprobs_of_an_unexpected_shape_are_left_out(fault_server):
    server = fault_server()
    server.script(_answer({"content": ANSWER}, usage=["x"], model=7))
    completion = chat(client(server))
    assert (completion.text, completion.model, completion.prompt_tokens) == (ANSWER, "judge", 0)
    server.script(_answer({"content": ANSWER}, usage={"prompt_tokens": "12", "completion_tokens": -3}))
    completion = chat(client(server))
    assert (completion.prompt_tokens, completion.completion_tokens) == (0, 0)


@pytest.mark.parametrize(
    "message,words",
    [
        ({"content": None, "refusal": "I cannot help with that."}, "declined to answer: I cannot help with that."),
        ({"content": [{"type": "refusal", "refusal": "No."}]}, "declined to answer: No."),
    ],
)
def test_a_refusal_fails_the_call_at_once_in_the_products_words(fault_server, message, words):
    server = fault_server()
    server.script(_answer(message), _answer(message))
    with pytest.raises(LLMError) as info:
        chat(client(server, max_retries=1))
    assert info.value.kind == "refused" and words in info.value.message
    assert len(server.chats) == 1  # asked again, it would refuse again


@pytest.mark.parametrize(
    "body,words",
    [
        (_body({"content": 42}), "its `message.content` is a number, not text or a list of text parts"),
        (_body({"content": {"text": ANSWER}}), "its `message.content` is an object"),
        (_body({"content": ["a", "b"]}), "a part of `message.content` is not an object"),
        (_body({"content": [{"type": "text", "text": 5}]}), "a `text` part of `message.content` has no `text` string"),
        (json.dumps({"choices": []}).encode(), "it has no `choices`"),
        (json.dumps({"choices": ["x"]}).encode(), "its first choice has no `message` object"),
        (json.dumps([1, 2]).encode(), "the body is not a JSON object"),
        (b"[" * 200_000 + b"]" * 200_000, "its JSON nests too deeply"),
        (b"{not json", "its body is not JSON"),
    ],
    ids=["number", "object", "strings", "text-not-string", "no-choices", "no-message", "array", "deep", "not-json"],
)
def test_any_other_shape_is_a_bad_response_in_the_products_words(fault_server, body, words):
    server = fault_server()
    server.script(Fault(status=200, body=body))
    with pytest.raises(LLMError) as info:
        chat(client(server))
    assert info.value.kind == "bad_response"
    assert f"answered something that is not a chat completion: {words}" in info.value.message
    assert not any(w in info.value.message for w in PYTHON_WORDS), info.value.message


def test_a_run_reads_content_parts_and_fails_odd_shapes_with_plain_messages(fault_server, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    g = tmp_path / "g.rbg"
    g.write_text(GOOD)
    items = write_items(tmp_path, 3)
    server = fault_server()
    odd = Fault(status=200, body=_body({"content": 42}))
    # One item per call, in order: parts, a number (retried once, both odd), a refusal.
    server.script(
        _answer({"content": _parts(ANSWER)}), odd, odd, _answer({"content": None, "refusal": "Not this one."})
    )
    out = tmp_path / "t.jsonl"
    r = CliRunner().invoke(
        cli,
        [
            "run",
            str(g),
            str(items),
            "--out",
            str(out),
            "--base-url",
            server.url,
            "--no-cache",
            "--concurrency",
            "1",
            "--max-retries",
            "1",
        ],
    )
    assert r.exit_code == 1, r.output
    records = {rec["item"]: rec for rec in map(json.loads, out.read_text().splitlines())}
    assert records["i0"]["readout"]["status"] == "ok"
    errors = [records[i]["criteria"]["correct"]["response"]["error"] for i in ("i1", "i2")]
    assert "is a number, not text or a list of text parts (gave up after 2 attempts)" in errors[0]
    assert errors[1].startswith("refused: ") and "declined to answer: Not this one." in errors[1]
    assert not any(w in e for e in errors for w in PYTHON_WORDS), errors


def test_a_batch_import_reads_content_parts_and_counts_a_refusal_as_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    g = tmp_path / "g.rbg"
    g.write_text(GOOD)
    items = write_items(tmp_path, 2)
    requests = tmp_path / "requests.jsonl"
    exported = CliRunner().invoke(cli, ["batch", "export", str(g), str(items), "-o", str(requests), "--model", "judge"])
    assert exported.exit_code == 0, exported.output
    ids = [json.loads(line)["custom_id"] for line in requests.read_text().splitlines()]
    messages: list[dict[str, Any]] = [{"content": _parts(ANSWER)}, {"content": None, "refusal": "Not this one."}]
    results = tmp_path / "results.jsonl"
    results.write_text(
        "".join(
            json.dumps({"custom_id": i, "response": {"status_code": 200, "body": json.loads(_body(m))}}) + "\n"
            for i, m in zip(ids, messages, strict=True)
        )
    )
    args = ["batch", "import", str(g), str(items), str(results), "--out", str(tmp_path / "t.jsonl")]
    args += ["--model", "judge", "--identity", "srv", "--cache", str(tmp_path / "c.sqlite")]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 2, r.output
    assert "declined to answer: Not this one." in r.output
    assert not any(w in r.output.replace("Error: ", "", 1) for w in PYTHON_WORDS), r.output
    cached = CallCache(str(tmp_path / "c.sqlite")).stats()
    assert cached["entries"] == 1  # the text parts' answer, stored


def test_a_cached_reply_whose_text_is_not_a_string_is_asked_again(tmp_path):
    cache = CallCache(str(tmp_path / "c.sqlite"))
    cache.put("k", "srv", Completion(_parts(ANSWER), "judge"))  # type: ignore[arg-type]  # as an older version stored it
    cache.put("ok", "srv", Completion(ANSWER, "judge"))
    assert cache.get("k") is None and cache.get_many(["k", "ok"]).keys() == {"ok"}
