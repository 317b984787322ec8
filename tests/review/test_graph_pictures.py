"""`rbg graph`: Mermaid and DOT goldens, escaping, and SVG through Graphviz.

The goldens sit next to each `graphs/NAME.rbg` as `NAME.mmd` and `NAME.dot`;
regenerate with `RBG_UPDATE_GOLDENS=1 pytest tests/review`.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from goldens import assert_golden

from rubriclang.checker import check_source
from rubriclang.cli.main import cli
from rubriclang.review import dot, mermaid
from rubriclang.review.view import view

HERE = Path(__file__).resolve().parent / "graphs"
CASES = sorted(p.stem for p in HERE.glob("*.rbg"))
TRICKY = HERE / "end_and_quotes.rbg"


def corpus_files() -> set[Path]:
    """Every file the tests of this module read: each graph and its two pictures."""
    return {HERE / f"{name}{suffix}" for name in CASES for suffix in (".rbg", ".mmd", ".dot")}


def _view(name: str):
    result = check_source((HERE / f"{name}.rbg").read_text("utf-8"), f"{name}.rbg")
    assert result.graph is not None
    return view(result.graph)


@pytest.mark.parametrize("suffix", [".mmd", ".dot"])
@pytest.mark.parametrize("name", CASES)
def test_picture_matches_its_golden(name, suffix):
    v = _view(name)
    actual = mermaid.render(v) if suffix == ".mmd" else dot.render(v)
    assert_golden(HERE / f"{name}{suffix}", actual, f"{name}{suffix}")


def test_cli_prints_the_same_picture_as_the_golden():
    for fmt, suffix in (("mermaid", ".mmd"), ("dot", ".dot")):
        result = CliRunner().invoke(cli, ["graph", str(TRICKY), "--format", fmt])
        assert result.exit_code == 0, result.output
        assert result.output == TRICKY.with_suffix(suffix).read_text("utf-8")


def test_mermaid_uses_generated_ids_so_a_node_named_end_cannot_break_it():
    text = mermaid.render(_view("end_and_quotes"))
    node_lines = [line.strip() for line in text.splitlines() if re.match(r"\s+n\d+[\[({]", line)]
    assert len(node_lines) == 6
    assert any(line.startswith('n4{{"end<br/>') for line in node_lines)
    assert not re.search(r"^\s*end\b", text, re.M)


def test_titles_and_labels_are_quoted_and_escaped():
    text = mermaid.render(_view("end_and_quotes"))
    assert 'title: "tricky: Says \\"done\\" at the end #1 \\u003cb\\u003e"' in text
    assert mermaid.escape('say "hi" #1 <b>') == "say #quot;hi#quot; #35;1 #lt;b#gt;"
    d = dot.render(_view("end_and_quotes"))
    assert 'label="tricky: Says \\"done\\" at the end #1 <b>"' in d
    assert 'tooltip="Is the \\"answer\\" right? Say \\\\n if unsure."' in d
    assert dot.quote('a "b" \\ c\nd') == '"a \\"b\\" \\\\ c\\nd"'


def test_edges_are_labelled_with_their_port_slot():
    d = dot.render(_view("end_and_quotes"))
    assert 'n0 -> n4 [label="inputs[0]"];' in d
    assert 'n2 -> n5 [label="when"];' in d


def test_sink_is_marked():
    assert "peripheries=2" in dot.render(_view("end_and_quotes"))
    assert "class n5 sink" in mermaid.render(_view("end_and_quotes"))


def test_svg_without_graphviz_is_a_clear_error(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)
    result = CliRunner().invoke(cli, ["graph", str(TRICKY), "--format", "svg"])
    assert result.exit_code == 2
    assert "Graphviz's `dot` is not installed" in result.output and "--format dot" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_svg_runs_graphviz_on_the_dot_text(tmp_path, monkeypatch):
    # A stand-in for Graphviz: wraps what it reads in an <svg> element.
    fake = tmp_path / "dot"
    fake.write_text('#!/bin/sh\ntest "$1" = "-Tsvg" || exit 3\necho "<svg>"; cat; echo "</svg>"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    result = CliRunner().invoke(cli, ["graph", str(TRICKY), "--format", "svg"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("<svg>\ndigraph rubric {")


def test_a_graph_with_errors_exits_2_with_its_diagnostics(tmp_path):
    bad = tmp_path / "bad.rbg"
    bad.write_text(TRICKY.read_text().replace("sink capped", "sink caped"))
    result = CliRunner().invoke(cli, ["graph", str(bad)])
    assert result.exit_code == 2
    assert "RB101" in result.output and "Traceback" not in result.output
