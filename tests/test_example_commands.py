"""The commands the structured examples' READMEs give ("## Commands", and
the two-turn judges' section of examples/judges/README.md) work as written:
each line that asks no model is run as a user would type it, from a folder
where `examples/` is the repository's, and exits 0 (or 1 where the command
reports differences: `rbg diff` with changes). A line that would ask a model
(`--base-url`, or a judge with `llm.*` criteria run or audited without
`--estimate`), or reads what such a line writes, is only checked to name
example files that exist."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from rubriclang.audit.suite import load_suite
from rubriclang.checker import check_source

READMES = {
    "bfcl": "## Commands",
    "tau_bench": "## Commands",
    "begin": "## Commands",
    "faithdial": "## Commands",
    "ragchecker": "## Commands",
    "judges": "## The two-turn judges, command by command",
}
BIN = Path(sys.executable).parent


def commands(name: str) -> list[str]:
    text = (REPO_ROOT / "examples" / name / "README.md").read_text("utf-8")
    section = text.split(READMES[name], 1)[1]
    block = re.search(r"```\n(.*?)```", section, re.S)
    assert block, f"examples/{name}/README.md: no command block under {READMES[name]!r}"
    return [line for line in block.group(1).splitlines() if line.strip()]


def asks_a_model(words: list[str]) -> bool:
    if words[0] != "rbg":
        return False
    if "--base-url" in words:
        return True
    if words[1] == "run":
        return _has_llm(REPO_ROOT / words[2])
    if words[1] == "audit" and "--estimate" not in words:
        return _has_llm(Path(load_suite(str(REPO_ROOT / words[2])).judge))
    return False


def _has_llm(graph: Path) -> bool:
    checked = check_source(graph.read_text("utf-8"), str(graph))
    assert checked.graph is not None, checked.diagnostics
    return any(c.procedure.startswith("llm.") for c in checked.graph.criteria)


@pytest.mark.parametrize("name", sorted(READMES))
def test_the_readmes_commands_work_as_written(name, tmp_path):
    (tmp_path / "examples").symlink_to(REPO_ROOT / "examples")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    ran, not_made = 0, set[str]()  # the outputs of the lines that would ask a model
    for line in commands(name):
        words = shlex.split(line.split(">", 1)[0])
        if asks_a_model(words) or not_made & set(words):
            assert all((REPO_ROOT / w).exists() for w in words if w.startswith("examples/")), line
            not_made |= {words[i + 1] for i, w in enumerate(words[:-1]) if w == "--out"}
            continue
        proc = subprocess.run(line, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        allowed = (0, 1) if words[:2] == ["rbg", "diff"] else (0,)
        assert proc.returncode in allowed, f"{line}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        assert "Traceback" not in proc.stderr, proc.stderr
        ran += 1
    assert ran >= 5
