"""`rbg lsp`: listed with the other commands, and a clear error, not a
traceback, when the server's dependencies are missing."""

from __future__ import annotations

import sys

from click.testing import CliRunner

from rubriclang.cli.main import cli


def test_lsp_is_listed_in_the_help():
    result = CliRunner().invoke(cli, ["--help"])
    assert "lsp" in result.output and "Run the language server (stdio)." in result.output


def test_without_pygls_the_command_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pygls", None)  # makes `import pygls` fail
    monkeypatch.delitem(sys.modules, "rubriclang.lsp.server", raising=False)
    result = CliRunner().invoke(cli, ["lsp"])
    assert result.exit_code == 1
    assert "pip install 'rubriclang[lsp]'" in result.output
    assert "Traceback" not in result.output
