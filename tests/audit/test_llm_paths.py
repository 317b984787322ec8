"""The LLM paths of an audit against a scripted loopback server: generated
and validated variants (accept, reject, unavailable), an LLM judge's
repeats and cache, judge-side patches, the planner and the summary."""

from __future__ import annotations

import json
import re

import jsonschema

from rubriclang.audit.suite import load_suite

from .helpers import GSM8K_JUDGE, REPO, report, role_of, user_text

SENTINEL = "sk-audit-sentinel-7f3a9"

LLM_JUDGE = """\
rubric llm_verifier { version = 1 }
contract { scale = bool }
criterion correct: bool = llm.check {
  question = "Is the response's final answer the reference's?"
  with_reference = true
}
sink correct
readout pointwise { output = bool }
"""


def _tag(text: str, tag: str) -> str:
    m = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.DOTALL)
    assert m, text
    return m.group(1)


def rewriter(validate=lambda rewrite: "accept", unchanged: bool = False):
    """An answer function: the generator prefixes texts with "Well, "; the
    validator decides with `validate(rewrite text)`."""

    def answer(role, body):
        text = user_text(body)
        if role == "generator":
            if "<template>" in text:
                t = _tag(text, "template")
                return json.dumps(
                    {"template": t if unchanged else t.replace("## user\n", "## user\nPlease check: ", 1)}
                )
            r = _tag(text, "response")
            return json.dumps({"response": r if unchanged else "Well, " + r})
        if role == "validator":
            verdict = validate(_tag(text, "rewrite"))
            return json.dumps({"reason": f"scripted {verdict}", "verdict": verdict})
        raise AssertionError(f"unexpected {role} call")

    return answer


def _tables(generator: str, validator: str) -> str:
    return (
        f'[generator]\nbase_url = "{generator}"\nmax_retries = 0\n[validator]\nbase_url = "{validator}"\n'
        "max_retries = 0\ntimeout = 5\n"
    )


def test_llm_variants_are_validated_and_rejected_ones_excluded(rbg, suite, scripted, tmp_path):
    server = scripted(rewriter(validate=lambda t: "reject" if "Janet" in t else "accept"))
    path = suite('repeats = 1\noperators = ["tone_shift"]\n' + _tables(server.url, server.url))
    result = rbg("audit", path, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    r = report(tmp_path / "out")
    op = r["operators"][0]
    assert op["variants"] == {"generated": 12, "accepted": 9, "rejected": 3, "unavailable": 0, "failed": 0}
    log = [json.loads(line) for line in (tmp_path / "out" / "validation.jsonl").read_text().splitlines()]
    assert sorted(e["item"] for e in log if e["verdict"] == "reject") == [
        "gsm8k-0000-bare",
        "gsm8k-0000-early",
        "gsm8k-0000-full",
    ]
    assert all(e["by"] == "llm" and e["model"] == "scripted" and e["reason"].startswith("scripted") for e in log)
    # "Well, " changes no number: the verifier does not move.
    assert r["metrics"]["invariant"]["variants"] == 9 and r["flips"] == []
    assert len(server.calls("generator")) == 12 and len(server.calls("validator")) == 12


def test_an_unreachable_validator_makes_variants_unavailable_not_rejected(
    rbg, suite, scripted, tmp_path, unreachable_url
):
    server = scripted(rewriter())
    path = suite('repeats = 1\noperators = ["tone_shift"]\n' + _tables(server.url, f"{unreachable_url}/v1"))
    assert rbg("audit", path, "--out", tmp_path / "out").exit_code == 0
    r = report(tmp_path / "out")
    assert r["operators"][0]["variants"] == {
        "generated": 12,
        "accepted": 0,
        "rejected": 0,
        "unavailable": 12,
        "failed": 0,
    }
    assert r["metrics"]["invariant"] is None
    assert any("could not be validated" in n for n in r["notes"])
    log = [json.loads(line) for line in (tmp_path / "out" / "validation.jsonl").read_text().splitlines()]
    assert {e["verdict"] for e in log} == {"unavailable"} and all("unreachable" in e["reason"] for e in log)


def test_a_rewrite_that_changes_nothing_is_a_failed_generation(rbg, suite, scripted, tmp_path):
    server = scripted(rewriter(unchanged=True))
    path = suite('repeats = 1\noperators = ["tone_shift"]\n' + _tables(server.url, server.url))
    assert rbg("audit", path, "--out", tmp_path / "out").exit_code == 0
    assert report(tmp_path / "out")["operators"][0]["variants"]["failed"] == 12
    assert server.calls("validator") == []


def test_a_custom_operator_is_generated_validated_and_scored(rbg, suite, scripted, tmp_path):
    def answer(role, body):
        if role == "generator":
            assert "Replace the final number" in user_text(body)
            response = _tag(user_text(body), "response")
            return json.dumps({"response": re.sub(r"\d+(?=\D*$)", "7777", response)})
        return json.dumps({"reason": "it changed the final number", "verdict": "accept"})

    server = scripted(answer)
    custom = (
        '[[custom]]\nname = "wrong_number"\nsurface = "output"\nrelation = "directional"\n'
        'instruction = "Replace the final number of the response with another."\n'
    )
    path = suite("repeats = 1\noperators = []\n" + _tables(server.url, server.url) + custom)
    assert rbg("audit", path, "--out", tmp_path / "out").exit_code == 0
    r = report(tmp_path / "out")
    assert [op["name"] for op in r["operators"]] == ["wrong_number"]
    d = r["by_operator"]["wrong_number"]["directional"]
    # Every correct answer (full and bare) is eligible, and caught.
    assert (d["eligible"], d["detected"]) == (8, 8)
    assert json.loads((tmp_path / "out" / "sealed.json").read_text())["operators"]["wrong_number"]["custom"] is True


def _llm_suite(tmp_path, items_file, url: str, body: str) -> str:
    (tmp_path / "judge.rbg").write_text(LLM_JUDGE)
    path = tmp_path / "llm.toml"
    path.write_text(
        f'items = "{items_file}"\nrepeats = 5\n{body}\n'
        f'[judge]\ngraph = "judge.rbg"\nbase_url = "{url}"\napi_key_env = "AUDIT_TEST_KEY"\ntemperature = 0.7\n'
        "seed = 10\nmax_retries = 0\n" + _tables(url, url)
    )
    return path


def test_an_llm_judge_samples_each_repeat_with_its_own_seed_and_reuses_the_cache(
    rbg, scripted, tmp_path, items_file, monkeypatch
):
    monkeypatch.setenv("AUDIT_TEST_KEY", SENTINEL)

    def answer(role, body):
        if role != "judge":
            return rewriter()(role, body)
        text = user_text(body)
        paraphrased = "Please check:" in text
        # Seed 13 (repeat 3) is the judge's noise; the paraphrase turns every verdict.
        verdict = body["seed"] != 13 and not paraphrased
        return json.dumps({"reason": "scripted", "answer": verdict})

    server = scripted(answer)
    path = _llm_suite(tmp_path, items_file, server.url, 'operators = ["prompt_paraphrase"]')
    result = rbg("audit", path, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    r = report(tmp_path / "out")
    judged = server.calls("judge")
    assert sorted({b["seed"] for b in judged}) == [10, 11, 12, 13, 14]
    assert {b["temperature"] for b in judged} == {0.7}
    assert r["judge"]["backend"] == {"model": "scripted", "temperature": 0.7, "seed": 10}
    assert r["metrics"]["repeat_flip_rate"]["value"] == 0.2
    inv = r["metrics"]["invariant"]
    assert (inv["variants"], inv["flipped"]) == (12, 12)
    assert inv["excess_over_noise"]["value"] == 0.8  # all five repeats flip, against one in five
    flip = r["flips"][0]
    assert flip["changed"] == ["criteria"] and flip["generator"] == "llm"
    assert flip["original"]["criteria"]["correct"]["prompt"].startswith("<!--\nllm.check, version 2.")
    assert "## user\nPlease check: {{#input}}" in flip["perturbed"]["criteria"]["correct"]["prompt"]
    assert flip["localization"]["moved"] == [
        {"node": "correct", "kind": "criterion", "candidate": "response", "original": True, "perturbed": False}
    ]
    assert flip["localization"]["reached_sink"] is True
    assert r["by_criterion"]["correct"]["in_flips"] == 12

    # A rerun in a new folder asks the judge nothing: every call is cached.
    before = len(server.requests)
    assert rbg("audit", path, "--out", tmp_path / "again").exit_code == 0
    assert len(server.requests) == before
    assert report(tmp_path / "again")["metrics"] == r["metrics"]

    # The judge's key went to the server with the judge's calls, and nowhere
    # else (the generator and validator name no key variable that is set).
    sent = {h for b, h in zip(server.requests, server.headers, strict=True) if role_of(b) == "judge"}
    assert sent == {f"Bearer {SENTINEL}"}
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written and not [p for p in written if SENTINEL.encode() in p.read_bytes()]


def test_the_planner_proposes_operators_into_an_editable_suite(rbg, scripted, tmp_path, items_file):
    proposal = {"operators": [
        {"name": "partial_completion", "rationale": "the verifier reads only the final number"},
        {"name": "bogus_op", "rationale": "x"},
        {"name": "position_swap", "rationale": "y"},
    ]}  # fmt: skip
    server = scripted(lambda role, body: json.dumps(proposal))
    out = tmp_path / "planned.toml"
    from .helpers import GSM8K_JUDGE

    result = rbg("audit", "plan", GSM8K_JUDGE, items_file, "-o", out, "--base-url", server.url)
    assert result.exit_code == 0, result.output
    assert "nothing was run" in result.output
    assert "dropped `bogus_op`: not a catalog operator" in result.output
    assert "dropped `position_swap`: it needs pairwise items" in result.output
    assert load_suite(str(out)).operators == ("partial_completion",)
    assert "# the verifier reads only the final number" in out.read_text()
    assert [role_of(b) for b in server.requests] == ["planner"]
    assert not (tmp_path / "out").exists()


def test_summary_is_written_by_the_generator_model_and_marked_as_such(rbg, suite, scripted, tmp_path):
    entry = {
        "text": "The verifier caught half of the cuts.",
        "figures": ["by_operator.partial_completion.directional.detection_rate"],
        "items": ["gsm8k-0000-full/partial_completion"],
    }
    server = scripted(
        lambda role, body: json.dumps({"findings": [entry], "actions": [], "limitations": [], "follow_ups": []})
    )
    path = suite(f'repeats = 1\noperators = ["partial_completion"]\n[generator]\nbase_url = "{server.url}"\n')
    result = rbg("audit", path, "--out", tmp_path / "out", "--summary")
    assert result.exit_code == 0, result.output
    s = report(tmp_path / "out")["summary"]
    assert (s["written_by"], s["model"], s["findings"], s["dropped"]) == ("llm", "scripted", [entry], [])
    assert "Summary (written by an LLM" in result.output


def test_a_summary_entry_pointing_at_a_figure_or_item_the_report_lacks_is_dropped_and_noted(
    rbg, suite, scripted, tmp_path
):
    good = {"text": "Half of the cuts were caught.", "figures": ["metrics.directional.detection_rate"], "items": []}
    bad_figure = {"text": "Typos flipped 40%.", "figures": ["by_operator.typo_noise.invariant.flip_rate"], "items": []}
    bad_item = {"text": "An invented item.", "figures": ["metrics.repeat_flip_rate"], "items": ["gsm8k-9999-full"]}
    answer = {"findings": [good, bad_figure], "actions": [bad_item], "limitations": [], "follow_ups": []}
    server = scripted(lambda role, body: json.dumps(answer))
    path = suite(f'repeats = 1\noperators = ["partial_completion"]\n[summarizer]\nbase_url = "{server.url}"\n')
    result = rbg("audit", path, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    r = report(tmp_path / "out")
    s = r["summary"]
    assert (s["findings"], s["actions"]) == ([good], [])
    assert s["dropped"] == [
        'findings[1]: points at "by_operator.typo_noise.invariant.flip_rate", which the report does not hold',
        'actions[0]: points at "gsm8k-9999-full", which the report does not hold',
    ]
    # The [summarizer] table is the only model asked.
    assert [role_of(b) for b in server.requests] == ["summary"]
    jsonschema.validate(r, json.loads((REPO / "rubriclang" / "audit" / "report.schema.json").read_text()))
    assert "dropped: findings[1]" in (tmp_path / "out" / "report.txt").read_text()


def test_a_summary_model_whose_every_entry_is_invalid_gives_the_computed_summary(rbg, suite, scripted, tmp_path):
    bad = {"text": "Typos flipped 40%.", "figures": ["by_operator.typo_noise.invariant.flip_rate"], "items": []}
    answer = {"findings": [bad], "actions": [], "limitations": [], "follow_ups": []}
    server = scripted(lambda role, body: json.dumps(answer))
    path = suite(f'repeats = 1\noperators = ["partial_completion"]\n[summarizer]\nbase_url = "{server.url}"\n')
    assert rbg("audit", path, "--out", tmp_path / "out").exit_code == 0
    s = report(tmp_path / "out")["summary"]
    # Not an empty summary: the one computed from the figures, saying why, with what was dropped.
    assert s["written_by"] == "rules" and "gave no entry that points at figures of this report" in s["error"]
    assert s["dropped"] and s["findings"] and s["findings"][0]["text"].startswith("No finding. Checked:")
    text = (tmp_path / "out" / "report.txt").read_text()
    assert "finding: No finding. Checked:" in text
    assert "No finding. Checked:" in (tmp_path / "out" / "report.html").read_text()


def test_an_unreachable_judge_stops_the_audit_before_any_judgment(rbg, tmp_path, items_file, unreachable_url):
    path = _llm_suite(tmp_path, items_file, f"{unreachable_url}/v1", 'operators = ["typo_noise"]')
    result = rbg("audit", path, "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert "the judge's LLM backend" in result.output and "cannot reach" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "out" / "runs.jsonl").exists()


def test_suggest_writes_the_valid_custom_operators_as_tables_a_suite_loads(rbg, suite, scripted, tmp_path, items_file):
    good = {
        "name": "unit_swap",
        "surface": "output",
        "relation": "directional",
        "instruction": "Change the final answer's unit \"\\n[judge]",
        "rationale": "The verifier\nreads the number.",
    }
    answer = {
        "operators": [
            good,
            {**good, "name": "typo_noise"},
            {**good, "name": "bad_surface", "surface": "rubric"},
            {**good, "name": "Bad Name"},
            {"name": "no_fields"},
        ]
    }
    server = scripted(lambda role, body: json.dumps(answer))
    out = tmp_path / "custom.toml"
    result = rbg("audit", "suggest", GSM8K_JUDGE, items_file, "--out", out, "--base-url", server.url)
    assert result.exit_code == 0, result.output
    assert "1 custom operator(s) proposed" in result.output
    assert "dropped `typo_noise`: already a catalog operator" in result.output
    assert "dropped `bad_surface`: surface `rubric` is not one of" in result.output
    assert "dropped `Bad Name`: not a valid operator name" in result.output
    assert "dropped `no_fields`: not an entry with" in result.output
    # The generator was shown the judge's criteria and items.
    shown = user_text(server.requests[0])
    assert "criterion correct" in shown and "task:" in shown
    # The tables are a valid suite's [[custom]] entries, the text kept exactly.
    path = suite(out.read_text())
    loaded = load_suite(str(path))
    assert list(loaded.custom) == ["unit_swap"]
    assert loaded.custom["unit_swap"].relation == "directional"
    assert "# The verifier reads the number." in out.read_text()
    assert rbg("audit", "suggest", GSM8K_JUDGE, items_file, "--out", out, "--base-url", server.url).exit_code == 2
