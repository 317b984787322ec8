"""Huge lines in a `.rbg` (issue 25, item 9): the front end's memory is a
small constant times the file's size (an 8 MB string literal took 2.7 GB to
lex, a backtracking regex keeping a frame per character), and every
diagnostic stays small: an excerpt shows a fixed width of its line around
the column, and a quoted name or value in a message is cut the same way, in
every format."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubriclang.cli.main import cli
from rubriclang.safetext import EXCERPT_WIDTH
from rubriclang.syntax.strings import LONG_STRING_BODY, STRING_BODY

from .peak_memory import peak_rss

RBG = str(Path(sys.executable).with_name("rbg"))
MB = 1024 * 1024

GRAPH = """\
rubric r { version = 1, description = DESCRIPTION }
contract { scale = bool }
criterion correct: bool = rule.matches_reference { mode = numeric }
sink SINK
readout pointwise { output = bool }
"""


def graph(description: str = '"short"', sink: str = "correct", tail: str = "") -> str:
    return GRAPH.replace("DESCRIPTION", description).replace("SINK", sink) + tail


# Each: a file with one line of about 8 MB, and whether it checks clean.
HUGE = {
    "string literal": (graph(description='"' + "a" * (8 * MB) + '"'), 0),
    "string of escapes": (graph(description='"' + "\\n" * (4 * MB) + '"'), 0),
    "triple-quoted string": (graph(description='"""' + '"b' * (4 * MB) + '"""'), 0),
    "comment": ("#" + "c" * (8 * MB) + "\n" + graph(), 0),
    "garbage token": (graph(tail="x" * (8 * MB) + "\n"), 1),
    "garbage characters": (graph(tail="@" * (8 * MB) + "\n"), 1),
    "unterminated string": (graph(tail='criterion z: bool = rule.length { over = "' + "q" * (8 * MB) + "\n"), 1),
    "unknown name": (graph(sink="n" * (8 * MB)), 1),
    "integer of 8M digits": (
        graph(tail="node d = gate.veto(value: correct, when: correct) { to = " + "9" * (8 * MB) + " }"),
        1,
    ),
}


@pytest.mark.parametrize("case", list(HUGE))
def test_checking_an_8_mb_line_takes_a_small_multiple_of_its_size_and_says_little(tmp_path, case):
    text, status = HUGE[case]
    path = tmp_path / "huge.rbg"
    path.write_text(text)
    peak = peak_rss(RBG, "check", str(path))
    assert peak.status == status, peak.head
    assert "Traceback" not in peak.head
    # The interpreter and the libraries take about 40 MB, the text itself 8;
    # a per-character cost of even 20 bytes would pass 200 MB.
    assert peak.mb < 200, f"{case}: {peak.mb:.0f} MB"
    assert peak.size < 4096, peak.head  # was the whole line, twice with the carets


def _one_diagnostic(fmt: str, text: str, tmp_path: Path) -> str:
    path = tmp_path / "g.rbg"
    path.write_text(text)
    r = CliRunner().invoke(cli, ["check", "--format", fmt, str(path)])
    assert r.exit_code == 1, r.output
    return r.output


def test_a_text_excerpt_shows_a_window_around_the_column_with_ellipses(tmp_path):
    prefix = "p" * 5000
    out = _one_diagnostic("text", graph(tail=f"# {prefix}\nnode z = {prefix} ^ oops\n"), tmp_path)
    source, carets = out.splitlines()[1:3]
    assert source.startswith("7 | ...") and source.endswith("^ oops")
    assert len(source) <= len("6 | ") + EXCERPT_WIDTH + 2 * len("...")
    # The caret still points at the unexpected character.
    assert carets.index("^") == source.index("^ oops")


def test_a_short_line_is_shown_whole_as_before(tmp_path):
    out = _one_diagnostic("text", graph(sink="nope"), tmp_path)
    assert "4 | sink nope\n  |      ^^^^\n" in out


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_a_huge_name_is_quoted_cut_in_every_format(tmp_path, fmt):
    name = "n" * 100_000
    out = _one_diagnostic(fmt, graph(sink=name), tmp_path)
    assert len(out) < 8000
    assert "n" * (EXCERPT_WIDTH - 3) + "...`" in out
    if fmt == "json":
        (d,) = json.loads(out)
        assert d["message"].startswith("unknown name `nnn") and len(d["message"]) < 2 * EXCERPT_WIDTH


def test_the_grammar_spells_the_string_literals_as_the_scanners_do():
    lark = (Path(__file__).parents[2] / "grammar" / "rubric.lark").read_text()
    assert f'STRING: /"{STRING_BODY}"/\n' in lark
    assert f'LONG_STRING.2: /"""{LONG_STRING_BODY}"""/s\n' in lark
