"""The audited judge connects as `rbg run` does: criteria that name a model
profile reach the profile's server, the others the suite's [judge] server."""

from __future__ import annotations

import json

from .helpers import report

TWO_JUDGES = """\
rubric ensemble { version = 1 }
contract { scale = bool }
criterion strong_says: bool = llm.check { question = "Is it right?" model = "strong" }
criterion cheap_says: bool = llm.check { question = "Is it right?" }
node both = reduce.all(inputs: [strong_says, cheap_says])
sink both
readout pointwise { output = bool }
"""


def test_an_audited_judge_sends_each_criterion_to_its_model_profile(rbg, tmp_path, items_file, scripted):
    strong = scripted(lambda role, body: json.dumps({"reason": "strong", "answer": True}))
    cheap = scripted(lambda role, body: json.dumps({"reason": "cheap", "answer": True}))
    (tmp_path / "judge.rbg").write_text(TWO_JUDGES)
    (tmp_path / "rubriclang.toml").write_text(
        f'[models.strong]\nbase_url = "{strong.url}"\nmodel = "scripted"\nseed = 100\n'
    )
    path = tmp_path / "s.toml"
    path.write_text(
        f'items = "{items_file}"\nrepeats = 2\noperators = ["typo_noise"]\n[judge]\ngraph = "judge.rbg"\n'
        f'base_url = "{cheap.url}"\nseed = 7\n'
    )
    result = rbg("audit", path, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert strong.requests and cheap.requests
    assert all("Is it right?" in json.dumps(b) for b in strong.requests + cheap.requests)
    # Each repeat is its own sample on both profiles: seeds move with the repeat.
    assert sorted({b["seed"] for b in strong.requests}) == [100, 101]
    assert sorted({b["seed"] for b in cheap.requests}) == [7, 8]
    runs = [json.loads(line) for line in (tmp_path / "out" / "runs.jsonl").read_text().splitlines()]
    profiles = {name: j["response"]["profile"] for name, j in runs[0]["trace"]["criteria"].items()}
    assert profiles == {"strong_says": "strong", "cheap_says": None}
    assert report(tmp_path / "out")["operators"][0]["status"] == "run"


def test_an_audited_judge_naming_a_missing_profile_stops_before_any_call(rbg, tmp_path, items_file, scripted):
    server = scripted(lambda role, body: json.dumps({"reason": "x", "answer": True}))
    (tmp_path / "judge.rbg").write_text(TWO_JUDGES)
    path = tmp_path / "s.toml"
    path.write_text(
        f'items = "{items_file}"\nrepeats = 1\noperators = ["typo_noise"]\n[judge]\ngraph = "judge.rbg"\n'
        f'base_url = "{server.url}"\n'
    )
    result = rbg("audit", path, "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert "judge.rbg:3:" in result.output and "model profile `strong`" in result.output
    assert "Traceback" not in result.output
    assert server.requests == []
