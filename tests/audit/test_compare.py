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
            assert block["paired"]["value"] == 0.0 and block["a"] == block["b"]
    assert "Differences: 0" in result.output
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
    assert (pc["paired"]["a"], pc["paired"]["b"]) == (4, 8)
    assert pc["paired"]["value"] == 0.5
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
