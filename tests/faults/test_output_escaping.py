"""Data never drives the terminal or the markup it is shown in: control
characters from item ids, responses, model replies, rubric strings and paths
reach no standard output, standard error or report.txt raw (the data files
keep the exact text), and labels cannot add HTML or break the structure of a
Markdown, Mermaid or DOT output."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import GOOD as LLM_GRAPH
from llm.fault_server import reply

from rubriclang.cli.main import cli

from .llm_fixtures import fault_server  # noqa: F401 (a fixture)

REPO = Path(__file__).resolve().parents[2]
# ESC sequences (clear screen, retitle, a hyperlink), a C1 CSI, BEL, a
# backspace, a carriage return, a bidi override.
NASTY = "\x1b[2J\x1b]0;owned\x07\x1b]8;;http://x\x1b\\\x9b31m\x08\r\u202e"
OUR_COLOURS = re.compile(r"\x1b\[[0-9;]*m")

ANNOTATED = """\
rubric annotated { version = 1 }
contract { scale = score[1, 5] }
criterion fluent: ordinal[1, 5] = human.annotation { key = "fluent" }
criterion relevant: ordinal[1, 5] = human.annotation { key = "relevant" }
node quality = reduce.weighted_mean(inputs: [fluent, relevant]) { weights = [1, 1] }
sink quality
readout pointwise { output = ordinal[1, 5] }
"""


def controls(text: str) -> set[str]:
    """The characters of `text` a terminal would act on (newlines and tabs aside)."""
    return {ch for ch in text if ch not in "\n\t" and unicodedata.category(ch) in ("Cc", "Cf", "Cs")}


def rbg(*args, **kw):
    return CliRunner().invoke(cli, [str(a) for a in args], **kw)


def shown(result) -> str:
    return result.output + (result.stderr or "")


@pytest.fixture
def traced(tmp_path):
    """(graph, traces, items) for ANNOTATED run on items whose ids and responses hold NASTY."""
    rng = random.Random(3)
    rows = [
        {
            "id": f"item{n}{NASTY}",
            "input": "q",
            "response": f"r{NASTY}",
            "annotations": {"fluent": rng.randint(1, 5), "relevant": rng.randint(1, 5)},
        }
        for n in range(12)
    ]
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(r) + "\n" for r in rows))
    graph = tmp_path / "old.rbg"
    graph.write_text(ANNOTATED)
    traces = tmp_path / "traces.jsonl"
    result = rbg("run", graph, items, "--out", traces)
    assert result.exit_code == 0, result.output
    return graph, traces, rows


# -- terminals -----------------------------------------------------------------------


def test_traces_keep_the_exact_text_of_ids_and_responses(traced):
    _, traces, rows = traced
    records = [json.loads(line) for line in traces.read_text().splitlines()]
    assert [r["item"] for r in records] == [row["id"] for row in rows]


def test_replay_lists_item_ids_with_no_control_character(traced, tmp_path):
    _graph, traces, _ = traced
    new = tmp_path / "new.rbg"
    new.write_text(ANNOTATED.replace("weights = [1, 1]", "weights = [3, 1]"))
    result = rbg("replay", new, traces)
    assert re.search(r"items?: \d -> \d \(item\d", result.output)  # the changed decisions are listed by id
    assert controls(shown(result)) == set()
    assert "\\u001b]0;owned\\u0007" in result.output  # shown, escaped


def test_diff_impact_lists_item_ids_with_no_control_character(traced, tmp_path):
    graph, traces, _ = traced
    new = tmp_path / "new.rbg"
    new.write_text(ANNOTATED.replace("weights = [1, 1]", "weights = [3, 1]"))
    for fmt in ("text", "markdown"):
        result = rbg("diff", graph, new, "--traces", traces, "--format", fmt)
        assert result.exit_code == 1, result.output
        assert "item" in result.output and controls(shown(result)) == set(), fmt


def test_a_model_reply_and_a_path_with_control_characters_reach_no_terminal(fault_server, tmp_path, monkeypatch):
    """The installed `rbg`, as a user runs it: its real standard streams."""
    server = fault_server()
    server.script(*[reply(f"no score here {NASTY}")] * 3)
    g = tmp_path / "g.rbg"
    g.write_text(LLM_GRAPH)
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": f"only{NASTY}", "prompt": "Q?", "response": f"a{NASTY}"}) + "\n")
    out = tmp_path / "t.jsonl"
    base = [sys.executable, "-c", "from rubriclang.cli.main import main; main()"]
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [*base, "run", g, items, "--out", out, "--base-url", server.url], capture_output=True, env=env, timeout=120
    )
    assert done.returncode == 1, done.stderr
    assert NASTY in json.loads(out.read_text())["criteria"]["correct"]["response"]["raw"]  # the trace keeps it
    missing = subprocess.run(
        [*base, "run", tmp_path / f"no{NASTY}.rbg", items, "--out", out], capture_output=True, env=env, timeout=120
    )
    assert missing.returncode == 2
    for proc in (done, missing):
        text = (proc.stdout + proc.stderr).decode()
        assert controls(text) == set(), text


def test_diff_of_prose_with_control_characters_shows_none_even_in_colour(tmp_path):
    old, new = tmp_path / "old.rbg", tmp_path / "new.rbg"
    old.write_text(LLM_GRAPH)
    new.write_text(LLM_GRAPH.replace("How correct is the response?", "How correct \\u001b[2J\\u009b is it?\\u202e"))
    plain = rbg("diff", old, new, "--no-color")
    assert plain.exit_code == 1 and controls(shown(plain)) == set()
    coloured = rbg("diff", old, new, "--color")
    assert OUR_COLOURS.search(coloured.output)  # colour is still on
    assert controls(OUR_COLOURS.sub("", coloured.output)) == set()
    assert "\\u001b[2J" in coloured.output and "\\u009b" in coloured.output


def test_json_on_standard_output_keeps_the_exact_text(traced, tmp_path):
    _, traces, rows = traced
    new = tmp_path / "new.rbg"
    new.write_text(ANNOTATED.replace("weights = [1, 1]", "weights = [3, 1]"))
    result = rbg("diff", traced[0], new, "--traces", traces, "--format", "json")
    assert controls(result.output) == set()
    items = {d["item"] for d in json.loads(result.output)["impact"]["differences"]}
    assert items and items <= {row["id"] for row in rows}


def test_fmt_of_standard_input_writes_the_source_exactly(tmp_path):
    # Unsafe characters in a comment are the user's to keep.
    source = LLM_GRAPH.replace(
        "How correct is the response?", "Is it right? \U0001f468\u200d\U0001f469 \u0628\u200c\u0647"
    )
    source = source.replace("sink correct", "# odd \x85 comment \u202e\nsink correct")
    path = tmp_path / "g.rbg"
    path.write_text(source)
    assert rbg("fmt", path).exit_code == 0
    result = rbg("fmt", "-", input=source)
    assert result.exit_code == 0, result.output
    assert result.output == path.read_text() and "# odd \x85 comment \u202e\n" in result.output


def test_check_shows_paths_and_lines_with_control_characters_printable(tmp_path):
    bad = tmp_path / f"bad{NASTY.replace('/', '')}.rbg"
    bad.write_text('rubric x { version = 1 }\ncriterion c: bool = llm.check { question = "a\\u001b" }\nsink nowhere\n')
    for flag in ("--no-color", "--color"):
        result = rbg("check", bad, flag)
        assert result.exit_code == 1
        assert controls(OUR_COLOURS.sub("", shown(result))) == set(), flag


def test_graph_pictures_carry_no_control_character(tmp_path):
    g = tmp_path / "g.rbg"
    g.write_text(
        LLM_GRAPH.replace("How correct is the response?", "Is it \\u001b[2J right?").replace(
            "{ version = 1 }", '{ version = 1\n description = "d\\u009b" }'
        )
    )
    for fmt in ("mermaid", "dot"):
        result = rbg("graph", g, "--format", fmt)
        assert result.exit_code == 0, result.output
        assert controls(result.output) == set(), fmt


def test_audit_report_txt_and_output_show_item_ids_printable(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    rows = [json.loads(line) for line in (REPO / "examples" / "gsm8k" / "items.jsonl").read_text().splitlines()[:6]]
    for row in rows:
        row["id"] = row["id"] + NASTY
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(r) + "\n" for r in rows))
    suite = tmp_path / "suite.toml"
    suite.write_text(
        f'judge = "{REPO / "examples" / "gsm8k" / "rubric.rbg"}"\nitems = "{items}"\nrepeats = 1\n'
        'operators = ["partial_completion"]\n'
    )
    result = rbg("audit", suite, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    text = (tmp_path / "out" / "report.txt").read_text()
    assert "Missed degradations" in text and "\\u001b[2J" in text  # ids are listed, escaped
    assert controls(text) == set() and controls(shown(result)) == set()
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert any(NASTY in f["variant"] for f in report["misses"])  # the data keeps them


# -- markup ----------------------------------------------------------------------------

# HTML that a label would have injected, as opposed to what the renderer writes.
_OURS = {"<details>", "</details>", "<summary>", "</summary>", "<br/>"}


def _html_outside_code(markdown: str) -> list[str]:
    """Tags in Markdown outside fenced blocks and inline code."""
    text = re.sub(r"(?ms)^(`{3,})[^\n]*\n.*?^\1\s*$", "", markdown)
    text = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", text)
    text = re.sub(r"\\<", "", text)  # an escaped `<` is text
    return [t for t in re.findall(r"</?[A-Za-z][^>]*>?", text) if t not in _OURS]


EVIL = "x\n<img src=x onerror=alert(1)>\n# heading"


def test_markdown_diff_turns_a_label_with_a_newline_and_html_into_text(tmp_path):
    folder = tmp_path / EVIL.replace("/", "")
    folder.mkdir()
    old, new = folder / "old.rbg", folder / "new.rbg"
    old.write_text(LLM_GRAPH)
    new.write_text(LLM_GRAPH.replace("Wrong.", "Mostly wrong."))
    result = rbg("diff", old, new, "--format", "markdown")
    assert result.exit_code == 1, result.output
    md = result.output
    assert md.splitlines()[0].startswith("### Rubric diff: ") and "new.rbg" in md.splitlines()[0]
    assert _html_outside_code(md) == []
    assert not [line for line in md.splitlines() if line.startswith(("<", "# "))]


def test_markdown_impact_table_keeps_one_row_per_item_whatever_the_ids(traced, tmp_path):
    graph, traces, _rows = traced
    records = [json.loads(line) for line in traces.read_text().splitlines()]
    for r in records:
        r["item"] = r["item"].replace("item", EVIL + "|cell")
    evil_traces = tmp_path / "evil.jsonl"
    evil_traces.write_text("".join(json.dumps(r) + "\n" for r in records))
    new = tmp_path / "new.rbg"
    new.write_text(ANNOTATED.replace("weights = [1, 1]", "weights = [3, 1]"))
    md = rbg("diff", graph, new, "--traces", evil_traces, "--format", "markdown").output
    assert _html_outside_code(md) == []
    table = [line for line in md.splitlines() if line.startswith("| ") and "onerror" in line]
    count = re.search(r"\*\*(\d+) decisions? change\*\*", md)
    assert count, md
    changed = int(count.group(1))
    assert changed and len(table) == changed
    assert all(line.count("|") - line.count("\\|") == 4 for line in table)


def test_mermaid_title_and_labels_stay_inside_the_picture(tmp_path):
    g = tmp_path / "g.rbg"
    g.write_text(
        LLM_GRAPH.replace(
            "{ version = 1 }", '{ version = 1\n description = "t\\n---\\n<img src=x onerror=alert(1)>`x` & #35;" }'
        )
    )
    g2 = tmp_path / "g2.rbg"
    g2.write_text(g.read_text().replace("Wrong.", "Mostly wrong."))
    for md in (rbg("graph", g).output, rbg("diff", g, g2, "--format", "markdown").output):
        lines = md.splitlines()
        start = lines.index("---")
        assert lines[start + 2] == "---" and lines[start + 1].startswith("title: ")
        title = lines[start + 1]
        assert "<" not in title and ">" not in title and "&" not in title
        assert (
            json.loads(title.removeprefix("title: "))
            == "demo: t\\u000a---\\u000a<img src=x onerror=alert(1)>`x` & #35;"
        )
        assert _html_outside_code(md) == []


def test_dot_labels_are_escaped_whatever_they_hold(tmp_path):
    g = tmp_path / "g.rbg"
    g.write_text(LLM_GRAPH.replace("How correct is the response?", 'Is \\"it\\" \\\\ right?\\n<b>\\u001b'))
    result = rbg("graph", g, "--format", "dot")
    assert result.exit_code == 0, result.output
    dot = result.output
    found = re.search(r'tooltip=("(?:[^"\\]|\\.)*")', dot)
    assert found, dot
    tooltip = found.group(1)
    assert tooltip == '"Is \\"it\\" \\\\ right?\\n<b>\\\\u001b"'
    assert controls(dot) == set()


# -- the sanitizer ---------------------------------------------------------------------


def test_printable_keeps_text_newlines_and_tabs_and_replaces_every_control():
    from rubriclang.safetext import one_line, printable

    text = "naïve 日本語 ✓ a\tb\nc"
    assert printable(text) == text
    assert controls(printable(NASTY + "\x00\x7f\x85\u200b\ufeff")) == set()
    assert one_line("a\nb\tc") == "a\\u000ab\\u0009c"


def test_everything_through_the_guard_is_data_and_only_redraw_line_draws():
    import io

    from rubriclang.safetext import _Guarded, redraw_line

    sink = io.StringIO()
    guarded = _Guarded(sink)
    guarded.write("\r  12 judgments\x1b[K")
    guarded.write("item ok\rFORGED")
    redraw_line(guarded, "  13 judgments \x1b[2J")
    assert sink.getvalue() == (
        "\\u000d  12 judgments\\u001b[K" + "item ok\\u000dFORGED" + "\r  13 judgments \\u001b[2J\x1b[K"
    )
    with pytest.raises(TypeError):
        guarded.write(b"bytes")  # type: ignore[arg-type]  # the wrong type, on purpose
