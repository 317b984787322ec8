"""Shell completion (README, "Shell completion"): `rbg` writes its
completion script for bash, zsh and fish, and answers the shell's requests
with the subcommands and options, through the real console script (where
the standard streams are guarded)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

RBG = str(Path(sys.executable).parent / "rbg")


def rbg_env(**env: str) -> subprocess.CompletedProcess:
    return subprocess.run([RBG], env={**os.environ, **env}, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("shell", "marker"),
    [("bash", "complete -o nosort -F _rbg_completion rbg"), ("zsh", "#compdef rbg"), ("fish", "complete --no-files")],
)
def test_each_shell_gets_its_completion_script(shell, marker):
    result = rbg_env(_RBG_COMPLETE=f"{shell}_source")
    assert result.returncode == 0, result.stderr
    assert marker in result.stdout
    assert "Traceback" not in result.stderr


def test_bash_and_zsh_requests_are_answered_with_the_matching_subcommands():
    bash = rbg_env(_RBG_COMPLETE="bash_complete", COMP_WORDS="rbg ch", COMP_CWORD="1")
    assert bash.returncode == 0, bash.stderr
    assert bash.stdout.split() == ["plain,check"]
    zsh = rbg_env(_RBG_COMPLETE="zsh_complete", COMP_WORDS="rbg r", COMP_CWORD="1")
    assert zsh.returncode == 0, zsh.stderr
    assert [w for w in zsh.stdout.splitlines()[1::3]] == ["replay", "run"]


def test_fish_requests_are_answered_with_options_of_the_subcommand():
    fish = rbg_env(_RBG_COMPLETE="fish_complete", COMP_WORDS="rbg run --retry", COMP_CWORD="--retry")
    assert fish.returncode == 0, fish.stderr
    (line,) = fish.stdout.splitlines()
    assert line.startswith("plain,--retry-errors\tJudge again the items")


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completes_a_subcommand_with_the_sourced_script():
    script = (
        'eval "$(_RBG_COMPLETE=bash_source rbg)"\n'
        "COMP_WORDS=(rbg expl); COMP_CWORD=1; _rbg_completion rbg\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env = {**os.environ, "PATH": f"{Path(RBG).parent}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["explain"]
