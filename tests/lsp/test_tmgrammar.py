"""The grammar's scopes match the assertions in `editors/vscode/tests/*.rbg`,
checked by vscode-tmgrammar-test (an npm package: `npm ci` in editors/vscode)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from conftest import REPO_ROOT

EXTENSION = REPO_ROOT / "editors" / "vscode"
RUNNER = EXTENSION / "node_modules" / ".bin" / "vscode-tmgrammar-test"


@pytest.mark.skipif(shutil.which("npx") is None, reason="node and npm are not installed")
@pytest.mark.skipif(
    not RUNNER.exists(), reason="editors/vscode/node_modules is missing: run `npm ci` in editors/vscode"
)
def test_grammar_scopes_match_the_test_files():
    # --no-install: run the locked, installed version; never fetch one.
    proc = subprocess.run(
        ["npx", "--no-install", "vscode-tmgrammar-test", "--compact", "tests/*.rbg"],
        cwd=EXTENSION,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cases = sorted(p.name for p in (EXTENSION / "tests").glob("*.rbg"))
    # "successfuly" (sic) is how the locked runner reports a passing file.
    assert all(f"tests/{name} run successfuly" in proc.stdout for name in cases), proc.stdout
