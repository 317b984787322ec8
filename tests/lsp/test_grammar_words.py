"""The language server reads its keywords and tokens from the grammar
(`rubriclang.lsp.words`), so a keyword added to grammar/rubric.lark is known
to completion, the scanner and rename with no edit to the server."""

from __future__ import annotations

import re

import pytest

from rubriclang.catalog import load_catalog
from rubriclang.lsp import navigation, words
from rubriclang.lsp.analysis import analyse
from rubriclang.lsp.completion import complete
from rubriclang.lsp.scanner import is_declaration_start, scan
from rubriclang.packaged import grammar
from rubriclang.syntax import larkparse

# Read from the grammar's text here, apart from Lark: each quoted word, and
# the first word of each `*_decl` rule.
_WORD = re.compile(r'"([A-Za-z_][A-Za-z0-9_]*)"')
_DECL = re.compile(r'^(\w+)_decl\s*:\s*"([A-Za-z_][A-Za-z0-9_]*)"', re.MULTILINE)


def _keywords() -> list[str]:
    return [item.label for item in complete("", 0, load_catalog()).items if item.kind == "keyword"]


def test_every_keyword_terminal_of_the_grammar_is_a_reserved_word_of_the_language_server():
    spelled = set(_WORD.findall(grammar()))
    assert spelled and spelled == words.words().reserved


def test_every_declaration_keyword_is_offered_and_starts_a_declaration_in_the_scanner():
    declared = [kw for _, kw in _DECL.findall(grammar())]
    assert sorted(_keywords()) == sorted(declared) == sorted(words.words().declarations)
    for kw in declared:
        tokens = scan(f"sink a\n{kw} b")
        assert is_declaration_start(tokens, 2), kw


@pytest.mark.parametrize("word", sorted(set(_WORD.findall(grammar()))))
def test_rename_refuses_every_word_of_the_grammar(word):
    source = 'criterion a: bool = llm.check { question = "ok?" }\nsink a\n'
    with pytest.raises(navigation.RenameError, match="word of the language"):
        navigation.rename(analyse(source, "a.rbg"), source.index("a:"), word)


def test_a_keyword_added_to_the_grammar_is_known_without_an_edit(monkeypatch):
    added = grammar().replace("     | group_decl\n", "     | group_decl\n     | frame_decl\n") + (
        '\nframe_decl: "frame" NAME "at" NAME\n'
    )
    assert added != grammar()
    monkeypatch.setattr(words, "grammar", lambda: added)
    monkeypatch.setattr(larkparse, "grammar", lambda: added)  # what lark_parser reads
    words.words.cache_clear()
    try:
        assert words.words().declarations[-1] == "frame"
        assert {"frame", "at"} <= words.words().reserved
        assert _keywords()[-1] == "frame"
    finally:
        words.words.cache_clear()
