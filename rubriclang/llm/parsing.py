"""Reading a judge's answer out of its reply.

JSON first (what structured output and the prompt ask for): the last JSON
object in the reply that holds the answer key. Otherwise plain text, anchored
at the end: the last `Score: 4` / `Answer: yes` / `Label: formal` line, or a
reply whose last line is only the answer. A value outside the declared type
is a parse failure, never clamped or rounded, so the backend can ask again.

`llm.rate { template = prometheus }` is read as Prometheus writes: feedback,
then `[RESULT] n`. Only the last `[RESULT]` counts (feedback may quote the
format before it); a reply without one is a failure, never read any other way.

With token log-probabilities (`--logprobs`), a `score[lo, hi]` rating with
one-digit points is read G-Eval style: the probability-weighted mean of the
points at the answer's token, and the distribution is kept for the trace.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

import attrs

from rubriclang.catalog import load_catalog
from rubriclang.catalog.types import JType
from rubriclang.checker.graph import Criterion
from rubriclang.interp.domain import coerce
from rubriclang.llm.prompting import answer_key, scale_phrase, side_by_side, template_choice

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)"
_DECORATION = "*_`#>\"' \t"
_YES = {"yes": True, "true": True, "no": False, "false": False}
_MAX_BRACES = 200  # how many `{` to try, from the end, before giving up on JSON
_RESULT = re.compile(r"\[RESULT\]", re.I)
# What follows the marker: `4`, `(4)`, `[4]`, `: 4`.
_RESULT_VALUE = re.compile(rf"\s*:?\s*[(\[]?\s*({_NUMBER})")


@attrs.frozen
class ParseResult:
    """`value` (None when `error`), how it was read, and for `logprobs` the
    distribution over the scale's points."""

    value: Any
    error: str | None
    method: str  # "json", "text", "pattern", "logprobs" or "result" (Prometheus's `[RESULT] n`)
    distribution: dict[str, float] | None = None


def parse(criterion: Criterion, text: str, logprobs: list[Any] | None = None) -> ParseResult:
    """The criterion's answer in `text` (and `logprobs`, when given and usable).
    For `llm.compare` the value is in presentation order: `first`, `second`
    or `tie` for a preference, a (first, second) pair of ratings."""
    answer = criterion.params.get("answer", "json")
    if side_by_side(criterion):
        return _compare(criterion, text, answer)
    if isinstance(answer, dict):
        return _from_pattern(text, answer, criterion.type)
    if template_choice(criterion) == "prometheus":
        return _from_result(text, criterion.type)
    key = answer_key(criterion.procedure)
    t = criterion.type
    found, raw = _from_json(text, key)
    method = "json"
    if not found:
        method = "text"
        found, raw = _from_text(text, criterion.procedure, t)
    if not found:
        return ParseResult(
            None,
            f"no `{key}` found (expected a JSON object with `{key}`, or a final `{key.capitalize()}: ...` line)",
            method,
        )
    value, problem = _read(raw, t)
    if problem:
        return ParseResult(None, f"`{key}`: {problem}", method)
    points = weighted_points(criterion) if logprobs else None
    if logprobs and points:
        dist = _distribution(logprobs, value, points)
        if dist:
            mean = sum(int(p) * q for p, q in dist.items())
            return ParseResult(round(mean, 6), None, "logprobs", dist)
    return ParseResult(value, None, method)


def parse_group(members: tuple[Criterion, ...], text: str) -> list[ParseResult]:
    """Each member's answer in a group's reply, in the members' order: the
    field named after it in the last JSON object that has any member's
    field. A member whose field is missing, or holds a value outside its
    type, is a parse failure of its own; the others are read."""
    names = [m.name for m in members]
    obj = next((o for o in json_objects_from_end(text) if any(n in o for n in names)), None)
    if obj is None:
        fields = ", ".join(f"`{n}`" for n in names)
        return [ParseResult(None, f"no JSON object with {fields} found", "json") for _ in members]
    out = []
    for m in members:
        if m.name not in obj:
            out.append(ParseResult(None, f"no `{m.name}` in the reply's JSON object", "json"))
            continue
        value, problem = _read(obj[m.name], m.type)
        out.append(ParseResult(None, f"`{m.name}`: {problem}", "json") if problem else ParseResult(value, None, "json"))
    return out


def _last_match(text: str, spec: dict[str, Any]) -> re.Match[str] | None:
    """The last match of the declared pattern in `text`, or None."""
    from rubriclang.regex import compile_regex

    last = None
    for m in compile_regex(spec["pattern"]).finditer(text):
        last = m
    return last


def _from_pattern(text: str, spec: dict[str, Any], t: JType) -> ParseResult:
    """`answer = pattern(...)`: the last match's group, through the map when
    one is declared, read as a value of `t` (never clamped)."""
    m = _last_match(text, spec)
    if m is None:
        return ParseResult(None, f"the answer pattern `{spec['pattern']}` does not match the reply", "pattern")
    value, problem = _mapped(m.group(1), spec, t)
    if problem:
        return ParseResult(None, f"the answer pattern matched {m.group(1)!r}: {problem}", "pattern")
    return ParseResult(value, None, "pattern")


def _mapped(raw: str | None, spec: dict[str, Any], t: JType) -> tuple[Any, str | None]:
    raw = raw or ""
    mapping = spec.get("map")
    if mapping is not None:
        if raw not in mapping:
            folded = [k for k in mapping if k.casefold() == raw.strip().casefold()]
            if len(folded) != 1:
                return None, f"not one of the mapped texts ({', '.join(repr(k) for k in mapping)})"
            raw = folded[0]
        return _read(mapping[raw], t)
    return _read(raw, t)


_PREFERENCE = {"a": "first", "b": "second", "tie": "tie", "c": "tie"}


def _compare(criterion: Criterion, text: str, answer: str | None) -> ParseResult:
    """An `llm.compare` reply: a preference (`first`, `second`, `tie`), or
    the (first, second) ratings, in the order the responses were shown."""
    t = criterion.type.as_optional(False)
    ratings = criterion.params.get("reply") == "ratings"
    if isinstance(answer, dict):
        m = _last_match(text, answer)
        if m is None:
            return ParseResult(None, f"the answer pattern `{answer['pattern']}` does not match the reply", "pattern")
        if not ratings:
            choice = answer["map"].get(m.group(1))
            if choice is None:
                folded = [v for k, v in answer["map"].items() if k.casefold() == (m.group(1) or "").strip().casefold()]
                choice = folded[0] if len(folded) == 1 else None
            if choice is None:
                return ParseResult(
                    None, f"the answer pattern matched {m.group(1)!r}, which the map does not name", "pattern"
                )
            return ParseResult(choice, None, "pattern")
        pair = []
        for g in (1, 2):
            value, problem = _read(m.group(g) or "", t)
            if problem:
                return ParseResult(
                    None, f"the rating of the response shown {'first' if g == 1 else 'second'}: {problem}", "pattern"
                )
            pair.append(value)
        return ParseResult(tuple(pair), None, "pattern")
    keys = ("score_a", "score_b") if ratings else ("preference",)
    obj = next((o for o in json_objects_from_end(text) if all(k in o for k in keys)), None)
    if obj is None:
        fields = " and ".join(f"`{k}`" for k in keys)
        return ParseResult(None, f"no JSON object with {fields} found", "json")
    if not ratings:
        raw = obj["preference"]
        choice = _PREFERENCE.get(raw.strip().strip(_DECORATION).casefold()) if isinstance(raw, str) else None
        if choice is None:
            return ParseResult(None, f'`preference`: {raw!r} is not "A", "B" or "tie"', "json")
        return ParseResult(choice, None, "json")
    pair = []
    for k in keys:
        value, problem = _read(obj[k], t)
        if problem:
            return ParseResult(None, f"`{k}`: {problem}", "json")
        pair.append(value)
    return ParseResult(tuple(pair), None, "json")


def weighted_points(criterion: Criterion) -> range | None:
    """The points a probability-weighted reading averages over: an
    `llm.rate` on `score[lo, hi]` with whole, one-digit bounds (each point
    then is one token). Ordinals are not weighted: their value must be a
    whole point, and a mean is not one."""
    t = criterion.type
    if "rates" not in load_catalog().hooks(criterion.procedure).traits or t.kind != "score":
        return None
    if not (float(t.lo).is_integer() and float(t.hi).is_integer() and 0 <= t.lo < t.hi <= 9):
        return None
    return range(int(t.lo), int(t.hi) + 1)


def _from_result(text: str, t: JType) -> ParseResult:
    """The score after the last `[RESULT]` of a Prometheus reply."""
    markers = list(_RESULT.finditer(text))
    if not markers:
        return ParseResult(
            None, f"no `[RESULT]` found (expected the feedback, then `[RESULT]` and {scale_phrase(t)})", "result"
        )
    m = _RESULT_VALUE.match(text, markers[-1].end())
    if m is None:
        return ParseResult(
            None, f"the last `[RESULT]` is not followed by a score (expected {scale_phrase(t)})", "result"
        )
    value, problem = _read(m.group(1), t)
    if problem:
        return ParseResult(None, f"`[RESULT]`: {problem}", "result")
    return ParseResult(value, None, "result")


_DECODER = json.JSONDecoder()


def json_objects_from_end(text: str) -> Iterator[dict[str, Any]]:
    """The JSON objects embedded in a model's reply, last first (a reply may
    wrap its answer in prose or a code fence; the answer comes last)."""
    decoder = _DECODER
    pos = len(text)
    for _ in range(_MAX_BRACES):
        pos = text.rfind("{", 0, pos)
        if pos < 0:
            return
        try:
            obj, _end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            yield obj


def _from_json(text: str, key: str) -> tuple[bool, Any]:
    """The last JSON object in `text` holding `key`, tried from the end."""
    if text.count("{") == 1:
        # The usual structured reply, a flat object: its brace is the only
        # one to try from the end, so try it without the generator.
        try:
            obj, _end = _DECODER.raw_decode(text, text.index("{"))
        except json.JSONDecodeError:
            return False, None
        return (True, obj[key]) if isinstance(obj, dict) and key in obj else (False, None)
    for obj in json_objects_from_end(text):
        if key in obj:
            return True, obj[key]
    return False, None


def _from_text(text: str, procedure: str, t: JType) -> tuple[bool, Any]:
    answer = _answer_pattern(t)
    # The words that may introduce a final answer: the procedure's entry's.
    keyword = load_catalog().hooks(procedure).answer_keyword
    keyed = re.compile(rf"\b{keyword}\s*[*_`]*\s*[:=]\s*[*_`\"']*\s*({answer})", re.I)
    matches = keyed.findall(text)
    if matches:
        return True, matches[-1]
    lines = [ln.strip(_DECORATION) for ln in text.strip().splitlines()]
    last = next((ln for ln in reversed(lines) if ln), "")
    last = last.rstrip(".!").strip(_DECORATION)
    if t.numeric:
        m = re.fullmatch(rf"({_NUMBER})(?:\s*/\s*{_NUMBER})?", last)
        return (True, m.group(1)) if m else (False, None)
    if t.kind == "bool" and last.lower() in _YES:
        return True, last
    if t.kind == "label" and _label(last, t.labels) in t.labels:
        return True, last
    return False, None


def _answer_pattern(t: JType) -> str:
    """What may follow `Keyword:`; a word that is no label is still taken,
    so that the failure says which word it was."""
    if t.kind == "bool":
        return r"(?:yes|no|true|false)\b"
    if t.kind == "label":
        return r"[\w.-]+"
    return _NUMBER


def _read(raw: Any, t: JType) -> tuple[Any, str | None]:
    """`raw` (a JSON value or a matched string) as a value of `t`, or why not."""
    if t.kind == "bool" and isinstance(raw, str) and raw.strip().lower() in _YES:
        raw = _YES[raw.strip().lower()]
    elif t.kind == "label" and isinstance(raw, str):
        raw = _label(raw, t.labels)
    elif t.numeric and isinstance(raw, str):
        try:
            raw = float(raw.strip())
        except ValueError:
            return None, f"{raw!r} is not a number"
        if raw.is_integer():
            raw = int(raw)
    value, problem = coerce(raw, t.as_optional(False) if t.optional else t)
    return value, problem


def _label(raw: str, labels: tuple[str, ...]) -> str:
    word = raw.strip().strip(_DECORATION).rstrip(".")
    if word in labels:
        return word
    folded = [lab for lab in labels if lab.casefold() == word.casefold()]
    return folded[0] if len(folded) == 1 else word


def _distribution(logprobs: list[Any], value: Any, points: range) -> dict[str, float] | None:
    """The normalised probabilities of the scale's points at the token that
    carried the answer (the last token spelling it), or None."""
    if not (isinstance(value, (int, float)) and float(value).is_integer()):
        return None
    spelled = str(int(value))
    names = {str(p) for p in points}
    for entry in reversed(logprobs):
        if not isinstance(entry, dict) or str(entry.get("token", "")).strip() != spelled:
            continue
        mass: dict[str, float] = {}
        for alt in entry.get("top_logprobs") or []:
            token = str(alt.get("token", "")).strip()
            lp = alt.get("logprob")
            if token in names and isinstance(lp, (int, float)) and math.isfinite(lp):
                mass[token] = mass.get(token, 0.0) + math.exp(lp)
        total = sum(mass.values())
        if total <= 0:
            return None
        return {p: round(mass[p] / total, 6) for p in sorted(mass, key=int)}
    return None
