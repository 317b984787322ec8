"""`rbg audit compare`: two audits of one sealed suite side by side."""

from __future__ import annotations

import json

ALWAYS_TRUE = """\
rubric lenient { version = 1 }
contract { scale = bool }
criterion long_enough: bool = rule.length { field = response, over = 1 }
sink long_enough
readout pointwise { output = bool }
"""

BODY = 'repeats = 1\noperators = ["partial_completion", "typo_noise"]\n[options.typo_noise]\nfields = ["response"]\n'


def test_a_judge_compared_with_itself_shows_zero_differences(rbg, suite, tmp_path):
    path = suite(BODY)
    assert rbg("audit", path, "--out", tmp_path / "a").exit_code == 0
    assert rbg("audit", path, "--out", tmp_path / "b", "--sealed", tmp_path / "a" / "sealed.json").exit_code == 0
    result = rbg("audit", "compare", tmp_path / "a", tmp_path / "b", "--out", tmp_path / "cmp")
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert doc["differences"] == 0 and doc["differ"] == []
    assert doc["shared"] == {"items": 12, "variants": 24, "only_a": 0, "only_b": 0}
    for group in [doc["overall"], *doc["by_surface"].values(), *doc["by_operator"].values()]:
        for block in group.values():
            assert block["b_minus_a"]["value"] == 0.0 and block["a"] == block["b"]
            # Both 0 (or both 1) and still an interval: Newcombe's, not of zero width.
            assert block["b_minus_a"]["low"] < 0.0 < block["b_minus_a"]["high"]
    assert "Differences: 0" in result.output
    # Every figure compare.json holds, and every one it subtracts, is in the registry.
    from rubriclang.audit.figures import FIGURES

    from .test_figures import _figures_in

    found = list(_figures_in(doc))
    assert found and {name for name, _ in found} <= set(FIGURES)
    assert {f["figure"] for name, f in found if name == "b_minus_a"} == {
        "repeat_flip_rate",
        "flip_rate",
        "detection_rate",
    }
    assert "compare.html" in {p.name for p in (tmp_path / "cmp").iterdir()}


def test_two_judges_are_compared_per_operator_with_the_variants_that_differ(rbg, suite, tmp_path):
    assert rbg("audit", suite(BODY), "--out", tmp_path / "a").exit_code == 0
    lenient = tmp_path / "lenient.rbg"
    lenient.write_text(ALWAYS_TRUE)
    other = suite(BODY, name="other.toml", judge=lenient)
    assert rbg("audit", other, "--out", tmp_path / "b", "--sealed", tmp_path / "a" / "sealed.json").exit_code == 0
    result = rbg("audit", "compare", tmp_path / "a", tmp_path / "b", "--format", "json")
    assert result.exit_code == 1  # differences
    doc = json.loads(result.output)
    # The verifier detects the four bare solutions cut short; the lenient judge
    # (true for any response) misses every degradation it is eligible for.
    pc = doc["by_operator"]["partial_completion"]["directional"]
    # B - A of the detection rate, as named: B detects fewer, so it is negative
    # (not the rise in misses, +50 pp, that it once printed under the rate).
    d = pc["b_minus_a"]
    assert (d["figure"], d["a"], d["a_total"], d["b"], d["b_total"]) == ("detection_rate", 4, 8, 0, 8)
    assert d["value"] == -0.5 and d["low"] < -0.5 < d["high"] < 0
    text = rbg("audit", "compare", tmp_path / "a", tmp_path / "b").output
    line = next(x for x in text.splitlines() if x.strip().startswith("partial_completion"))
    assert "detection rate  A 50.0%  B 0.0%  B - A detection rate -50.0 pp [" in line
    assert {d["variant"] for d in doc["differ"]} == {f"gsm8k-000{i}-bare/partial_completion" for i in range(4)}
    assert all((d["a"], d["b"]) == ("detected", "missed") for d in doc["differ"])


def test_audits_of_different_sealed_suites_are_refused(rbg, suite, tmp_path):
    assert rbg("audit", suite(BODY), "--out", tmp_path / "a").exit_code == 0
    assert (
        rbg(
            "audit", suite('repeats = 1\noperators = ["partial_completion"]\n', name="s2.toml"), "--out", tmp_path / "b"
        ).exit_code
        == 0
    )
    result = rbg("audit", "compare", tmp_path / "a", tmp_path / "b")
    assert result.exit_code == 2
    assert "different sealed suites" in result.output and "--sealed" in result.output
    assert "does not exist" in rbg("audit", "compare", tmp_path / "a", tmp_path / "nowhere").output


def test_the_repeat_flip_rates_difference_subtracts_the_reports_own_rates(rbg, suite, tmp_path):
    path = suite(BODY.replace("repeats = 1", "repeats = 2"))
    assert rbg("audit", path, "--out", tmp_path / "a").exit_code == 0
    assert rbg("audit", path, "--out", tmp_path / "b", "--sealed", tmp_path / "a" / "sealed.json").exit_code == 0
    doc = json.loads(rbg("audit", "compare", tmp_path / "a", tmp_path / "b", "--format", "json").output)
    r = doc["repeat_flip_rate"]
    d = r["b_minus_a"]
    assert (d["a"], d["a_total"]) == (r["a"]["count"], r["a"]["total"]) == (0, 24)
    assert d["value"] == r["b"]["value"] - r["a"]["value"] == 0.0 and d["low"] < 0.0 < d["high"]
