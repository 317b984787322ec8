"""The diagnostic renderers, byte for byte, on a fixed set of diagnostics."""

from __future__ import annotations

import json

import pytest

from rubriclang.diagnostics import Diagnostic, Severity, Span
from rubriclang.diagnostics import codes as codes_module
from rubriclang.diagnostics.codes import CodeInfo
from rubriclang.diagnostics.render import (
    SARIF_SCHEMA,
    render,
    render_github,
    render_json,
    render_sarif,
    render_text,
)

E, W = Severity.ERROR, Severity.WARNING

SOURCE = (
    'rubric demo { version = 1, colour = "red" }\n'
    "\tquestion = 3\n"
    '  anchors = { 1: "日本語", 5: x }\n'
    "node q = reduce.mean(inputs: [a,\n"
    "  b])\n"
)

DIAGNOSTICS = [
    Diagnostic(
        "RB109",
        E,
        Span("rubric.rbg", 1, 28, 1, 34),
        "the `rubric` header has no parameter `colour`",
        ("did you mean `description`?", "its parameters: description, version"),
    ),
    Diagnostic("RB202", E, Span("rubric.rbg", 2, 13, 2, 14), "`question` takes a string, not a number"),
    Diagnostic("RB101", E, Span("rubric.rbg", 3, 28, 3, 29), "unknown name `x`"),
    Diagnostic("RB304", W, Span("rubric.rbg", 4, 6, 5, 5), "`q` cannot reach the sink"),
    Diagnostic("RB002", E, Span("rubric.rbg", 6, 1, 6, 1), "unexpected end of file"),
]

TEXT = """\
rubric.rbg:1:28: RB109 error: the `rubric` header has no parameter `colour`
1 | rubric demo { version = 1, colour = "red" }
  |                            ^^^^^^
  = note: did you mean `description`?
  = note: its parameters: description, version

rubric.rbg:2:13: RB202 error: `question` takes a string, not a number
2 |     question = 3
  |                ^

rubric.rbg:3:28: RB101 error: unknown name `x`
3 |   anchors = { 1: "日本語", 5: x }
  |                               ^

rubric.rbg:4:6: RB304 warning: `q` cannot reach the sink
4 | node q = reduce.mean(inputs: [a,
  |      ^^^^^^^^^^^^^^^^^^^^^^^^^^^

rubric.rbg:6:1: RB002 error: unexpected end of file
6 |
  | ^

"""


def test_text_underlines_each_span_under_its_source_line():
    assert render_text(DIAGNOSTICS, {"rubric.rbg": SOURCE}) == TEXT


def test_text_caret_stays_under_the_span_after_tabs_and_wide_characters():
    text = render_text(DIAGNOSTICS[1:3], {"rubric.rbg": SOURCE})
    lines = text.splitlines()
    # Tab expanded to 4 columns: `question` starts at display column 4, `3` at 15.
    assert lines[1] == "2 |     question = 3"
    assert lines[2].index("^") - len("  | ") == 15
    # Each of 日本語 is two columns wide.
    assert lines[6].index("^") - len("  | ") == len('  anchors = { 1: "') + 6 + len('", 5: ')


def test_text_ignores_carriage_returns_and_a_byte_order_mark():
    crlf = "\ufeff" + SOURCE.replace("\n", "\r\n")
    assert render_text(DIAGNOSTICS, {"rubric.rbg": crlf}) == TEXT


def test_text_replaces_control_characters_in_the_excerpt():
    d = Diagnostic("RB005", E, Span("a.rbg", 1, 3, 1, 4), "unexpected character")
    text = render_text([d], {"a.rbg": "ab\x1bc\n"})
    assert "\x1b" not in text
    assert "1 | ab\ufffdc\n  |   ^\n" in text


def test_text_without_the_source_shows_no_excerpt():
    assert render_text(DIAGNOSTICS[:1], {}) == (
        "rubric.rbg:1:28: RB109 error: the `rubric` header has no parameter `colour`\n"
        "  = note: did you mean `description`?\n"
        "  = note: its parameters: description, version\n"
        "\n"
    )


def test_text_colour_only_when_asked():
    plain = render_text(DIAGNOSTICS, {"rubric.rbg": SOURCE})
    coloured = render_text(DIAGNOSTICS, {"rubric.rbg": SOURCE}, color=True)
    assert "\x1b[" not in plain
    assert "\x1b[1;31mRB109\x1b[0m" in coloured
    assert "\x1b[1;33mwarning:\x1b[0m" in coloured


JSON = """\
[
  {
    "code": "RB109",
    "column": 28,
    "end_column": 34,
    "end_line": 1,
    "file": "rubric.rbg",
    "line": 1,
    "message": "the `rubric` header has no parameter `colour`",
    "notes": [
      "did you mean `description`?",
      "its parameters: description, version"
    ],
    "severity": "error"
  },
  {
    "code": "RB304",
    "column": 6,
    "end_column": 5,
    "end_line": 5,
    "file": "rubric.rbg",
    "line": 4,
    "message": "`q` cannot reach the sink",
    "notes": [],
    "severity": "warning"
  }
]
"""


def test_json_is_a_sorted_array_with_documented_keys():
    assert render_json([DIAGNOSTICS[0], DIAGNOSTICS[3]]) == JSON


def test_json_of_nothing_is_an_empty_array():
    assert json.loads(render_json([])) == []


GITHUB = (
    "::error file=rubric.rbg,line=1,col=28,endLine=1,endColumn=34,title=RB109::"
    "the `rubric` header has no parameter `colour`"
    "%0Anote: did you mean `description`?%0Anote: its parameters: description, version\n"
    "::warning file=rubric.rbg,line=4,col=6,endLine=5,endColumn=5,title=RB304::`q` cannot reach the sink\n"
)


def test_github_writes_one_workflow_command_per_diagnostic():
    assert render_github([DIAGNOSTICS[0], DIAGNOSTICS[3]]) == GITHUB


def test_github_escapes_message_data_and_properties():
    d = Diagnostic("RB203", E, Span("dir,a:b/x%.rbg", 1, 2, 1, 3), "100% wrong\r\nsecond")
    assert render_github([d]) == (
        "::error file=dir%2Ca%3Ab/x%25.rbg,line=1,col=2,endLine=1,endColumn=3,title=RB203::100%25 wrong%0D%0Asecond\n"
    )


FAKE_REGISTRY = {
    "RB109": CodeInfo("RB109", "unknown-parameter", E, "Unknown parameter.", "Explained.", "bad = 1", "good = 1"),
    "RB304": CodeInfo("RB304", "unreachable", W, "Cannot reach the sink.", "Why.", "node a", "sink a"),
}

SARIF = (
    """\
{
  "$schema": "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json",
  "runs": [
    {
      "columnKind": "unicodeCodePoints",
      "results": [
        {
          "level": "error",
          "locations": [
            {
              "physicalLocation": {
                "artifactLocation": {
                  "uri": "rubric.rbg"
                },
                "region": {
                  "endColumn": 34,
                  "endLine": 1,
                  "startColumn": 28,
                  "startLine": 1
                }
              }
            }
          ],
          "message": {
            "text": "the `rubric` header has no parameter `colour`\\nnote: did you mean `description`?"""
    """\\nnote: its parameters: description, version"
          },
          "ruleId": "RB109",
          "ruleIndex": 0
        },
        {
          "level": "warning",
          "locations": [
            {
              "physicalLocation": {
                "artifactLocation": {
                  "uri": "rubric.rbg"
                },
                "region": {
                  "endColumn": 5,
                  "endLine": 5,
                  "startColumn": 6,
                  "startLine": 4
                }
              }
            }
          ],
          "message": {
            "text": "`q` cannot reach the sink"
          },
          "ruleId": "RB304",
          "ruleIndex": 1
        }
      ],
      "tool": {
        "driver": {
          "name": "rubriclang",
          "rules": [
            {
              "defaultConfiguration": {
                "level": "error"
              },
              "fullDescription": {
                "text": "Explained."
              },
              "help": {
                "markdown": "Explained.\\n\\nWrong:\\n\\n```\\nbad = 1\\n```\\n\\nRight:\\n\\n```\\ngood = 1\\n```",
                "text": "Explained."
              },
              "id": "RB109",
              "name": "unknown-parameter",
              "shortDescription": {
                "text": "Unknown parameter."
              }
            },
            {
              "defaultConfiguration": {
                "level": "warning"
              },
              "fullDescription": {
                "text": "Why."
              },
              "help": {
                "markdown": "Why.\\n\\nWrong:\\n\\n```\\nnode a\\n```\\n\\nRight:\\n\\n```\\nsink a\\n```",
                "text": "Why."
              },
              "id": "RB304",
              "name": "unreachable",
              "shortDescription": {
                "text": "Cannot reach the sink."
              }
            }
          ],
          "version": "9.9.9"
        }
      }
    }
  ],
  "version": "2.1.0"
}
"""
)


@pytest.fixture
def fake_registry(monkeypatch):
    monkeypatch.setattr(codes_module, "registry", lambda: FAKE_REGISTRY)


def test_sarif_golden(fake_registry):
    assert render_sarif([DIAGNOSTICS[0], DIAGNOSTICS[3]], tool_version="9.9.9") == SARIF


def test_sarif_is_byte_stable_between_runs():
    first = render_sarif(DIAGNOSTICS, tool_version="1.0")
    assert render_sarif(DIAGNOSTICS, tool_version="1.0") == first


def test_sarif_has_the_structure_the_2_1_0_schema_requires():
    # The schema cannot be downloaded here, so its requirements are checked by hand.
    log = json.loads(render_sarif(DIAGNOSTICS, tool_version="1.0"))
    assert log["$schema"] == SARIF_SCHEMA
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "rubriclang"
    rule_ids = [r["id"] for r in driver["rules"]]
    assert rule_ids == sorted({d.code for d in DIAGNOSTICS})
    for rule in driver["rules"]:
        assert rule["defaultConfiguration"]["level"] in ("error", "warning")
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
    assert len(run["results"]) == len(DIAGNOSTICS)
    for result, d in zip(run["results"], DIAGNOSTICS, strict=True):
        assert result["ruleId"] == d.code
        assert rule_ids[result["ruleIndex"]] == d.code
        assert result["level"] == str(d.severity)
        assert result["message"]["text"].startswith(d.message)
        region = result["locations"][0]["physicalLocation"]["region"]
        assert (region["startLine"], region["startColumn"]) == (d.span.line, d.span.column)
        assert all(isinstance(v, int) and v >= 1 for v in region.values())


def test_sarif_uri_of_an_absolute_path_is_a_file_uri():
    d = Diagnostic("RB101", E, Span("/work/my rubric.rbg", 1, 1, 1, 2), "unknown name `x`")
    log = json.loads(render_sarif([d], tool_version="1.0"))
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "file:///work/my%20rubric.rbg"


def test_render_dispatches_by_format_name():
    assert render("json", DIAGNOSTICS) == render_json(DIAGNOSTICS)
    assert render("github", DIAGNOSTICS) == render_github(DIAGNOSTICS)
    assert render("text", DIAGNOSTICS, sources={"rubric.rbg": SOURCE}) == TEXT
    assert render("sarif", DIAGNOSTICS, tool_version="2") == render_sarif(DIAGNOSTICS, tool_version="2")
    with pytest.raises(ValueError, match="unknown format"):
        render("xml", DIAGNOSTICS)
