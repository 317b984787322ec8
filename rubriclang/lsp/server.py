"""The language server: the protocol (through pygls) around the features.

Each handler converts the protocol's positions to text indices, asks a
feature module, and converts the answer back; nothing else here knows the
language. Diagnostics are published whenever a document opens or changes.
"""

from __future__ import annotations

import os
import pathlib
import sys
from collections.abc import Iterable

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from rubriclang.catalog import load_catalog
from rubriclang.checker import CheckedGraph, Criterion
from rubriclang.checker.graph import Node
from rubriclang.diagnostics import Diagnostic, Severity
from rubriclang.diagnostics.render import package_version, with_notes
from rubriclang.fmt import format_source
from rubriclang.lsp import navigation
from rubriclang.lsp.analysis import Analysis, Range, analyse
from rubriclang.lsp.completion import complete
from rubriclang.lsp.folding import folding_ranges
from rubriclang.lsp.frames import Frames, LockedStream
from rubriclang.lsp.hover import hover
from rubriclang.lsp.positions import UTF16, Position

SOURCE = "rbg"

_KIND = {
    "keyword": lsp.CompletionItemKind.Keyword,
    "operator": lsp.CompletionItemKind.Function,
    "procedure": lsp.CompletionItemKind.Function,
    "port": lsp.CompletionItemKind.Field,
    "node": lsp.CompletionItemKind.Variable,
    "param": lsp.CompletionItemKind.Property,
    "value": lsp.CompletionItemKind.EnumMember,
}
_SEVERITY = {Severity.ERROR: lsp.DiagnosticSeverity.Error, Severity.WARNING: lsp.DiagnosticSeverity.Warning}


class RubricServer(LanguageServer):
    """A language server that keeps each open document's latest analysis,
    and its last graph that checked without errors (for hovers on types
    while the file is being edited)."""

    def __init__(self) -> None:
        super().__init__("rbg", package_version())
        self.analyses: dict[str, Analysis] = {}
        self.last_good: dict[str, CheckedGraph] = {}

    def analysis(self, uri: str) -> Analysis:
        """The analysis of the document's current text (cached per text)."""
        doc = self.workspace.get_text_document(uri)
        cached = self.analyses.get(uri)
        if cached is not None and cached.text == doc.source:
            return cached
        path = os.path.basename(doc.path) if doc.path else uri
        encoding = self.workspace.position_encoding
        # The negotiated encoding (an enum, or its string); none negotiated is UTF-16.
        result = analyse(doc.source, path, getattr(encoding, "value", encoding) or UTF16)
        self.analyses[uri] = result
        if result.graph is not None:
            self.last_good[uri] = result.graph
        return result

    def forget(self, uri: str) -> None:
        self.analyses.pop(uri, None)
        self.last_good.pop(uri, None)


def create_server() -> RubricServer:
    """A new server with every feature registered."""
    server = RubricServer()

    def publish(ls: RubricServer, uri: str) -> None:
        a = ls.analysis(uri)
        ls.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[_diagnostic(a, d) for d in a.diagnostics])
        )

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: RubricServer, params: lsp.DidOpenTextDocumentParams) -> None:
        publish(ls, params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: RubricServer, params: lsp.DidChangeTextDocumentParams) -> None:
        publish(ls, params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: RubricServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def on_hover(ls: RubricServer, params: lsp.HoverParams) -> lsp.Hover | None:
        uri = params.text_document.uri
        a = ls.analysis(uri)
        found = hover(a, a.lines.offset(_pos(params.position)), load_catalog(), ls.last_good.get(uri))
        if found is None:
            return None
        return lsp.Hover(contents=_markdown(found.markdown), range=_range(a, (found.start, found.end)))

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    def on_definition(ls: RubricServer, params: lsp.DefinitionParams) -> lsp.Location | None:
        a = ls.analysis(params.text_document.uri)
        offset = a.lines.offset(_pos(params.position))
        template = navigation.template_file(a, offset)
        if template is not None:
            start = lsp.Position(line=0, character=0)
            return lsp.Location(uri=pathlib.Path(template).as_uri(), range=lsp.Range(start=start, end=start))
        found = navigation.definition(a, offset)
        return lsp.Location(uri=params.text_document.uri, range=_range(a, found)) if found else None

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    def on_references(ls: RubricServer, params: lsp.ReferenceParams) -> list[lsp.Location]:
        a = ls.analysis(params.text_document.uri)
        found = navigation.references(a, a.lines.offset(_pos(params.position)), params.context.include_declaration)
        return [lsp.Location(uri=params.text_document.uri, range=_range(a, r)) for r in found]

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=[".", "(", "["]))
    def on_completion(ls: RubricServer, params: lsp.CompletionParams) -> lsp.CompletionList:
        a = ls.analysis(params.text_document.uri)
        offset = a.lines.offset(_pos(params.position))
        details = {
            n.name: f"{'criterion' if isinstance(n, Criterion) else 'node'}: {n.type}"
            for n in _nodes(ls, params.text_document.uri)
        }
        found = complete(a.text, offset, load_catalog(), details)
        replace = _range(a, (found.start, offset))
        items = [
            lsp.CompletionItem(
                label=item.label,
                kind=_KIND[item.kind],
                detail=item.detail or None,
                documentation=_markdown(item.documentation) if item.documentation else None,
                text_edit=lsp.TextEdit(range=replace, new_text=item.insert or item.label),
            )
            for item in found.items
        ]
        return lsp.CompletionList(is_incomplete=False, items=items)

    @server.feature(lsp.TEXT_DOCUMENT_PREPARE_RENAME)
    def on_prepare_rename(ls: RubricServer, params: lsp.PrepareRenameParams) -> lsp.PrepareRenamePlaceholder | None:
        a = ls.analysis(params.text_document.uri)
        found = navigation.prepare_rename(a, a.lines.offset(_pos(params.position)))
        if found is None:
            return None
        return lsp.PrepareRenamePlaceholder(range=_range(a, found[0]), placeholder=found[1])

    @server.feature(lsp.TEXT_DOCUMENT_RENAME)
    def on_rename(ls: RubricServer, params: lsp.RenameParams) -> lsp.WorkspaceEdit:
        uri = params.text_document.uri
        a = ls.analysis(uri)
        try:
            found = navigation.rename(a, a.lines.offset(_pos(params.position)), params.new_name)
        except navigation.RenameError as exc:
            # The client shows a failed request's message to the user.
            raise JsonRpcException(str(exc), code=lsp.LSPErrorCodes.RequestFailed.value) from None
        return lsp.WorkspaceEdit(
            changes={uri: [lsp.TextEdit(range=_range(a, r), new_text=params.new_name) for r in found]}
        )

    @server.feature(lsp.TEXT_DOCUMENT_FOLDING_RANGE)
    def on_folding(ls: RubricServer, params: lsp.FoldingRangeParams) -> list[lsp.FoldingRange]:
        a = ls.analysis(params.text_document.uri)
        return [lsp.FoldingRange(start_line=first, end_line=last) for first, last in folding_ranges(a.text, a.lines)]

    @server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    def on_formatting(ls: RubricServer, params: lsp.DocumentFormattingParams) -> list[lsp.TextEdit] | None:
        a = ls.analysis(params.text_document.uri)
        result = format_source(a.text, a.path)
        if result.output is None:  # syntax errors: the diagnostics already say where
            return None
        if not result.changed:
            return []
        return [lsp.TextEdit(range=_range(a, (0, len(a.text))), new_text=result.output)]

    return server


def _nodes(ls: RubricServer, uri: str) -> Iterable[Node]:
    """The nodes of the document's current graph, else of its last good one."""
    graph = ls.analysis(uri).graph or ls.last_good.get(uri)
    return graph.nodes.values() if graph is not None else ()


def _markdown(text: str) -> lsp.MarkupContent:
    return lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text)


def _pos(p: lsp.Position) -> Position:
    return Position(p.line, p.character)


def _range(a: Analysis, r: Range) -> lsp.Range:
    start, end = a.lines.position_at(r[0]), a.lines.position_at(r[1])
    return lsp.Range(
        start=lsp.Position(line=start.line, character=start.character),
        end=lsp.Position(line=end.line, character=end.character),
    )


def _diagnostic(a: Analysis, d: Diagnostic) -> lsp.Diagnostic:
    message = with_notes(d)
    related = None
    if d.span.file not in (a.path, "<input>") and os.path.isfile(d.span.file):
        # A problem in a criterion's template file: shown on the `prompt` path
        # that names it, and linked to its own line in the template.
        spot = navigation.prompt_naming(a, d.span.file)
        where = lsp.Location(
            uri=pathlib.Path(os.path.abspath(d.span.file)).as_uri(),
            range=lsp.Range(
                start=lsp.Position(line=d.span.line - 1, character=d.span.column - 1),
                end=lsp.Position(line=d.span.end_line - 1, character=d.span.end_column - 1),
            ),
        )
        related = [
            lsp.DiagnosticRelatedInformation(
                location=where, message=f"{os.path.basename(d.span.file)}:{d.span.line}:{d.span.column}"
            )
        ]
        message = f"{os.path.basename(d.span.file)}:{d.span.line}:{d.span.column}: {message}"
        rng = (
            _range(a, spot)
            if spot
            else lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0))
        )
    else:
        rng = _range(a, a.range_of(d.span))
    return lsp.Diagnostic(
        range=rng,
        message=message,
        severity=_SEVERITY[d.severity],
        code=d.code,
        source=SOURCE,
        related_information=related,
    )


def serve() -> None:
    """Run the server over standard input and output until the client exits;
    a bad frame is answered with a parse error and skipped (`lsp.frames`)."""
    stdout = LockedStream(sys.stdout.buffer)
    create_server().start_io(stdin=Frames(sys.stdin.buffer, stdout.write), stdout=stdout)  # type: ignore[arg-type]
