"""`rbg items convert`: JSON, JSON Lines, CSV and TSV into items; field and
label maps; several annotators; checks against a graph; clear errors."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from rubriclang.cli.main import cli
from rubriclang.interp.items import read_items

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"

PAIRWISE = """rubric pref { version = 1 }
contract { scale = score[1, 5] }
criterion q: ordinal[1, 5] = recorded.value { key = "q" }
sink q
readout pairwise { resolve = tie }
"""

BOOL = """rubric ok { version = 1 }
contract { scale = bool }
criterion good: bool = recorded.value { key = "good" }
sink good
readout pointwise { output = bool }
"""


def _convert(tmp_path, name, text, *args):
    src = tmp_path / name
    src.write_text(text)
    out = tmp_path / "items.jsonl"
    r = CliRunner().invoke(cli, ["items", "convert", str(src), "-o", str(out), *args])
    rows = [json.loads(x) for x in out.read_text().splitlines()] if out.exists() else None
    return r, rows, out


PANDALM = [
    {"instruction": "Say hi.", "output_1": "hi", "output_2": "hello", "annotator1": 1},
    {"instruction": "Add 2+2.", "output_1": "5", "output_2": "4", "annotator1": 2},
    {"instruction": "Name a colour.", "output_1": "red", "output_2": "blue", "annotator1": 0},
]
PAIR_ARGS = ["--field", "input=instruction", "--field", "responses.r1=output_1", "--field", "responses.r2=output_2"]


def test_a_json_array_of_pairs_becomes_pairwise_items_with_mapped_codes(tmp_path):
    r, rows, out = _convert(
        tmp_path,
        "p.json",
        json.dumps(PANDALM, indent=2),
        *PAIR_ARGS,
        "--gold",
        "annotator1",
        "--label",
        "1=r1,2=r2,0=tie",
    )
    assert r.exit_code == 0, r.output
    assert rows[1] == {"id": "2", "input": "Add 2+2.", "responses": {"r1": "5", "r2": "4"}, "gold": "r2"}
    assert [x["gold"] for x in rows] == ["r1", "r2", "tie"]
    assert [it.mode for it in read_items(str(out))] == ["pairwise"] * 3
    assert "3 items, 3 with gold (pairwise)" in r.output


def test_a_code_missing_from_the_label_map_is_an_error_at_its_record(tmp_path):
    r, rows, _ = _convert(
        tmp_path, "p.json", json.dumps(PANDALM, indent=2), *PAIR_ARGS, "--gold", "annotator1", "--label", "1=r1,2=r2"
    )
    assert r.exit_code == 2
    # The third object of the indented array starts on line 14.
    assert "p.json:14" in r.output and "gold 0 is not a code of the label map" in r.output
    assert "Traceback" not in r.output
    assert rows is None  # nothing written


def test_json_lines_and_dotted_paths_fill_pointwise_items_and_annotations(tmp_path):
    lines = [
        {
            "doc_id": 7,
            "source": "inform(name=x)",
            "system_output": "x is nice",
            "scores": {"naturalness": 5.0, "overall": 4.5},
        },
        {"doc_id": 8, "source": "inform(name=y)", "system_output": "y", "scores": {"naturalness": 2.0, "overall": 2}},
    ]
    r, rows, _ = _convert(
        tmp_path,
        "s.jsonl",
        "".join(json.dumps(x) + "\n" for x in lines),
        "--field",
        "id=doc_id",
        "--field",
        "input=source",
        "--field",
        "response=system_output",
        "--field",
        "annotations.naturalness=scores.naturalness",
        "--gold",
        "scores.overall",
    )
    assert r.exit_code == 0, r.output
    assert rows[0] == {
        "id": "7",
        "input": "inform(name=x)",
        "response": "x is nice",
        "annotations": {"naturalness": 5.0},
        "gold": 4.5,
    }


def test_csv_cells_become_numbers_where_they_are_numbers(tmp_path):
    text = 'id,question,answer,grade\na1,"Two, words?",yes,3\na2,Q,"multi\nline",4.5\n'
    r, rows, _ = _convert(
        tmp_path, "g.csv", text, "--field", "input=question", "--field", "response=answer", "--gold", "grade"
    )
    assert r.exit_code == 0, r.output
    assert rows == [
        {"id": "a1", "input": "Two, words?", "response": "yes", "gold": 3},
        {"id": "a2", "input": "Q", "response": "multi\nline", "gold": 4.5},
    ]


def test_a_missing_field_names_the_record_and_the_fields_it_has(tmp_path):
    text = "id,question,answer\na1,Q,A\n"
    r, rows, _ = _convert(tmp_path, "g.csv", text, "--field", "response=reply")
    assert r.exit_code == 2
    assert "g.csv:2" in r.output and "no `reply`" in r.output and "`answer`" in r.output
    assert rows is None


def test_several_annotators_give_the_majority_and_a_split_needs_a_policy(tmp_path):
    rows_in = [
        {"id": "x", "instruction": "i", "output_1": "a", "output_2": "b", "a1": 1, "a2": 1, "a3": 2},
        {"id": "y", "instruction": "i", "output_1": "a", "output_2": "b", "a1": 1, "a2": 2, "a3": None},
    ]
    src = json.dumps(rows_in)
    gold = ["--gold", "a1", "--gold", "a2", "--gold", "a3", "--label", "1=r1,2=r2"]
    r, rows, _ = _convert(tmp_path, "m.json", src, *PAIR_ARGS, *gold)
    assert r.exit_code == 2 and "m.json:1" in r.output and "no majority" in r.output and "--on-tie" in r.output
    r, rows, _ = _convert(tmp_path, "m.json", src, *PAIR_ARGS, *gold, "--on-tie", "tie")
    assert r.exit_code == 0, r.output
    assert [x["gold"] for x in rows] == ["r1", "tie"]
    r, rows, _ = _convert(tmp_path, "m.json", src, *PAIR_ARGS, *gold, "--on-tie", "drop")
    assert r.exit_code == 0, r.output
    assert [x.get("gold") for x in rows] == ["r1", None]
    assert "1 without (annotators tied; --on-tie drop)" in r.output


def test_several_numeric_annotators_can_be_averaged(tmp_path):
    src = json.dumps([{"id": "x", "q": "i", "r": "a", "s1": 4, "s2": 5}])
    r, rows, _ = _convert(
        tmp_path,
        "m.json",
        src,
        "--field",
        "input=q",
        "--field",
        "response=r",
        "--gold",
        "s1",
        "--gold",
        "s2",
        "--combine",
        "mean",
    )
    assert r.exit_code == 0, r.output
    assert rows[0]["gold"] == 4.5


def test_a_graph_checks_every_gold_value_and_writes_it_canonically(tmp_path):
    g = tmp_path / "ok.rbg"
    g.write_text(BOOL)
    src = json.dumps(
        [
            {"id": "1", "input": "", "response": "a", "verdict": "Yes"},
            {"id": "2", "input": "", "response": "b", "verdict": "no"},
        ]
    )
    r, rows, _ = _convert(tmp_path, "b.json", src, "--gold", "verdict", "--graph", str(g))
    assert r.exit_code == 0, r.output
    assert [x["gold"] for x in rows] == [True, False]
    src = json.dumps([{"id": "1", "input": "", "response": "a", "verdict": "maybe"}])
    r, rows, _ = _convert(tmp_path, "b.json", src, "--gold", "verdict", "--graph", str(g))
    assert r.exit_code == 2 and "b.json:1" in r.output and "is not a bool" in r.output


def test_a_graph_without_the_items_mode_is_refused(tmp_path):
    g = tmp_path / "ok.rbg"
    g.write_text(BOOL)
    r, rows, _ = _convert(
        tmp_path,
        "p.json",
        json.dumps(PANDALM),
        *PAIR_ARGS,
        "--gold",
        "annotator1",
        "--label",
        "1=r1,2=r2,0=tie",
        "--graph",
        str(g),
    )
    assert r.exit_code == 2 and "no `pairwise` readout" in r.output
    assert rows is None


def test_pairwise_gold_must_name_a_candidate_or_tie(tmp_path):
    r, _rows, _ = _convert(tmp_path, "p.json", json.dumps(PANDALM), *PAIR_ARGS, "--gold", "annotator1")
    assert r.exit_code == 2
    assert "gold `1` is neither a candidate (r1, r2) nor `tie`" in r.output and "--label" in r.output


def test_bad_mappings_are_usage_errors(tmp_path):
    for args, words in [
        (["--field", "inptu=instruction"], "not an item field"),
        (["--field", "input"], "TARGET=SOURCE"),
        (["--gold", "annotator1", "--label", "1"], "CODE=VALUE"),
        (["--label", "1=r1"], "--gold"),
    ]:
        r, _, _ = _convert(tmp_path, "p.json", json.dumps(PANDALM), *args)
        assert r.exit_code == 2 and words in r.output, (args, r.output)


def test_duplicate_ids_are_an_error_naming_both_records(tmp_path):
    text = '{"id": 1, "input": "", "response": "a"}\n{"id": 1, "input": "", "response": "b"}\n'
    r, _rows, _ = _convert(tmp_path, "d.jsonl", text)
    assert r.exit_code == 2 and "d.jsonl:2" in r.output and "first at" in r.output and "d.jsonl:1" in r.output


def test_malformed_sources_name_the_line(tmp_path):
    r, _, _ = _convert(tmp_path, "bad.json", '[\n{"id": 1, "response": "a"},\n{"id": 2 "response": "b"}\n]')
    assert r.exit_code == 2 and "bad.json:3" in r.output and "malformed JSON" in r.output
    r, _, _ = _convert(tmp_path, "bad.csv", "id,response\n1,a,extra\n")
    assert r.exit_code == 2 and "bad.csv:2" in r.output and "2 cells" not in r.output and "3 cells" in r.output
    r, _, _ = _convert(tmp_path, "bad.txt", "x")
    assert r.exit_code == 2 and "--format" in r.output


def test_the_llmbar_natural_set_converts_with_its_1_2_labels(tmp_path):
    src = DATA / "llmbar" / "LLMBar_Natural.json"
    if not src.exists():
        import pytest

        pytest.skip("shared data not present")
    out = tmp_path / "llmbar.jsonl"
    r = CliRunner().invoke(
        cli,
        [
            "items",
            "convert",
            str(src),
            "-o",
            str(out),
            "--field",
            "responses.output_1=output_1",
            "--field",
            "responses.output_2=output_2",
            "--gold",
            "label",
            "--label",
            "1=output_1,2=output_2",
        ],
    )
    assert r.exit_code == 0, r.output
    items = list(read_items(str(out)))
    assert len(items) == 100 and {it.gold for it in items} == {"output_1", "output_2"}


def test_a_source_that_is_not_utf8_is_a_clear_error(tmp_path):
    src = tmp_path / "latin.csv"
    src.write_bytes("id,response\n1,caf\xe9\n".encode("latin-1"))
    r = CliRunner().invoke(cli, ["items", "convert", str(src), "-o", str(tmp_path / "o.jsonl")])
    assert r.exit_code == 2 and "not UTF-8" in r.output and "Traceback" not in r.output


def test_a_csv_cell_longer_than_csvs_default_limit_is_read(tmp_path):
    long = "word " * 40000  # 200 KB, over csv's 128 KiB default
    r, rows, _ = _convert(tmp_path, "long.csv", f'id,response\n1,"{long}"\n')
    assert r.exit_code == 0, r.output
    assert rows[0]["response"] == long


def test_a_field_named_gold_is_the_gold_unless_others_are_named(tmp_path):
    text = "id,response,gold,grade\n1,a,3,5\n"
    r, rows, _ = _convert(tmp_path, "g.csv", text)
    assert r.exit_code == 0 and rows[0]["gold"] == 3
    r, rows, _ = _convert(tmp_path, "g.csv", text, "--gold", "grade")
    assert r.exit_code == 0 and rows[0]["gold"] == 5


def test_a_json_lines_source_that_is_not_utf8_names_the_line(tmp_path):
    src = tmp_path / "latin.jsonl"
    src.write_bytes(b'{"id": 1, "response": "a"}\n{"id": 2, "response": "caf\xe9"}\n')
    r = CliRunner().invoke(cli, ["items", "convert", str(src), "-o", str(tmp_path / "o.jsonl")])
    assert r.exit_code == 2 and "latin.jsonl:2: not UTF-8 text (byte 0xe9" in r.output
