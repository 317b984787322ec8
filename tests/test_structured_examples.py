"""The structured-data examples (examples/begin, faithdial, ragchecker,
tau_bench, bfcl) are what their build scripts make from ../shared/data, byte
for byte, and their items fit the shapes their judges will declare."""

from __future__ import annotations

import filecmp
import subprocess
import sys
from pathlib import Path

import pytest

from rubriclang.checker import check_source
from rubriclang.interp.items import read_items

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"

# example folder -> (script, data set folder, item declaration, readout)
EXAMPLES = {
    "begin": ("build_begin.py", "begin_wow", "input: conversation\n  documents: documents", "pointwise"),
    "faithdial": ("build_faithdial.py", "faithdial_audit", "input: conversation\n  documents: documents", "pointwise"),
    "ragchecker": ("build_ragchecker.py", "ragchecker_meta", "reference: text", "pairwise"),
    "tau_bench": (
        "build_tau_bench.py",
        "tau_bench_airline",
        "response: conversation\n  actions: json\n  outputs: json\n  user_instruction: text",
        "pointwise",
    ),
    "bfcl": (
        "build_bfcl.py",
        "bfcl_simple",
        "input: conversation\n  response: json\n  functions: json\n  possible_answer: json",
        "pointwise",
    ),
}


def shape(declaration: str, mode: str):
    scale, kind, readout = (
        ("bool", "bool", "output = bool") if mode == "pointwise" else ("score[1, 5]", "ordinal[1, 5]", "resolve = tie")
    )
    text = (
        f"rubric r {{ version = 1 }}\ncontract {{ scale = {scale} }}\nitem {{\n  {declaration}\n}}\n"
        f'criterion ok: {kind} = recorded.value {{ key = "ok" }}\nsink ok\nreadout {mode} {{ {readout} }}\n'
    )
    graph = check_source(text, "judge.rbg").graph
    assert graph is not None
    return graph.item_shape


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_a_rebuild_from_the_shared_data_is_byte_identical_to_the_committed_example(example, tmp_path):
    script, dataset, _, _ = EXAMPLES[example]
    if not (DATA / dataset).is_dir():
        pytest.skip("shared data not present")
    out = tmp_path / example
    r = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / script), "--data", str(DATA / dataset), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    built = sorted(p.name for p in out.iterdir())
    committed = ROOT / "examples" / example
    assert "items.jsonl" in built and "LICENSE" in built
    for name in built:
        assert filecmp.cmp(out / name, committed / name, shallow=False), f"{example}/{name} differs from a rebuild"
    assert (committed / "README.md").is_file()
    assert (out / "items.jsonl").stat().st_size < 1_000_000


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_the_committed_items_fit_the_declared_shape_and_carry_gold(example):
    _, _, declaration, mode = EXAMPLES[example]
    items = list(read_items(str(ROOT / "examples" / example / "items.jsonl"), shape(declaration, mode)))
    assert 20 <= len(items) <= 500
    assert {it.mode for it in items} == {mode}
    assert sum(it.gold is not None for it in items) >= 0.9 * len(items)


def test_the_bfcl_slice_holds_each_corruption_kind_and_the_accepted_calls_as_gold():
    items = list(read_items(str(ROOT / "examples" / "bfcl" / "items.jsonl"), shape(EXAMPLES["bfcl"][2], "pointwise")))
    kinds = {it.id.split("-", 1)[1] for it in items}
    assert kinds == {"accepted", "wrong_function", "wrong_value", "missing_argument", "extra_argument"}
    assert all(it.gold is (it.id.endswith("-accepted")) for it in items)
