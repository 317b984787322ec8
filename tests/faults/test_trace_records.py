"""A trace line that is JSON but not a well-formed trace record (a field
missing, a null where a judgment belongs, an item traced twice) is a clear
error naming `file:line` in every reader of traces: replay, eval --traces,
diff --traces, and a resumed run (which then leaves the file untouched)."""

from __future__ import annotations

import json

import pytest

from faults.run_fixtures import assert_every_trace_reader_refuses, rbg, traces
from rubriclang.canonical import canonical_json
from rubriclang.interp.trace import RECORD_START


def _drop(field):
    return lambda r: r.pop(field)


def _set(path, value):
    def change(r):
        *parents, last = path.split(".")
        for p in parents:
            r = r[p]
        r[last] = value

    return change


BROKEN = {
    "no graph": _drop("graph"),
    "no item": _drop("item"),
    "no criteria": _drop("criteria"),
    "no readout": _drop("readout"),
    "no candidates": _drop("candidates"),
    "no mode": _drop("mode"),
    "null graph": _set("graph", None),
    "null item": _set("item", None),
    "numeric item": _set("item", 5),
    "null criteria": _set("criteria", None),
    "null readout": _set("readout", None),
    "null candidates": _set("candidates", None),
    "empty candidates": _set("candidates", []),
    "three candidates": _set("candidates", ["a", "b", "c"]),
    "numeric candidate": _set("candidates", [1]),
    "null judgments of a criterion": _set("criteria.q", None),
    "a list of judgments": _set("criteria.q", []),
    "null judgment": _set("criteria.q.response", None),
    "a judgment with no value": _set("criteria.q.response", {"error": None}),
    "a numeric judgment error": _set("criteria.q.response.error", 3),
    "no judgment for the candidate": _set("criteria.q", {"other": {"value": 1}}),
    "no graph hash": _set("graph", {"name": "faults", "criteria": {}}),
    "null graph criteria": _set("graph.criteria", None),
    "unknown mode": _set("mode", "listwise"),
    "unknown readout status": _set("readout.status", "maybe"),
    "null readout status": _set("readout.status", None),
    "another schema": _set("schema", "rubriclang.trace/0"),
    "a list, not an object": lambda r: None,
}


def _break(out, name):
    lines = out.read_text(encoding="utf-8").splitlines()
    rec = json.loads(lines[2])
    if name == "a list, not an object":
        lines[2] = "[1, 2]"
    else:
        BROKEN[name](rec)
        lines[2] = canonical_json(rec)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize("name", list(BROKEN))
def test_a_malformed_trace_record_is_a_clear_error_in_every_reader(tmp_path, name):
    g, items, out = traces(tmp_path)
    _break(out, name)
    where = f"{out}:3"
    assert_every_trace_reader_refuses(g, items, out, where)


@pytest.mark.parametrize(
    "name, message",
    [
        ("no readout", "the trace record has no `readout`"),
        ("null judgment", "`criteria.q.response` must be a judgment"),
    ],
)
def test_the_message_names_the_bad_field(tmp_path, name, message):
    g, _, out = traces(tmp_path)
    _break(out, name)
    assert f"{out}:3: {message}" in rbg("replay", g, out).output


def test_an_item_traced_twice_is_refused_by_every_reader(tmp_path):
    g, items, out = traces(tmp_path)
    lines = out.read_bytes().splitlines(keepends=True)
    out.write_bytes(b"".join([*lines, lines[1]]))
    where = f"{out}:7: item `i1` is traced twice (first at {out}:2)"
    assert_every_trace_reader_refuses(g, items, out, where)


def test_well_formed_traces_still_replay_evaluate_and_diff(tmp_path):
    g, items, out = traces(tmp_path, failing={2})
    assert rbg("replay", g, out).exit_code == 0
    r = rbg("eval", g, items, "--traces", out, "--format", "json")
    assert r.exit_code == 0, r.output
    assert rbg("diff", g, g, "--traces", out).exit_code == 0


def test_every_record_starts_as_a_torn_line_is_recognised(tmp_path):
    # Resuming cuts a torn last line only when it starts like a record: this
    # must be how every record starts (canonical JSON sorts the keys).
    _, _, out = traces(tmp_path, failing={1})
    for line in out.read_bytes().splitlines():
        assert line.startswith(RECORD_START)
