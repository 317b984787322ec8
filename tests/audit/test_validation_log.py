"""The audit's `validation.jsonl` is read through `rubriclang.jsonl`: it is
written whole, so a line that does not read is damage, reported at its
`path:line` with what to do (exit 2), never a traceback."""

from __future__ import annotations

BODY = 'repeats = 1\noperators = ["typo_noise"]\n[options.typo_noise]\nfields = ["response"]\n'


def test_a_damaged_validation_log_is_an_error_naming_its_line(rbg, suite, tmp_path):
    path, out = suite(BODY), tmp_path / "a"
    assert rbg("audit", "preview", path, "--out", out).exit_code == 0
    log = out / "validation.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    assert len(lines) >= 2
    log.write_bytes(lines[0] + b'{"variant": \n' + b"".join(lines[2:]))
    result = rbg("audit", "preview", path, "--out", out)
    assert result.exit_code == 2, result.output
    assert f"{log}:2: malformed validation record" in result.output
