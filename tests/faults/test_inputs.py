"""Bad bytes and bad values in every JSON Lines input (items, annotation and
recorded value tables, traces, an --out being resumed) are clear errors
naming `file:line`, exit 2, never a traceback, in every command that reads
them; items come from pipes as well as files; a byte order mark is fine."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from typing import Any

import pytest

from faults.run_fixtures import (
    RBG,
    assert_clean_error,
    assert_every_trace_reader_refuses,
    item,
    rbg,
    rbg_process,
    setup,
    traces,
    write_jsonl,
)

# Each of these, anywhere in a line, makes the line unreadable.
BAD_VALUES = {
    "non-UTF-8 bytes": b'"caf\xe9"',
    "a lone surrogate": b'"\\ud800"',
    "a lone low surrogate": b'"x\\udc00y"',
    "NaN": b"NaN",
    "Infinity": b"Infinity",
    "-Infinity": b"-Infinity",
    "1e400": b"1e400",
    "-1e400": b"-1e400",
    "a 400-digit float": b"1" + b"0" * 400 + b".5",
    "1E+309": b"1E+309",
    "a long mantissa with a small exponent": b"9" * 250 + b"e60",
    "an integer of 5000 digits": b"7" * 5000,
    "arrays nested 5000 deep": b"[" * 5000 + b"]" * 5000,
    "objects nested 5000 deep": b'{"a":' * 5000 + b"1" + b"}" * 5000,
}
CASES = pytest.mark.parametrize("bad", list(BAD_VALUES.values()), ids=list(BAD_VALUES))


def _good_then_bad(path, good: bytes, bad: bytes):
    """A file whose line 1 is good and whose line 2 is bad."""
    path.write_bytes(good + b"\n" + bad + b"\n")
    return path


def _item_line(i: int, gold: bytes) -> bytes:
    return json.dumps(item(i)).encode()[:-1] + b', "extra": ' + gold + b"}"


@CASES
def test_a_bad_item_line_is_a_clear_error_in_run_and_eval(tmp_path, bad):
    g, _ = setup(tmp_path)
    items = _good_then_bad(tmp_path / "items.jsonl", _item_line(0, b"1"), _item_line(1, bad))
    out = tmp_path / "t.jsonl"
    assert_clean_error(rbg("run", g, items, "--out", out), f"{items}:2")
    # The item before the bad line is kept.
    assert [json.loads(x)["item"] for x in out.read_text().splitlines()] == ["i0"]
    assert_clean_error(rbg("eval", g, items), f"{items}:2")


@CASES
@pytest.mark.parametrize("option", ["--annotations", "--recorded"])
def test_a_bad_value_table_line_is_a_clear_error(tmp_path, bad, option):
    g, items = setup(tmp_path)
    table = _good_then_bad(
        tmp_path / "table.jsonl",
        b'{"item": "i0", "key": "q", "value": 2}',
        b'{"item": "i1", "key": "q", "value": ' + bad + b"}",
    )
    assert_clean_error(rbg("run", g, items, "--out", tmp_path / "t.jsonl", option, table), f"{table}:2")
    assert not (tmp_path / "t.jsonl").exists()
    assert_clean_error(rbg("eval", g, items, option, table), f"{table}:2")


def _bad_trace(tmp_path, bad: bytes):
    g, items, out = traces(tmp_path)
    lines = out.read_bytes().splitlines(keepends=True)
    assert b'"gold":2' in lines[1]
    lines[1] = lines[1].replace(b'"gold":2', b'"gold":' + bad)
    out.write_bytes(b"".join(lines))
    return g, items, out


@CASES
def test_a_bad_trace_line_is_a_clear_error_in_replay_eval_diff_and_resume(tmp_path, bad):
    g, items, out = _bad_trace(tmp_path, bad)
    where = f"{out}:2"
    assert_every_trace_reader_refuses(g, items, out, where)


def test_the_messages_say_what_is_wrong(tmp_path):
    g, _ = setup(tmp_path)
    expected = {
        b'"caf\xe9"': "not UTF-8 text (byte 0xe9",
        b'"\\ud800"': "a string holds an unpaired surrogate `\\ud800`",
        b"NaN": "malformed JSON: `NaN` is not a finite number",
        b"1e400": "malformed JSON: `1e400` is not a finite number",
        b"[" * 5000 + b"]" * 5000: "the value is nested more than 200 levels deep",
        b"7" * 5000: "malformed JSON: a number with too many digits",
    }
    for bad, message in expected.items():
        items = _good_then_bad(tmp_path / "items.jsonl", _item_line(0, b"1"), _item_line(1, bad))
        r = rbg("run", g, items, "--out", tmp_path / "t.jsonl")
        assert f"{items}:2: {message}" in r.output, r.output


def test_a_lone_surrogate_in_an_item_id_is_a_clear_error(tmp_path):
    g, _ = setup(tmp_path)
    items = tmp_path / "items.jsonl"
    items.write_text('{"id": "\\ud800", "input": "x", "response": "y"}\n', encoding="utf-8")
    out = tmp_path / "t.jsonl"
    assert_clean_error(rbg("run", g, items, "--out", out), f"{items}:1")
    assert out.read_bytes() == b""


def test_a_surrogate_pair_is_a_character_and_is_accepted(tmp_path):
    g, _ = setup(tmp_path)
    items = write_jsonl(tmp_path / "items.jsonl", [{**item(0), "id": "i\U0001f600"}])
    assert "\\ud83d\\ude00" in items.read_text()  # json.dumps escapes it as a pair
    out = tmp_path / "t.jsonl"
    r = rbg("run", g, items, "--out", out)
    assert r.exit_code == 0, r.output
    assert "\U0001f600" in out.read_text(encoding="utf-8")


def test_values_nested_a_little_are_still_read(tmp_path):
    g, _ = setup(tmp_path)
    deep: dict[str, Any] = {"a": 1}
    for _ in range(60):
        deep = {"b": [deep, "[[[{{{"]}
    items = write_jsonl(tmp_path / "items.jsonl", [{**item(0), "gold": 3, "extra": deep}])
    r = rbg("run", g, items, "--out", tmp_path / "t.jsonl")
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("field", ["reference", "input", "response", "rubric"])
@pytest.mark.parametrize("value", [5, 2.5, True, ["a"], {"a": 1}])
def test_a_text_field_that_is_not_a_string_is_an_error_naming_the_line_and_type(tmp_path, field, value):
    g, _ = setup(tmp_path)
    items = write_jsonl(tmp_path / "items.jsonl", [item(0), {**item(1), field: value}])
    r = rbg("run", g, items, "--out", tmp_path / "t.jsonl")
    assert_clean_error(r, f"{items}:2: `{field}` must be a string")
    assert "in quotes" in r.output


def test_a_null_reference_is_no_reference(tmp_path):
    g, _ = setup(tmp_path)
    items = write_jsonl(tmp_path / "items.jsonl", [{**item(0), "reference": None}])
    assert rbg("run", g, items, "--out", tmp_path / "t.jsonl").exit_code == 0


def test_a_byte_order_mark_is_accepted_in_items_tables_and_traces(tmp_path):
    g, _, out = traces(tmp_path)
    bom = b"\xef\xbb\xbf"
    items = tmp_path / "bom_items.jsonl"
    items.write_bytes(bom + json.dumps(item(0, annotated=False)).encode() + b"\n")
    table = tmp_path / "bom_table.jsonl"
    table.write_bytes(bom + b'{"item": "i0", "key": "q", "value": 4}\n')
    bom_out = tmp_path / "bom_t.jsonl"
    r = rbg("run", g, items, "--out", bom_out, "--annotations", table)
    assert r.exit_code == 0, r.output
    assert json.loads(bom_out.read_text())["readout"]["decision"] == 4
    out.write_bytes(bom + out.read_bytes())
    assert rbg("replay", g, out).exit_code == 0
    # A resumed --out with a mark: every item is found, nothing judged again.
    r = rbg("run", g, tmp_path / "items.jsonl", "--out", out, "--format", "json")
    assert json.loads(r.stdout)["resumed"] == 6 and json.loads(r.stdout)["judged"] == 0


def test_a_byte_order_mark_after_the_first_line_is_an_error(tmp_path):
    g, _ = setup(tmp_path)
    items = tmp_path / "items.jsonl"
    items.write_bytes(json.dumps(item(0)).encode() + b"\n\xef\xbb\xbf" + json.dumps(item(1)).encode() + b"\n")
    assert_clean_error(rbg("run", g, items, "--out", tmp_path / "t.jsonl"), f"{items}:2")


def test_duplicate_item_ids_are_refused_with_both_lines(tmp_path):
    g, _ = setup(tmp_path)
    items = write_jsonl(tmp_path / "items.jsonl", [item(0), item(1), {**item(0), "id": "i0"}])
    assert_clean_error(rbg("run", g, items, "--out", tmp_path / "t.jsonl"), f"{items}:3: duplicate item id `i0`")
    assert_clean_error(rbg("eval", g, items), f"{items}:3: duplicate item id `i0`")
    # An integer id and its string are the same id.
    items = write_jsonl(tmp_path / "items2.jsonl", [{**item(0), "id": 7}, {**item(1), "id": "7"}])
    assert_clean_error(rbg("run", g, items, "--out", tmp_path / "t2.jsonl"), f"{items}:2: duplicate item id `7`")


def test_a_line_longer_than_the_limit_is_an_error_not_a_memory_blowup(tmp_path, monkeypatch):
    import rubriclang.jsonl

    monkeypatch.setattr(rubriclang.jsonl, "MAX_LINE_BYTES", 1000)
    g, _ = setup(tmp_path)
    items = tmp_path / "items.jsonl"
    items.write_bytes(json.dumps(item(0)).encode() + b"\n" + b"x" * 5000)
    assert_clean_error(rbg("run", g, items, "--out", tmp_path / "t.jsonl"), f"{items}:2: the line is longer than")


# --- items from pipes -------------------------------------------------------


def _expected_traces(tmp_path, items) -> bytes:
    ref = tmp_path / "from_file.jsonl"
    assert rbg_process("run", tmp_path / "g.rbg", items, "--out", ref).returncode == 0
    return ref.read_bytes()


def test_items_from_standard_input_are_all_judged(tmp_path):
    g, items = setup(tmp_path)
    out = tmp_path / "t.jsonl"
    r = rbg_process("run", g, "/dev/stdin", "--out", out, input=items.read_text())  # a pipe
    assert r.returncode == 0, r.stderr
    assert "Judged 6 items" in r.stdout
    assert out.read_bytes() == _expected_traces(tmp_path, items)


def test_items_from_a_process_substitution_are_all_judged(tmp_path):
    g, items = setup(tmp_path)
    out = tmp_path / "t.jsonl"
    script = f'"{RBG}" run "{g}" <(cat "{items}") --out "{out}" --format json'
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["judged"] == 6
    assert out.read_bytes() == _expected_traces(tmp_path, items)


def test_items_from_a_named_pipe_are_all_judged_and_evaluated(tmp_path):
    g, items = setup(tmp_path)
    fifo = tmp_path / "items.fifo"

    def feed():
        with open(fifo, "wb") as fh:
            fh.write(items.read_bytes())

    for command in (
        ["run", g, fifo, "--out", tmp_path / "t.jsonl", "--format", "json"],
        ["eval", g, fifo, "--format", "json"],
    ):
        os.mkfifo(fifo)
        writer = threading.Thread(target=feed)
        writer.start()
        r = rbg_process(*command)
        writer.join()
        fifo.unlink()
        assert r.returncode == 0, r.stderr
        summary = json.loads(r.stdout)
        assert summary.get("judged", summary.get("items_with_gold")) == 6, summary


# --- value-table rows for items the run does not have -----------------------


def test_table_rows_for_unknown_items_are_a_warning_with_counts(tmp_path):
    g, items = setup(tmp_path, failing={0})
    table = write_jsonl(
        tmp_path / "ann.jsonl",
        [
            {"item": "i0", "key": "q", "value": 3},
            {"item": "nope", "key": "q", "value": 3},
            {"item": "nope", "key": "r", "value": 3},
            {"item": "also_nope", "key": "q", "value": 3},
        ],
    )
    r = rbg("run", g, items, "--out", tmp_path / "t.jsonl", "--annotations", table)
    assert r.exit_code == 0, r.output
    assert (
        f"warning: 3 row(s) of `{table}` (--annotations) name 2 item(s) that `{items}` does not have, first at "
        f"{table}:2" in r.stderr
    )
    r = rbg("eval", g, items, "--recorded", table)
    assert "warning: 3 row(s)" in r.stderr and "(--recorded)" in r.stderr
    # Known items only: no warning.
    known = write_jsonl(tmp_path / "known.jsonl", [{"item": "i0", "key": "q", "value": 3}])
    r = rbg("run", g, items, "--out", tmp_path / "t2.jsonl", "--annotations", known)
    assert "warning" not in r.stderr


def test_resumed_run_does_not_warn_about_items_it_skipped(tmp_path):
    g, items = setup(tmp_path, failing={0})
    table = write_jsonl(tmp_path / "ann.jsonl", [{"item": "i0", "key": "q", "value": 3}])
    out = tmp_path / "t.jsonl"
    assert rbg("run", g, items, "--out", out, "--annotations", table).exit_code == 0
    r = rbg("run", g, items, "--out", out, "--annotations", table)
    assert r.exit_code == 0 and "warning" not in r.stderr, r.output


def test_a_graph_that_is_not_utf8_is_a_clear_error_naming_its_line(tmp_path):
    g, items, out = traces(tmp_path)
    bad = tmp_path / "bad.rbg"
    bad.write_bytes(g.read_bytes() + b"# caf\xe9\n")
    where = f"{bad}:6: not UTF-8 text (byte 0xe9 at column 6)"
    assert_clean_error(rbg("run", bad, items, "--out", tmp_path / "new.jsonl"), where)
    assert_clean_error(rbg("replay", bad, out), where)
    assert_clean_error(rbg("eval", bad, items), where)
    assert_clean_error(rbg("diff", g, bad), where)
    assert_clean_error(rbg("check", bad), where)


@pytest.mark.parametrize("content", [b"", b"\n\n", b"\xef\xbb\xbf\n"])
def test_items_with_no_item_are_an_error_not_a_finished_run(tmp_path, content):
    g, _ = setup(tmp_path)
    items = tmp_path / "empty.jsonl"
    items.write_bytes(content)
    assert_clean_error(rbg("run", g, items, "--out", tmp_path / "t.jsonl"), f"`{items}` holds no items")


def test_an_empty_pipe_of_items_is_an_error_not_a_finished_run(tmp_path):
    g, _ = setup(tmp_path)
    script = f'"{RBG}" run "{g}" <(false) --out "{tmp_path / "t.jsonl"}"'
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "holds no items" in r.stderr, r.stderr


@pytest.mark.parametrize("option", ["--temperature", "--timeout", "--top-p", "--deadline"])
@pytest.mark.parametrize("value", ["nan", "inf"])
def test_non_finite_numbers_on_the_command_line_are_refused(tmp_path, option, value):
    from click.testing import CliRunner

    from rubriclang.cli.main import cli

    r = CliRunner().invoke(
        cli,
        ["run", str(tmp_path / "g.rbg"), str(tmp_path / "i.jsonl"), "--out", str(tmp_path / "t.jsonl"), option, value],
    )
    assert r.exit_code == 2 and ("not a finite number" in r.output or "range" in r.output), r.output
