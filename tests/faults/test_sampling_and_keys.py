"""Smaller holes of the campaign (issue 25, item 16): a sampling seed or
max_tokens no server accepts is refused where it is written (a
`rubriclang.toml` profile's line, or the option), one set of bounds for
the config, the command line and the audit suite; and a JSON object
with one key given twice (which JSON readers resolve differently, so one
value would be lost unseen) is refused at its file:line, in items, value
tables, compile specs and JSON sources."""

from __future__ import annotations

import json

import pytest
from conftest import GOOD

from faults.run_fixtures import assert_clean_error, item, rbg, setup
from rubriclang.config import MAX_SEED, MAX_TOKENS

PROFILE_GRAPH = GOOD.replace('question = "How correct is the response?"', 'question = "Correct?"\n  model = "big"')


@pytest.mark.parametrize(
    "line, value",
    [
        ("max_tokens", MAX_TOKENS + 1),
        ("max_tokens", 0),
        ("max_tokens", 10**30),
        ("seed", -1),
        ("seed", MAX_SEED + 1),
        ("seed", 2**64),
    ],
)
def test_a_profile_seed_or_max_tokens_out_of_bounds_is_an_error_at_its_line(tmp_path, line, value):
    (tmp_path / "rubriclang.toml").write_text(
        f'[models.big]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n{line} = {value}\n', encoding="utf-8"
    )
    (tmp_path / "g.rbg").write_text(PROFILE_GRAPH, encoding="utf-8")
    (tmp_path / "x").mkdir()
    _, items = setup(tmp_path / "x")
    r = rbg("run", tmp_path / "g.rbg", items, "--out", tmp_path / "t.jsonl", "--estimate")
    assert_clean_error(r, "rubriclang.toml:4")
    assert line in r.output


@pytest.mark.parametrize("value", [str(MAX_SEED), "0"])
def test_a_profile_seed_within_bounds_is_accepted(tmp_path, value):
    (tmp_path / "rubriclang.toml").write_text(
        f'[models.big]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\nseed = {value}\n', encoding="utf-8"
    )
    (tmp_path / "g.rbg").write_text(PROFILE_GRAPH, encoding="utf-8")
    (tmp_path / "x").mkdir()
    _, items = setup(tmp_path / "x")
    r = rbg("run", tmp_path / "g.rbg", items, "--out", tmp_path / "t.jsonl", "--estimate")
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize(
    "option, value",
    [("--seed", "-1"), ("--seed", str(MAX_SEED + 1)), ("--max-tokens", "0"), ("--max-tokens", str(MAX_TOKENS + 1))],
)
@pytest.mark.parametrize("command", ["run", "batch export", "compile"])
def test_a_seed_or_max_tokens_option_out_of_bounds_is_a_usage_error(tmp_path, command, option, value):
    _g, items = setup(tmp_path)
    llm = tmp_path / "llm.rbg"
    llm.write_text(GOOD, encoding="utf-8")
    args = {
        "run": ("run", llm, items, "--out", tmp_path / "t.jsonl", "--base-url", "http://127.0.0.1:9/v1"),
        "batch export": ("batch", "export", llm, items, "-o", tmp_path / "r.jsonl", "--model", "m"),
        "compile": ("compile", tmp_path / "spec.toml", "-o", tmp_path / "c.rbg", "--base-url", "http://127.0.0.1:9/v1"),
    }[command]
    r = rbg(*args, option, value)
    assert r.exit_code == 2, r.output
    assert option in r.output and "is not in the range" in r.output, r.output
    assert not any(p.name in ("t.jsonl", "r.jsonl", "c.rbg") for p in tmp_path.iterdir())


# -- a key given twice -------------------------------------------------------------


def _twice(row: dict, key: str, value) -> str:
    """`row` as a JSON line with `key` given a second time."""
    text = json.dumps(row)
    return text[:-1] + f", {json.dumps(key)}: {json.dumps(value)}}}"


def test_an_item_with_a_key_twice_is_refused_at_its_line_by_run_and_eval(tmp_path):
    g, items = setup(tmp_path)
    lines = items.read_text("utf-8").splitlines()
    lines[2] = _twice(item(2), "response", "the other answer")
    items.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for r in (rbg("run", g, items, "--out", tmp_path / "t.jsonl"), rbg("eval", g, items)):
        assert_clean_error(r, f"{items}:3: malformed JSON: the key `response` is given twice in one object")
    assert not (tmp_path / "t.jsonl").exists() or (tmp_path / "t.jsonl").read_text("utf-8").count("\n") == 2


def test_a_nested_key_twice_is_refused_too(tmp_path):
    g, items = setup(tmp_path)
    row = item(0)
    text = json.dumps(row).replace('"annotations": {"q": 1}', '"annotations": {"q": 1, "q": 5}')
    assert '"q": 5' in text
    items.write_text(text + "\n", encoding="utf-8")
    assert_clean_error(rbg("run", g, items, "--out", tmp_path / "t.jsonl"), f"{items}:1:")


def test_a_value_table_row_with_a_key_twice_is_refused(tmp_path):
    g, items = setup(tmp_path)
    table = tmp_path / "recorded.jsonl"
    table.write_text(_twice({"item": "i0", "key": "q", "value": 2}, "value", 4) + "\n", encoding="utf-8")
    r = rbg("run", g, items, "--out", tmp_path / "t.jsonl", "--recorded", table)
    assert_clean_error(r, f"{table}:1: malformed JSON: the key `value` is given twice")


def test_a_json_source_record_with_a_key_twice_is_refused_by_items_convert(tmp_path):
    src = tmp_path / "data.json"
    src.write_text('[\n  {"id": "a", "input": "x", "response": "y"},\n  {"id": "b", "id": "c", "input": "x"}\n]\n')
    r = rbg("items", "convert", src, "-o", tmp_path / "items.jsonl")
    assert_clean_error(r, f"{src}:3: malformed record: the key `id` is given twice")
    assert not (tmp_path / "items.jsonl").exists()


def test_a_compile_spec_line_with_a_key_twice_is_refused(tmp_path):
    specs = tmp_path / "specs.jsonl"
    specs.write_text(_twice({"id": "s1", "rubric": {"name": "a", "text": "b"}}, "id", "s2") + "\n")
    r = rbg("compile", specs, "--out-dir", tmp_path / "g", "--base-url", "http://127.0.0.1:9/v1", "--model", "m")
    assert_clean_error(r, f"{specs}:1: malformed spec line: the key `id` is given twice")
