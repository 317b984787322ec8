"""Every mistake in a compile spec (`rbg compile SPEC.toml`) names the
spec's line, as the audit suite's do, and exits 2 before any call."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from faults.run_fixtures import SPEC
from rubriclang.cli.main import cli

GOOD = SPEC  # a well-formed spec; each test breaks one thing of it


def _edit(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new)


CASES = [
    (_edit('name = "helpful"', 'name = "Helpful"'), 2, "snake_case"),
    (_edit('name = "helpful"', "name = 5"), 2, "`rubric.name` must be"),
    (_edit('text = "Is the answer helpful?"', 'text = "  "'), 3, "is empty"),
    (_edit("version = 1", "version = -1"), 4, "non-negative"),
    (_edit("version = 1", "versoin = 1"), 4, "unknown key `rubric.versoin`"),
    (_edit('description = "Answer a question."', 'response = "x"'), 7, "no place for candidate responses"),
    (_edit('description = "Answer a question."', 'system_prompt = "x"'), 6, "`[task]` needs"),
    (_edit('scale = "ordinal[1, 5]"', 'scale = "ordinal[1 5]"'), 10, "is not a type"),
    (_edit('scale = "ordinal[1, 5]"', 'scale = "ordinal[1, 5]?"'), 9, "cannot be optional"),
    (_edit('readouts = ["pointwise"]', 'readouts = ["pointwise", "pointwise"]'), 11, "each once"),
    (_edit('readouts = ["pointwise"]', 'readouts = ["pairwise"]\noutput = "bool"'), 12, "no pointwise"),
    (_edit('readouts = ["pointwise"]', "epsilon = 0.5"), 11, "need a pairwise readout"),
    (_edit('readouts = ["pointwise"]', 'readouts = ["pairwise"]\nepsilon = nan'), 12, "finite"),
    (_edit('readouts = ["pointwise"]', 'readouts = ["pairwise"]\nepsilon = -1'), 12, "non-negative"),
    (_edit('readouts = ["pointwise"]', 'readouts = ["pairwise"]\nresolve = "coin"'), 12, "must be one of"),
    (
        "task = 5\n"
        + GOOD.replace("[task]\n", "[reference]\n").replace('description = "Answer a question."', 'text = "x"'),
        1,
        "`task` must be a table",
    ),
    (GOOD + "\n[extra]\nx = 1\n", 13, "unknown key `extra`"),
    (_edit('readouts = ["pointwise"]', "readouts = ["), 11, "not valid TOML"),
    (
        "task = { description = 3 }\n"
        + GOOD.replace("[task]\n", "").replace('description = "Answer a question."\n', ""),
        1,
        "`task.description` must be",
    ),
]


@pytest.mark.parametrize(("text", "line", "message"), CASES, ids=[c[2] for c in CASES])
def test_a_spec_mistake_names_its_line_and_exits_2(tmp_path, text, line, message):
    spec = tmp_path / "spec.toml"
    spec.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(
        cli,
        ["compile", str(spec), "-o", str(tmp_path / "out.rbg"), "--base-url", "http://127.0.0.1:9/v1", "--model", "m"],
        catch_exceptions=False,
    )
    assert result.exit_code == 2, result.output
    assert f"Error: {spec}:{line}: " in result.output and message in result.output, result.output
    assert "Traceback" not in result.output and not (tmp_path / "out.rbg").exists()


def test_a_spec_that_is_not_utf8_names_the_line_of_the_bad_byte(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_bytes(GOOD.replace("Answer a question.", "Antw\xf6rt").encode("latin-1"))
    result = CliRunner().invoke(cli, ["compile", str(spec), "-o", str(tmp_path / "out.rbg")], catch_exceptions=False)
    assert result.exit_code == 2 and f"{spec}:7: the spec is not UTF-8 text (byte 0xf6)" in result.output, result.output
