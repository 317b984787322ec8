"""No writer follows a symbolic link out of the folder it was given (issue
25, item 6): a link planted in `rbg view --export DIR` or `rbg compile
--out-dir DIR` is replaced by the file the command writes, and the file it
pointed to is untouched; a subfolder linked outside is refused; an audit
folder holding a link out is refused before anything is written. An
output the user names directly (`-o link`) is written through its link,
as documented in rubriclang/safeio.py."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest
from llm.test_compile_many import scripted

from faults.run_fixtures import rbg, setup, write_jsonl
from faults.test_full_disk import SPEC

from .llm_fixtures import fault_server  # noqa: F401 (a fixture)

SECRET = b"a file outside the folder, which no export may touch\n"


def _outside(tmp_path: Path) -> Path:
    victim = tmp_path / "outside" / "precious.txt"
    victim.parent.mkdir()
    victim.write_bytes(SECRET)
    return victim


@pytest.fixture
def traces(tmp_path):
    pytest.importorskip("starlette")
    g, items = setup(tmp_path)
    assert rbg("run", g, items, "--out", tmp_path / "t.jsonl").exit_code == 0
    return tmp_path / "t.jsonl"


@pytest.mark.parametrize("name", ["index.html", "static/view.js"])
def test_view_export_replaces_a_planted_link_and_never_writes_through_it(tmp_path, traces, name):
    victim = _outside(tmp_path)
    site = tmp_path / "site"
    (site / "static").mkdir(parents=True)
    os.symlink(victim, site / name)
    r = rbg("view", traces, "--export", site)
    assert r.exit_code == 0, r.output
    assert victim.read_bytes() == SECRET
    assert not (site / name).is_symlink() and (site / name).stat().st_size > 0


def test_view_export_refuses_a_subfolder_linked_outside(tmp_path, traces):
    victim = _outside(tmp_path)
    site = tmp_path / "site"
    site.mkdir()
    os.symlink(victim.parent, site / "static")
    r = rbg("view", traces, "--export", site)
    assert r.exit_code == 2 and "a symbolic link leads out of" in r.output and "Traceback" not in r.output, r.output
    assert os.listdir(victim.parent) == ["precious.txt"] and victim.read_bytes() == SECRET


@pytest.mark.parametrize("name", ["s1.rbg", "s1.compile.jsonl"])
def test_compile_out_dir_never_writes_through_a_planted_link(tmp_path, fault_server, name):
    server = fault_server(answer=scripted({"helpful": "good"}))
    victim = _outside(tmp_path)
    specs = write_jsonl(tmp_path / "specs.jsonl", [{"id": "s1", **tomllib.loads(SPEC)}])
    folder = tmp_path / "graphs"
    folder.mkdir()
    os.symlink(victim, folder / name)
    r = rbg("compile", specs, "--out-dir", folder, "--base-url", server.url, "--no-cache", "--model", "judge")
    assert r.exit_code == 0, r.output
    assert victim.read_bytes() == SECRET
    assert not (folder / name).is_symlink()
    assert (folder / "s1.rbg").read_text("utf-8").startswith("# rbg compile: spec s1 ")


def test_an_audit_folder_holding_a_link_out_is_refused_before_anything_is_written(tmp_path):
    from faults.test_locks import _suite

    victim = _outside(tmp_path)
    out = tmp_path / "audit"
    out.mkdir()
    os.symlink(victim, out / "judgments.jsonl")
    r = rbg("audit", "run", _suite(tmp_path), "--out", out)
    assert r.exit_code == 2 and "a symbolic link leads out of" in r.output and "Traceback" not in r.output, r.output
    assert victim.read_bytes() == SECRET
    assert sorted(os.listdir(out)) == ["judgments.jsonl"]


def test_an_output_the_user_names_as_a_link_is_written_through_it(tmp_path):
    _g, items = setup(tmp_path)
    target = tmp_path / "versions" / "items-v2.jsonl"
    target.parent.mkdir()
    target.write_text("older\n", encoding="utf-8")
    os.symlink(target, tmp_path / "current.jsonl")
    r = rbg("items", "convert", items, "-o", tmp_path / "current.jsonl")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "current.jsonl").is_symlink()
    assert target.read_text("utf-8").count("\n") == 6
