"""A side of `rbg diff` (or `rbg graph`) is data: whatever `REV:PATH` holds,
git takes it for a revision, never for an option."""

from __future__ import annotations

import subprocess

import pytest
from click.testing import CliRunner

from rubriclang.cli.main import cli
from rubriclang.review import gitrev

RUBRIC = """rubric r { version = 1 }
contract { scale = bool }
criterion c: bool = rule.length { over = 10 }
sink c
readout pointwise { output = bool }
"""


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A repository with `a.rbg` committed, as the current directory."""
    for key, value in {
        "HOME": str(tmp_path),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CEILING_DIRECTORIES": str(tmp_path),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }.items():
        monkeypatch.setenv(key, value)
    root = tmp_path / "repo"
    root.mkdir()
    monkeypatch.chdir(root)
    (root / "a.rbg").write_text(RUBRIC)
    for args in (["init", "-q"], ["add", "a.rbg"], ["commit", "-qm", "first"]):
        subprocess.run(["git", *args], check=True, capture_output=True)
    return root


@pytest.mark.parametrize("spec", ["--output=OUT:a.rbg", "-oOUT:a.rbg", "--output=OUT:HEAD:a.rbg"])
def test_a_revision_that_looks_like_an_option_writes_nothing_and_exits_2(repo, tmp_path, spec):
    target = tmp_path / "written"
    spec = spec.replace("OUT", str(target))
    for command in (["diff", "--", spec, "a.rbg"], ["graph", "--", spec]):
        result = CliRunner().invoke(cli, command)
        assert result.exit_code == 2, result.output
        assert "cannot start with `-`" in result.output and "Traceback" not in result.output
    assert not target.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["repo"]


def test_every_git_call_ends_its_options_before_the_revision(repo, monkeypatch):
    calls = []
    real = subprocess.run

    def recording(argv, *args, **kw):
        calls.append(list(argv))
        return real(argv, *args, **kw)

    monkeypatch.setattr(subprocess, "run", recording)  # the subprocess gitrev calls
    assert gitrev.read_side("HEAD:a.rbg").text == RUBRIC
    assert calls and all(c[0] == "git" for c in calls)
    for argv in calls:
        assert argv[argv.index("--end-of-options") + 1] == "HEAD:a.rbg", argv
        assert argv.index("--end-of-options") > 1  # after the subcommand and its options
    assert any(argv[1] == "show" and argv[-1] == "--" for argv in calls)


def test_a_revision_still_reads_normally(repo):
    (repo / "a.rbg").write_text(RUBRIC.replace("over = 10", "over = 20"))
    result = CliRunner().invoke(cli, ["diff", "HEAD:a.rbg", "a.rbg"])
    assert result.exit_code == 1, result.output
    assert "over: 10 -> 20" in result.output
