"""The parser lexes with one regex first and with the contextual lexer only
where that fails: wherever the fast lexer's tokens parse, the AST and every
span are the contextual parser's. The AST is built inside the parse; its spans
are those Lark's `propagate_positions` gives the same rules of its own tree."""

from __future__ import annotations

from collections import Counter
from copy import copy
from importlib import resources
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from lark import Lark, Token
from lark.exceptions import UnexpectedInput
from lark.lexer import BasicLexer
from strategies import grammatical_programs, mutated_programs

from rubriclang.syntax import ast, parse
from rubriclang.syntax.lexer import FastBasicLexer
from rubriclang.syntax.parser import _BUILDER, _parser

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted({*ROOT.glob("tests/corpus/valid/**/*.rbg"), *ROOT.glob("examples/**/*.rbg")})


def _built(lexer: str, text: str):
    """What the parser with `lexer` builds of `text`: the declarations and diagnostics, spans included."""
    build = _BUILDER.begin("<input>")
    decls = _parser(lexer).parse(text)
    return [attrs.asdict(d) for d in decls], [attrs.asdict(d) for d in build.finish()]


def _same_or_fast_fails(text: str) -> bool:
    """True when the fast parser agrees; False when it fails (the fallback's case)."""
    try:
        fast = _built("basic", text)
    except UnexpectedInput:
        return False
    assert fast == _built("contextual", text)
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

    def contextual(chunk, path):
        build = parser._BUILDER.begin(path)
        return parser._lark().parse(chunk), build.finish()

    saved = parser._build
    parser._build = contextual
    try:
        return parse(text)
    finally:
        parser._build = saved


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


# Lark's own tree, with positions: the reference for every span the builder computes.
_TREE_RULES = {
    "rubric_decl": "RubricDecl",
    "contract_decl": "ContractDecl",
    "criterion_decl": "CriterionDecl",
    "node_decl": "NodeDecl",
    "sink_decl": "SinkDecl",
    "readout_decl": "ReadoutDecl",
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
    grammar = resources.files("rubriclang.grammar").joinpath("rubric.lark").read_text("utf-8")
    tree = Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=True).parse(text)
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
    assert result.diagnostics == ()
    assert _ast_spans(result.module) == _tree_spans(text)


@settings(max_examples=100, deadline=None)
@given(grammatical_programs)
def test_every_span_of_a_generated_program_is_the_one_lark_gives_its_own_tree(text):
    result = parse(text)
    if result.module is not None:
        assert _ast_spans(result.module) == _tree_spans(text)


def _tokens(lexer_class, text: str):
    """Every token `lexer_class` gives `text` (comments too, through the callback), with every
    position; or the error's class where it stops."""
    from lark.lexer import LexerState
    from lark.utils import TextSlice

    conf = copy(_parser("basic").lexer_conf)
    seen = []
    conf.callbacks = {"COMMENT": lambda t: seen.append(t) or t}

    def shape(t):
        return (t.type, str(t), t.start_pos, t.line, t.column, t.end_line, t.end_column, t.end_pos)

    try:
        for t in lexer_class(conf).lex(LexerState(TextSlice.cast_from(text)), None):
            seen.append(t)
    except UnexpectedInput as exc:
        seen.append(type(exc))
    return [s if isinstance(s, type) else shape(s) for s in seen]


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_fast_lexer_gives_lark_basic_lexers_tokens_for_every_valid_file(path):
    text = path.read_text("utf-8")
    assert _tokens(FastBasicLexer, text) == _tokens(BasicLexer, text)


@settings(max_examples=200, deadline=None)
@given(mutated_programs())
def test_the_fast_lexer_gives_lark_basic_lexers_tokens_or_fails_where_it_does(text):
    assert _tokens(FastBasicLexer, text) == _tokens(BasicLexer, text)
