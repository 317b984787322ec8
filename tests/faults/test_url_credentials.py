"""A user name and password in a server URL are refused wherever a URL is
given (`--base-url` of every command, a `rubriclang.toml` profile, an audit
suite, the Python client), before any request: the password is never sent
in clear, and no artefact, no output and no message holds it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import GOOD

from rubriclang.llm.client import OpenAIClient
from rubriclang.urls import URLError

from .llm_fixtures import fault_server, write_items  # noqa: F401 (fault_server: a fixture)
from .run_fixtures import SPEC, rbg_process

PASSWORD = "s3cretPW"


def _everything(folder: Path, *results) -> bytes:
    """Every file under `folder` but the user's own config and suite, and
    what the commands printed."""
    mine = {"rubriclang.toml", "suite.toml"}
    blob = b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file() and p.name not in mine)
    return blob + "".join(r.stdout + r.stderr for r in results).encode()


@pytest.fixture
def project(tmp_path: Path, fault_server):
    server = fault_server()
    url = server.url.replace("http://", f"http://judge:{PASSWORD}@") + "/v1"
    g = tmp_path / "g.rbg"
    g.write_text(GOOD)
    items = write_items(tmp_path, 3)
    return server, url, g, items


def _refused(r, where: str = "") -> None:
    output = r.stdout + r.stderr
    assert r.returncode == 2, output
    assert "user name or password" in output and "***@" in output, output
    assert where in output and "Traceback" not in output, output


def test_every_command_refuses_a_url_with_credentials_and_nothing_holds_the_password(project, tmp_path):
    server, url, g, items = project
    cache = ["--cache", tmp_path / "calls.sqlite"]
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"id": "a", "input": "Q?", "response": "A.", "gold": 3}) + "\n")
    results = [
        rbg_process("run", g, items, "--out", tmp_path / "t.jsonl", "--base-url", url, *cache),
        rbg_process("run", g, items, "--out", tmp_path / "t.jsonl", "--base-url", url, "--estimate"),
        rbg_process("eval", g, gold, "--base-url", url, *cache),
        rbg_process("compile", spec, "-o", tmp_path / "out.rbg", "--base-url", url, *cache),
    ]
    for r in results:
        _refused(r, "--base-url")
    results.append(rbg_process("cache", "stats", *cache))
    results.append(rbg_process("view", tmp_path, "--export", tmp_path / "site"))
    assert server.requests == []  # nothing was sent, the password least of all
    assert PASSWORD.encode() not in _everything(tmp_path, *results)


def test_a_profile_with_credentials_in_rubriclang_toml_is_refused_at_its_line(project, tmp_path):
    server, url, g, items = project
    (tmp_path / "rubriclang.toml").write_text(f'[models.default]\nmodel = "judge"\nbase_url = "{url}"\n')
    r = rbg_process("run", g, items, "--out", tmp_path / "t.jsonl", "--cache", tmp_path / "calls.sqlite")
    _refused(r, "rubriclang.toml:3")
    assert server.requests == []
    assert PASSWORD.encode() not in _everything(tmp_path, r)


def test_an_audit_suite_with_credentials_in_a_base_url_is_refused_at_its_line(project, tmp_path):
    server, url, _g, _items = project
    suite = tmp_path / "suite.toml"
    suite.write_text(
        f'items = "items.jsonl"\noperators = ["typo_noise"]\n\n[judge]\ngraph = "g.rbg"\nbase_url = "{url}"\n'
    )
    r = rbg_process("audit", suite, "--out", tmp_path / "audit")
    _refused(r, "suite.toml:6")
    assert server.requests == []
    assert PASSWORD.encode() not in _everything(tmp_path, r)


def test_the_python_client_refuses_credentials_without_quoting_them(project):
    _, url, _, _ = project
    with pytest.raises(URLError) as info:
        OpenAIClient([url], "judge")
    assert PASSWORD not in str(info.value) and "***@" in str(info.value)


@pytest.mark.parametrize(
    "url",
    [
        f"http://judge:{PASSWORD}@127.0.0.1:99999/v1",  # httpx would accept the port
        f"http://judge:{PASSWORD}@127.0.0.1:8000/v1?token=x#frag",
        f"http://{PASSWORD}@[::1:bad/v1",  # not even a URL
    ],
)
def test_a_refused_url_is_quoted_without_its_credentials_however_it_is_wrong(url, tmp_path):
    g = tmp_path / "g.rbg"
    g.write_text(GOOD)
    items = write_items(tmp_path, 1)
    r = rbg_process("run", g, items, "--out", tmp_path / "t.jsonl", "--base-url", url, "--no-cache")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert PASSWORD not in r.stdout + r.stderr
    assert json.dumps(PASSWORD) not in r.stderr


def test_an_audit_names_its_judge_server_without_the_urls_query():
    from rubriclang.audit.suite import ModelConfig

    shown = ModelConfig(base_url="https://api.example.com/v1?key=QUERYSECRET").describe()
    assert shown == "https://api.example.com/v1?***"
