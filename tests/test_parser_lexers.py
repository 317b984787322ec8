"""The parser parses with the LALR tables generated from the grammar first (no
Lark), and with Lark's contextual parser only where that fails. Wherever the
tables' parser succeeds, it gives what Lark's parser with its basic lexer gives
(AST, comments, spans, diagnostics), and that is the contextual parser's; where
it fails, so does Lark's basic-lexer parser. The AST is built inside the parse;
its spans are those Lark's `propagate_positions` gives the same rules of its own tree."""

from __future__ import annotations

import functools
from collections import Counter
from copy import copy
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from lark import Lark, Token
from lark.exceptions import UnexpectedInput
from lark.lexer import BasicLexer
from strategies import grammatical_programs, mutated_programs

from rubriclang import packaged
from rubriclang.syntax import ast, lalr, larkparse, parse
from rubriclang.syntax.parser import _BUILDER, tables_parser

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted({*ROOT.glob("tests/corpus/valid/**/*.rbg"), *ROOT.glob("examples/**/*.rbg")})


@functools.cache
def _lark(lexer: str) -> Lark:
    return larkparse.lark_parser(lexer, _BUILDER)


def _shape(tok) -> tuple:
    return (tok.type, str(tok), tok.start_pos, tok.line, tok.column, tok.end_line, tok.end_column, tok.end_pos)


def _with_lark(lexer: str, text: str):
    """What Lark's parser with `lexer` builds of `text`: declarations, comments and
    diagnostics, every position included."""
    build = _BUILDER.begin("<input>")
    larkparse._comment_sink.items = []
    try:
        decls: Any = _lark(lexer).parse(text)  # the builder's declarations, not the Tree Lark's types say
        comments = larkparse._comment_sink.items
    finally:
        larkparse._comment_sink.items = None
    return [attrs.asdict(d) for d in decls], [_shape(t) for t in comments], [attrs.asdict(d) for d in build.finish()]


def _with_tables(text: str):
    """The same of the tables' parser."""
    build = _BUILDER.begin("<input>")
    decls, comments = tables_parser().parse(text)
    return [attrs.asdict(d) for d in decls], [_shape(t) for t in comments], [attrs.asdict(d) for d in build.finish()]


def _tables_agree_or_both_fail(text: str) -> bool:
    """True when the tables parse `text` as Lark's basic-lexer parser does (and as
    its contextual one); False when both fail (the fallback's case)."""
    try:
        ours = _with_tables(text)
    except lalr.NoParse:
        with pytest.raises(UnexpectedInput):
            _lark("basic").parse(text)
        return False
    assert ours == _with_lark("basic", text)
    assert ours == _with_lark("contextual", text)
    return True


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_tables_give_larks_ast_and_comments_for_every_valid_file(path):
    assert _tables_agree_or_both_fail(path.read_text("utf-8"))


@settings(max_examples=150, deadline=None)
@given(grammatical_programs)
def test_the_tables_give_larks_ast_and_comments_for_generated_programs(text):
    try:
        _lark("contextual").parse(text)
    except UnexpectedInput:
        return  # errors are the contextual parser's alone (the corpus goldens pin them)
    _tables_agree_or_both_fail(text)


@settings(max_examples=200, deadline=None)
@given(mutated_programs())
def test_the_tables_parse_a_mutated_program_exactly_where_lark_does(text):
    _tables_agree_or_both_fail(text)


def _contextual_only(text: str):
    """`parse` with Lark's contextual parser alone, as before the tables."""
    import rubriclang.syntax.parser as parser

    def contextual(chunk, path, decls, comments, diagnostics):
        return larkparse.parse_chunk(chunk, path, parser._BUILDER, decls, comments, diagnostics)

    saved = parser._parse_chunk
    parser._parse_chunk = contextual
    try:
        return parse(text)
    finally:
        parser._parse_chunk = saved


@settings(max_examples=150, deadline=None)
@given(mutated_programs())
def test_parse_results_and_diagnostics_are_the_contextual_parsers_alone(text):
    result, expected = parse(text), _contextual_only(text)
    # asdict: every field, spans too (which `==` on AST nodes leaves out).
    assert attrs.asdict(result) == attrs.asdict(expected)


def test_keywords_used_as_names_parse_through_the_contextual_parser():
    text = (ROOT / "tests/review/graphs/end_and_quotes.rbg").read_text("utf-8")
    assert not _tables_agree_or_both_fail(text)  # `node` as a criterion name: a keyword to one regex
    result = parse(text)
    assert result.diagnostics == () and attrs.asdict(result) == attrs.asdict(_contextual_only(text))
    assert result.module is not None
    assert {"node", "class", "graph"} <= {d.name.value for d in result.module.decls if hasattr(d, "name")}


# Lark's own tree, with positions: the reference for every span the builder computes.
_TREE_RULES = {
    "rubric_decl": "RubricDecl",
    "contract_decl": "ContractDecl",
    "criterion_decl": "CriterionDecl",
    "node_decl": "NodeDecl",
    "sink_decl": "SinkDecl",
    "readout_decl": "ReadoutDecl",
    "item_decl": "ItemDecl",
    "field": "FieldDecl",
    "field_type": "FieldType",
    "field_params": "Block",  # a field type's `(schema = ...)`
    "port": "PortArg",
    "dotted": "Dotted",
    "block": "Block",
    "param": "Param",
    "type": "TypeExpr",
    "true": "Bool",
    "false": "Bool",
    "ident": "Ident",
    "call": "Call",
    "list": "ListValue",
    "map": "MapValue",
    "entry": "Entry",
}
_LITERAL_TOKENS = {"STRING": "String", "LONG_STRING": "String", "NUMBER": "Number"}


def _tree_spans(text: str) -> Counter:
    tree = Lark(packaged.grammar(), parser="lalr", propagate_positions=True, maybe_placeholders=True).parse(text)
    spans: Counter = Counter()
    for sub in tree.iter_subtrees():
        if sub.data in _TREE_RULES:
            m = sub.meta
            spans[_TREE_RULES[sub.data], m.line, m.column, m.end_line, m.end_column] += 1
        for t in sub.children:
            if isinstance(t, Token) and t.type in _LITERAL_TOKENS:
                spans[_LITERAL_TOKENS[t.type], t.line, t.column, t.end_line, t.end_column] += 1
    return spans


def _ast_spans(module: ast.Module) -> Counter:
    spans: Counter = Counter()
    kinds = set(_TREE_RULES.values()) | set(_LITERAL_TOKENS.values())

    def walk(node, omitted_block: bool = False) -> None:
        if isinstance(node, tuple):
            for n in node:
                walk(n)
            return
        if not attrs.has(type(node)):
            return
        name = type(node).__name__
        if name in kinds and not omitted_block:
            s = node.span
            spans[name, s.line, s.column, s.end_line, s.end_column] += 1
        for field in attrs.fields(type(node)):
            if field.name != "span":
                value = getattr(node, field.name)
                # An omitted block is the AST's empty default, spanning the procedure: no rule of the tree.
                head = getattr(node, "procedure", None) or getattr(node, "operator", None)
                walk(value, field.name == "block" and head is not None and value.span == head.span and not value.params)

    walk(module.decls)
    return spans


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_span_is_the_one_lark_gives_its_own_tree(path):
    text = path.read_text("utf-8")
    result = parse(text)
    assert result.diagnostics == () and result.module is not None
    assert _ast_spans(result.module) == _tree_spans(text)


@settings(max_examples=100, deadline=None)
@given(grammatical_programs)
def test_every_span_of_a_generated_program_is_the_one_lark_gives_its_own_tree(text):
    result = parse(text)
    if result.module is not None:
        assert _ast_spans(result.module) == _tree_spans(text)


def _lark_tokens(text: str):
    """Every token Lark's basic lexer gives `text` (comments too, through the callback), with every
    position; or `NoParse` where it stops."""
    from lark.lexer import LexerState
    from lark.utils import TextSlice

    conf = copy(_lark("basic").lexer_conf)
    seen: list = []

    def collect(t: Token) -> Token:
        seen.append(t)
        return t

    conf.callbacks = {"COMMENT": collect}
    try:
        for t in BasicLexer(conf).lex(LexerState(TextSlice.cast_from(text)), None):
            seen.append(t)
    except UnexpectedInput:
        seen.append(lalr.NoParse)
    return [s if s is lalr.NoParse else _shape(s) for s in seen]


def _table_tokens(text: str):
    """The same of the tables' lexer, comments in order among the tokens."""
    comments: list = []
    seen: list = []
    try:
        for t in lalr.lex(text, comments):
            seen += [*comments, t]
            comments.clear()
        seen += comments
    except lalr.NoParse:
        seen += [*comments, lalr.NoParse]
    return [s if s is lalr.NoParse else _shape(s) for s in seen]


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_tables_lexer_gives_lark_basic_lexers_tokens_for_every_valid_file(path):
    text = path.read_text("utf-8")
    assert _table_tokens(text) == _lark_tokens(text)


@settings(max_examples=200, deadline=None)
@given(mutated_programs())
def test_the_tables_lexer_gives_lark_basic_lexers_tokens_or_fails_where_it_does(text):
    assert _table_tokens(text) == _lark_tokens(text)
