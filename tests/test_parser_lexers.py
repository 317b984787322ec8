"""The parser lexes with one regex first and with the contextual lexer only
where that fails: wherever the fast lexer's tokens parse, the tree, every
token's type and every position are the contextual parser's."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from lark import Token
from lark.exceptions import UnexpectedInput
from strategies import grammatical_programs, mutated_programs

from rubriclang.syntax import parse
from rubriclang.syntax.parser import _parser

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted({*ROOT.glob("tests/corpus/valid/**/*.rbg"), *ROOT.glob("examples/**/*.rbg")})


def _shape(tree):
    tokens = [(t.type, str(t), t.line, t.column, t.end_line, t.end_column) for t in tree.scan_values(lambda v: isinstance(v, Token))]
    metas = [(s.data, s.meta.line, s.meta.column, s.meta.end_line, s.meta.end_column) for s in tree.iter_subtrees() if not s.meta.empty]
    return tree, tokens, metas


def _same_or_fast_fails(text: str) -> bool:
    """True when the fast parser agrees; False when it fails (the fallback's case)."""
    try:
        fast = _parser("basic").parse(text)
    except UnexpectedInput:
        return False
    assert _shape(fast) == _shape(_parser("contextual").parse(text))
    return True


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_fast_lexer_gives_the_contextual_parsers_tree_for_every_valid_file(path):
    assert _same_or_fast_fails(path.read_text("utf-8"))


@settings(max_examples=150, deadline=None)
@given(grammatical_programs)
def test_the_fast_lexer_agrees_on_generated_programs_or_leaves_them_to_the_contextual_one(text):
    try:
        _parser("contextual").parse(text)
    except UnexpectedInput:
        return  # errors are the contextual parser's alone (the corpus goldens pin them)
    _same_or_fast_fails(text)


def _contextual_only(text: str):
    """`parse` as it was before the fast lexer: the contextual parser alone."""
    import rubriclang.syntax.parser as parser

    saved = parser._tree
    parser._tree = lambda chunk: parser._lark().parse(chunk)
    try:
        return parse(text)
    finally:
        parser._tree = saved


@settings(max_examples=150, deadline=None)
@given(mutated_programs())
def test_parse_results_and_diagnostics_are_the_contextual_parsers_alone(text):
    result, expected = parse(text), _contextual_only(text)
    # asdict: every field, spans too (which `==` on AST nodes leaves out).
    assert attrs.asdict(result) == attrs.asdict(expected)


def test_keywords_used_as_names_parse_through_the_contextual_lexer():
    text = (ROOT / "tests/review/graphs/end_and_quotes.rbg").read_text("utf-8")
    assert not _same_or_fast_fails(text)  # `node` as a criterion name: a keyword to one regex
    result = parse(text)
    assert result.diagnostics == () and attrs.asdict(result) == attrs.asdict(_contextual_only(text))
    assert {"node", "class", "graph"} <= {d.name.value for d in result.module.decls if hasattr(d, "name")}
