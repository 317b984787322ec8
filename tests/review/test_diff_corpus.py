"""The diff corpus: pairs of rubric versions with golden text, JSON and Markdown.

Each folder of `tests/corpus/diff/` holds `old.rbg`, `new.rbg` and what
`rbg diff old.rbg new.rbg` prints in each format: `expected.txt`,
`expected.json`, `expected.md`. Regenerate them with
`RBG_UPDATE_GOLDENS=1 pytest tests/review` and review the diff like any
other change.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from goldens import assert_golden

from rubriclang.checker import check_source
from rubriclang.review.diff import ADD, REMOVE, diff_graphs
from rubriclang.review.render import Report, render

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "diff"
CASES = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())
GOLDENS = {"text": "expected.txt", "json": "expected.json", "markdown": "expected.md"}


def corpus_files() -> set[Path]:
    """Every file the tests of this module read: both versions and each golden."""
    return {CORPUS / case / name for case in CASES for name in ("old.rbg", "new.rbg", *GOLDENS.values())}


def _graph(case: str, side: str):
    result = check_source((CORPUS / case / f"{side}.rbg").read_text("utf-8"), f"{side}.rbg")
    assert result.graph is not None, [str(d) for d in result.errors]
    return result.graph


def _report(case: str) -> Report:
    old, new = _graph(case, "old"), _graph(case, "new")
    return Report("old.rbg", "new.rbg", old, new, diff_graphs(old, new))


def test_the_corpus_covers_the_kinds_of_change():
    assert len(CASES) >= 8
    assert {
        "reformat_only",
        "param_change",
        "prompt_word_diff",
        "rewire",
        "add_remove_nodes",
        "sink_moved",
        "readout_contract",
        "type_change",
    } <= set(CASES)


@pytest.mark.parametrize("fmt", sorted(GOLDENS))
@pytest.mark.parametrize("case", CASES)
def test_case_renders_as_its_golden(case, fmt):
    assert_golden(CORPUS / case / GOLDENS[fmt], render(fmt, _report(case)), f"{case} ({fmt})")


@pytest.mark.parametrize("case", CASES)
def test_every_version_equals_itself(case):
    for side in ("old", "new"):
        g = _graph(case, side)
        assert not diff_graphs(g, g).changed


@pytest.mark.parametrize("case", CASES)
def test_reversing_a_diff_swaps_added_and_removed(case):
    old, new = _graph(case, "old"), _graph(case, "new")
    forward, backward = diff_graphs(old, new), diff_graphs(new, old)
    assert [(c.section, c.name, c.action) for c in forward.changes] == [
        (c.section, c.name, {ADD: REMOVE, REMOVE: ADD}.get(c.action, c.action)) for c in backward.changes
    ]


def test_only_the_reformat_case_has_no_semantic_change():
    unchanged = [case for case in CASES if not _report(case).diff.changed]
    assert unchanged == ["reformat_only"]


@pytest.mark.parametrize("case", CASES)
def test_json_is_sorted_and_names_every_change(case):
    report = _report(case)
    text = render("json", report)
    doc = json.loads(text)
    assert text == json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert doc["schema"] == "rubriclang.diff/1"
    assert [(c["section"], c["name"]) for c in doc["changes"]] == [(c.section, c.name) for c in report.diff.changes]
    assert doc["changed"] == report.diff.changed


def test_markdown_picture_marks_added_changed_and_removed_nodes():
    md = render("markdown", _report("add_remove_nodes"))
    picture = md.split("```mermaid\n", 1)[1].split("\n```", 1)[0]
    ids = {name: node_id for node_id, name in re.findall(r'^  (n\d+)\W+"(\w+)<br/>', picture, re.M)}
    assert f"class {ids['clear']} removed" in picture  # a ghost of OLD's node
    assert f"{ids['clear']} -.->" in picture  # with OLD's edge, dashed
    assert f"class {ids['boilerplate']},{ids['padded']} added" in picture
    assert f"class {ids['quality']},{ids['concise']} changed" in picture  # graph order


def test_markdown_fences_outgrow_backticks_in_prompts():
    old = check_source(
        (CORPUS / "param_change" / "old.rbg")
        .read_text()
        .replace("over = 400", 'over = 400 }\ncriterion fenced: bool = rule.regex { pattern = "```"'),
        "old.rbg",
    ).graph
    new = check_source(
        (CORPUS / "param_change" / "old.rbg")
        .read_text()
        .replace("over = 400", 'over = 400 }\ncriterion fenced: bool = rule.regex { pattern = "````"'),
        "new.rbg",
    ).graph
    md = render("markdown", Report("old.rbg", "new.rbg", old, new, diff_graphs(old, new)))
    assert '~ pattern: "```" -> "````"' in md
    assert "`````diff\n" in md and "\n`````" in md
