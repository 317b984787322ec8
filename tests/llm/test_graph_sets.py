"""A folder of graphs compiled per instance, run, replayed and evaluated as
one judge: `rbg run GRAPHS/ ITEMS`, `rbg replay GRAPHS/ TRACES`, `rbg eval
GRAPHS/ [DIRECT.rbg] ITEMS`, with the fallback policy."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubriclang.cli.main import cli

from .fault_server import FaultServer, rate_answer
from .test_cli_llm import without_latency
from .test_compile_many import GOOD, scripted, spec_line, write_specs

PLAN = {"alpha": "good", "beta": "repair", "gamma": "bad"}


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture
def graphs(tmp_path) -> Path:
    """alpha and beta compiled; gamma failed within the budget."""
    specs = write_specs(tmp_path / "specs.jsonl", [spec_line(s) for s in PLAN])
    out = tmp_path / "graphs"
    with FaultServer(scripted(PLAN)) as server:
        invoke("compile", specs, "--out-dir", out, "--base-url", server.url, "--no-cache", "--repairs", "1")
    assert sorted(p.stem for p in out.glob("*.rbg")) == ["alpha", "beta"]
    return out


@pytest.fixture
def items(tmp_path) -> Path:
    """alpha, beta, gamma (failed), delta (never compiled), and epsilon,
    which names alpha's graph."""
    rows = [{"id": i, "input": "x", "response": "y", "gold": 4} for i in ("alpha", "beta", "gamma", "delta")]
    rows.append({"id": "epsilon", "input": "x", "response": "y", "gold": 4, "graph": "alpha"})
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


@pytest.fixture
def direct(tmp_path) -> Path:
    path = tmp_path / "direct.rbg"
    path.write_text(GOOD.format(name="direct"), "utf-8")
    return path


def records(path: Path) -> dict[str, dict]:
    return {r["item"]: r for r in map(json.loads, path.read_text("utf-8").splitlines())}


def run(graphs, items, out, *extra):
    with FaultServer(rate_answer(4)) as server:
        return invoke("run", graphs, items, "--out", out, "--base-url", server.url, "--no-cache", *extra)


def test_each_item_is_judged_by_its_own_graph_and_failures_are_recorded(tmp_path, graphs, items):
    out = tmp_path / "t.jsonl"
    r = run(graphs, items, out, "--format", "json")
    assert r.exit_code == 1, r.output  # compile failures are errors
    summary = json.loads(r.output)
    assert summary["routes"] == {"compiled": 3, "fallback": 0, "abstain": 0, "failed": 2}
    assert summary["compile_failures"] == 2
    recs = records(out)
    assert list(recs) == ["alpha", "beta", "gamma", "delta", "epsilon"]
    assert recs["alpha"]["graph"]["name"] == "alpha" and recs["epsilon"]["graph"]["name"] == "alpha"
    assert recs["beta"]["graph"]["name"] == "beta"
    assert recs["alpha"]["readout"]["decision"] == 4
    gamma = recs["gamma"]
    assert gamma["readout"]["status"] == "error"
    assert "compilation failed: no program passed the checker in 2 attempt(s)" in gamma["readout"]["error"]
    assert gamma["compile"]["log"].endswith("gamma.compile.jsonl")
    assert "is not in" in recs["delta"]["compile"]["reason"]


def test_run_of_a_folder_resumes_and_replays_identically(tmp_path, graphs, items):
    out = tmp_path / "t.jsonl"
    with FaultServer(rate_answer(4)) as server:
        invoke("run", graphs, items, "--out", out, "--base-url", server.url, "--no-cache")
        before = out.read_bytes()
        r = invoke("run", graphs, items, "--out", out, "--base-url", server.url, "--no-cache", "--format", "json")
    assert json.loads(r.output)["resumed"] == 5 and out.read_bytes() == before
    r = invoke("replay", graphs, out, "--format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["items"] == 5


def test_trace_of_another_graph_is_refused_on_resume(tmp_path, graphs, items, direct):
    out = tmp_path / "t.jsonl"
    run(direct, items, out)
    r = run(graphs, items, out)
    assert r.exit_code == 2
    assert "t.jsonl:1: this trace was written by another version of the graph" in r.output


def test_fallback_graph_judges_the_items_without_a_graph(tmp_path, graphs, items, direct):
    out = tmp_path / "t.jsonl"
    r = run(graphs, items, out, "--fallback", direct, "--format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["routes"] == {"compiled": 3, "fallback": 2, "abstain": 0, "failed": 0}
    gamma = records(out)["gamma"]
    assert gamma["graph"]["name"] == "direct" and gamma["compile"]["fallback"] == str(direct)
    r = invoke("replay", graphs, out, "--fallback", direct)
    assert r.exit_code == 0, r.output
    r = invoke("replay", graphs, out)  # without the fallback that judged them
    assert r.exit_code == 2 and "no graph in" in r.output


def test_fallback_abstain_abstains_and_counts(tmp_path, graphs, items):
    out = tmp_path / "t.jsonl"
    r = run(graphs, items, out, "--fallback", "abstain")
    assert r.exit_code == 0, r.output
    assert "did not compile 2 (fallback graph 0, abstained 2, recorded as compile failures 0)" in r.output
    assert records(out)["delta"]["readout"]["status"] == "abstain"


def test_eval_splits_coverage_and_compares_with_a_direct_judge(tmp_path, graphs, items, direct):
    with FaultServer(rate_answer(4)) as server:
        r = invoke("eval", graphs, direct, items, "--base-url", server.url, "--no-cache", "--format", "json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    point = report["modes"]["pointwise"]
    assert point["scored"] == 3
    assert point["left_out"]["counts"] == {"compile failed": {str(graphs): 2}}
    assert [c["name"] for c in report["columns"]] == [str(graphs), "direct"]
    assert any("2 of 5 items have no compiled graph" in n for n in report["notes"])


def test_eval_of_recorded_traces_matches_eval_by_judging(tmp_path, graphs, items):
    out = tmp_path / "t.jsonl"
    run(graphs, items, out, "--fallback", "abstain")
    replayed = invoke("eval", graphs, items, "--traces", out, "--fallback", "abstain", "--format", "json")
    with FaultServer(rate_answer(4)) as server:
        judged = invoke(
            "eval", graphs, items, "--fallback", "abstain", "--base-url", server.url, "--no-cache", "--format", "json"
        )
    assert replayed.exit_code == 0, replayed.output
    by_judging = json.loads(judged.stdout)
    assert by_judging.pop("llm")["calls"] > 0  # what judging spent; replaying spends nothing
    assert json.loads(replayed.stdout) == by_judging


def test_fallback_with_one_graph_file_is_a_usage_error(tmp_path, items, direct):
    r = invoke("run", direct, items, "--out", tmp_path / "t.jsonl", "--fallback", "abstain")
    assert r.exit_code == 2 and "--fallback is for a folder of compiled graphs" in r.output


def test_an_empty_folder_is_a_clear_error(tmp_path, items):
    (tmp_path / "empty").mkdir()
    r = invoke("run", tmp_path / "empty", items, "--out", tmp_path / "t.jsonl")
    assert r.exit_code == 2 and "holds no compiled graphs" in r.output


THREE = """\
rubric {name} {{ version = 1 }}
contract {{ scale = ordinal[1, 5] }}
criterion a: ordinal[1, 5] = llm.rate {{ question = "Is it {name}-correct?" }}
criterion b: ordinal[1, 5] = llm.rate {{ question = "Is it {name}-clear?" }}
criterion c: ordinal[1, 5] = llm.rate {{ question = "Is it {name}-complete?" }}
node m = reduce.min(inputs: [a, b, c])
sink m
readout pointwise {{ output = ordinal[1, 5] }}
"""


def slow(body: dict) -> str:
    time.sleep(0.05)  # holds each call open, so that calls overlap
    return "4"


def test_concurrency_bounds_the_calls_in_flight_of_a_folder_in_all(tmp_path):
    folder = tmp_path / "graphs"
    folder.mkdir()
    rows = []
    for i in range(6):
        (folder / f"g{i}.rbg").write_text(THREE.format(name=f"g{i}"), "utf-8")
        rows.append({"id": f"i{i}", "input": "x", "response": "y", "graph": f"g{i}"})
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    traces = []
    with FaultServer(slow) as server:
        for concurrency in (1, 2, 3):
            server.max_in_flight = 0
            out = tmp_path / f"t{concurrency}.jsonl"
            r = invoke(
                "run", folder, items, "--out", out, "--base-url", server.url, "--no-cache", "--concurrency", concurrency
            )
            assert r.exit_code == 0, r.output
            assert 1 <= server.max_in_flight <= concurrency
            traces.append(without_latency(out))
        assert len(server.chats) == 3 * 18
    # The same records at any concurrency (latencies aside).
    assert traces[0] == traces[1] == traces[2]


def traced(tmp_path, graphs, items) -> Path:
    out = tmp_path / "t.jsonl"
    run(graphs, items, out)
    return out


def test_diff_of_folders_counts_compile_failures_in_the_transitions(tmp_path, graphs, items):
    import shutil

    traces = traced(tmp_path, graphs, items)
    new = tmp_path / "new"
    shutil.copytree(graphs, new)
    (new / "alpha.rbg").unlink()
    (new / "alpha.compile.jsonl").unlink()
    r = invoke("diff", graphs, new, "--traces", traces, "--format", "json")
    assert r.exit_code == 1, r.output
    doc = json.loads(r.output)
    assert doc["graphs"] == {"added": [], "removed": ["alpha"], "changed": [], "unchanged": 1}
    impact = doc["impact"]
    assert impact["available"] and impact["items"] == 5
    # alpha and epsilon (which names alpha's graph) lose their graph; gamma
    # and delta were compile failures before and still are.
    assert impact["transitions"] == {"4 -> compile failure": 2}
    assert sorted(d["item"] for d in impact["differences"]) == ["alpha", "epsilon"]
    text = invoke("diff", graphs, new, "--traces", traces)
    assert "- alpha" in text.output and "2 decisions change" in text.output


def test_diff_of_a_folder_with_itself_changes_nothing(tmp_path, graphs, items):
    traces = traced(tmp_path, graphs, items)
    r = invoke("diff", graphs, graphs, "--traces", traces)
    assert r.exit_code == 0, r.output
    assert "Verdict impact over 5 traced items" in r.output and "no decision changes" in r.output


def test_diff_against_a_direct_judge_file_routes_each_item(tmp_path, graphs, items, direct):
    traces = traced(tmp_path, graphs, items)
    r = invoke("diff", graphs, direct, "--traces", traces, "--format", "json")
    impact = json.loads(r.output)["impact"]
    # The direct judge has the folder's criterion, so the judged items keep
    # their 4; the items that did not compile have no judgments to replay.
    assert not impact["available"]
    assert any("2 item(s) (`gamma`, `delta`)" in reason for reason in impact["reasons"]), impact


def test_diff_of_a_folder_needs_traces(tmp_path, graphs):
    r = invoke("diff", graphs, graphs)
    assert r.exit_code == 2 and "--traces" in r.output


def test_fallback_stated_in_the_spec_is_recorded_and_used_by_run(tmp_path, direct):
    plan = {"alpha": "good", "gamma": "bad", "zeta": "bad"}
    lines = [spec_line("alpha"), spec_line("gamma"), spec_line("zeta")]
    lines[1]["contract"]["fallback"] = "direct.rbg"  # beside the specs file
    lines[2]["contract"]["fallback"] = "abstain"
    specs = write_specs(tmp_path / "specs.jsonl", lines)
    out = tmp_path / "graphs"
    with FaultServer(scripted(plan)) as server:
        r = invoke("compile", specs, "--out-dir", out, "--base-url", server.url, "--no-cache", "--repairs", "0")
    assert sorted(p.stem for p in out.glob("*.rbg")) == ["alpha"], r.output
    rows = [{"id": i, "input": "x", "response": "y", "gold": 4} for i in ("alpha", "gamma", "zeta", "delta")]
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(x) + "\n" for x in rows), "utf-8")
    t = tmp_path / "t.jsonl"
    r = run(out, items, t, "--format", "json")
    # delta was never compiled and has no policy: a compile failure.
    assert json.loads(r.output)["routes"] == {"compiled": 1, "fallback": 1, "abstain": 1, "failed": 1}, r.output
    recs = records(t)
    assert recs["gamma"]["graph"]["name"] == "direct" and recs["gamma"]["compile"]["fallback"].endswith("direct.rbg")
    assert recs["zeta"]["readout"]["status"] == "abstain"
    # The command line's --fallback replaces every recorded policy.
    t2 = tmp_path / "t2.jsonl"
    r = run(out, items, t2, "--format", "json", "--fallback", "abstain")
    assert json.loads(r.output)["routes"] == {"compiled": 1, "fallback": 0, "abstain": 3, "failed": 0}
    # The policy travels with the folder: the recorded path is relative to it.
    moved = tmp_path / "moved"
    moved.mkdir()
    out.rename(moved / "graphs")
    (tmp_path / "direct.rbg").rename(moved / "direct.rbg")
    t3 = tmp_path / "t3.jsonl"
    r = run(moved / "graphs", items, t3, "--format", "json")
    assert json.loads(r.output)["routes"]["fallback"] == 1, r.output
    # Replay and diff of the folder use the recorded policy too.
    r = invoke("replay", moved / "graphs", t3)
    assert r.exit_code == 0, r.output
    r = invoke("diff", moved / "graphs", moved / "graphs", "--traces", t3)
    assert r.exit_code == 0 and "no decision changes" in r.output, r.output
    # A recorded fallback graph that is gone is an error at the log recording it.
    (moved / "direct.rbg").unlink()
    r = run(moved / "graphs", items, tmp_path / "t4.jsonl")
    assert r.exit_code == 2 and "gamma.compile.jsonl" in r.output and "is not there" in r.output, r.output


@pytest.mark.parametrize(
    "fallback, message",
    [
        ("direct", 'must be "abstain" or the path of a .rbg graph'),
        ("nowhere.rbg", "no such graph file `nowhere.rbg`"),
        (3, "`contract.fallback` must be"),
    ],
)
def test_a_bad_fallback_in_a_spec_line_is_an_error_at_its_line(tmp_path, fallback, message):
    lines = [spec_line("alpha"), spec_line("beta")]
    lines[1]["contract"]["fallback"] = fallback
    specs = write_specs(tmp_path / "specs.jsonl", lines)
    r = invoke("compile", specs, "--out-dir", tmp_path / "graphs", "--base-url", "http://127.0.0.1:9/v1", "--no-cache")
    assert r.exit_code == 2, r.output
    assert f"{specs}:2: spec `beta`" in r.output and message in r.output
    assert "Traceback" not in r.output


def test_a_bad_fallback_in_a_toml_spec_is_an_error_at_its_line(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(
        '[rubric]\nname = "x"\ntext = "Score it."\n[task]\ninput = "t"\n[contract]\nscale = "ordinal[1, 5]"\n'
        'fallback = "missing.rbg"\n',
        "utf-8",
    )
    r = invoke("compile", spec, "-o", tmp_path / "x.rbg", "--base-url", "http://127.0.0.1:9/v1", "--no-cache")
    assert r.exit_code == 2, r.output
    assert f"{spec}:8" in r.output and "no such graph file `missing.rbg`" in r.output
