"""The formatter: golden cases in tests/corpus/fmt, refusal of broken files,
and the public API.

Each case is `NAME.rbg` (input) and `NAME.expected.rbg` (the canonical text),
with what the checker says of each (`NAME.diagnostics`, `NAME.expected.diagnostics`,
in tests/goldens.py's format): formatting moves diagnostics, never changes them.
Regenerate the expected files with `RBG_UPDATE_GOLDENS=1 pytest tests/test_fmt.py`
and review the diff.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
from goldens import assert_golden, render_diagnostics

from rubriclang.checker import check_source
from rubriclang.fmt import FormatResult, format_module, format_source
from rubriclang.syntax import ast, parse

CORPUS = Path(__file__).parent / "corpus" / "fmt"
CASES = sorted(p for p in CORPUS.glob("*.rbg") if not p.name.endswith(".expected.rbg"))


def _expected_path(case: Path) -> Path:
    return case.with_name(case.name[: -len(".rbg")] + ".expected.rbg")


def corpus_files() -> set[Path]:
    """Every file the tests of this module read: each case, its canonical text and
    the checker's goldens of both."""
    texts = {p for case in CASES for p in (case, _expected_path(case))}
    return texts | {p.with_suffix(".diagnostics") for p in texts}


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _format(text: str, path: str = "<input>") -> str:
    result = format_source(text, path)
    assert result.output is not None, result.diagnostics
    return result.output


def assert_equivalent(before: str, after: str) -> None:
    """Formatting kept the AST and every comment (black's assert_equivalent)."""
    old, new = parse(before), parse(after)
    assert new.module is not None, new.diagnostics
    assert old.module == new.module
    assert sorted(c.text for c in old.module.comments) == sorted(c.text for c in new.module.comments)


def assert_stable(formatted: str) -> None:
    """Formatting canonical text changes nothing (black's assert_stable)."""
    again = _format(formatted)
    assert again == formatted, _diff(formatted, again, "once", "twice")


def _diff(expected: str, actual: str, a: str = "expected", b: str = "actual") -> str:
    lines = difflib.unified_diff(expected.splitlines(keepends=True), actual.splitlines(keepends=True), a, b)
    return "output differs:\n" + "".join(lines)


def test_corpus_has_enough_cases():
    assert len(CASES) >= 12


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_golden(case: Path):
    assert_golden(_expected_path(case), _format(_read(case), case.name), case.name)


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_formatting_moves_the_checkers_diagnostics_but_changes_none(case: Path):
    said = {}
    for path in (case, _expected_path(case)):
        diagnostics = check_source(_read(path), f"fmt/{case.name}").diagnostics
        assert_golden(path.with_suffix(".diagnostics"), render_diagnostics(diagnostics), path.name)
        said[path] = sorted((d.code, d.severity, d.message, d.notes) for d in diagnostics)
    assert said[case] == said[_expected_path(case)]


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_golden_output_is_stable_and_equivalent(case: Path):
    expected = _read(_expected_path(case))
    assert_equivalent(_read(case), expected)
    assert_stable(expected)


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_golden_output_is_clean_text(case: Path):
    expected = _read(_expected_path(case))
    if expected:
        assert expected.endswith("\n") and not expected.endswith("\n\n")
    for line in expected.split("\n"):
        assert line == line.rstrip(), f"trailing whitespace in {line!r}"
        assert "\t" not in line[: len(line) - len(line.lstrip())], f"tab indentation in {line!r}"


@pytest.mark.parametrize(
    "source, code",
    [
        ("criterion a bool = llm.check", "RB001"),
        ("criterion a: bool = llm.check {", "RB002"),
        ('criterion a: bool = llm.check { question = "open }', "RB003"),
        ('criterion a: bool = llm.check { question = "\\q" }', "RB004"),
        ("criterion a: bool = llm.check { question = @ }", "RB005"),
    ],
)
def test_refuses_a_file_with_syntax_errors(source, code):
    result = format_source(source, "bad.rbg")
    assert result.output is None
    assert not result.changed
    assert [d.code for d in result.diagnostics] == [code]
    assert result.diagnostics[0].span.file == "bad.rbg"


def test_formats_a_file_the_checker_rejects():
    source = "node n = no.such(x: y) { a = 1 }\n"
    assert not check_source(source, "t.rbg").graph
    assert format_source(source).output == source


def test_changed_reports_whether_the_text_moved():
    assert format_source("sink   a").changed
    assert not format_source("sink a\n").changed
    assert isinstance(format_source("sink a"), FormatResult)


def test_empty_file_formats_to_nothing():
    assert format_source("").output == ""
    assert format_source("\n\n  \n").output == ""


def test_byte_order_mark_and_crlf_are_dropped():
    assert format_source("\ufeffsink a\r\n\r\nsink b\r\n").output == "sink a\n\nsink b\n"


def test_a_declaration_that_fits_in_88_columns_stays_on_one_line():
    fits = "criterion c: bool = llm.check { question = " + '"' + "x" * 41 + '"' + " }"
    assert len(fits) == 88
    assert _format(fits) == fits + "\n"
    too_long = fits.replace("x" * 41, "x" * 42)
    assert _format(too_long) == ("criterion c: bool = llm.check {\n" + '  question = "' + "x" * 42 + '"\n}\n')


def test_a_trailing_comment_stays_on_the_first_line_when_the_block_explodes():
    source = "criterion a: bool = llm.check { question = " + '"' + "q" * 60 + '" }  # rbg: ignore[RB304]\n'
    first_line = _format(source).split("\n")[0]
    assert first_line == "criterion a: bool = llm.check {  # rbg: ignore[RB304]"


def test_inline_ignore_still_suppresses_after_formatting():
    question = '"' + "q" * 70 + '"'
    source = (
        "contract { scale = score[1, 5] }\n"
        'criterion a: ordinal[1, 5] = llm.rate { question = "A?" }\n'
        f"criterion unused: bool = llm.check {{ question = {question} }} # rbg: ignore[RB304]\n"
        "sink a\n"
    )

    def codes(text: str) -> list[str]:
        return [d.code for d in check_source(text, "t.rbg").diagnostics]

    assert "RB304" in codes(source.replace("rbg: ignore", "no longer an ignore"))
    formatted = _format(source)
    assert formatted.count("\n") > source.count("\n")  # the long declaration was exploded
    assert codes(formatted) == codes(source)
    assert "RB304" not in codes(formatted)


def test_format_module_prints_a_module_built_in_code():
    module = ast.Module(
        (
            ast.CriterionDecl(
                ast.Name("a"),
                ast.TypeExpr("ordinal", ast.Number(1), ast.Number(5)),
                ast.Dotted(("llm", "rate")),
                ast.Block((ast.Param(ast.Name("question"), ast.String("Q?")),)),
            ),
            ast.SinkDecl(ast.Name("a")),
        )
    )
    text = format_module(module, "")
    assert text == 'criterion a: ordinal[1, 5] = llm.rate { question = "Q?" }\nsink a\n'
    assert parse(text).module == module


# -- the command's exit status: --check and --diff both say whether a file would change


@pytest.mark.parametrize("flags", [["--diff"], ["--check"], ["--check", "--diff"]])
def test_a_dry_run_exits_1_when_a_file_would_change_and_0_when_none_would(tmp_path, flags):
    from click.testing import CliRunner

    from rubriclang.cli.main import cli

    ugly, canonical = tmp_path / "ugly.rbg", tmp_path / "canonical.rbg"
    ugly.write_text("rubric r { version = 1 }\ncontract   { scale = score[1, 5] }\n", "utf-8")
    canonical.write_text(format_source(ugly.read_text("utf-8"), "ugly.rbg").output or "", "utf-8")
    before = ugly.read_text("utf-8")
    changed = CliRunner().invoke(cli, ["fmt", *flags, str(ugly), str(canonical)])
    assert changed.exit_code == 1, changed.output
    assert ("-contract   {" in changed.stdout) == ("--diff" in flags)  # the diff, when asked for
    assert "1 file would be reformatted, 1 file would be left unchanged." in changed.stderr
    assert ugly.read_text("utf-8") == before  # a dry run writes nothing
    clean = CliRunner().invoke(cli, ["fmt", *flags, str(canonical)])
    assert (clean.exit_code, clean.stdout) == (0, "")
