"""The generated LALR tables are the grammar's: the committed module is what
scripts/gen_parse_tables.py makes of grammar/rubric.lark now (a stale module
fails here), and with them a valid file is checked without importing Lark.
tests/test_parser_lexers.py checks that they parse as Lark does."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from conftest import GOOD, SYNTAX_ERROR

from rubriclang.syntax import lalr, lalr_tables, parse
from rubriclang.syntax.build import AstBuilder

ROOT = Path(__file__).resolve().parent.parent
RBG = Path(sys.executable).with_name("rbg")


def _generator():
    spec = importlib.util.spec_from_file_location("gen_parse_tables", ROOT / "scripts" / "gen_parse_tables.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_tables_are_what_the_generator_makes_of_the_grammar_now():
    generator = _generator()
    assert generator.TARGET.read_text("utf-8") == generator.render(), "run scripts/gen_parse_tables.py"
    assert Path(lalr_tables.__file__).resolve() == generator.TARGET.resolve()


def test_the_generators_check_mode_fails_on_stale_tables(monkeypatch, tmp_path, capsys):
    generator = _generator()
    stale = tmp_path / "lalr_tables.py"
    stale.write_text(generator.TARGET.read_text("utf-8").replace("END_STATE = ", "END_STATE = 1 + "), "utf-8")
    monkeypatch.setattr(generator, "TARGET", stale)
    monkeypatch.setattr(generator, "ROOT", tmp_path)
    assert generator.main(["--check"]) == 1
    assert "stale" in capsys.readouterr().err


def test_every_rule_the_tables_reduce_has_its_builder_method_or_is_inlined():
    lalr.Parser(AstBuilder())  # raises where Lark would build a tree the tables cannot
    methods = {callback for origin, _, callback, single, _, _ in lalr_tables.RULES if not single}
    assert {m for m in methods if not m.startswith("_")} <= set(dir(AstBuilder))


def _imported(*args: str) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", str(RBG), *args], capture_output=True, text=True, timeout=60
    )
    return {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}


@pytest.mark.parametrize("command", ["check", "fmt --check"])
def test_check_and_fmt_of_a_valid_file_import_no_lark(write, command):
    modules = _imported(*command.split(), write("good.rbg", GOOD))
    assert "rubriclang.syntax.lalr" in modules  # the measurement itself works
    assert not {m for m in modules if m.split(".")[0] == "lark"}


def test_a_syntax_error_is_reported_by_larks_parser_imported_then(write):
    path = str(write("bad.rbg", SYNTAX_ERROR))
    modules = _imported("check", path)
    assert "lark" in modules and "rubriclang.syntax.larkparse" in modules
    result = subprocess.run([str(RBG), "check", path], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and f"{path}:" in result.stdout and "RB00" in result.stdout


# RBG_PLAIN_LIBS=parser (`plainlibs`): every text to Lark, as if the tables
# did not exist. Both paths give the same module and the same diagnostics.
CORPUS = sorted({*ROOT.glob("tests/corpus/**/*.rbg"), *ROOT.glob("examples/**/*.rbg")})


def _parsed(text: str) -> tuple:
    result = parse(text, "f.rbg")
    return (
        None if result.module is None else attrs.asdict(result.module),
        [attrs.asdict(d) for d in result.diagnostics],
    )


def test_the_plain_lark_path_parses_every_corpus_file_as_the_tables_do(monkeypatch):
    texts = [p.read_text("utf-8") for p in CORPUS]
    ours = [_parsed(t) for t in texts]
    monkeypatch.setenv("RBG_PLAIN_LIBS", "parser")
    assert [_parsed(t) for t in texts] == ours
    assert any(module is None for module, _ in ours) and any(module is not None for module, _ in ours)


def test_rbg_plain_libs_sends_a_valid_file_to_lark(write, monkeypatch):
    monkeypatch.setenv("RBG_PLAIN_LIBS", "http,parser")
    modules = _imported("check", write("good.rbg", GOOD))
    assert "rubriclang.syntax.larkparse" in modules
