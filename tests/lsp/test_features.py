"""Hover, definition, references and rename on analysed documents (no
protocol: positions are text indices)."""

from __future__ import annotations

import pytest

from rubriclang.catalog import load_catalog
from rubriclang.lsp import navigation
from rubriclang.lsp.analysis import analyse
from rubriclang.lsp.hover import hover

TEXT = """\
rubric demo { version = 1 }
contract { scale = score[0, 1] }
criterion correct: ordinal[1, 5] = llm.rate {
  question = "Correct? 😀"
  anchors = { 1: "No.", 5: "Yes." }
}
criterion harmful: bool = llm.check { question = "Harmful? 漢字" }
node capped = transform.rescale(value: correct) { to = score[0, 1] }
node safe = gate.veto(value: capped, when: harmful) { to = 0 }
sink safe
readout pointwise { output = score[0, 1] }
"""


def at(text: str, needle: str, delta: int = 0) -> int:
    return text.index(needle) + delta


def words(text: str, ranges) -> list[str]:
    return [text[start:end] for start, end in ranges]


def hover_text(text: str, offset: int, previous=None) -> str | None:
    found = hover(analyse(text, "demo.rbg"), offset, load_catalog(), previous)
    return found.markdown if found else None


def markdown_at(text: str, offset: int, previous=None) -> str:
    """The hover at `offset`, which must show something."""
    found = hover_text(text, offset, previous)
    assert found is not None, offset
    return found


def test_hover_on_a_node_shows_its_inferred_type():
    assert "node capped: score[0, 1]" in markdown_at(TEXT, at(TEXT, "capped, when"))


def test_hover_at_the_end_of_a_name_still_finds_it():
    assert "criterion harmful: bool" in markdown_at(TEXT, at(TEXT, "harmful)") + len("harmful"))


def test_hover_on_a_criterion_in_a_file_with_errors_uses_its_declared_type():
    text = TEXT.replace("sink safe", "sink nowhere")
    assert "criterion correct: ordinal[1, 5]" in markdown_at(text, at(text, "correct:"))


def test_hover_on_an_operator_node_in_a_file_with_errors_and_no_earlier_graph_says_unknown():
    text = TEXT.replace("sink safe", "sink nowhere")
    shown = markdown_at(text, at(text, "capped ="))
    assert "node capped: ?" in shown and "Type unknown" in shown


def test_hover_uses_the_last_good_graph_only_for_the_same_operator():
    previous = analyse(TEXT, "demo.rbg").graph
    text = TEXT.replace("sink safe", "sink nowhere")
    assert "node capped: score[0, 1]" in markdown_at(text, at(text, "capped ="), previous)
    changed = text.replace("transform.rescale(value: correct) { to = score[0, 1] }", "transform.invert(value: correct)")
    assert "node capped: ?" in markdown_at(changed, at(changed, "capped ="), previous)


def test_hover_on_an_undeclared_name_says_so():
    text = TEXT.replace("sink safe", "sink nowhere")
    assert "no node of this name" in markdown_at(text, at(text, "nowhere"))


def test_hover_on_catalog_names_works_even_when_the_file_does_not_parse():
    text = TEXT.replace("sink safe", "sink = safe")
    assert "gate.veto(value: numeric?, when: bool)" in markdown_at(text, at(text, "gate.veto", 2))


def test_hover_on_a_readout_parameter():
    assert "output = type" in markdown_at(TEXT, at(TEXT, "output ="))


def test_no_hover_on_punctuation_or_keywords():
    assert hover_text(TEXT, at(TEXT, "{ to")) is None
    assert hover_text(TEXT, at(TEXT, "sink", 1)) is None


def test_definition_and_references():
    a = analyse(TEXT, "demo.rbg")
    found = navigation.definition(a, at(TEXT, "harmful) { to"))
    assert found is not None
    start, end = found
    assert (start, TEXT[start:end]) == (at(TEXT, "harmful: bool"), "harmful")
    assert words(TEXT, navigation.references(a, at(TEXT, "capped"))) == ["capped", "capped"]
    assert navigation.references(a, at(TEXT, "capped"), include_declaration=False) == [
        (at(TEXT, "capped, when"), at(TEXT, "capped, when") + len("capped"))
    ]


def test_no_definition_away_from_node_names():
    a = analyse(TEXT, "demo.rbg")
    assert navigation.definition(a, at(TEXT, "llm.rate")) is None
    assert navigation.references(a, at(TEXT, "question")) == []


def test_rename_covers_declaration_ports_and_sink():
    a = analyse(TEXT, "demo.rbg")
    ranges = navigation.rename(a, at(TEXT, "safe\n"), "verdict")
    assert words(TEXT, ranges) == ["safe", "safe"]
    renamed = TEXT
    for start, end in sorted(ranges, reverse=True):
        renamed = renamed[:start] + "verdict" + renamed[end:]
    graph = analyse(renamed, "demo.rbg").graph
    assert graph is not None and graph.sink == "verdict"


def test_rename_to_the_same_name_changes_nothing():
    assert navigation.rename(analyse(TEXT, "demo.rbg"), at(TEXT, "safe ="), "safe") == []


@pytest.mark.parametrize(
    "new_name, message",
    [
        ("correct", "already declared at demo.rbg:3:11"),
        ("two words", "not a valid name"),
        ("é", "not a valid name"),
        ("", "not a valid name"),
        ("true", "word of the language"),
        ("criterion", "word of the language"),
    ],
)
def test_rename_refuses(new_name, message):
    with pytest.raises(navigation.RenameError, match=message):
        navigation.rename(analyse(TEXT, "demo.rbg"), at(TEXT, "safe ="), new_name)


def test_rename_refuses_a_file_that_does_not_parse():
    text = TEXT.replace("sink safe", "sink = safe")
    with pytest.raises(navigation.RenameError, match="syntax errors"):
        navigation.rename(analyse(text, "demo.rbg"), at(text, "safe ="), "verdict")


def test_prepare_rename_only_on_node_names():
    a = analyse(TEXT, "demo.rbg")
    found = navigation.prepare_rename(a, at(TEXT, "correct) {", 2))
    assert found is not None
    (start, end), name = found
    assert (TEXT[start:end], name) == ("correct", "correct")
    assert navigation.prepare_rename(a, at(TEXT, "gate.veto")) is None


def test_definition_on_a_prompt_path_opens_the_template(tmp_path):
    (tmp_path / "judges").mkdir()
    template = tmp_path / "judges" / "mine.md"
    template.write_text("## user\nRate {{response}}.\n", "utf-8")
    text = (
        "rubric r { version = 1 }\ncontract { scale = score[1, 5] }\n"
        'criterion q: ordinal[1, 5] = llm.rate { prompt = "judges/mine.md" }\nsink q\n'
        "readout pointwise { output = ordinal[1, 5] }\n"
    )
    a = analyse(text, str(tmp_path / "r.rbg"))
    assert navigation.template_file(a, at(text, "judges/mine")) == str(template)
    assert navigation.template_file(a, at(text, "llm.rate")) is None
    assert (
        navigation.template_file(
            analyse(text.replace("mine.md", "gone.md"), str(tmp_path / "r.rbg")), at(text, "judges/mine")
        )
        is None
    )


def test_a_problem_in_a_template_file_is_shown_on_the_path_that_names_it(tmp_path):
    from rubriclang.lsp.server import _diagnostic

    (tmp_path / "mine.md").write_text("## user\nRate {{respons}}.\n", "utf-8")
    text = (
        "rubric r { version = 1 }\ncontract { scale = score[1, 5] }\n"
        'criterion q: ordinal[1, 5] = llm.rate { prompt = "mine.md" }\nsink q\n'
        "readout pointwise { output = ordinal[1, 5] }\n"
    )
    a = analyse(text, str(tmp_path / "r.rbg"))
    shown = [_diagnostic(a, d) for d in a.diagnostics if d.code == "RB209"]
    assert shown and all(x.range.start.line == 2 for x in shown)
    assert any(x.message.startswith("mine.md:2:6:") for x in shown)
    related = shown[0].related_information
    assert related and related[0].location.uri.endswith("/mine.md")


def test_a_document_is_parsed_once_per_analysis(monkeypatch):
    # The checker and the symbol index share one parse; counted at the
    # parser's core so that no second entry point goes unseen.
    from rubriclang.syntax import parser

    calls = []
    real = parser._parse_chunk

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(parser, "_parse_chunk", counting)
    found = analyse(TEXT, "demo.rbg")
    assert found.graph is not None and found.module is not None
    assert len(calls) == 1
