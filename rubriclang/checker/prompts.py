"""Checks of LLM criteria beyond their parameter specs: the user's prompt
template (read, parsed and checked at its own `file:line:col`), the declared
answer pattern, and what `llm.compare` can produce.

A template path is resolved against the `.rbg` file's folder and may not
leave that folder's tree (symbolic links included): a rubric can only show
the judge text that ships with it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import attrs

from rubriclang.catalog.model import ProcedureSpec
from rubriclang.catalog.types import JType, fmt_num
from rubriclang.checker.graph import PromptSource
from rubriclang.checker.values import suggest
from rubriclang.diagnostics import Diagnostic
from rubriclang.diagnostics.codes import make
from rubriclang.diagnostics.span import Span
from rubriclang.items.shape import ItemShape
from rubriclang.safeio import open_regular
from rubriclang.syntax import ast

# `llm.compare { reply = preference }`: what a preference answer may be.
PREFERENCES = ("first", "second", "tie")


@attrs.define
class PromptChecker:
    """Checks one LLM criterion; diagnostics go to `diags`."""

    rbg_path: str
    diags: list[Diagnostic]
    sources: dict[str, str]  # template file -> its text, for diagnostic excerpts
    # Criterion -> where its template shows `{{reference}}` (the RB505 lint reads it).
    references: dict[str, Span] = attrs.field(factory=dict)
    # The declared item shape, and criterion -> the item fields its own template reads.
    shape: ItemShape | None = None
    broken_fields: frozenset[str] = frozenset()  # malformed field declarations (reported)
    reads: dict[str, dict[str, Span]] = attrs.field(factory=dict)

    def err(self, code: str, span: Span, message: str, notes: Sequence[str] = ()) -> None:
        self.diags.append(make(code, span, message, notes))

    # -- the template ------------------------------------------------------------

    def prompt(
        self, d: ast.CriterionDecl, proc: ProcedureSpec, values: dict[str, Any], failed: frozenset[str]
    ) -> PromptSource | None:
        """The criterion's own template, read and checked; None when it has
        none (the built-in prompt) or it has errors (reported)."""
        param = _param(d, "prompt")
        if param is None or "prompt" in failed:
            if param is None and not values.get("question") and "question" not in failed:
                self.err(
                    "RB110",
                    d.procedure.span,
                    f"`{proc.name}` needs `question` or `prompt`",
                    ('add `question = "..."`, or your own template with `prompt = "judge.md"` (docs/judges.md)',),
                )
            return None
        node = param.value
        assert isinstance(node, ast.String)
        if values.get("template") not in (None, "default"):
            self.err(
                "RB203",
                param.name.span,
                "`prompt` replaces the built-in prompt, so it cannot be combined with `template`",
                ("remove one of `prompt` and `template`",),
            )
            return None
        if node.triple or "\n" in node.value:
            source = PromptSource(node.value, None, span=node.span)
            text_line, text_col, file = _inline_origin(node, self.rbg_path)
        else:
            resolved = self.resolve(node)
            if resolved is None:
                return None
            file, text = resolved
            self.sources[file] = text
            source = PromptSource(text, node.value, span=node.span)
            text_line, text_col = 1, 1
        from rubriclang import template as tpl  # only graphs with their own prompts pay for it

        template, problems = tpl.parse(source.text, "user")
        for p in problems:
            self.err(
                "RB208",
                _at(file, text_line, text_col, p.line, p.column, p.length),
                p.message,
                (p.fix,) if p.fix else (),
            )
        if template is None:
            return None
        known = dict(proc.placeholders)
        if self.shape is not None:  # the tags are checked against the declared item

            def at(name: str) -> Span:
                return _at(file, text_line, text_col, *tpl.locate(source.text, name))

            from rubriclang.checker.items import template_reads

            self.reads[d.name.value] = template_reads(
                self.shape, self.broken_fields, tpl.mentions(template), known, at, self.diags
            )
        for name in tpl.unknown_names(template, known) if self.shape is None else ():
            line, col, length = tpl.locate(source.text, name)
            self.err(
                "RB209",
                _at(file, text_line, text_col, line, col, length),
                f"`{{{{{name}}}}}` is not a value `{proc.name}` can show",
                (*suggest(name, known), "it can show: " + ", ".join(f"`{{{{{k}}}}}`" for k in known)),
            )
        if "reference" in template.names:
            line, col, length = tpl.locate(source.text, "reference")
            self.references[d.name.value] = _at(file, text_line, text_col, line, col, length)
        missing = [n for n in proc.shows if n not in template.names]
        if missing:
            shown = " and ".join(f"`{{{{{n}}}}}`" for n in missing)
            self.err(
                "RB209",
                _at(file, text_line, text_col, template.messages[-1].line, 1, 2),
                f"the template never shows {shown}, so the judge cannot see what it judges",
                (f"put {shown} in the last `## user` message",),
            )
            return None
        return source

    def resolve(self, node: ast.String, what: str = "template", code: str = "RB207") -> tuple[str, str] | None:
        """(path, text) of a `what` file (a template, a JSON Schema) inside
        the rubric's folder tree; problems reported as `code`."""
        base = os.path.dirname(os.path.abspath(self.rbg_path)) if not self.rbg_path.startswith("<") else os.getcwd()
        if os.path.isabs(node.value):
            self.err(
                code,
                node.span,
                f"the {what} path `{node.value}` is absolute",
                ("give it relative to the `.rbg` file's folder",),
            )
            return None
        path = os.path.normpath(os.path.join(base, node.value))
        real_base, real = os.path.realpath(base), os.path.realpath(path)
        if os.path.commonpath([real_base, real]) != real_base:
            self.err(
                code,
                node.span,
                f"the {what} `{node.value}` is outside the rubric's folder",
                (f"a {what} lives in the `.rbg` file's folder or below it",),
            )
            return None
        try:
            with open_regular(real, "r", encoding="utf-8-sig") as fh:
                text = fh.read()
        except FileNotFoundError:
            self.err(
                code,
                node.span,
                f"no {what} file `{node.value}` beside the rubric",
                ("the path is relative to the `.rbg` file's folder",),
            )
            return None
        except (OSError, UnicodeDecodeError) as exc:
            self.err(
                code,
                node.span,
                f"cannot read the {what} `{node.value}`: {exc.strerror if isinstance(exc, OSError) else exc}",
                (f"a {what} is a UTF-8 text file",),
            )
            return None
        return os.path.relpath(path) if not os.path.isabs(self.rbg_path) else path, text.replace("\r\n", "\n")

    # -- the answer --------------------------------------------------------------

    def answer(
        self, d: ast.CriterionDecl, proc: ProcedureSpec, t: JType, values: dict[str, Any], failed: frozenset[str]
    ) -> None:
        """A declared `pattern(...)`: it compiles, has the groups the reply
        shape needs, and its map yields values of the criterion's type."""
        spec = values.get("answer")
        if "answer" in failed or not isinstance(spec, dict):
            return
        param = _param(d, "answer")
        span = param.value.span if param else d.procedure.span
        from rubriclang.regex import compile_regex

        try:
            rx = compile_regex(spec["pattern"], False)
        except ValueError as exc:
            self.err(
                "RB210",
                span,
                f"the answer pattern is not a valid RE2 regular expression: {exc}",
                ("RE2: no backreferences or lookaround",),
            )
            return
        side_by_side = "side_by_side" in proc.hooks.traits
        groups = 2 if side_by_side and values.get("reply") == "ratings" else 1
        if rx.groups != groups:
            want = (
                "two groups: the rating of the response shown first, then the second's"
                if groups == 2
                else "exactly one group: the answer"
            )
            self.err(
                "RB210",
                span,
                f"the answer pattern has {rx.groups} group{'s' if rx.groups != 1 else ''}; it needs {want}",
                ("make other parentheses non-capturing: `(?:...)`",),
            )
            return
        mapping = spec.get("map")
        plain = t.as_optional(False)
        if side_by_side and values.get("reply") != "ratings":
            self._map_to(span, mapping, PREFERENCES, "a preference", required=("first", "second"))
        elif plain.kind == "label":
            self._map_to(
                span, mapping, plain.labels, f"a label of `{plain}`", required=plain.labels
            ) if mapping else None
        elif plain.kind == "bool":
            if mapping:
                bad = [k for k, v in mapping.items() if not isinstance(v, bool)]
                if bad:
                    self.err(
                        "RB210",
                        span,
                        f"the answer map sends `{bad[0]}` to `{mapping[bad[0]]}`, which is not `true` or `false`",
                    )
        elif mapping:
            for k, v in mapping.items():
                if (
                    isinstance(v, bool)
                    or not isinstance(v, (int, float))
                    or not plain.lo <= v <= plain.hi
                    or (plain.kind == "ordinal" and not float(v).is_integer())
                ):
                    self.err(
                        "RB210",
                        span,
                        f"the answer map sends `{k}` to `{v}`, which is not a point of `{plain}`",
                        (f"the scale runs from {fmt_num(plain.lo)} to {fmt_num(plain.hi)}",),
                    )
                    return

    def _map_to(
        self,
        span: Span,
        mapping: dict[str, Any] | None,
        allowed: Sequence[str],
        what: str,
        required: Sequence[str] = (),
    ) -> None:
        if mapping is None:
            self.err(
                "RB210",
                span,
                f"the answer pattern needs a map from the matched text to {what}",
                (
                    f'e.g. `pattern("\\\\[\\\\[(A|B|C)\\\\]\\\\]", {{ A: {allowed[0]}, B: '
                    f"{allowed[1]}{', C: ' + allowed[2] if len(allowed) > 2 else ''} }})`",
                ),
            )
            return
        for k, v in mapping.items():
            if not isinstance(v, str) or v not in allowed:
                self.err(
                    "RB210",
                    span,
                    f"the answer map sends `{k}` to `{v}`, which is not {what}",
                    (*suggest(str(v), allowed), "allowed: " + ", ".join(allowed)),
                )
                return
        uncovered = [r for r in required if r not in mapping.values()]
        if uncovered:
            self.err(
                "RB210",
                span,
                f"the answer map never yields {', '.join(f'`{u}`' for u in uncovered)}",
                ("map some matched text to each of them",),
            )

    # -- llm.compare ---------------------------------------------------------------

    def compare_type(self, d: ast.CriterionDecl, t: JType, values: dict[str, Any]) -> None:
        plain = t.as_optional(False)
        reply, order = values.get("reply"), values.get("order")
        if reply != "ratings":
            if plain != JType("score", 0, 1):
                self.err(
                    "RB204",
                    d.type.span,
                    "`llm.compare` with `reply = preference` produces `score[0, 1]` (1 preferred, 0.5 a tie), not "
                    f"`{t}`",
                    (
                        f"declare `{JType('score', 0, 1).as_optional(t.optional)}`, or set `reply = ratings` to rate "
                        f"each response on `{plain}`",
                    ),
                )
            anchors = _param(d, "anchors")
            if values.get("anchors") and anchors is not None:
                self.err(
                    "RB203",
                    anchors.name.span,
                    "`anchors` describe a rating scale; a preference has none",
                    ("remove `anchors`, or set `reply = ratings`",),
                )
        elif order == "both" and plain.kind == "ordinal":
            self.err(
                "RB204",
                d.type.span,
                f"`order = both` averages the two orders' ratings, which need not be a point of `{plain}`",
                (f"declare `score[{fmt_num(plain.lo)}, {fmt_num(plain.hi)}]`",),
            )


def known_params(proc: ProcedureSpec) -> set[str]:
    return {p.name for p in proc.params}


def _param(d: ast.CriterionDecl, name: str) -> ast.Param | None:
    return next((p for p in d.block.params if p.name.value == name), None)


def _inline_origin(node: ast.String, rbg_path: str) -> tuple[int, int, str]:
    """Where an inline template's text starts in the `.rbg` file: (line,
    column, file). A triple-quoted literal usually opens with a newline that
    its value drops; columns past the first line are those of the dedented
    text (the literal's indentation is not known here)."""
    span = node.span
    if span is None:
        return 1, 1, rbg_path
    lines = node.value.count("\n") + 1
    if node.triple and span.end_line - span.line >= lines:
        return span.line + 1, 1, span.file
    return span.line, span.column + (3 if node.triple else 1), span.file


def _at(file: str, line0: int, col0: int, line: int, col: int, length: int) -> Span:
    """A span in the template's own file: line/col in the template text,
    shifted by where that text starts (an inline template starts mid-line)."""
    if line == 1:
        return Span(file, line0, col0 + col - 1, line0, col0 + col - 1 + length)
    return Span(file, line0 + line - 1, col, line0 + line - 1, col + length)


def template_values(source: PromptSource | None) -> dict[str, Any]:
    """The template's part of a criterion's hash: its text, when it has one."""
    return {} if source is None else {"prompt_text": source.text}
