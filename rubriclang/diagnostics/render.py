"""Rendering diagnostics for people and machines: text, JSON, SARIF, GitHub.

Every renderer takes diagnostics in the order they should appear (callers pass
`sorted_diagnostics(...)`) and returns one string; none of them reads the clock
or the environment, so machine formats are byte-stable and can be committed.

- **text**: `path:line:col: CODE severity: message`, the source line with a
  caret line under the span, then `  = note: ...` lines.

An excerpt shows at most `EXCERPT_WIDTH` characters of its line, around the
span's start, with `...` where it is cut; so does a `quoted` part of a
message or note in every format (`capped`): a diagnostic stays small
whatever the size of the line or token it points at.
- **json**: an array of objects with the keys `code`, `severity` (`error` or
  `warning`), `message`, `notes` (list of strings), `file`, `line`, `column`,
  `end_line`, `end_column` (1-based, columns in characters, end exclusive);
  keys sorted, 2-space indent.
- **sarif**: SARIF 2.1.0, one run, a rule for every code used.
- **github**: GitHub Actions workflow commands (`::error file=...::message`),
  which show as annotations on a pull request.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from rubriclang.diagnostics import FORMATS
from rubriclang.diagnostics.diagnostic import Diagnostic
from rubriclang.safetext import ELLIPSIS, EXCERPT_WIDTH, REPLACEMENT, capped, is_unsafe, one_line, printable

if TYPE_CHECKING:
    from rubriclang.diagnostics.codes import CodeInfo

# Tabs in excerpts expand to this many columns; the caret line is computed
# from the same expanded text, so carets stay under the span.
TAB_SIZE = 4

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

_RESET = "\x1b[0m"
_STYLE = {
    "error": "\x1b[1;31m",
    "warning": "\x1b[1;33m",
    "bold": "\x1b[1m",
    "gutter": "\x1b[1;34m",
    "note": "\x1b[1;36m",
}


# -- text ---------------------------------------------------------------------


def render_text(
    diagnostics: Iterable[Diagnostic],
    sources: Mapping[str, str] | None = None,
    *,
    color: bool = False,
) -> str:
    """Human-readable diagnostics. `sources` maps a file to its text, for
    excerpts; a file missing from it gets no excerpt."""
    sources = sources or {}
    lines_of: dict[str, list[str]] = {}
    blocks = []
    for d in diagnostics:
        text = sources.get(d.span.file)
        if text is not None and d.span.file not in lines_of:
            lines_of[d.span.file] = _source_lines(text)
        blocks.append(_text_block(d, lines_of.get(d.span.file), color))
    return "".join(blocks)


def _source_lines(text: str) -> list[str]:
    if text.startswith("\ufeff"):  # the parser drops a BOM, so columns start after it
        text = text[1:]
    return [line.rstrip("\r") for line in text.split("\n")]


def _paint(text: str, style: str, color: bool) -> str:
    return f"{_STYLE[style]}{text}{_RESET}" if color else text


def _text_block(d: Diagnostic, lines: list[str] | None, color: bool) -> str:
    sev = str(d.severity)
    # A path or a message may quote data: shown printable, as the excerpt is.
    out = [
        _paint(one_line(f"{d.span}:"), "bold", color)
        + f" {_paint(d.code, sev, color)} {_paint(sev + ':', sev, color)} {printable(capped(d.message))}\n"
    ]
    s = d.span
    if lines is not None and 1 <= s.line <= len(lines):
        line = lines[s.line - 1]
        end = s.end_column if s.end_line == s.line else len(line) + 1
        shown, start_col, width = _excerpt(*_window(line, s.column, end))
        num = str(s.line)
        pad = " " * len(num)
        bar = _paint("|", "gutter", color)
        out.append(f"{_paint(num, 'gutter', color)} {bar} {shown}".rstrip() + "\n")
        out.append(f"{pad} {bar} {' ' * start_col}{_paint('^' * width, sev, color)}\n")
    for note in d.notes:
        note = printable(capped(note)).replace("\n", "\n          ")
        out.append(f"  {_paint('=', 'note', color)} {_paint('note:', 'bold', color)} {note}\n")
    out.append("\n")
    return "".join(out)


def _window(line: str, column: int, end_column: int) -> tuple[str, int, int]:
    """At most `EXCERPT_WIDTH` characters of `line` around `column` (a quarter
    of them before it), an ellipsis on each side that is cut, and the span's
    columns in it (its end cut at the window's)."""
    if len(line) <= EXCERPT_WIDTH:
        return line, column, end_column
    lo = min(max(0, column - 1 - EXCERPT_WIDTH // 4), len(line) - EXCERPT_WIDTH)
    hi = lo + EXCERPT_WIDTH
    head = ELLIPSIS if lo > 0 else ""
    tail = ELLIPSIS if hi < len(line) else ""
    shift = lo - len(head)
    return head + line[lo:hi] + tail, column - shift, min(end_column, hi + 1) - shift


def _excerpt(line: str, column: int, end_column: int) -> tuple[str, int, int]:
    """The line as displayed (tabs expanded, control characters replaced), the
    display column where the span starts, and the caret count (at least 1)."""
    shown: list[str] = []
    col = 0
    start = width_end = None
    for i, ch in enumerate(line, start=1):
        if i == column:
            start = col
        if i == end_column:
            width_end = col
        if ch == "\t":
            n = TAB_SIZE - col % TAB_SIZE
            shown.append(" " * n)
        else:
            if is_unsafe(ch):
                ch = REPLACEMENT  # never send raw control characters to a terminal
            n = _char_width(ch)
            shown.append(ch)
        col += n
    if start is None:  # the span starts at (or past) the end of the line
        start = col
    if width_end is None:
        width_end = col
    return "".join(shown), start, max(width_end - start, 1)


def _char_width(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


# -- json ---------------------------------------------------------------------


def render_json(diagnostics: Iterable[Diagnostic]) -> str:
    """A JSON array of diagnostics (see the module docstring for its keys)."""
    import json  # only for machine formats: `rbg check` prints text by default

    items = [
        {
            "code": d.code,
            "severity": str(d.severity),
            "message": capped(d.message),
            "notes": [capped(n) for n in d.notes],
            "file": d.span.file,
            "line": d.span.line,
            "column": d.span.column,
            "end_line": d.span.end_line,
            "end_column": d.span.end_column,
        }
        for d in diagnostics
    ]
    return json.dumps(items, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# -- sarif --------------------------------------------------------------------


def render_sarif(diagnostics: Iterable[Diagnostic], *, tool_version: str) -> str:
    """A SARIF 2.1.0 log of one run. Columns are Unicode code points."""
    import json  # as in render_json

    from rubriclang.diagnostics.codes import registry

    diagnostics = list(diagnostics)
    info = registry()
    codes = sorted({d.code for d in diagnostics})
    index = {code: i for i, code in enumerate(codes)}
    rules = [_sarif_rule(info[code]) for code in codes]
    results = [
        {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": str(d.severity),
            "message": {"text": with_notes(d)},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(d.span.file)},
                        "region": {
                            "startLine": d.span.line,
                            "startColumn": d.span.column,
                            "endLine": d.span.end_line,
                            "endColumn": d.span.end_column,
                        },
                    }
                }
            ],
        }
        for d in diagnostics
    ]
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "rubriclang", "version": tool_version, "rules": rules}},
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _uri(path: str) -> str:
    """A relative path stays relative (as given); an absolute one becomes a file URI."""
    from pathlib import PurePath
    from urllib.parse import quote

    if PurePath(path).is_absolute():
        return PurePath(path).as_uri()
    return quote(path.replace("\\", "/"))


def _sarif_rule(info: CodeInfo) -> dict[str, Any]:
    help_md = f"{info.explanation}\n\nWrong:\n\n```\n{info.wrong}\n```\n\nRight:\n\n```\n{info.right}\n```"
    return {
        "id": info.code,
        "name": info.name,
        "shortDescription": {"text": info.summary},
        "fullDescription": {"text": info.explanation},
        "help": {"text": info.explanation, "markdown": help_md},
        "defaultConfiguration": {"level": str(info.severity)},
    }


def with_notes(d: Diagnostic) -> str:
    """The message and its `note: ...` lines, quoted parts `capped`."""
    return capped("\n".join([d.message, *(f"note: {n}" for n in d.notes)]))


# -- github -------------------------------------------------------------------


def render_github(diagnostics: Iterable[Diagnostic]) -> str:
    """GitHub Actions workflow commands, one line per diagnostic."""
    out = []
    for d in diagnostics:
        s = d.span
        props = ",".join(
            f"{k}={_gh_property(str(v))}"
            for k, v in (
                ("file", s.file),
                ("line", s.line),
                ("col", s.column),
                ("endLine", s.end_line),
                ("endColumn", s.end_column),
                ("title", d.code),
            )
        )
        out.append(f"::{d.severity} {props}::{_gh_data(with_notes(d))}\n")
    return "".join(out)


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_property(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


# -- dispatch -----------------------------------------------------------------


def render(
    fmt: str,
    diagnostics: Iterable[Diagnostic],
    *,
    sources: Mapping[str, str] | None = None,
    color: bool = False,
    tool_version: str | None = None,
) -> str:
    """Render in one of `FORMATS`. `sources` and `color` serve text only;
    `tool_version` (default: the installed package's) serves SARIF only."""
    if fmt == "text":
        return render_text(diagnostics, sources, color=color)
    if fmt == "json":
        return render_json(diagnostics)
    if fmt == "sarif":
        return render_sarif(diagnostics, tool_version=tool_version or package_version())
    if fmt == "github":
        return render_github(diagnostics)
    raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")


def package_version() -> str:
    """The installed rubriclang's version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rubriclang")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"
