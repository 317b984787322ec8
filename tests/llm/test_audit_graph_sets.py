"""`rbg audit` with a folder of graphs compiled per instance as its judge:
each item judged by its own graph, the fallback policy its compile log
records, compile failures counted (never dropped), one hash over the set,
judge-side patches per graph, and the same report at any concurrency."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from rubriclang.cli.main import cli

from .fault_server import FaultServer
from .test_compile_many import GOOD, named, spec_line, write_specs

# Rule-only graphs (no LLM judges them): alpha and the fallback read the
# reference's number; beta asks for the word "answer", under another name.
ALPHA = """\
rubric {name} {{ version = 1 }}
contract {{ scale = bool }}
criterion correct: bool = rule.matches_reference {{ mode = numeric }}
sink correct
readout pointwise {{ output = bool }}
"""
BETA = """\
rubric {name} {{ version = 1 }}
contract {{ scale = bool }}
criterion says: bool = rule.contains {{ phrases = ["answer"] }}
sink says
readout pointwise {{ output = bool }}
"""
BROKEN = "rubric {name} { version = 1 }\ncriterion x: bool = nope.nothing {}\n"


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def compiler(programs: dict[str, str]):
    """The compile model: the program of each rubric name (a broken one for the others)."""

    def answer(body: dict) -> str:
        name = named(body, programs) or "unknown"
        return "```rbg\n" + programs.get(name, BROKEN).format(name=name) + "```\n"

    return answer


def folder(tmp_path: Path, programs: dict[str, str], scale: str, fallback: str) -> Path:
    """alpha and beta compiled, gamma failed (its spec's fallback is
    `direct.rbg`, the `fallback` program), delta never compiled."""
    (tmp_path / "direct.rbg").write_text(fallback.format(name="direct"), "utf-8")
    ref = {"at_run_time": True}
    lines = [spec_line(s, contract={"scale": scale}, reference=ref) for s in ("alpha", "beta")]
    lines.append(spec_line("gamma", contract={"scale": scale, "fallback": "direct.rbg"}, reference=ref))
    specs = write_specs(tmp_path / "specs.jsonl", lines)
    out = tmp_path / "graphs"
    with FaultServer(compiler(programs)) as server:
        r = invoke("compile", specs, "--out-dir", out, "--base-url", server.url, "--no-cache", "--repairs", "0")
    assert r.exit_code == 1, r.output  # gamma failed
    assert sorted(p.name for p in out.glob("*.rbg")) == ["alpha.rbg", "beta.rbg"]
    return out


def items(tmp_path: Path) -> Path:
    rows = [
        {"id": i, "input": "What is 2 + 2?", "response": "The answer is 4.", "reference": "#### 4", "gold": True}
        for i in ("alpha", "beta", "gamma", "delta")
    ]
    rows.append(
        {
            "id": "epsilon",
            "input": "What is 3 + 3?",
            "response": "It is 7.",
            "reference": "#### 6",
            "gold": False,
            "graph": "alpha",
        }
    )
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def suite(tmp_path: Path, judge: str, body: str, name: str = "suite.toml") -> Path:
    path = tmp_path / name
    path.write_text(f'items = "items.jsonl"\nrepeats = 2\n{judge}\n{body}', "utf-8")
    return path


def runs(out: Path) -> dict[tuple[str, str | None, int], dict]:
    return {
        (r["item"], r["variant"], r["repeat"]): r["trace"]
        for r in map(json.loads, (out / "runs.jsonl").read_text("utf-8").splitlines())
    }


def test_a_folder_of_rule_graphs_is_audited_item_by_item_and_identically_at_any_concurrency(tmp_path):
    folder(tmp_path, {"alpha": ALPHA, "beta": BETA}, "bool", ALPHA)
    items(tmp_path)
    reports = []
    for c in (1, 4):
        s = suite(
            tmp_path,
            'judge = "graphs"',
            f'concurrency = {c}\noperators = ["typo_noise", "partial_completion"]\n',
            f"suite{c}.toml",
        )
        out = tmp_path / f"audit{c}"
        r = invoke("audit", s, "--out", out, "--no-cache", "--format", "json")
        assert r.exit_code == 1, r.output  # delta's graph did not compile
        reports.append(json.loads((out / "report.json").read_text("utf-8")))
        assert (out / "runs.jsonl").read_bytes() == (tmp_path / "audit1" / "runs.jsonl").read_bytes()
    report = reports[0]
    reports[1]["suite"]["path"] = report["suite"]["path"]
    assert reports[1] == report
    judge = report["judge"]
    direct = str(tmp_path / "direct.rbg")
    assert sorted(judge["graphs"]) == sorted(["alpha", "beta", direct])
    assert judge["compile"] == {"compiled": 3, "fallback": 1, "abstain": 0, "failed": 1}
    # delta (never compiled, no policy) is out of the metrics but recorded as a compile failure.
    assert report["counts"]["items"] == 4
    assert sorted(report["by_item"]) == ["alpha", "beta", "epsilon", "gamma"]
    recorded = runs(tmp_path / "audit1")
    delta = recorded[("delta", None, 0)]
    assert delta["readout"]["status"] == "error" and delta["compile"]["status"] == "missing"
    # Each item by its own graph: gamma by the fallback its spec names, epsilon by alpha's.
    assert recorded[("beta", None, 0)]["graph"]["name"] == "beta"
    assert (
        recorded[("gamma", None, 0)]["graph"]["name"] == "direct"
        and recorded[("gamma", None, 0)]["compile"]["fallback"] == direct
    )
    assert recorded[("epsilon", None, 0)]["graph"]["name"] == "alpha"
    assert recorded[("epsilon", None, 0)]["readout"]["decision"] is False
    # Per criterion name across the graphs: `correct` is alpha's and the fallback's.
    assert report["by_criterion"]["correct"]["graphs"] == 2 and report["by_criterion"]["says"]["graphs"] == 1
    # The sealed suite and the manifest hold one hash over the whole set.
    sealed = json.loads((tmp_path / "audit1" / "sealed.json").read_text("utf-8"))
    assert sealed["judge"]["hash"] == judge["hash"] and sorted(sealed["judge"]["graphs"]) == sorted(judge["graphs"])
    assert json.loads((tmp_path / "audit1" / "audit.json").read_text("utf-8"))["judge"] == judge["hash"]


def test_audit_init_and_estimate_take_a_folder(tmp_path):
    graphs = folder(tmp_path, {"alpha": ALPHA, "beta": BETA}, "bool", ALPHA)
    path = items(tmp_path)
    r = invoke("audit", "init", graphs, path, "-o", tmp_path / "init.toml")
    assert r.exit_code == 0, r.output
    assert "(binary judge)" in r.output
    text = (tmp_path / "init.toml").read_text("utf-8")
    assert 'judge = "graphs"' in text and "partial_completion" in text
    r = invoke("audit", tmp_path / "init.toml", "--estimate", "--format", "json")
    assert r.exit_code == 0, r.output


def test_changing_one_graph_of_the_folder_is_another_judge(tmp_path):
    graphs = folder(tmp_path, {"alpha": ALPHA, "beta": BETA}, "bool", ALPHA)
    items(tmp_path)
    s = suite(tmp_path, 'judge = "graphs"', 'operators = ["typo_noise"]\n')
    out = tmp_path / "audit"
    assert invoke("audit", s, "--out", out, "--no-cache").exit_code == 1
    (graphs / "beta.rbg").write_text(BETA.replace("answer", "four").format(name="beta"), "utf-8")
    r = invoke("audit", s, "--out", out, "--no-cache")
    assert r.exit_code == 2 and "holds an audit with another judge" in r.output


def test_graphs_of_a_folder_that_answer_in_different_types_are_refused_naming_the_odd_one(tmp_path):
    folder(tmp_path, {"alpha": ALPHA, "beta": BETA}, "bool", ALPHA)
    items(tmp_path)
    (tmp_path / "direct.rbg").write_text(GOOD.format(name="direct"), "utf-8")  # gamma's fallback
    s = suite(tmp_path, 'judge = "graphs"', 'operators = ["typo_noise"]\n')
    r = invoke("audit", s, "--out", tmp_path / "audit", "--no-cache")
    assert r.exit_code == 2
    assert f"`{tmp_path / 'direct.rbg'}` in ordinal (ordinal[1, 5]), `alpha` in binary (bool)" in r.output
    assert "every graph of a folder (its fallbacks too) must answer in one type" in r.output


def runs_without_latency(out: Path) -> list[tuple]:
    """The lines of `runs.jsonl` in order, each trace's latencies blanked."""
    lines = [json.loads(line) for line in (out / "runs.jsonl").read_text("utf-8").splitlines()]
    for line in lines:
        for per in line["trace"]["criteria"].values():
            for j in per.values():
                j["latency_ms"] = None
    return [(line["item"], line["variant"], line["repeat"], line["trace"]) for line in lines]


def prompt_score(body: dict) -> str:
    """A judge whose score depends on the prompt it is sent: another graph
    or another patch gives another judgment, so a judgment routed to the
    wrong one shows."""
    text = json.dumps(body["messages"], sort_keys=True)
    return json.dumps({"reason": "Scored.", "score": 1 + sum(text.encode()) % 5})


def test_judge_side_patches_are_made_per_graph_and_judged_on_that_graphs_items(tmp_path):
    programs = {"alpha": GOOD, "beta": GOOD.replace("How well", "How clearly")}
    folder(tmp_path, programs, "ordinal[1, 5]", GOOD.replace("How well", "How directly"))
    items(tmp_path)
    with FaultServer(prompt_score) as server:
        judge = f'[judge]\ngraph = "graphs"\nbase_url = "{server.url}"\nmax_retries = 0\n'
        for c in (4, 1):
            s = suite(
                tmp_path,
                f'gold = false\nconcurrency = {c}\noperators = ["instruction_ordering", "typo_noise"]\n' + judge,
                "",
                f"suite{c}.toml",
            )
            out = tmp_path / f"audit{c}"
            r = invoke("audit", "preview", s, "--out", out, "--no-cache")
            assert r.exit_code == 0, r.output
            r = invoke("audit", s, "--out", out, "--no-cache", "--format", "json")
            assert r.exit_code == 1, r.output  # delta's graph did not compile
    # The same judgments, in the same order, at any concurrency (latencies aside).
    lines = runs_without_latency(out)
    assert lines == runs_without_latency(tmp_path / "audit4")
    assert (
        len({t["readout"].get("decision") for *_, t in lines if t["readout"]["status"] == "ok"}) > 1
    )  # the prompts differ
    first, other = (json.loads((tmp_path / d / "report.json").read_text("utf-8")) for d in ("audit1", "audit4"))
    other["suite"]["path"] = first["suite"]["path"]
    assert first == other
    # The preview shows each patch against its own graph's criterion.
    shown = {v["variant"]: v for v in json.loads((out / "preview.json").read_text("utf-8"))["variants"]}
    assert "quality" in shown["beta/instruction_ordering@beta"]["original"]["criteria"]
    sealed = json.loads((out / "sealed.json").read_text("utf-8"))
    direct = str(tmp_path / "direct.rbg")
    by_id = {p["id"]: p for p in sealed["patches"]}
    assert sorted(by_id) == sorted(f"instruction_ordering@{g}" for g in ("alpha", "beta", direct))
    assert {p["graph"] for p in by_id.values()} == {"alpha", "beta", direct}
    # Each patch is of its own graph, and judges only that graph's items.
    patched = {(v["item"], v["patch"]) for v in sealed["variants"] if v["patch"]}
    assert patched == {
        ("alpha", "instruction_ordering@alpha"),
        ("epsilon", "instruction_ordering@alpha"),
        ("beta", "instruction_ordering@beta"),
        ("gamma", f"instruction_ordering@{direct}"),
    }
    recorded = runs(out)
    assert recorded[("beta", "beta/instruction_ordering@beta", 0)]["graph"]["name"] == "beta"
    assert recorded[("epsilon", "epsilon/instruction_ordering@alpha", 1)]["graph"]["name"] == "alpha"
    assert recorded[("gamma", f"gamma/instruction_ordering@{direct}", 0)]["graph"]["name"] == "direct"
    report = json.loads((out / "report.json").read_text("utf-8"))
    assert report["judge"]["compile"]["failed"] == 1 and report["counts"]["failed_judgments"] == 0
    assert any("1 item(s) had no compiled graph and no fallback" in n for n in report["notes"])
    assert report["by_criterion"]["quality"]["graphs"] == 3
