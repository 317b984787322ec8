"""The CI recipe (docs/ci.md, examples/ci/rubrics.yml) runs as written: its
`run:` steps, read from the workflow file, run in order in a git repository
with a base and a head commit of a rubric, as GitHub runs them (bash -eo
pipefail; after a failed step only the `if: always()` steps), against a rule
judge (no network). The steps that need GitHub or the network (installing
the package, posting the comment) are named and not run."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT

yaml = pytest.importorskip("yaml")  # PyYAML: a dependency of pre-commit (dev extra)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the recipe diffs git revisions")

WORKFLOW = REPO_ROOT / "examples" / "ci" / "rubrics.yml"
GSM8K_ITEMS = REPO_ROOT / "examples" / "gsm8k" / "items.jsonl"
BIN = Path(sys.executable).parent
# Steps that reach GitHub or the network: not run here (the package is the one under test).
NOT_RUN = {"Install rubriclang", "Post the verdict impact"}
GIT = ["git", "-c", "user.name=rbg tests", "-c", "user.email=tests@example.invalid", "-c", "commit.gpgsign=false"]

BASE = """# Is the response's final number the reference's?
rubric answer_check { version = 1 }

contract { scale = bool }

criterion correct: bool = rule.matches_reference { mode = numeric }

sink correct

readout pointwise { output = bool }
"""

# A pull request that also asks for a short answer: `under` words.
HEAD = """# Is the response's final number the reference's, in a short answer?
rubric answer_check {{ version = 2 }}

contract {{ scale = bool }}

criterion correct: bool = rule.matches_reference {{ mode = numeric }}
criterion brief: bool = rule.length {{ under = {under} }}

node both = reduce.all(inputs: [correct, brief])

sink both

readout pointwise {{ output = bool }}
"""

SUITE = """judge = "judge.rbg"
items = "items.jsonl"
repeats = 2
seed = 0
operators = ["typo_noise", "partial_completion"]

[options.typo_noise]
fields = ["response"]
"""


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def _repo(tmp_path: Path, head: str) -> tuple[Path, str]:
    """A repository whose first commit has BASE and whose second `head`."""
    repo = tmp_path / "repo"
    (repo / "rubrics").mkdir(parents=True)
    lines = GSM8K_ITEMS.read_text(encoding="utf-8").splitlines(keepends=True)[:12]
    (repo / "rubrics" / "items.jsonl").write_text("".join(lines), encoding="utf-8")
    (repo / "rubrics" / "audit.toml").write_text(SUITE, encoding="utf-8")
    (repo / "rubrics" / "judge.rbg").write_text(BASE, encoding="utf-8")
    subprocess.run([*GIT, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*GIT, "add", "rubrics"], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-qm", "base"], cwd=repo, check=True)
    base = subprocess.run([*GIT, "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True)
    (repo / "rubrics" / "judge.rbg").write_text(head, encoding="utf-8")
    subprocess.run([*GIT, "commit", "-qam", "head"], cwd=repo, check=True)
    return repo, base.stdout.strip()


def _expand(value: str, base: str) -> str:
    """A step's env value with GitHub's one expression the run steps read."""
    value = value.replace("${{ github.event.pull_request.base.sha }}", base)
    return re.sub(r"\$\{\{[^}]*\}\}", "not-used-here", value)


def run_workflow(repo: Path, base: str, tmp_path: Path) -> dict[str, int | None]:
    """Each step's exit status by name, in order: None for a step not run
    (a `uses:` action, one in NOT_RUN, or one skipped after a failure)."""
    wf = _workflow()
    env = {
        **os.environ,
        **{k: str(v) for k, v in wf["env"].items()},
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    status: dict[str, int | None] = {}
    failed = False
    for i, step in enumerate(wf["jobs"]["rubrics"]["steps"]):
        name = step.get("name", f"step {i}: {step.get('uses')}")
        if "run" not in step or name in NOT_RUN or (failed and step.get("if") != "always()"):
            status[name] = None
            continue
        assert "${{" not in step["run"], f"{name}: a run step reads GitHub's expressions through env only"
        step_env = {**env, **{k: _expand(str(v), base) for k, v in step.get("env", {}).items()}}
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=repo,
            env=step_env,
            capture_output=True,
            text=True,
        )
        status[name] = done.returncode
        failed = failed or done.returncode != 0
    return status


def test_the_workflow_checks_formats_judges_diffs_posts_and_gates():
    steps = _workflow()["jobs"]["rubrics"]["steps"]
    runs = " ".join(s.get("run", "") for s in steps)
    for command in ("rbg check --format github", "rbg check --format sarif", "rbg fmt --check", "rbg run"):
        assert command in runs
    assert "rbg diff" in runs and "--format markdown" in runs and "--traces" in runs
    assert "--fail-under" in runs and "--fail-if" in runs
    assert "gh pr comment" in runs and "--body-file" in runs
    assert any(s.get("uses", "").startswith("github/codeql-action/upload-sarif") for s in steps)
    assert {s.get("name") for s in steps} >= NOT_RUN


@pytest.mark.slow  # the workflow's shell steps, each a process (~5 s)
def test_a_pull_request_that_keeps_the_verdicts_passes_every_step(tmp_path):
    repo, base = _repo(tmp_path, HEAD.format(under=400))
    status = run_workflow(repo, base, tmp_path)
    ran = {name: code for name, code in status.items() if code is not None}
    assert ran == {
        "Check": 0,
        "Check (SARIF)": 0,
        "Format": 0,
        "Judge the items with the new version": 0,
        "Verdict impact": 0,
        "Gate on gold": 0,
        "Gate on the audit": 0,
    }
    sarif = json.loads((repo / "out" / "rbg.sarif").read_text(encoding="utf-8"))
    assert sarif["version"] == "2.1.0"
    impact = (repo / "out" / "verdict-impact.md").read_text(encoding="utf-8")
    assert "Verdict impact" in impact and "Over 12 traced items, **0 decisions change**." in impact
    (gate,) = json.loads((repo / "out" / "eval.json").read_text(encoding="utf-8"))["gates"]
    assert gate["gate"] == "accuracy<0.8" and gate["passed"]


@pytest.mark.slow  # the workflow's shell steps, each a process (~5 s)
def test_a_pull_request_that_costs_accuracy_fails_the_gold_gate_with_exit_4(tmp_path):
    repo, base = _repo(tmp_path, HEAD.format(under=20))
    status = run_workflow(repo, base, tmp_path)
    assert status["Verdict impact"] == 0
    assert status["Gate on gold"] == 4
    assert status["Gate on the audit"] is None  # not run after a failed step
    impact = (repo / "out" / "verdict-impact.md").read_text(encoding="utf-8")
    assert "Over 12 traced items, **5 decisions change**." in impact
    assert "| true -> false | 5 |" in impact
    (gate,) = json.loads((repo / "out" / "eval.json").read_text(encoding="utf-8"))["gates"]
    assert gate["value"] == pytest.approx(7 / 12, abs=1e-6) and not gate["passed"]


def test_a_rubric_with_errors_fails_the_check_and_still_uploads_sarif(tmp_path):
    repo, base = _repo(tmp_path, BASE.replace("sink correct", "sink corect"))
    status = run_workflow(repo, base, tmp_path)
    assert status["Check"] == 1
    assert status["Check (SARIF)"] == 0  # `if: always()`
    assert status["Format"] is None and status["Gate on gold"] is None
    sarif = json.loads((repo / "out" / "rbg.sarif").read_text(encoding="utf-8"))
    assert sarif["runs"][0]["results"], "the error is in the SARIF file"


def test_docs_ci_shows_the_workflow_file_as_it_is():
    doc = (REPO_ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    assert f"```yaml\n{WORKFLOW.read_text(encoding='utf-8')}```" in doc
