"""`rbg items convert` keeps what it reads (issue 26 item 8): paths into
nested records, templates and joins, declared fields, JSON objects keyed by
id, pass-through and the count of unmapped fields, long-format tables
pivoted into recorded values, chat logs and trajectories as conversations.
Each on a small slice of the real data in ../shared/data."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubriclang.checker import CheckedGraph, check_source
from rubriclang.cli.main import cli
from rubriclang.interp.items import read_items

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"

pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason="shared data not present")


def rbg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def jsonl_head(src: Path, n: int, dst: Path) -> Path:
    with open(src, encoding="utf-8") as fh:
        dst.write_text("".join(next(fh) for _ in range(n)), "utf-8")
    return dst


def rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text("utf-8").splitlines()]


def shape_of(tmp_path: Path, declaration: str, mode: str = "pointwise") -> tuple[Path, CheckedGraph]:
    kind, readout = ("bool", "output = bool") if mode == "pointwise" else ("ordinal[1, 5]", "resolve = tie")
    text = (
        f"rubric r {{ version = 1 }}\ncontract {{ scale = {'bool' if mode == 'pointwise' else 'score[1, 5]'} }}\n"
        f"item {{\n{declaration}\n}}\n"
        f'criterion ok: {kind} = recorded.value {{ key = "ok" }}\nsink ok\n'
        f"readout {mode} {{ {readout} }}\n"
    )
    path = tmp_path / "judge.rbg"
    path.write_text(text, "utf-8")
    graph = check_source(text, str(path)).graph
    assert graph is not None
    return path, graph


def test_bfcl_turns_flatten_into_one_conversation_and_functions_into_a_declared_json_field(tmp_path):
    src = jsonl_head(DATA / "bfcl_simple" / "BFCL_v4_simple_python.json", 5, tmp_path / "bfcl.jsonl")
    judge, graph = shape_of(tmp_path, "  input: conversation\n  functions: json")
    out = tmp_path / "items.jsonl"
    r = rbg(
        "items", "convert", src, "-o", out, "--field", "input=question[*][*]", "--conversation", "input",
        "--field", "functions=function", "--field", "response=function[0].name", "--graph", judge,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    first = json.loads(src.read_text("utf-8").splitlines()[0])
    got = rows(out)[0]
    assert got["id"] == first["id"] == "simple_python_1"
    assert got["input"] == [m for turn in first["question"] for m in turn]
    assert got["functions"] == first["function"] and got["response"] == "math.factorial"
    assert [it.fields["functions"][0]["name"] for it in read_items(str(out), graph.item_shape)][:2] == [
        "math.factorial",
        "math.hypot",
    ]
    assert "not in the items" not in r.output  # every source field is read


def test_a_multi_turn_bfcl_question_keeps_every_turn_in_order(tmp_path):
    src = jsonl_head(DATA / "bfcl_multi_turn" / "BFCL_v4_multi_turn_base.json", 2, tmp_path / "mt.jsonl")
    out = tmp_path / "items.jsonl"
    r = rbg(
        "items", "convert", src, "-o", out, "--field", "input=question[*][*]", "--conversation", "input",
        "--field", "response=path[0]", "--ignore", "initial_config", "--ignore", "involved_classes",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    record = json.loads(src.read_text("utf-8").splitlines()[1])
    assert rows(out)[1]["input"] == [m for turn in record["question"] for m in turn]
    assert len(rows(out)[1]["input"]) == len(record["question"]) >= 2
    # Two fields neither mapped nor ignored are counted, by name and records.
    assert "`excluded_function` (" in r.output and "`path`" not in r.output


def test_tau_bench_trajectories_stay_openai_messages_and_reused_call_ids_get_their_own(tmp_path):
    records = json.loads((DATA / "tau_bench_airline" / "gpt-4o-airline.json").read_text("utf-8"))[:3]
    src = tmp_path / "tau.json"
    src.write_text(json.dumps(records, indent=2), "utf-8")
    judge, graph = shape_of(tmp_path, "  response: conversation")
    out = tmp_path / "items.jsonl"
    r = rbg(
        "items", "convert", src, "-o", out, "--field", "id={task_id}-{trial}", "--field", "response=traj",
        "--conversation", "response", "--gold", "reward", "--label", "1=true,0=false", "--ignore", "info",
        "--graph", judge,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    got = rows(out)
    assert [x["id"] for x in got] == [f"{x['task_id']}-{x['trial']}" for x in records]
    assert [x["gold"] for x in got] == [x["reward"] == 1 for x in records]
    reuses = [
        len(ids) != len(set(ids))
        for ids in ([c["id"] for m in x["traj"] for c in m.get("tool_calls") or []] for x in records)
    ]
    assert reuses == [True, False, True]
    # Record 1 reuses a call id: only ids change, every message keeps its place and text.
    before, after = records[0]["traj"], got[0]["response"]
    assert len(before) == len(after) and [m["content"] for m in before] == [m["content"] for m in after]
    ids = [c["id"] for m in after for c in m.get("tool_calls") or []]
    assert len(ids) == len(set(ids)) and any(i.endswith("~2") for i in ids)
    for i, m in enumerate(after):  # each result still answers the call just before it
        if m["role"] == "tool":
            calls = [c["id"] for c in after[i - 1].get("tool_calls") or []] or [after[i - 1].get("tool_call_id")]
            assert m["tool_call_id"] in calls or after[i - 1]["role"] == "tool"
    assert "reused tool call ids renamed" in r.output
    assert got[1]["response"] == records[1]["traj"]  # a log without reuse is kept exactly
    assert len(list(read_items(str(out), graph.item_shape))) == 3


def test_a_json_object_keyed_by_id_is_read_with_its_keys_as_ids(tmp_path):
    whole = json.loads((DATA / "biggen" / "sample_responses.json").read_text("utf-8"))
    keyed = {k: {f: v for f, v in whole[k].items() if f != "id"} for k in list(whole)[:3]}
    src = tmp_path / "sample_responses.json"
    src.write_text(json.dumps(keyed, indent=4), "utf-8")
    out = tmp_path / "items.jsonl"
    r = rbg("items", "convert", src, "-o", out, "--field", "rubric=score_rubric.criteria", "--keep-unmapped")
    assert r.exit_code == 0, r.output
    got = rows(out)
    assert [x["id"] for x in got] == list(keyed)
    first = keyed[got[0]["id"]]
    assert got[0]["input"] == first["input"] and got[0]["response"] == first["response"]
    assert got[0]["rubric"] == first["score_rubric"]["criteria"]
    # --keep-unmapped: every other source field is in the item, as it was.
    assert got[0]["reference_answer"] == first["reference_answer"] and got[0]["capability"] == first["capability"]
    assert "not in the items" not in r.output


def test_a_key_given_twice_in_a_keyed_object_is_refused_at_its_line(tmp_path):
    src = tmp_path / "k.json"
    src.write_text('{\n "a": {"response": "x"},\n "a": {"response": "y"}\n}\n', "utf-8")
    r = rbg("items", "convert", src, "-o", tmp_path / "o.jsonl")
    assert r.exit_code == 2 and "k.json:3" in r.output and "given twice" in r.output and "k.json:2" in r.output


PANDALM_LIKE = [
    {"idx": 1, "instruction": "Sort these.", "input": "3, 1, 2", "response1": "1, 2, 3", "response2": "3, 2, 1"},
    {"idx": 2, "instruction": "Say hi.", "input": "", "response1": "hi", "response2": "hello"},
]
PANDA_PAIR = ["--field", "id=idx", "--field", "responses.r1=response1", "--field", "responses.r2=response2"]


def test_unmapped_fields_are_counted_by_records_holding_a_value(tmp_path):
    src = tmp_path / "p.json"
    src.write_text(json.dumps(PANDALM_LIKE), "utf-8")
    r = rbg("items", "convert", src, "-o", tmp_path / "o.jsonl", "--field", "input=instruction", *PANDA_PAIR)
    assert r.exit_code == 0, r.output
    assert "not in the items: `input` (1 of 2)" in r.output  # the empty one loses nothing
    r = rbg(
        "items", "convert", src, "-o", tmp_path / "o.jsonl", "--field", "input=instruction", *PANDA_PAIR,
        "--ignore", "input",
    )  # fmt: skip
    assert r.exit_code == 0 and "not in the items" not in r.output


def test_two_fields_join_into_one_leaving_out_empty_ones_or_fill_two_declared_fields(tmp_path):
    src = tmp_path / "p.json"
    src.write_text(json.dumps(PANDALM_LIKE), "utf-8")
    out = tmp_path / "o.jsonl"
    r = rbg("items", "convert", src, "-o", out, "--join", "input=instruction,input", *PANDA_PAIR)
    assert r.exit_code == 0, r.output
    assert [x["input"] for x in rows(out)] == ["Sort these.\n\n3, 1, 2", "Say hi."]
    r = rbg("items", "convert", src, "-o", out, "--join", "input=instruction,input", "--sep", r"\n", *PANDA_PAIR)
    assert rows(out)[0]["input"] == "Sort these.\n3, 1, 2"
    template = "Instruction: {instruction}\nInput: {input} {{raw}}"
    r = rbg("items", "convert", src, "-o", out, "--field", f"input={template}", *PANDA_PAIR)
    assert r.exit_code == 0, r.output
    assert rows(out)[0]["input"] == "Instruction: Sort these.\nInput: 3, 1, 2 {raw}"
    judge, graph = shape_of(tmp_path, "  instruction: text\n  context: text", mode="pairwise")
    r = rbg(
        "items", "convert", src, "-o", out, "--field", "instruction=instruction", "--field", "context=input",
        *PANDA_PAIR, "--graph", judge,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert [(x["instruction"], x["context"]) for x in rows(out)] == [("Sort these.", "3, 1, 2"), ("Say hi.", "")]
    assert next(it.fields for it in read_items(str(out), graph.item_shape)) == {
        "instruction": "Sort these.",
        "context": "3, 1, 2",
    }


def test_a_declared_field_the_graph_does_not_declare_or_a_near_miss_is_a_usage_error(tmp_path):
    src = tmp_path / "p.json"
    src.write_text(json.dumps(PANDALM_LIKE), "utf-8")
    judge, _ = shape_of(tmp_path, "  instruction: text", mode="pairwise")
    r = rbg("items", "convert", src, "-o", tmp_path / "o", "--field", "contxt=input", *PANDA_PAIR, "--graph", judge)
    assert r.exit_code == 2 and "`contxt` is not a field the graph declares (declared: instruction)" in r.output
    r = rbg("items", "convert", src, "-o", tmp_path / "o", "--field", "refernce=input", *PANDA_PAIR)
    assert r.exit_code == 2 and "did you mean `reference`" in r.output
    for bad in ("input={instruction", "input={}", "gold=x", "input=a}b"):
        r = rbg("items", "convert", src, "-o", tmp_path / "o", "--field", bad, *PANDA_PAIR)
        assert r.exit_code == 2 and "Traceback" not in r.output, (bad, r.output)
    assert not (tmp_path / "o").exists()


def test_llm_rubric_long_format_distributions_pivot_into_recorded_values(tmp_path):
    src_dir = DATA / "llm_rubric"
    humans = (src_dir / "human_judges_real_convs_FIXED_ANON.tsv").read_text("utf-8").splitlines()
    (tmp_path / "h.tsv").write_text("\n".join(humans[:4]) + "\n", "utf-8")
    ids = [line.split("\t")[1] for line in humans[1:4]]
    with open(src_dir / "gpt-3.5-turbo-16k_real_evaluations_FIXED.tsv", encoding="utf-8") as fh:
        table = [r for r in csv.DictReader(fh, delimiter="\t") if r["text_id"] in ids]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(table[0]), delimiter="\t", lineterminator="\n")
    w.writeheader()
    w.writerows(table)
    (tmp_path / "m.tsv").write_text(buf.getvalue(), "utf-8")
    points = ",".join(f"{k}=answer{k}_prob" for k in range(1, 5))
    out = tmp_path / "o.jsonl"
    args = [
        "items", "convert", tmp_path / "h.tsv", "-o", out, "--field", "id=text_id", "--field", "response=text_id",
        "--gold", "Q0", "--field", "annotations.Q1=Q1", "--ignore", "annotator_id", "--ignore", "dialogue_system",
        "--pivot", f"recorded={tmp_path / 'm.tsv'}", "--pivot-item", "text_id", "--pivot-key", "criterion",
        "--pivot-value", points,
    ]  # fmt: skip
    r = rbg(*args)
    assert r.exit_code == 0, r.output
    got = {x["id"]: x for x in rows(out)}
    row = next(t for t in table if t["text_id"] == ids[0] and t["criterion"] == "Q3")
    assert got[ids[0]]["recorded"]["Q3"] == {str(k): float(row[f"answer{k}_prob"]) for k in range(1, 5)}
    assert set(got[ids[0]]["recorded"]) == {f"Q{i}" for i in range(9)}
    assert "27 recorded values for 3 of 3 items" in r.output
    assert "not in the items: `Q2` (3 of 3)" in r.output  # Q2-Q8 of the humans are neither mapped nor ignored
    # The recorded distributions are read by recorded.value as expected values.
    judge = tmp_path / "q3.rbg"
    judge.write_text(
        "rubric q { version = 1 }\ncontract { scale = score[1, 4] }\n"
        'criterion q3: score[1, 4] = recorded.value { key = "Q3" }\nsink q3\n'
        "readout pointwise { output = score[1, 4] }\n",
        "utf-8",
    )
    trace = tmp_path / "t.jsonl"
    r = rbg("run", judge, out, "--out", trace)
    assert r.exit_code == 0, r.output
    first = json.loads(trace.read_text("utf-8").splitlines()[0])
    want = sum(k * float(row[f"answer{k}_prob"]) for k in range(1, 5))
    assert abs(first["criteria"]["q3"]["response"]["value"] - want) < 1e-9


def test_a_pivot_row_for_an_unknown_item_or_a_repeated_key_is_refused_at_its_line(tmp_path):
    (tmp_path / "i.jsonl").write_text('{"id": "a", "response": "x"}\n', "utf-8")
    (tmp_path / "v.jsonl").write_text('{"item": "a", "key": "k", "value": 1}\n{"item": "b", "key": "k", "value": 2}\n')
    r = rbg(
        "items", "convert", tmp_path / "i.jsonl", "-o", tmp_path / "o", "--pivot", f"annotations={tmp_path / 'v.jsonl'}"
    )
    assert r.exit_code == 2 and "v.jsonl:2" in r.output and "item `b`" in r.output
    (tmp_path / "v.jsonl").write_text('{"item": "a", "key": "k", "value": 1}\n{"item": "a", "key": "k", "value": 2}\n')
    r = rbg(
        "items", "convert", tmp_path / "i.jsonl", "-o", tmp_path / "o", "--pivot", f"annotations={tmp_path / 'v.jsonl'}"
    )
    assert r.exit_code == 2 and "v.jsonl:2" in r.output and "second value" in r.output and "v.jsonl:1" in r.output
    (tmp_path / "v.jsonl").write_text('{"item": "a", "key": "k", "p1": "x"}\n')
    r = rbg(
        "items", "convert", tmp_path / "i.jsonl", "-o", tmp_path / "o", "--pivot", f"recorded={tmp_path / 'v.jsonl'}",
        "--pivot-value", "1=p1",
    )  # fmt: skip
    assert r.exit_code == 2 and "v.jsonl:1" in r.output and "not a probability" in r.output
    assert not (tmp_path / "o").exists()


def test_sharegpt_logs_become_conversations_and_malformed_messages_name_their_path(tmp_path):
    log = [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello!"}]
    src = tmp_path / "c.jsonl"
    src.write_text(json.dumps({"id": "c1", "conversations": log, "reply": "ok"}) + "\n", "utf-8")
    out = tmp_path / "o.jsonl"
    r = rbg(
        "items", "convert", src, "-o", out, "--field", "input=conversations", "--conversation", "input",
        "--field", "response=reply",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert rows(out)[0]["input"] == [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]
    bad = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": None}]
    src.write_text(
        '{"id": "ok", "conversations": [], "reply": "x"}\n'
        + json.dumps({"id": "c2", "conversations": bad, "reply": "x"})
        + "\n"
    )
    r = rbg(
        "items",
        "convert",
        src,
        "-o",
        out,
        "--field",
        "input=conversations",
        "--conversation",
        "input",
        "--field",
        "response=reply",
    )
    assert r.exit_code == 2 and "c.jsonl:2" in r.output and "`input[1].content` is missing" in r.output
    src.write_text('{"id": "c3", "conversations": "just text", "reply": "x"}\n')
    r = rbg("items", "convert", src, "-o", out, "--field", "input=conversations[*]", "--field", "response=reply")
    assert (
        r.exit_code == 2 and "c.jsonl:1" in r.output and "`conversations[*]`" in r.output and "not a list" in r.output
    )
    assert "Traceback" not in r.output


def test_ragchecker_nested_responses_fill_a_pairwise_item(tmp_path):
    records = json.loads((DATA / "ragchecker_meta" / "human_labeled_data.json").read_text("utf-8"))[:4]
    src = tmp_path / "rc.json"
    src.write_text(json.dumps(records, indent=2), "utf-8")
    out = tmp_path / "o.jsonl"
    r = rbg(
        "items", "convert", src, "-o", out, "--field", "id={instance_id}-{dataset}-{query_id}-{model1.model_name}",
        "--field", "input=query", "--field", "reference=gt_answer",
        "--field", "responses.model1=model1.response", "--field", "responses.model2=model2.response",
        "--field", "annotations.model1.critiques=model1.critiques",
        "--field", "annotations.model2.critiques=model2.critiques",
        "--field", "annotations.model1.overall=overall_label", "--ignore", "correctness_label",
        "--ignore", "completeness_label",
    )  # fmt: skip
    # Two annotators' records of one question share every field above: the ids repeat.
    assert r.exit_code == 2 and "duplicate item id" in r.output and "rc.json:" in r.output


def test_begin_rows_become_documents_and_a_one_turn_conversation_from_a_crlf_tsv(tmp_path):
    lines = (DATA / "begin_wow" / "begin_dev_wow.tsv").read_bytes().split(b"\r\n")
    src = tmp_path / "begin.tsv"
    src.write_bytes(b"\r\n".join(lines[:6]) + b"\r\n")
    judge, graph = shape_of(tmp_path, "  input: conversation\n  documents: documents")
    out = tmp_path / "o.jsonl"
    labels = "Fully attributable=true,Not fully attributable=false"
    r = rbg(
        "items", "convert", src, "-o", out, "--field", "documents=knowledge", "--documents", "documents",
        "--field", "input=message", "--conversation", "input", "--gold", "begin_label", "--label", labels,
        "--ignore", "model_name", "--ignore", "data_source", "--graph", judge,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    first = lines[1].decode("utf-8").split("\t")
    got = rows(out)[0]
    assert got["documents"] == [{"id": "1", "text": first[2]}]
    assert got["input"] == [{"role": "user", "content": first[3]}] and got["response"] == first[4]
    assert got["gold"] is (first[5] == "Fully attributable")  # canonical under --graph
    assert [len(it.fields["documents"]) for it in read_items(str(out), graph.item_shape)] == [1] * 5


def test_a_list_of_passages_becomes_numbered_documents_and_a_malformed_one_names_its_path(tmp_path):
    src = tmp_path / "rag.jsonl"
    src.write_text(json.dumps({"id": "q", "ctx": ["Paris is in France.", "Lyon too."], "a": "France"}) + "\n")
    out = tmp_path / "o.jsonl"
    args = ["--field", "documents=ctx", "--documents", "documents", "--field", "response=a"]
    r = rbg("items", "convert", src, "-o", out, *args)
    assert r.exit_code == 0, r.output
    assert rows(out)[0]["documents"] == [{"id": "1", "text": "Paris is in France."}, {"id": "2", "text": "Lyon too."}]
    src.write_text('{"id": "q", "ctx": "x", "a": "y"}\n' + json.dumps({"id": "r", "ctx": [{"id": 1}], "a": "F"}) + "\n")
    r = rbg("items", "convert", src, "-o", out, *args)
    assert r.exit_code == 2 and "rag.jsonl:2" in r.output and "`documents[0]` has no `text`" in r.output


def test_the_unread_parts_of_a_partly_read_object_are_counted_and_passed_through(tmp_path):
    src = tmp_path / "n.jsonl"
    record = {"id": 1, "r": "x", "scores": {"overall": 4, "fluency": 3, "notes": ""}, "meta": {"a": {"b": 1, "c": 2}}}
    src.write_text(json.dumps(record) + "\n")
    out = tmp_path / "o.jsonl"
    base = ["--field", "response=r", "--gold", "scores.overall", "--field", "annotations.b=meta.a.b"]
    r = rbg("items", "convert", src, "-o", out, *base)
    assert r.exit_code == 0, r.output
    # `scores.notes` is empty, so nothing of it is lost.
    assert "not in the items: `meta.a.c` (1 of 1), `scores.fluency` (1 of 1)" in r.output
    r = rbg("items", "convert", src, "-o", out, *base, "--keep-unmapped")
    assert r.exit_code == 0 and "not in the items" not in r.output
    assert rows(out)[0]["scores"] == {"fluency": 3, "notes": ""} and rows(out)[0]["meta"] == {"a": {"c": 2}}
    r = rbg("items", "convert", src, "-o", out, *base, "--ignore", "scores.fluency", "--ignore", "meta")
    assert r.exit_code == 0 and "not in the items" not in r.output


def test_the_summary_says_why_an_item_has_no_gold(tmp_path):
    src = tmp_path / "g.jsonl"
    src.write_text('{"id": 1, "response": "a", "g": null, "h": ""}\n{"id": 2, "response": "b", "g": 3, "h": 4}\n')
    r = rbg("items", "convert", src, "-o", tmp_path / "o.jsonl", "--gold", "g", "--ignore", "h")
    assert r.exit_code == 0 and "1 with gold, 1 without (the gold value is null or empty)" in r.output
    r = rbg("items", "convert", src, "-o", tmp_path / "o.jsonl", "--gold", "g", "--gold", "h", "--combine", "mean")
    assert r.exit_code == 0 and "1 without (no annotator gave a label)" in r.output


def test_keys_of_a_keyed_object_that_are_not_the_ids_are_said_to_be_left_out(tmp_path):
    src = tmp_path / "k.json"
    src.write_text('{"k1": {"id": "a", "response": "x"}, "k2": {"id": "k2", "response": "y"}}', "utf-8")
    r = rbg("items", "convert", src, "-o", tmp_path / "o.jsonl")
    assert r.exit_code == 0 and "1 records' keys in the JSON object differ from their ids" in r.output
    assert [x["id"] for x in rows(tmp_path / "o.jsonl")] == ["a", "k2"]


def test_malformed_new_options_are_usage_errors_and_write_nothing(tmp_path):
    src = tmp_path / "p.json"
    src.write_text(json.dumps(PANDALM_LIKE), "utf-8")
    out = tmp_path / "o.jsonl"
    for args, words in [
        (["--pivot", "scores=x.tsv"], "recorded=FILE or annotations=FILE"),
        (["--pivot", f"recorded={tmp_path / 'none.tsv'}"], "is not a file"),
        (["--pivot", f"recorded={src}", "--pivot-value", "1=a,1=b"], "names a point twice"),
        (["--join", "input=instruction"], "TARGET=PATH,PATH"),
        (["--conversation", "history"], "`history` is not mapped by --field"),
        (["--documents", "docs"], "`docs` is not mapped by --field"),
    ]:
        r = rbg("items", "convert", src, "-o", out, *PANDA_PAIR, *args)
        assert r.exit_code == 2 and words in r.output, (args, r.output)
        assert "Traceback" not in r.output and not out.exists()
