"""The VS Code extension's manifest and client agree with each other and
with the files they name."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from conftest import REPO_ROOT

EXTENSION = REPO_ROOT / "editors" / "vscode"
MANIFEST = json.loads((EXTENSION / "package.json").read_text("utf-8"))
CLIENT = (EXTENSION / "extension.js").read_text("utf-8")


def test_the_language_is_rbg_for_rbg_files_with_its_grammar_and_configuration():
    (language,) = MANIFEST["contributes"]["languages"]
    assert language["id"] == "rbg" and language["extensions"] == [".rbg"]
    assert (EXTENSION / language["configuration"]).is_file()
    (grammar,) = MANIFEST["contributes"]["grammars"]
    assert grammar["language"] == "rbg"
    assert json.loads((EXTENSION / grammar["path"]).read_text("utf-8"))["scopeName"] == grammar["scopeName"]


def test_the_entry_point_exists_and_vscode_is_pinned():
    assert (EXTENSION / MANIFEST["main"]).is_file()
    assert MANIFEST["engines"]["vscode"].startswith("^1.")
    assert "vscode-languageclient" in MANIFEST["dependencies"]


def test_every_setting_the_client_reads_is_declared():
    declared = set(MANIFEST["contributes"]["configuration"]["properties"])
    assert set(re.findall(r'getConfiguration\("([\w.]+)"\)', CLIENT)) == {"rbg.server"}
    read = {f"rbg.server.{key}" for key in re.findall(r'\.get\("(\w+)"', CLIENT)}
    assert read and read <= declared
    # The client's id ("rbg") makes vscode-languageclient read `rbg.trace.server`.
    assert 'new LanguageClient("rbg"' in CLIENT and "rbg.trace.server" in declared


def test_every_command_the_client_registers_is_declared():
    declared = {c["command"] for c in MANIFEST["contributes"]["commands"]}
    assert set(re.findall(r'registerCommand\("([\w.]+)"', CLIENT)) == declared


def test_the_default_server_command_is_rbg_lsp():
    settings = MANIFEST["contributes"]["configuration"]["properties"]
    assert settings["rbg.server.path"]["default"] == "rbg"
    assert settings["rbg.server.args"]["default"] == ["lsp"]


def test_comments_brackets_and_quotes_are_configured():
    config = json.loads((EXTENSION / "language-configuration.json").read_text("utf-8"))
    assert config["comments"]["lineComment"] == "#"
    assert config["brackets"] == [["{", "}"], ["[", "]"], ["(", ")"]]
    assert {'"', '"""'} <= {p["open"] for p in config["autoClosingPairs"]}


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_client_is_valid_javascript():
    proc = subprocess.run(
        ["node", "--check", str(EXTENSION / "extension.js")], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stderr
