"""Properties of the front end on arbitrary text: it never raises, and every
diagnostic it gives has a registered code and a span inside the text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import grammatical_programs, mutated_programs, token_soup

from rubriclang.checker import check_source
from rubriclang.diagnostics.codes import registry
from rubriclang.syntax import parse

texts = st.one_of(st.text(max_size=200), token_soup, mutated_programs(), grammatical_programs)


def assert_well_formed(diagnostics, text: str) -> None:
    lines = text.split("\n")
    for d in diagnostics:
        s = d.span
        assert d.code in registry(), d
        assert 1 <= s.line <= s.end_line <= len(lines), d
        assert s.column >= 1 and s.end_column >= 1, d
        assert (s.line, s.column) <= (s.end_line, s.end_column), d
        assert s.column <= len(lines[s.line - 1]) + 1, d
        assert s.end_column <= len(lines[s.end_line - 1]) + 1, d
        assert d.message.strip(), d


@settings(deadline=None, max_examples=200)
@given(texts)
def test_parse_gives_a_module_or_diagnostics_never_an_exception(text: str):
    result = parse(text, "t.rbg")
    assert (result.module is None) == bool(result.diagnostics)
    assert_well_formed(result.diagnostics, result.source)


@settings(deadline=None, max_examples=200)
@given(texts)
def test_check_source_reports_only_well_formed_diagnostics(text: str):
    result = check_source(text, "t.rbg")
    source = parse(text, "t.rbg").source
    assert_well_formed(result.diagnostics, source)
    if result.graph is not None:
        assert not result.errors


@settings(deadline=None, max_examples=100)
@given(mutated_programs())
def test_parsing_is_deterministic(text: str):
    assert parse(text, "t.rbg") == parse(text, "t.rbg")
