"""Writing a starting suite (`rbg audit init`, `rbg audit plan`): TOML text
with a comment on every choice, meant to be read and edited."""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Mapping

from rubriclang.audit.judge import JudgeInfo
from rubriclang.audit.perturbations import Perturbation

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
# What a TOML basic string must escape: `"`, `\`, and every control character.
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\x7f]')


class SuiteTextError(ValueError):
    """A value (a path) that no TOML string can hold."""


def _q(text: str) -> str:
    """`text` as a TOML basic string, every control character escaped."""
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in text):
        raise SuiteTextError(f"{text!r} is not valid Unicode (a path in an undecodable encoding?); TOML cannot hold it")
    return '"' + _NEEDS_ESCAPE.sub(lambda m: _ESCAPES.get(m.group(), f"\\u{ord(m.group()):04X}"), text) + '"'


def _comment(text: str) -> str:
    """`text` fit for one TOML comment: a model's rationale may hold line
    breaks (which would end the comment and start TOML of its own) and
    control characters (which TOML forbids even in comments)."""
    kept = "".join(" " if unicodedata.category(ch) in ("Cc", "Zl", "Zp") else ch for ch in text)
    return " ".join(kept.split())


def _rel(path: str, suite_path: str) -> str:
    return os.path.relpath(os.path.abspath(path), os.path.dirname(os.path.abspath(suite_path)))


def render_suite(
    suite_path: str,
    graph_path: str,
    items_path: str,
    judge: JudgeInfo,
    chosen: list[tuple[Perturbation, str]],
    skipped: list[tuple[str, str]],
    made_by: str,
    base_url: str | None = None,
    embedded: bool = False,
    *,
    repeats: int | None = None,
    tolerance: float | None = None,
    roles: Mapping[str, str | None] | None = None,
) -> str:
    """The suite's text: `chosen` (operator, comment) are listed in
    `operators`; `skipped` (name, reason) are listed as comments. `base_url`
    is written into the backend tables; `embedded` says the suite is sized
    for the embedded model (2 repeats, and its comments say why);
    `repeats`/`tolerance`, when given, replace the sized defaults; `roles`
    (judge, generator, validator -> a URL or None) overrides `base_url` for
    a role's table. Raises SuiteTextError for a path TOML cannot hold."""
    uses_llm = bool(judge.llm_criteria)

    def server(role: str) -> str:
        url = (roles or {}).get(role, base_url)
        return (
            f"base_url = {_q(url)}"
            if url
            else '# base_url = "http://localhost:8000/v1"   # absent: the embedded local model'
        )

    lines = [
        f"# An audit suite for `{_comment(judge.graph.name)}` ({judge.type} judge), written by `{made_by}`.",
        "# Edit it, then run:  rbg audit THIS_FILE --out DIR",
        "# The format: docs/audit.md. The operators: `rbg audit catalog`.",
        "",
    ]
    # Top-level keys first: in TOML, a key after a [table] belongs to it.
    if not uses_llm:
        lines.append(f"judge = {_q(_rel(graph_path, suite_path))}")
    lines.append(f"items = {_q(_rel(items_path, suite_path))}")
    if repeats is not None:
        lines.append(f"repeats = {repeats}")
    elif uses_llm and embedded:
        lines.append("repeats = 2   # sized for the embedded 135M model; with a server, 5 measure the noise better")
    elif uses_llm:
        lines.append("repeats = 5")
    else:
        lines.append("repeats = 1   # no llm.* criteria: the judge is deterministic, one repeat is enough")
    if judge.type == "ordinal":
        shown = "0" if tolerance is None else repr(float(tolerance))
        lines.append(f"tolerance = {shown}   # a change of at most this much is not a flip")
    lines += ["seed = 0", "", "operators = ["]
    width = max((len(_q(op.name)) for op, _ in chosen), default=0) + 1
    for op, comment in chosen:
        lines.append(f"  {(_q(op.name) + ','):<{width}}  # {_comment(comment) or _comment(op.summary)}")
    lines.append("]")
    if skipped:
        lines += ["", "# Not applicable to this judge:"]
        lines += [f"#   {name}: {_comment(reason)}" for name, reason in skipped]
    if uses_llm:
        lines += [
            "",
            "[judge]",
            f"graph = {_q(_rel(graph_path, suite_path))}",
            server("judge"),
            '# model = "..."',
            '# api_key_env = "OPENAI_API_KEY"',
            "temperature = 0.7   # as the judge is used; repeat r samples with seed + r",
            "seed = 0",
        ]
    if any(op.generator == "llm" for op, _ in chosen):
        lines += [
            "",
            "[generator]   # writes the LLM-made variants; independent of the judge",
            server("generator"),
            "temperature = 0.7",
            "",
            "[validator]   # accepts or rejects each LLM-made variant",
            server("validator"),
            "temperature = 0.0",
        ]
    return "\n".join(lines) + "\n"


def describe(op: Perturbation) -> str:
    """The default comment of a chosen operator."""
    return f"{op.surface}, {op.relation}, {op.generator}: {op.summary}"


def render_custom(entries: list[dict], made_by: str) -> str:
    """Proposed `[[custom]]` tables, each under its rationale, to review
    and paste into a suite."""
    lines = [
        f"# Custom operators proposed by `{made_by}`: review each, then paste it into a suite.",
        "# The format: docs/audit.md (the [[custom]] table).",
    ]
    for e in entries:
        lines += ["", f"# {_comment(e['rationale'])}", "[[custom]]"]
        lines += [f"{k} = {_q(e[k])}" for k in ("name", "surface", "relation", "instruction")]
    return "\n".join(lines) + "\n"
