"""The pre-commit hooks this repository offers, run for real by pre-commit,
which builds a virtualenv and pip-installs the project into it.

A user's repository names a snapshot of this project in its
`.pre-commit-config.yaml`; `pre-commit run` then installs the hook environment
once for the module (`pre-commit try-repo` would reinstall it on every call)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from conftest import ERROR, GOOD, REPO_ROOT, needs

PRE_COMMIT = shutil.which("pre-commit", path=str(Path(sys.executable).parent)) or shutil.which("pre-commit")

pytestmark = [
    pytest.mark.slow,
    needs(
        PRE_COMMIT is not None and shutil.which("git") is not None,
        "pre-commit (dev extra) and git are needed to run the hooks",
    ),
]  # slow: pre-commit pip-installs the hook's environment (~1 min)

GIT_IDENTITY = ["-c", "user.name=rbg tests", "-c", "user.email=tests@example.invalid", "-c", "commit.gpgsign=false"]


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *GIT_IDENTITY, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _snapshot(dest: Path) -> Path:
    """The project's working tree (tracked and new files, as they are now),
    committed to a fresh repository, so uncommitted work is what gets tested."""
    listed = _git(REPO_ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for rel in filter(None, listed.split("\0")):
        src = REPO_ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "snapshot")
    return dest


@pytest.fixture(scope="module")
def hooks(tmp_path_factory):
    """hooks(hook_id, *files) -> CompletedProcess, in a user's repository."""
    from rubriclang.fmt import format_source

    project = _snapshot(tmp_path_factory.mktemp("project"))
    work = tmp_path_factory.mktemp("work")
    _git(work, "init", "-q")
    (work / "good.rbg").write_text(format_source(GOOD, "good.rbg").output, encoding="utf-8")
    (work / "bad.rbg").write_text(ERROR, encoding="utf-8")
    (work / "ugly.rbg").write_text(GOOD.replace("contract { ", "contract   {"), encoding="utf-8")
    rev = _git(project, "rev-parse", "HEAD").strip()
    (work / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {project}\n  rev: {rev}\n  hooks:\n  - id: rbg-check\n  - id: rbg-fmt\n",
        encoding="utf-8",
    )
    _git(work, "add", "-A")
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path_factory.mktemp("pre-commit-home")),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }

    return _Hooks(work, env)


@attrs.frozen
class _Hooks:
    """`hooks(hook_id, *files)` runs a hook in the user's repository `work`."""

    work: Path
    env: dict[str, str]

    def __call__(self, hook: str, *files: str) -> subprocess.CompletedProcess[str]:
        assert PRE_COMMIT is not None  # the module's mark skips it otherwise
        return subprocess.run(
            [PRE_COMMIT, "run", hook, "--files", *files],
            cwd=self.work,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
        )


def test_rbg_check_hook_passes_a_good_file(hooks):
    result = hooks("rbg-check", "good.rbg")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Passed" in result.stdout


def test_rbg_check_hook_fails_a_file_with_errors(hooks):
    result = hooks("rbg-check", "bad.rbg")
    assert result.returncode == 1
    assert "Failed" in result.stdout and "RB101" in result.stdout


def test_rbg_fmt_hook_passes_a_formatted_file_and_fixes_another(hooks):
    assert hooks("rbg-fmt", "good.rbg").returncode == 0
    fixed = hooks("rbg-fmt", "ugly.rbg")
    assert fixed.returncode == 1  # pre-commit fails a hook that modified files
    assert "files were modified by this hook" in fixed.stdout
    assert (hooks.work / "ugly.rbg").read_text("utf-8") == (hooks.work / "good.rbg").read_text("utf-8")
