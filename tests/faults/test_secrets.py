"""The API key never reaches an artefact: not whole, not as a prefix, tail or
any other piece of 8+ characters, whether a server quotes it in an error
body (however long, so that the key straddles the 300-character cut) or in a
successful reply, live or through a batch import."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import GOOD
from llm.fault_server import reply, status

from rubriclang.cli.main import cli
from rubriclang.llm.client import LLMError
from rubriclang.llm.redact import MASK, Redactor

from .llm_fixtures import chat, client, fault_server, write_items  # noqa: F401 (fault_server: a fixture)

KEY = "sk-SENTINEL12-9f8e7d6c5b4a3210zyxw"
# The error body's message quotes `Bearer KEY`; the client shows 300 characters of it.
CUT = 300


def windows(secret: str, n: int = 8) -> set[bytes]:
    return {secret[i : i + n].encode() for i in range(len(secret) - n + 1)}


def leaked(data: bytes | str, secret: str = KEY) -> set[bytes]:
    """The 8-character pieces of `secret` found in `data`."""
    blob = data.encode() if isinstance(data, str) else data
    return {w for w in windows(secret) if w in blob}


# -- the redaction itself ------------------------------------------------------


@pytest.mark.parametrize("start,end", [(0, len(KEY)), (0, 8), (0, 20), (len(KEY) - 8, len(KEY)), (5, 13), (3, 30)])
def test_any_piece_of_the_key_of_8_or_more_characters_is_masked(start, end):
    piece = KEY[start:end]
    text = f"before {piece} after"
    out = Redactor(KEY).text(text)
    assert out == f"before {MASK} after"


def test_pieces_shorter_than_8_characters_are_left_alone():
    text = f"the prefix {KEY[:7]} and the tail {KEY[-7:]} are everyday text"
    assert Redactor(KEY).text(text) == text


def test_every_window_of_the_key_at_every_offset_is_masked():
    r = Redactor(KEY)
    for length in (8, 9, 12, len(KEY)):
        for start in range(len(KEY) - length + 1):
            for pad in ("", "x", "Bearer ", "sk-"):
                out = r.text(pad + KEY[start : start + length] + "!")
                assert not leaked(out), (length, start, pad, out)


def test_two_pieces_of_the_key_are_both_masked():
    out = Redactor(KEY).text(f"{KEY[:10]} and {KEY[12:]}")
    assert out == f"{MASK} and {MASK}"


def test_a_key_shorter_than_8_characters_is_masked_where_it_appears_whole():
    assert Redactor("EMPTY1").text("key EMPTY1 here, EMPTY elsewhere") == f"key {MASK} here, EMPTY elsewhere"


def test_no_key_changes_nothing():
    text = f"Bearer {KEY}"
    assert Redactor(None).text(text) == text and Redactor("").text(text) == text


def test_json_values_are_redacted_in_every_string():
    value = {"tokens": [{"token": KEY[:12], "top": [{"token": "sk"}]}], KEY: 1}
    out = Redactor(KEY).json(value)
    assert not leaked(json.dumps(out))
    assert out["tokens"][0]["top"][0]["token"] == "sk"
    assert Redactor(KEY).json(out) == out  # nothing left to redact: the value as it is


def test_a_key_that_json_would_escape_is_still_found_in_json_values():
    key = 'sk-"quoted"\\-0123456789'
    out = Redactor(key).json({"a": [f"x{key[2:14]}y", 3]})
    assert out == {"a": [f"x{MASK}y", 3]}


# -- the client, against a server quoting the header -----------------------------


# Prefix lengths that put `Bearer KEY` before, across and after the cut.
_STRADDLING = sorted({CUT - len("Bearer ") - len(KEY) - 1, *range(CUT - len(KEY) - 8, CUT + 1, 3), CUT - 8, CUT - 1})


@pytest.mark.parametrize("code", [400, 500])
def test_an_error_body_quoting_the_key_across_the_cut_leaks_no_piece_of_it(fault_server, code):
    server = fault_server(api_key=KEY)
    server.script(*[status(code, "x" * n + " {authorization} trailing") for n in _STRADDLING])
    for n in _STRADDLING:
        with pytest.raises(LLMError) as info:
            chat(client(server, KEY))
        err = info.value
        assert not leaked(err.message) and not leaked(str(err)), (n, err.message)
    assert all(c.authorization == f"Bearer {KEY}" for c in server.chats)


def test_a_reply_quoting_the_key_is_returned_redacted(fault_server):
    server = fault_server(api_key=KEY)
    server.script(reply('{"score": 4, "reason": "you sent {authorization}"}'))
    completion = chat(client(server, KEY))
    assert not leaked(completion.text)
    assert json.loads(completion.text)["score"] == 4


# -- end to end: nothing written or shown holds a piece of the key ---------------


@pytest.fixture
def run_files(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    g = tmp_path / "g.rbg"
    g.write_text(GOOD)
    items = write_items(tmp_path, 8)
    return g, items


def _artefacts(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (traces, the cache and its WAL, logs)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_run_against_a_server_echoing_the_key_leaves_no_piece_of_it_anywhere(fault_server, run_files, tmp_path):
    g, items = run_files
    server = fault_server(api_key=KEY)
    echo = '{"score": 3, "reason": "header was {authorization}"}'
    server.script(
        status(400, "y" * (CUT - len("Bearer ") - 12) + "{authorization}"),  # the cut falls inside the key
        status(400, "z" * (CUT - len("Bearer ") - 1) + "{authorization}"),  # ... before its last character
        status(500, "{authorization}" * 3),
        reply(echo),
        reply(echo.replace("header was", "x" * 400 + " then")),
    )
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    result = CliRunner().invoke(
        cli,
        [
            "run",
            str(g),
            str(items),
            "--out",
            str(out_dir / "t.jsonl"),
            "--base-url",
            server.url,
            "--cache",
            str(out_dir / "calls.sqlite"),
            "--api-key-env",
            "JUDGE_KEY",
            "--max-retries",
            "1",
        ],
        env={"JUDGE_KEY": KEY},
    )
    assert result.exit_code == 1, result.output  # the two 400s failed their items
    files = _artefacts(out_dir)
    assert "t.jsonl" in files and "calls.sqlite" in files
    traces = files["t.jsonl"].decode()
    assert MASK in traces  # the echoes were there, and masked
    assert {name: leaked(data) for name, data in files.items() if leaked(data)} == {}
    assert not leaked(result.output) and not leaked(result.stderr)


def test_a_batch_import_of_results_echoing_the_key_stores_no_piece_of_it(run_files, tmp_path):
    g, items = run_files
    requests = tmp_path / "requests.jsonl"
    exported = CliRunner().invoke(cli, ["batch", "export", str(g), str(items), "-o", str(requests), "--model", "judge"])
    assert exported.exit_code == 0, exported.output
    lines = [json.loads(line) for line in requests.read_text().splitlines()]
    answer = json.dumps({"score": 4, "reason": f"the key is {KEY}"})
    body = {
        "model": "judge",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
    }
    results = tmp_path / "results.jsonl"
    results.write_text(
        "".join(
            json.dumps({"custom_id": r["custom_id"], "response": {"status_code": 200, "body": body}}) + "\n"
            for r in lines
        )
    )
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    result = CliRunner().invoke(
        cli,
        [
            "batch",
            "import",
            str(g),
            str(items),
            str(results),
            "--out",
            str(out_dir / "t.jsonl"),
            "--model",
            "judge",
            "--base-url",
            "http://127.0.0.1:9",
            "--cache",
            str(out_dir / "calls.sqlite"),
            "--api-key-env",
            "BATCH_KEY",
        ],
        env={"BATCH_KEY": KEY},
    )
    assert result.exit_code == 0, result.output
    files = _artefacts(out_dir)
    assert MASK in files["t.jsonl"].decode()
    assert {name: leaked(data) for name, data in files.items() if leaked(data)} == {}
