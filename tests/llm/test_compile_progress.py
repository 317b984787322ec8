"""`rbg compile --out-dir` is not silent: in a log it names its phase and
counts the specs compiled this time (a spec can take minutes on a small
model); with `--format json` the log stays clean for the summary."""

from __future__ import annotations

import json

from .fault_server import FaultServer
from .test_compile_many import PLAN, compile_many, scripted, spec_line, write_specs


def test_compiling_a_folder_names_its_phase_and_counts_the_specs_compiled(tmp_path):
    specs = write_specs(tmp_path / "specs.jsonl", [spec_line(s) for s in PLAN])
    out = tmp_path / "graphs"
    with FaultServer(scripted(PLAN)) as server:
        r = compile_many(specs, out, server.url, "--concurrency", "1")
    assert r.exit_code == 1, r.output  # gamma failed within the budget
    assert f"rbg compile: compiling the specs not yet in {out} (of 3)\n" in r.stderr
    assert "  1 specs, " in r.stderr and "  3 specs, " in r.stderr
    assert "Compiled 2 of 3 specs" in r.stdout


def test_a_json_summary_gets_no_progress_lines_beside_it(tmp_path):
    specs = write_specs(tmp_path / "specs.jsonl", [spec_line(s) for s in PLAN])
    with FaultServer(scripted(PLAN)) as server:
        r = compile_many(specs, tmp_path / "g", server.url, "--format", "json")
    assert r.stderr == ""
    assert json.loads(r.stdout)["compiled"] == 2
