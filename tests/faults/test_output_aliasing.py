"""No command writes over what it reads, nor over a trace: `rbg batch
export -o`, `items convert -o`, `fit -o`, `compile -o/--log`, `run --out`
and `batch import --out` refuse an output that is one of their inputs
(the same name, a symbolic link to it, a hard link to it) or, for all but
the two that append traces, an existing trace file; exit 2, the file byte
for byte as it was (issue 25, item 1)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from llm.test_batch import GRAPH as LLM_GRAPH
from llm.test_batch import ITEMS as LLM_ITEMS

from faults.run_fixtures import SPEC, assert_clean_error, rbg, setup, traces, write_jsonl


def _llm_files(tmp_path: Path) -> tuple[Path, Path]:
    g = tmp_path / "llm.rbg"
    g.write_text(LLM_GRAPH, encoding="utf-8")
    return g, write_jsonl(tmp_path / "llm_items.jsonl", LLM_ITEMS)


def _alias(tmp_path: Path, target: Path, how: str) -> Path:
    """A path naming `target`: itself, a symbolic link or a hard link."""
    if how == "same":
        return target
    alias = tmp_path / f"alias-{how}.jsonl"
    (os.symlink if how == "symlink" else os.link)(target, alias)
    return alias


def _refused(result, files: dict[Path, bytes], where: str) -> None:
    assert_clean_error(result, where)
    assert "would destroy" in result.output, result.output
    for path, before in files.items():
        assert path.read_bytes() == before, path


HOW = ["same", "symlink", "hardlink"]


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("which", ["items", "graph"])
def test_batch_export_refuses_to_write_over_its_items_or_its_graph(tmp_path, which, how):
    g, items = _llm_files(tmp_path)
    target = items if which == "items" else g
    before = {g: g.read_bytes(), items: items.read_bytes()}
    out = _alias(tmp_path, target, how)
    r = rbg("batch", "export", g, items, "-o", out, "--model", "judge")
    _refused(r, before, str(out))


def test_batch_export_refuses_to_write_over_a_prompt_template_of_its_graph(tmp_path):
    _, items = _llm_files(tmp_path)
    (tmp_path / "judge.md").write_text("## user\nRate {{response}} for {{input}}.\n", encoding="utf-8")
    g = tmp_path / "t.rbg"
    g.write_text(
        LLM_GRAPH.replace('question = "How correct is the response?"', 'prompt = "judge.md"'), encoding="utf-8"
    )
    template = tmp_path / "judge.md"
    before = {template: template.read_bytes()}
    r = rbg("batch", "export", g, items, "-o", template, "--model", "judge")
    _refused(r, before, "prompt template")


@pytest.mark.parametrize("command", ["batch export", "items convert", "fit", "compile"])
def test_no_command_but_run_writes_over_an_existing_trace(tmp_path, command):
    _, _, trace = traces(tmp_path, n=12)
    before = {trace: trace.read_bytes()}
    if command == "batch export":
        g, items = _llm_files(tmp_path)
        r = rbg("batch", "export", g, items, "-o", trace, "--model", "judge")
    elif command == "items convert":
        src = write_jsonl(tmp_path / "src.jsonl", [{"id": "a", "input": "x", "response": "y"}])
        r = rbg("items", "convert", src, "-o", trace)
    elif command == "fit":
        r = rbg("fit", tmp_path / "g.rbg", tmp_path / "items.jsonl", "-o", trace, "--folds", "0")
    else:
        spec = tmp_path / "spec.toml"
        spec.write_text(SPEC, encoding="utf-8")
        r = rbg("compile", spec, "-o", trace, "--base-url", "http://127.0.0.1:9/v1", "--model", "m")
    _refused(r, before, "is a trace file")


@pytest.mark.parametrize("how", HOW)
def test_items_convert_refuses_to_write_over_its_source_under_any_name(tmp_path, how):
    src = write_jsonl(tmp_path / "src.jsonl", [{"id": "a", "input": "x", "response": "y"}])
    before = {src: src.read_bytes()}
    r = rbg("items", "convert", src, "-o", _alias(tmp_path, src, how))
    _refused(r, before, "source file SRC")


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("which", ["graph", "items"])
def test_fit_refuses_to_write_over_its_graph_or_items_under_any_name(tmp_path, which, how):
    g, items = setup(tmp_path, n=12)
    target = g if which == "graph" else items
    before = {g: g.read_bytes(), items: items.read_bytes()}
    r = rbg("fit", g, items, "-o", _alias(tmp_path, target, how), "--folds", "0")
    _refused(r, before, which)


def test_compile_refuses_to_write_over_its_spec_and_a_log_over_the_graph(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC, encoding="utf-8")
    before = {spec: spec.read_bytes()}
    url = ("--base-url", "http://127.0.0.1:9/v1", "--model", "m")
    _refused(rbg("compile", spec, "-o", spec, *url), before, "spec file")
    _refused(rbg("compile", spec, "-o", tmp_path / "x.rbg", "--log", spec, *url), before, "spec file")
    r = rbg("compile", spec, "-o", tmp_path / "x.rbg", "--log", tmp_path / "x.rbg", *url)
    assert r.exit_code == 2 and "--log and -o/--out name the same file" in r.output, r.output


@pytest.mark.parametrize("how", HOW)
def test_run_refuses_an_out_that_is_its_items_or_its_annotations(tmp_path, how):
    g, items = setup(tmp_path)
    table = write_jsonl(tmp_path / "notes.jsonl", [{"item": "i0", "key": "q", "value": 3}])
    before = {items: items.read_bytes(), table: table.read_bytes()}
    _refused(rbg("run", g, items, "--out", _alias(tmp_path, items, how)), before, "items file")
    r = rbg("run", g, items, "--out", table, "--annotations", table)
    _refused(r, before, "--annotations table")


def test_batch_import_refuses_an_out_that_is_its_results(tmp_path):
    from llm.test_batch import export, result_line, write_results

    g, items = _llm_files(tmp_path)
    requests = export(g, items, tmp_path / "requests.jsonl")
    results = write_results(tmp_path / "results.jsonl", [result_line(req, n) for n, req in enumerate(requests)])
    before = {results: results.read_bytes()}
    args = ("--model", "judge", "--identity", "test-identity", "--cache", tmp_path / "c.sqlite")
    r = rbg("batch", "import", g, items, results, "--out", results, *args)
    _refused(r, before, "batch results file")


def test_audit_init_refuses_to_write_over_its_items_even_with_force(tmp_path):
    g, items = setup(tmp_path)
    before = {items: items.read_bytes()}
    _refused(rbg("audit", "init", g, items, "-o", items, "--force"), before, "items file")


def test_an_output_that_is_no_input_is_written(tmp_path):
    g, items = _llm_files(tmp_path)
    out = tmp_path / "requests.jsonl"
    out.write_text("an older export\n", encoding="utf-8")
    r = rbg("batch", "export", g, items, "-o", out, "--model", "judge")
    assert r.exit_code == 0, r.output
    assert all(json.loads(line)["custom_id"] for line in out.read_text("utf-8").splitlines())
    assert sorted(os.listdir(tmp_path)) == ["llm.rbg", "llm_items.jsonl", "requests.jsonl"]  # no lock left


@pytest.mark.parametrize("command", ["batch export", "items convert", "fit", "compile", "audit init"])
def test_an_output_that_is_a_pipe_is_refused_never_replaced_by_a_file(tmp_path, command):
    # An atomic rewrite of /dev/null (as root) would replace the device by a file.
    g, items = setup(tmp_path, n=12)
    out = tmp_path / "out.fifo"
    os.mkfifo(out)
    llm, llm_items = _llm_files(tmp_path)
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC, encoding="utf-8")
    args = {
        "batch export": ("batch", "export", llm, llm_items, "-o", out, "--model", "judge"),
        "items convert": ("items", "convert", items, "-o", out),
        "fit": ("fit", g, items, "-o", out, "--folds", "0"),
        "compile": ("compile", spec, "-o", out, "--base-url", "http://127.0.0.1:9/v1", "--model", "m"),
        "audit init": ("audit", "init", g, items, "-o", out, "--force"),
    }[command]
    r = rbg(*args)
    assert_clean_error(r, f"`{out}` is a pipe: it must be a regular file")
    assert stat.S_ISFIFO(os.lstat(out).st_mode)
