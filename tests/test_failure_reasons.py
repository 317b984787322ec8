"""A run's summary says why items failed: the reasons grouped without their
item-specific parts, most frequent first, each with its count and an item
that failed so, in text and JSON; a malformed items file gets its error
alone, not a summary of nothing judged."""

from __future__ import annotations

import json

from click.testing import CliRunner
from conftest import GOOD
from llm.conftest import fault_server  # noqa: F401 (a fixture)
from llm.fault_server import reply

from rubriclang.cli.failures import FailureReasons, reason_of
from rubriclang.cli.main import cli
from rubriclang.interp.readout import Decision

GSM8K = "examples/gsm8k/rubric.rbg"


def rbg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def items_file(tmp_path, n: int):
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps({"id": f"i{k}", "prompt": "Q?", "response": f"a{k}"}) + "\n" for k in range(n)))
    return path


def test_a_reason_is_grouped_without_the_numbers_and_quotes_of_one_reply_but_keeps_rubric_names():
    assert reason_of("`score`: 7 lies outside `ordinal[1, 5]`") == "`score`: N lies outside `ordinal[1, 5]`"
    assert reason_of("'seven' is not a number") == "'…' is not a number"
    assert reason_of('HTTP 503 after 2 attempts: "busy"') == "HTTP N after N attempts: '…'"


def test_the_summary_lists_the_most_frequent_reasons_first_whatever_the_order_they_came_in():
    failures = FailureReasons()
    for item, error in [("b", "'x' is not a number"), ("c", "timeout"), ("a", "'y' is not a number")]:
        failures.add(item, Decision("error", error=error))
    failures.add("d", Decision("ok", decision=3))
    assert failures.to_json() == [
        {"reason": "'…' is not a number", "count": 2, "example": {"item": "a", "error": "'y' is not a number"}},
        {"reason": "timeout", "count": 1, "example": {"item": "c", "error": "timeout"}},
    ]
    for k in range(7):
        failures.add(f"z{k}", Decision("error", error=f"reason `{k}`"))
    assert len(failures.to_json()) == 5 and failures.others() == 4  # 9 reasons, once each but the first


def test_a_run_whose_model_answers_out_of_range_says_why_with_a_count_and_an_item(fault_server, tmp_path):
    server = fault_server()
    server.script(*[reply(f"Score: {7 + k % 3}") for k in range(60)])
    g = tmp_path / "g.rbg"
    g.write_text(GOOD)
    items = items_file(tmp_path, 3)
    args = ["run", g, items, "--base-url", server.url, "--model", "judge", "--no-cache", "--concurrency", "1"]
    text = rbg(*args, "--out", tmp_path / "t.jsonl")
    assert text.exit_code == 1, text.output
    lines = text.output.splitlines()
    at = lines.index("  why items failed (the traces hold every reason):")
    assert lines[at + 1].startswith("    3 x ") and lines[at + 1].endswith("(e.g. item i0)")
    assert "lies outside `ordinal[1, 5]`" in lines[at + 1] and "Score: 8" not in lines[at + 1]
    server.script(*[reply(f"Score: {7 + k % 3}") for k in range(60)])
    summary = json.loads(rbg(*args, "--out", tmp_path / "j.jsonl", "--format", "json").stdout)
    (failure,) = summary["failures"]
    assert failure["count"] == 3 and failure["example"]["item"] == "i0" and summary["failures_other"] == 0
    assert "lies outside" in failure["example"]["error"]


def test_a_clean_run_lists_no_failures(tmp_path):
    result = rbg("run", GSM8K, "examples/gsm8k/items.jsonl", "--out", tmp_path / "t.jsonl", "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["failures"] == []


def test_a_malformed_items_file_prints_its_error_and_no_summary(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text("{not json\n")
    result = rbg("run", GSM8K, items, "--out", tmp_path / "t.jsonl")
    assert result.exit_code == 2
    assert f"{items}:1: malformed JSON" in result.output
    assert "Judged" not in result.output and "traces:" not in result.output
