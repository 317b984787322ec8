"""Shared fixtures for the audit tests: GSM8K items, suites, the CLI, and a
scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubriclang.cli.main import cli

from .helpers import GSM8K_JUDGE, Scripted, gsm8k_items


@pytest.fixture
def items_file(tmp_path) -> Path:
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in gsm8k_items()), encoding="utf-8")
    return path


@pytest.fixture
def suite(tmp_path, items_file):
    """suite(body) -> the path of a GSM8K suite whose extra lines are `body`."""

    def make(body: str = "", name: str = "suite.toml", judge: Path = GSM8K_JUDGE) -> Path:
        path = tmp_path / name
        path.write_text(f'judge = "{judge}"\nitems = "{items_file}"\n{body}', encoding="utf-8")
        return path

    return make


@pytest.fixture
def rbg():
    """rbg(*args) -> click Result, in process."""
    runner = CliRunner()

    def call(*args):
        return runner.invoke(cli, [str(a) for a in args], catch_exceptions=False)

    return call


@pytest.fixture
def scripted():
    """scripted(answer) -> a running Scripted server, closed after the test."""
    servers = []

    def start(answer) -> Scripted:
        s = Scripted(answer)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.close()


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Every test gets its own call cache, never the user's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
