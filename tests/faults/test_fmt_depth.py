"""Deeply nested values: every tool handles values up to the nesting limit
(64 lists and maps), and refuses deeper ones with RB006 at the outermost
bracket, the same in `rbg check`, `rbg fmt` (files, --diff, --check,
stdin), the language server and every other reader of `.rbg` files, never
a RecursionError."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rubriclang.checker import check_source
from rubriclang.cli.main import cli
from rubriclang.fmt import format_source
from rubriclang.lsp.analysis import analyse
from rubriclang.syntax import parse
from rubriclang.syntax.build import MAX_NESTING


def _lists(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


def _maps(depth: int) -> str:
    return '{ "a": ' * depth + "1" + " }" * depth


def _mixed(depth: int) -> str:
    text = '"x"'
    for level in range(depth):
        text = f"[{text}, 2]" if level % 2 else f'{{ "k": {text} }}'
    return text


SHAPES = {"lists": _lists, "maps": _maps, "mixed": _mixed}


def _rubric(value: str) -> str:
    return (
        "rubric deep { version = 1 }\n\ncontract { scale = bool }\n\n"
        f'criterion valid: bool = rule.json_valid {{ schema = {{ "default": {value} }} }}\n'
        "sink valid\n\nreadout pointwise { output = bool }\n"
    )


def _rbg(*args, input=None):
    return CliRunner().invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_values_at_the_nesting_limit_are_checked_and_formatted(tmp_path, shape):
    # The schema map itself is one level: the value inside it takes the rest.
    text = _rubric(SHAPES[shape](MAX_NESTING - 1))
    result = check_source(text, "deep.rbg")
    assert not [d for d in result.diagnostics if d.is_error], result.diagnostics
    formatted = format_source(text, "deep.rbg").output
    assert formatted is not None and format_source(formatted, "deep.rbg").output == formatted
    assert parse(formatted).module is not None
    path = tmp_path / "deep.rbg"
    path.write_text(text)
    for args in (["fmt", "--diff", path], ["fmt", path], ["fmt", "--check", path], ["check", path], ["graph", path]):
        r = _rbg(*args)
        # --diff, run first, exits 1 when the file would change, as --check would.
        assert r.exit_code == (formatted != text if args[1] == "--diff" else 0), (args, r.output[-2000:])
    assert _rbg("fmt", "-", input=text).output == formatted
    assert analyse(text, "deep.rbg").graph is not None


def test_a_run_evaluates_a_schema_at_the_nesting_limit(tmp_path):
    schema = '{ "type": "array", "items": ' * (MAX_NESTING // 2) + '{ "type": "number" }' + " }" * (MAX_NESTING // 2)
    g = tmp_path / "g.rbg"
    g.write_text(_rubric("1").replace('{ "default": 1 }', schema))
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "a", "input": "?", "response": "[1]"}) + "\n")
    r = _rbg("run", g, items, "--out", tmp_path / "t.jsonl")
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 200, 5000])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_deeper_values_are_rb006_at_the_outermost_bracket_everywhere(tmp_path, shape, depth):
    text = _rubric(SHAPES[shape](depth))
    column = text.splitlines()[4].index("schema = ") + len("schema = ") + 1  # the outermost bracket
    diags = parse(text, "deep.rbg").diagnostics
    assert [(d.code, d.span.line, d.span.column) for d in diags] == [("RB006", 5, column)]
    assert f"nested {depth + 1} deep" in diags[0].message  # the schema map counts too
    path = tmp_path / "deep.rbg"
    path.write_text(text)
    where = f"{path}:5:{column}: RB006"
    check = _rbg("check", path)
    assert check.exit_code == 1 and where in check.output
    for args in (["fmt", path], ["fmt", "--diff", path], ["fmt", "--check", path]):
        r = _rbg(*args)
        assert r.exit_code == check.exit_code and where in r.output and "Traceback" not in r.output, args
    assert path.read_text() == text
    stdin = _rbg("fmt", "-", "--stdin-filename", path, input=text)
    assert stdin.exit_code == 1 and where in stdin.output
    assert _rbg("graph", path).exit_code == 2
    assert _rbg("diff", path, path).exit_code == 2
    assert "RB006" in {d.code for d in analyse(text, "deep.rbg").diagnostics}
