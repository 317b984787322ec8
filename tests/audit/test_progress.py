"""Progress of `rbg audit` where its output is not a terminal."""

from __future__ import annotations

BODY = 'repeats = 1\noperators = ["partial_completion", "typo_noise"]\n[options.typo_noise]\nfields = ["response"]\n'


def test_an_audit_whose_output_is_not_a_terminal_prints_a_line_per_phase(rbg, suite, tmp_path):
    result = rbg("audit", suite(BODY), "--out", tmp_path / "a")
    assert result.exit_code == 0
    phases = [line for line in result.stderr.splitlines() if line.startswith("rbg audit: ")]
    assert phases == [
        "rbg audit: making and validating the variants of 2 operator(s): 24 variants to make",
        "rbg audit: judging 36 items and variants x 1 repeats: 36 judgments to make",
        "rbg audit: writing the report",
    ]


def test_the_variant_phase_counts_its_variants_with_rate_and_time_left(rbg, suite, tmp_path):
    import re

    result = rbg("audit", suite(BODY), "--out", tmp_path / "a")
    lines = result.stderr.splitlines()
    start = lines.index("rbg audit: making and validating the variants of 2 operator(s): 24 variants to make")
    counts = [
        m for line in lines[start + 1 :] if (m := re.fullmatch(r"  (\d+)/24 variants, .* variants/s(, .*)?", line))
    ]
    assert counts, lines  # a line every tenth of the variants
    assert [int(m[1]) for m in counts] == sorted(int(m[1]) for m in counts)
    assert all(int(m[1]) <= 24 for m in counts)


def test_preview_seals_the_variants_and_the_run_then_judges_exactly_them(rbg, suite, tmp_path):
    import json

    path = suite(BODY)
    result = rbg("audit", "preview", path, "--out", tmp_path / "a")
    assert result.exit_code == 0, result.output
    out = tmp_path / "a"
    assert not (out / "runs.jsonl").exists() and not (out / "report.json").exists()  # nothing judged
    doc = json.loads((out / "preview.json").read_text())
    sealed = json.loads((out / "sealed.json").read_text())
    assert doc["sealed"] == sealed["hash"] and len(doc["variants"]) == len(sealed["variants"]) > 0
    cut = next(v for v in doc["variants"] if v["variant"] == "gsm8k-0000-bare/partial_completion")
    assert cut["original"]["candidates"] != cut["perturbed"]["candidates"]
    html = (out / "preview.html").read_text()
    assert "<del>" in html and "<script" not in html
    assert rbg("audit", path, "--out", out).exit_code == 0
    assert json.loads((out / "report.json").read_text())["suite"]["sealed"] == sealed["hash"]
