"""The standard local procedures' judging functions: each `ProcedureImpl`'s
`judge` (see `procedures.py`), run in-process by
`rubriclang.interp.local.LocalBackend`.

A judge is `judge(request, backend) -> Judgment`: `request` is the
`JudgmentRequest` (the item, the candidate, the criterion with its checked
parameters), `backend` the `LocalBackend` running it (its `annotations` and
`recorded` value tables). Judges are deterministic, and a failure is a
`Judgment.failed`, never an exception. JSON and RE2 are imported by the
judges that use them, so loading the catalog (every `rbg check`) pays for neither.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from rubriclang.catalog.types import JType
from rubriclang.interp.backend import Judgment, JudgmentRequest

if TYPE_CHECKING:
    from rubriclang.interp.local import LocalBackend
    from rubriclang.interp.tables import ValueTable

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")
_GSM8K_ANSWER = re.compile(r"####\s*(-?[\d,]*\.?\d+)")


def _field(request: JudgmentRequest, field: str) -> str | None:
    if field == "response":
        return request.response
    if field == "input":
        return request.item.input
    return request.item.reference


def _length(text: str, unit: str) -> int:
    if unit == "words":
        return len(text.split())
    if unit == "characters":
        return len(text)
    return text.count("\n") + 1 if text else 0


def _normalise(text: str) -> str:
    return " ".join(text.casefold().split()).strip(" .,;:!?\"'`()[]{}")


def final_number(text: str, gsm8k: bool = False) -> float | None:
    """The answer's number: after `####` when present (GSM8K), else the last number."""
    if gsm8k:
        m = _GSM8K_ANSWER.search(text)
        if m:
            return float(m.group(1).replace(",", ""))
    nums = _NUMBER.findall(text)
    if not nums:
        return None
    try:
        return float(nums[-1].replace(",", ""))
    except ValueError:
        return None


def rule_regex(request: JudgmentRequest, backend: LocalBackend) -> Judgment:
    """`rule.regex`: whether the RE2 pattern matches the field."""
    from rubriclang.regex import compile_regex  # RE2 only for graphs that use rule.regex

    p = request.criterion.params
    text = _field(request, p["field"])
    if text is None:
        return Judgment.failed(f"the item has no `{p['field']}`")
    try:
        rx = compile_regex(p["pattern"], p["ignore_case"])
    except ValueError as exc:
        return Judgment.failed(f"invalid pattern: {exc}")
    return Judgment(rx.search(text) is not None)


def rule_length(request: JudgmentRequest, backend: LocalBackend) -> Judgment:
    """`rule.length`: the field's length, or whether it is over or under a bound."""
    p = request.criterion.params
    text = _field(request, p["field"])
    if text is None:
        return Judgment.failed(f"the item has no `{p['field']}`")
    n = _length(text, p["unit"])
    if request.criterion.type.kind != "bool":
        return Judgment(n, raw=n)
    if p.get("over") is not None:
        return Judgment(n > p["over"], raw=n)
    return Judgment(n < p["under"], raw=n)


def rule_contains(request: JudgmentRequest, backend: LocalBackend) -> Judgment:
    """`rule.contains`: whether the field holds all (or any) of the phrases."""
    p = request.criterion.params
    text = _field(request, p["field"])
    if text is None:
        return Judgment.failed(f"the item has no `{p['field']}`")
    hay = text.casefold() if p["ignore_case"] else text
    needles = [x.casefold() if p["ignore_case"] else x for x in p["phrases"]]
    found = [n in hay for n in needles]
    return Judgment(all(found) if p["mode"] == "all" else any(found))


def rule_json_valid(request: JudgmentRequest, backend: LocalBackend) -> Judgment:
    """`rule.json_valid`: whether the field is JSON, valid against the schema when one is given."""
    import json

    p = request.criterion.params
    text = _field(request, p["field"])
    if text is None:
        return Judgment.failed(f"the item has no `{p['field']}`")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return Judgment(False, raw=f"invalid JSON: {exc.msg}")
    if p.get("schema") is None:
        return Judgment(True)
    import jsonschema

    try:
        jsonschema.validate(value, p["schema"])
    except jsonschema.ValidationError as exc:
        return Judgment(False, raw=f"schema: {exc.message}")
    except jsonschema.SchemaError as exc:
        return Judgment.failed(f"the criterion's schema is invalid: {exc.message}")
    return Judgment(True)


def rule_matches_reference(request: JudgmentRequest, backend: LocalBackend) -> Judgment:
    """`rule.matches_reference`: the response against the item's reference, as text or as a final number."""
    p = request.criterion.params
    ref = request.item.reference
    if ref is None:
        return Judgment.failed("the item has no `reference` to match")
    response = request.response
    if p["mode"] == "exact":
        return Judgment(_normalise(response) == _normalise(ref))
    want = final_number(ref, gsm8k=True)
    if want is None:
        return Judgment.failed("the reference contains no number")
    got = final_number(response, gsm8k=True)
    raw = {"reference": want, "response": got}
    if got is None:
        return Judgment(False, raw=raw)
    return Judgment(abs(got - want) <= p["tolerance"], raw=raw)


def _lookup(table: ValueTable, field: dict[str, Any], request: JudgmentRequest, what: str) -> tuple[bool, Any]:
    """The value under the criterion's key: the run's table first, then the item's own field."""
    key = request.criterion.params["key"]
    found, value = table.get(request.item.id, request.candidate, key)
    if found:
        return True, value
    values = field.get(request.candidate, {})
    if key in values:
        return True, values[key]
    return False, f"no {what} `{key}` for item `{request.item.id}`, candidate `{request.candidate}`"


def human_annotation(request: JudgmentRequest, backend: LocalBackend) -> Judgment:
    """`human.annotation`: the annotation under the criterion's key."""
    found, value = _lookup(backend.annotations, request.item.annotations, request, "annotation")
    if not found:
        return Judgment.failed(value)
    return Judgment(value, raw=value)


def recorded_value(request: JudgmentRequest, backend: LocalBackend) -> Judgment:
    """`recorded.value`: the recorded value under the criterion's key, a distribution read by `read`."""
    found, value = _lookup(backend.recorded, request.item.recorded, request, "recorded value")
    if not found:
        return Judgment.failed(value)
    if isinstance(value, dict):
        return _read_distribution(value, request.criterion.params["read"], request)
    return Judgment(value, raw=value)


def _read_distribution(dist: dict[str, Any], read: str, request: JudgmentRequest) -> Judgment:
    t = request.criterion.type
    try:
        points = {_point(k, t): float(v) for k, v in dist.items()}
    except (TypeError, ValueError) as exc:
        return Judgment.failed(f"malformed distribution: {exc}", raw=dist)
    total = sum(points.values())
    if total <= 0 or any(v < 0 for v in points.values()):
        return Judgment.failed("a distribution needs non-negative probabilities with a positive sum", raw=dist)
    if read == "mode":
        # The most likely point; ties go to the smallest, so the read is deterministic.
        best = max(points.values())
        value = min(k for k, v in points.items() if v == best)
    else:
        value = sum(float(k) * v for k, v in sorted(points.items())) / total
    return Judgment(value, raw=dist)


def _point(key: str, t: JType) -> str | float | int:
    if t.kind == "label":
        return str(key)
    x = float(key)
    return int(x) if x.is_integer() else x
