"""Progress of `rbg audit` where its output is not a terminal."""

from __future__ import annotations

BODY = 'repeats = 1\noperators = ["partial_completion", "typo_noise"]\n[options.typo_noise]\nfields = ["response"]\n'


def test_an_audit_whose_output_is_not_a_terminal_prints_a_line_per_phase(rbg, suite, tmp_path):
    result = rbg("audit", suite(BODY), "--out", tmp_path / "a")
    assert result.exit_code == 0
    phases = [line for line in result.stderr.splitlines() if line.startswith("rbg audit: ")]
    assert phases == [
        "rbg audit: making and validating the variants of 2 operator(s)",
        "rbg audit: judging 36 items and variants x 1 repeats: 36 judgments to make",
        "rbg audit: writing the report",
    ]
