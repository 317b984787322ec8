"""Server settings that cannot be used are one clear error each, exit 2,
before any request: a port outside 1-65535 (which httpx accepts) in
`--base-url` or in `rubriclang.toml`, an API key HTTP cannot carry, a
config nested past what the TOML reader can recurse, and a full disk under
any command. A base URL's query string goes with every request, as its
query, on both transports."""

from __future__ import annotations

import asyncio
import errno
import os

import pytest
from click.testing import CliRunner
from conftest import GOOD

from rubriclang.cli.main import cli
from rubriclang.llm.client import ChatRequest, OpenAIClient

from .llm_fixtures import fault_server, write_items  # noqa: F401 (fault_server: a fixture)
from .run_fixtures import assert_clean_error, rbg_process

DEEP = 5000


@pytest.fixture
def graph(tmp_path):
    g = tmp_path / "g.rbg"
    g.write_text(GOOD)
    return g, write_items(tmp_path, 2)


def _run(tmp_path, g, items, *flags, **kw):
    return rbg_process("run", g, items, "--out", tmp_path / "t.jsonl", "--no-cache", *flags, **kw)


@pytest.mark.parametrize("port", ["99999", "0", "65536"])
def test_a_port_out_of_range_in_base_url_is_a_clear_error(graph, tmp_path, port):
    g, items = graph
    r = _run(tmp_path, g, items, "--base-url", f"http://127.0.0.1:{port}/v1")
    assert_clean_error(r, f"has port {port}, outside 1-65535")
    assert not (tmp_path / "t.jsonl").exists()


def test_a_port_out_of_range_in_rubriclang_toml_names_its_line(graph, tmp_path):
    g, items = graph
    (tmp_path / "rubriclang.toml").write_text('[models.default]\nmodel = "judge"\nbase_url = "http://h:99999/v1"\n')
    r = _run(tmp_path, g, items)
    assert_clean_error(r, "rubriclang.toml:3")
    assert "outside 1-65535" in r.stderr


@pytest.mark.parametrize("key", ["sk-caf\u00e9-0123456789", "sk-\u201cquoted\u201d", "sk-0123456789\n", "sk 0123"])
def test_an_api_key_http_cannot_carry_is_a_clear_error_that_does_not_quote_it(graph, tmp_path, key, fault_server):
    g, items = graph
    server = fault_server()
    env = {"PATH": "/usr/bin:/bin", "JUDGE_KEY": key, "HOME": str(tmp_path)}
    r = _run(tmp_path, g, items, "--base-url", server.url, "--api-key-env", "JUDGE_KEY", env=env)
    assert_clean_error(r, "the API key in `JUDGE_KEY` (--api-key-env) cannot be sent")
    assert key.strip() not in r.stderr and "0123" not in r.stderr
    assert server.requests == []


def test_a_profile_key_http_cannot_carry_names_the_profile(graph, tmp_path, fault_server):
    g, items = graph
    server = fault_server()
    (tmp_path / "rubriclang.toml").write_text(
        f'[models.default]\nmodel = "judge"\nbase_url = "{server.url}"\napi_key_env = "PROFILE_KEY"\n'
    )
    env = {"PATH": "/usr/bin:/bin", "PROFILE_KEY": "sk-\u00e9t\u00e9-0123456789", "HOME": str(tmp_path)}
    r = _run(tmp_path, g, items, env=env)
    assert_clean_error(r, "rubriclang.toml:1")
    assert "`PROFILE_KEY` (profile `default`) cannot be sent" in r.stderr
    assert server.requests == []


@pytest.mark.parametrize(
    "name,text,line",
    [
        ("rubriclang.toml", "[models.x]\nbase_url = 'http://h'\nx = " + "[" * DEEP + "]" * DEEP + "\n", 3),
        ("pyproject.toml", "[tool.rubriclang]\nx = " + "{a = " * DEEP + "1" + "}" * DEEP + "\n", 2),
    ],
)
def test_a_config_nested_too_deeply_is_a_clear_error_at_its_line(graph, tmp_path, name, text, line):
    g, items = graph
    (tmp_path / name).write_text(text)
    r = _run(tmp_path, g, items)
    assert_clean_error(r, f"{name}:{line}")
    assert "nests arrays or inline tables too deeply to read" in r.stderr


@pytest.mark.parametrize("command", ["audit", "compile"])
def test_a_suite_or_spec_nested_too_deeply_is_a_clear_error_at_its_line(tmp_path, command):
    path = tmp_path / "file.toml"
    path.write_text("# deep\nx = " + "[" * DEEP + "]" * DEEP + "\n")
    out = ["--out", tmp_path / "audit"] if command == "audit" else ["-o", tmp_path / "out.rbg"]
    r = rbg_process(command, path, *out)
    assert_clean_error(r, f"{path}:2")
    assert "nests arrays or inline tables too deeply to read" in r.stderr


# -- the query string of a base URL -------------------------------------------------------


@pytest.mark.parametrize("direct", [True, False], ids=["own-transport", "httpx"])
def test_a_base_url_query_goes_with_every_request_as_its_query(fault_server, monkeypatch, direct):
    if not direct:  # every server under RBG_PLAIN_LIBS=http: httpx's transport
        monkeypatch.setenv("RBG_PLAIN_LIBS", "http")
    server = fault_server()
    c = OpenAIClient([server.url + "/v1?api-version=2024-06-01&x=1"], None, timeout=5.0, max_retries=0)

    async def go():
        try:
            await c.check_model()
            return await c.chat(ChatRequest(({"role": "user", "content": "Rate this."},)))
        finally:
            await c.aclose()

    completion = asyncio.run(go())
    assert completion.model == "judge"
    assert [r.path for r in server.requests] == [
        "/v1/models?api-version=2024-06-01&x=1",
        "/v1/chat/completions?api-version=2024-06-01&x=1",
    ]
    # What names the server (the cache, traces, messages) leaves the query out: it may hold a token.
    assert c.identity == server.url + "/v1"


def test_a_run_with_a_query_in_its_base_url_is_judged_and_records_no_query(fault_server, graph, tmp_path):
    g, items = graph
    server = fault_server()
    r = _run(tmp_path, g, items, "--base-url", server.url + "/v1?token=abcdefgh123")
    assert r.returncode == 0, r.stderr
    assert all(req.path.endswith("?token=abcdefgh123") for req in server.requests)
    assert "abcdefgh123" not in (tmp_path / "t.jsonl").read_text() + r.stdout + r.stderr


# -- a disk that fills under any command ------------------------------------------------


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EROFS])
def test_a_disk_error_no_command_reported_is_one_clear_error(monkeypatch, code):
    import rubriclang.cli.explain as explain

    def full(*_args):
        raise OSError(code, os.strerror(code), "out/report.txt")

    monkeypatch.setattr(explain, "explanation", full)
    r = CliRunner().invoke(cli, ["explain", "RB101"])
    assert r.exit_code == 2, r.output
    assert f"cannot write `out/report.txt`: {os.strerror(code)}" in r.output
    assert isinstance(r.exception, SystemExit)


def test_other_os_errors_are_not_taken_for_a_full_disk(monkeypatch):
    import rubriclang.cli.explain as explain

    def broken(*_args):
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(explain, "explanation", broken)
    r = CliRunner().invoke(cli, ["explain", "RB101"])
    assert isinstance(r.exception, OSError) and r.exception.errno == errno.EIO
