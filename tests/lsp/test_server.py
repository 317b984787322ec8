"""End to end: `rbg lsp` in a subprocess, driven over stdio by pygls's
language client, on a document with emoji, CJK and combining characters
before the positions it asks about."""

from __future__ import annotations

import asyncio
import sys

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.lsp.client import BaseLanguageClient

URI = "file:///tmp/lsp-test/demo.rbg"
TIMEOUT = 20

# Two declarations share a line, so that the names asked about there come
# after an emoji (two UTF-16 units), CJK and a combining accent.
DOC = """\
# Démo 😀: CJK 漢字 and e\u0301 (combining).
rubric demo { version = 1, description = "😀 漢字 e\u0301" }

contract { scale = score[1, 5] }

criterion correct: ordinal[1, 5] = llm.rate {
  question = \"\"\"
    Is it correct? 😀😀 漢字
    \"\"\"
  anchors = { 1: "Wrong 😀.", 5: "Right." }
}
criterion harmful: bool = llm.check { question = "Harmful 😀 漢字 e\u0301?" } \
node safe = gate.veto(value: correct, when: harmful) { to = 1 }
sink safe

readout pointwise { output = ordinal[1, 5] }
"""


def at(text: str, needle: str, delta: int = 0) -> lsp.Position:
    """The protocol position (UTF-16 code units) of `needle` in `text`,
    computed independently of the server's conversion."""
    index = text.index(needle) + delta
    line = text.count("\n", 0, index)
    line_start = text.rfind("\n", 0, index) + 1
    return lsp.Position(line=line, character=len(text[line_start:index].encode("utf-16-le")) // 2)


def span(text: str, needle: str, start: int = 0, length: int | None = None) -> lsp.Range:
    """The range of `needle` (or of part of it) in `text`."""
    length = len(needle) - start if length is None else length
    return lsp.Range(start=at(text, needle, start), end=at(text, needle, start + length))


class Session:
    """A started server and a client talking to it, on one event loop."""

    def __init__(self, encodings: list[str] | None = None):
        self.loop = asyncio.new_event_loop()
        self.client = BaseLanguageClient("rbg-test", "1")
        self.diagnostics: dict[str, asyncio.Future] = {}

        @self.client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _published(params: lsp.PublishDiagnosticsParams) -> None:
            fut = self.diagnostics.get(params.uri)
            if fut is not None and not fut.done():
                fut.set_result(list(params.diagnostics))

        command = "from rubriclang.cli.main import main; main()"
        self.run(self.client.start_io(sys.executable, "-c", command, "lsp"))
        capabilities = lsp.ClientCapabilities(
            general=lsp.GeneralClientCapabilities(position_encodings=encodings) if encodings else None,
            text_document=lsp.TextDocumentClientCapabilities(rename=lsp.RenameClientCapabilities(prepare_support=True)),
        )
        self.init = self.request(self.client.initialize_async(lsp.InitializeParams(capabilities=capabilities)))
        self.client.initialized(lsp.InitializedParams())

    def run(self, coro):
        return self.loop.run_until_complete(asyncio.wait_for(coro, TIMEOUT))

    def request(self, coro):
        return self.run(coro)

    def expect_diagnostics(self, uri: str, send) -> list[lsp.Diagnostic]:
        """Send a notification and wait for the diagnostics it publishes."""
        self.diagnostics[uri] = self.loop.create_future()
        send()
        return self.run(self.diagnostics[uri])

    def open(self, uri: str, text: str) -> list[lsp.Diagnostic]:
        item = lsp.TextDocumentItem(uri=uri, language_id="rbg", version=1, text=text)
        return self.expect_diagnostics(
            uri, lambda: self.client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=item))
        )

    def change(self, uri: str, version: int, text: str) -> list[lsp.Diagnostic]:
        params = lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
        )
        return self.expect_diagnostics(uri, lambda: self.client.text_document_did_change(params))

    def close(self) -> None:
        self.request(self.client.shutdown_async(None))
        self.client.exit(None)
        self.run(self.client.stop())
        self.loop.close()


@pytest.fixture(scope="module")
def session():
    s = Session()
    s.open(URI, DOC)
    yield s
    s.close()


def doc_id(uri: str = URI) -> lsp.TextDocumentIdentifier:
    return lsp.TextDocumentIdentifier(uri=uri)


def test_the_server_announces_every_feature(session):
    caps = session.init.capabilities
    assert caps.hover_provider and caps.definition_provider and caps.references_provider
    assert caps.document_formatting_provider
    assert caps.rename_provider.prepare_provider
    assert "." in caps.completion_provider.trigger_characters
    assert session.init.server_info.name == "rbg"


def test_a_clean_document_publishes_no_diagnostics(session):
    assert session.open("file:///tmp/lsp-test/clean.rbg", DOC) == []


def test_diagnostics_carry_code_severity_notes_and_utf16_range(session):
    uri = "file:///tmp/lsp-test/broken.rbg"
    text = DOC.replace("sink safe", "sink safe_ish")
    (d,) = session.open(uri, text)
    assert d.code == "RB101" and d.source == "rbg"
    assert d.severity == lsp.DiagnosticSeverity.Error
    assert d.message.startswith("unknown name `safe_ish`") and "\nnote: " in d.message
    assert d.range == span(text, "safe_ish")


def test_a_change_republishes_diagnostics_including_syntax_errors(session):
    uri = "file:///tmp/lsp-test/changing.rbg"
    assert session.open(uri, DOC) == []
    text = DOC.replace("readout pointwise {", "readout pointwise = {")
    (d,) = session.change(uri, 2, text)
    assert d.code.startswith("RB0")
    assert d.range == span(text, "pointwise = {", len("pointwise "), 1)
    assert session.change(uri, 3, DOC) == []


def test_warnings_are_published_as_warnings(session):
    uri = "file:///tmp/lsp-test/warning.rbg"
    text = DOC.replace("{ output = ordinal[1, 5] }", "{ output = ordinal[1, 5], quantize = nearest }")
    (d,) = session.open(uri, text)
    assert d.severity == lsp.DiagnosticSeverity.Warning
    assert d.range == span(text, "quantize = nearest")


def hover(session, position: lsp.Position, uri: str = URI) -> lsp.Hover | None:
    return session.request(
        session.client.text_document_hover_async(lsp.HoverParams(text_document=doc_id(uri), position=position))
    )


def shown(session, position: lsp.Position, uri: str = URI) -> tuple[lsp.MarkupContent, lsp.Range | None]:
    """A hover that shows something: its markup and its range."""
    h = hover(session, position, uri)
    assert h is not None and isinstance(h.contents, lsp.MarkupContent), h
    return h.contents, h.range


def test_hover_on_a_node_reference_shows_its_inferred_type_and_kind(session):
    contents, where = shown(session, at(DOC, "correct, when", 3))
    assert "criterion correct: ordinal[1, 5]" in contents.value
    assert where == span(DOC, "correct, when", 0, len("correct"))


def test_hover_on_an_operator_node_shows_its_kind(session):
    contents, _ = shown(session, at(DOC, "safe = gate", 1))
    assert "node safe: ordinal[1, 5]" in contents.value
    assert "A gate node: `gate.veto`" in contents.value and "The sink." in contents.value


def test_hover_on_an_operator_name_shows_its_signature_and_docs(session):
    contents, where = shown(session, at(DOC, "gate.veto", 6))
    assert "gate.veto(value: numeric?, when: bool)" in contents.value
    assert contents.kind == lsp.MarkupKind.Markdown
    assert where == span(DOC, "gate.veto")


def test_hover_on_a_procedure_name_shows_its_docs(session):
    contents, _ = shown(session, at(DOC, "llm.check", 2))
    assert "yes/no question" in contents.value


def test_hover_on_a_parameter_name_shows_its_spec(session):
    contents, _ = shown(session, at(DOC, "to = 1"))
    assert "to = number" in contents.value


def test_hover_inside_a_prompt_shows_nothing(session):
    assert hover(session, at(DOC, "Is it correct")) is None


def test_hover_keeps_an_operator_type_from_the_last_good_check_while_the_file_has_errors(session):
    uri = "file:///tmp/lsp-test/editing.rbg"
    session.open(uri, DOC)
    text = DOC.replace("sink safe", "sink nowhere")
    session.change(uri, 2, text)
    contents, _ = shown(session, at(text, "safe = gate"), uri)
    assert "node safe: ordinal[1, 5]" in contents.value
    assert "last check without errors" in contents.value


def test_definition_of_a_port_reference_is_its_declaration(session):
    loc = session.request(
        session.client.text_document_definition_async(
            lsp.DefinitionParams(text_document=doc_id(), position=at(DOC, "harmful)", 2))
        )
    )
    assert loc.uri == URI
    assert loc.range == span(DOC, "harmful: bool", 0, len("harmful"))


def test_definition_from_the_sink(session):
    loc = session.request(
        session.client.text_document_definition_async(
            lsp.DefinitionParams(text_document=doc_id(), position=at(DOC, "sink safe", 5))
        )
    )
    assert loc.range == span(DOC, "safe = gate", 0, 4)


def test_references_list_declaration_ports_and_sink(session):
    def refs(include: bool):
        return session.request(
            session.client.text_document_references_async(
                lsp.ReferenceParams(
                    text_document=doc_id(),
                    position=at(DOC, "safe = gate"),
                    context=lsp.ReferenceContext(include_declaration=include),
                )
            )
        )

    assert [r.range for r in refs(True)] == [span(DOC, "safe = gate", 0, 4), span(DOC, "sink safe", 5)]
    assert [r.range for r in refs(False)] == [span(DOC, "sink safe", 5)]


def complete(session, text: str, marker: str, uri: str) -> lsp.CompletionList:
    """Edit DOC into `text` and complete at `marker` (removed from it)."""
    index = text.index(marker)
    text = text.replace(marker, "", 1)
    session.open(uri, DOC)
    session.change(uri, 2, text)
    position = at(text[:index] + "\0", "\0")
    return session.request(
        session.client.text_document_completion_async(
            lsp.CompletionParams(text_document=doc_id(uri), position=position)
        )
    )


def test_completion_of_operators_after_a_namespace(session):
    text = DOC.replace("sink safe", "node extra = transform.r|\nsink safe")
    result = complete(session, text, "|", "file:///tmp/lsp-test/complete-op.rbg")
    labels = [i.label for i in result.items]
    assert "transform.rescale" in labels and all(label.startswith("transform.") for label in labels)
    edit = next(i for i in result.items if i.label == "transform.rescale").text_edit
    assert isinstance(edit, lsp.TextEdit)
    clean = text.replace("|", "", 1)
    assert edit.range == span(clean, "transform.r\n", 0, len("transform.r"))


def test_completion_of_port_names_inside_an_operator_call(session):
    text = DOC.replace("sink safe", "node extra = gate.cap(value: correct, |)\nsink safe")
    result = complete(session, text, "|", "file:///tmp/lsp-test/complete-port.rbg")
    assert [i.label for i in result.items] == ["when"]
    edit = result.items[0].text_edit
    assert isinstance(edit, lsp.TextEdit) and edit.new_text == "when: "


def test_completion_of_node_names_in_a_port_shows_their_types(session):
    text = DOC.replace("sink safe", "node extra = transform.not(value: |)\nsink safe")
    result = complete(session, text, "|", "file:///tmp/lsp-test/complete-node.rbg")
    by_label = {i.label: i for i in result.items}
    assert set(by_label) == {"correct", "harmful", "safe"}
    assert by_label["correct"].detail == "criterion: ordinal[1, 5]"


def test_completion_of_parameters_leaves_out_those_given(session):
    text = DOC.replace("{ output = ordinal[1, 5] }", "{ output = ordinal[1, 5] | }")
    result = complete(session, text, "|", "file:///tmp/lsp-test/complete-param.rbg")
    assert [i.label for i in result.items] == ["quantize", "ties"]


def rename(session, position: lsp.Position, new_name: str, uri: str = URI):
    return session.request(
        session.client.text_document_rename_async(
            lsp.RenameParams(text_document=doc_id(uri), position=position, new_name=new_name)
        )
    )


def test_prepare_rename_gives_the_name_and_its_range(session):
    result = session.request(
        session.client.text_document_prepare_rename_async(
            lsp.PrepareRenameParams(text_document=doc_id(), position=at(DOC, "correct, when", 2))
        )
    )
    assert result.placeholder == "correct"
    assert result.range == span(DOC, "correct, when", 0, len("correct"))


def test_rename_edits_every_occurrence(session):
    edit = rename(session, at(DOC, "sink safe", 6), "verdict")
    edits = edit.changes[URI]
    assert {e.new_text for e in edits} == {"verdict"}
    assert sorted((e.range.start.line, e.range.start.character) for e in edits) == sorted(
        (r.start.line, r.start.character) for r in (span(DOC, "safe = gate"), span(DOC, "sink safe", 5))
    )


@pytest.mark.parametrize(
    "new_name, reason",
    [("harmful", "already declared"), ("2fast", "not a valid name"), ("sink", "word of the language")],
)
def test_rename_refuses_a_clashing_or_invalid_name(session, new_name, reason):
    with pytest.raises(JsonRpcException, match=reason):
        rename(session, at(DOC, "safe = gate"), new_name)


def test_folding_ranges_cover_multi_line_blocks_and_prompts(session):
    ranges = session.request(
        session.client.text_document_folding_range_async(lsp.FoldingRangeParams(text_document=doc_id()))
    )
    block = at(DOC, "criterion correct").line
    prompt = at(DOC, '"""').line
    assert {(r.start_line, r.end_line) for r in ranges} == {(block, block + 4), (prompt, prompt + 1)}


def test_a_client_that_prefers_utf32_gets_code_point_columns():
    s = Session(encodings=[lsp.PositionEncodingKind.Utf32])
    try:
        assert s.init.capabilities.position_encoding == lsp.PositionEncodingKind.Utf32
        s.open(URI, DOC)
        index = DOC.index("correct, when")
        line_start = DOC.rfind("\n", 0, index) + 1
        contents, where = shown(s, lsp.Position(line=DOC.count("\n", 0, index), character=index - line_start + 1))
        assert where is not None and where.start.character == index - line_start  # code points, not UTF-16 units
        assert "criterion correct" in contents.value
    finally:
        s.close()


def format_edits(session, uri: str):
    return session.request(
        session.client.text_document_formatting_async(
            lsp.DocumentFormattingParams(
                text_document=doc_id(uri), options=lsp.FormattingOptions(tab_size=2, insert_spaces=True)
            )
        )
    )


def test_formatting_replaces_the_whole_document_with_the_canonical_text(session):
    from rubriclang.fmt import format_source

    uri = "file:///tmp/lsp-test/messy.rbg"
    text = DOC.replace("sink safe", "sink    safe").replace("contract { scale", "contract {scale")
    session.open(uri, text)
    (edit,) = format_edits(session, uri)
    assert edit.new_text == format_source(text).output
    assert edit.range.start == lsp.Position(line=0, character=0)
    assert edit.range.end == at(text + "\0", "\0")


def test_formatting_a_canonical_file_makes_no_edits(session):
    from rubriclang.fmt import format_source

    uri = "file:///tmp/lsp-test/canonical.rbg"
    session.open(uri, format_source(DOC).output)
    assert list(format_edits(session, uri)) == []


def test_formatting_a_file_with_syntax_errors_makes_no_edits(session):
    uri = "file:///tmp/lsp-test/unparsable.rbg"
    session.open(uri, DOC.replace("sink safe", "sink = safe"))
    assert format_edits(session, uri) is None
