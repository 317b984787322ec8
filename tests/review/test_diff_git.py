"""`rbg diff` and git: sides at a revision (`REV:PATH`), and the external
diff driver that makes `git diff` and `git log -p --ext-diff` semantic."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubriclang.cli.main import cli

RUBRIC = """\
rubric help { version = 1 }
contract { scale = score[1, 5] }
criterion fluent: ordinal[1, 5] = human.annotation { key = "fluent" }
criterion off_topic: bool = human.annotation { key = "off_topic" }
node capped = gate.cap(value: fluent, when: off_topic) { max = 4 }
sink capped
readout pointwise { output = ordinal[1, 5] }
"""

RBG = Path(sys.executable).parent / "rbg"


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A git repository with `rubrics/help.rbg` committed twice (max 5, then
    4), as the current directory; git's own configuration kept out."""
    root = tmp_path / "repo"
    root.mkdir()
    for key, value in {
        "HOME": str(tmp_path),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CEILING_DIRECTORIES": str(tmp_path),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "NO_COLOR": "1",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(root)
    git("init", "-q")
    (root / "rubrics").mkdir()
    rubric = root / "rubrics" / "help.rbg"
    rubric.write_text(RUBRIC.replace("max = 4", "max = 5"))
    git("add", ".")
    git("commit", "-qm", "first")
    rubric.write_text(RUBRIC)
    git("commit", "-qam", "second")
    return root


def git(*args: str) -> str:
    done = subprocess.run(["git", *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def rbg(*args):
    return CliRunner().invoke(cli, list(args))


# -- REV:PATH sides ------------------------------------------------------------------


def test_a_side_can_be_a_git_revision(repo):
    (repo / "rubrics" / "help.rbg").write_text(RUBRIC.replace("max = 4", "max = 3"))
    result = rbg("diff", "HEAD~1:rubrics/help.rbg", "rubrics/help.rbg")
    assert result.exit_code == 1, result.output
    assert result.output.startswith("--- HEAD~1:rubrics/help.rbg\n+++ rubrics/help.rbg\n")
    assert "~ max: 5 -> 3" in result.output


def test_both_sides_can_be_revisions(repo):
    assert rbg("diff", "HEAD:rubrics/help.rbg", "HEAD:rubrics/help.rbg").exit_code == 0
    assert "~ max: 5 -> 4" in rbg("diff", "HEAD~1:rubrics/help.rbg", "HEAD:rubrics/help.rbg").output


def test_a_bad_revision_is_a_clear_error(repo):
    result = rbg("diff", "HEAD~9:rubrics/help.rbg", "rubrics/help.rbg")
    assert result.exit_code == 2
    assert "git cannot show `HEAD~9:rubrics/help.rbg`: invalid object name 'HEAD~9'" in result.output


def test_a_path_missing_at_the_revision_is_a_clear_error(repo):
    result = rbg("diff", "HEAD:nope.rbg", "rubrics/help.rbg")
    assert result.exit_code == 2
    assert "path 'nope.rbg' does not exist in 'HEAD'" in result.output


def test_a_folder_at_the_revision_is_not_a_file(repo):
    result = rbg("diff", "HEAD:rubrics", "rubrics/help.rbg")
    assert result.exit_code == 2
    assert "`HEAD:rubrics` is a tree, not a file" in result.output


def test_a_revision_outside_a_repository_is_a_clear_error(tmp_path, monkeypatch):
    (tmp_path / "here").mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.chdir(tmp_path / "here")
    Path("help.rbg").write_text(RUBRIC)
    result = rbg("diff", "HEAD~1:help.rbg", "help.rbg")
    assert result.exit_code == 2
    assert "names a git revision, but" in result.output and "is not inside a git repository" in result.output
    assert "Traceback" not in result.output


# -- the external diff driver --------------------------------------------------------


@pytest.fixture
def driver(repo):
    """`repo` with `*.rbg diff=rbg` and the driver configured as documented."""
    assert RBG.exists(), "the rbg script of this environment"
    (repo / ".gitattributes").write_text("*.rbg diff=rbg\n")
    git("config", "diff.rbg.command", f"{shlex.quote(str(RBG))} diff --git-driver")
    git("add", ".gitattributes")
    git("commit", "-qm", "attributes")
    return repo


def test_git_diff_shows_the_semantic_diff(driver):
    (driver / "rubrics" / "help.rbg").write_text(
        RUBRIC.replace("max = 4", "max = 3").replace("rubric help {", "# a comment\nrubric help {")
    )
    out = git("diff")
    assert out == (
        "--- a/rubrics/help.rbg\n+++ b/rubrics/help.rbg\n\n"
        "~ node capped = gate.cap  # ordinal[1, 5]\n    ~ max: 4 -> 3\n\n"
        "Plan: 0 nodes to add, 1 to change, 0 to remove.\n"
    )


def test_a_pure_reformat_shows_no_semantic_change(driver):
    (driver / "rubrics" / "help.rbg").write_text(RUBRIC.replace("{ max = 4 }", "{\n  max = 4\n}"))
    assert "No semantic changes." in git("diff")


def test_git_log_p_needs_ext_diff(driver):
    semantic = git("log", "-p", "--ext-diff", "-1", "HEAD~1")
    assert "~ max: 5 -> 4" in semantic and "@@" not in semantic
    plain = git("log", "-p", "-1", "HEAD~1")
    assert "-node capped = gate.cap(value: fluent, when: off_topic) { max = 5 }" in plain


def test_an_added_file_is_all_additions(driver):
    (driver / "rubrics" / "new.rbg").write_text(RUBRIC)
    git("add", "rubrics/new.rbg")
    out = git("diff", "--cached")
    assert out.startswith("--- /dev/null\n+++ b/rubrics/new.rbg\n")
    assert "+ criterion fluent: ordinal[1, 5] = human.annotation" in out
    assert "Plan: 3 nodes to add, 0 to change, 0 to remove" in out


def test_a_version_that_does_not_check_falls_back_to_a_line_diff(driver):
    (driver / "rubrics" / "help.rbg").write_text(RUBRIC.replace("sink capped", "sink caped"))
    out = git("diff")
    assert "does not check (1 error(s)); showing a line diff" in out
    assert "-sink capped\n+sink caped\n" in out


def test_the_driver_needs_the_arguments_git_passes():
    result = rbg("diff", "--git-driver", "a", "b")
    assert result.exit_code == 2
    assert "git passes 7" in result.output
