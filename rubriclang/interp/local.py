"""Local criterion procedures: rules, human annotations and recorded values.

They run in-process and are deterministic. `rule.regex` uses RE2, a
linear-time engine, so no pattern can backtrack catastrophically.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from rubriclang.catalog import load_catalog
from rubriclang.catalog.types import JType
from rubriclang.interp.backend import Judgment, JudgmentRequest
from rubriclang.interp.tables import ValueTable
from rubriclang.regex import compile_regex

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


_METHODS: dict[str, str] = {}  # a procedure's method name: `_` + the name with `_` for `.`


class LocalBackend:
    """Runs every non-LLM procedure of the standard catalog."""

    name = "local"

    def __init__(self, annotations: ValueTable | None = None, recorded: ValueTable | None = None):
        self.annotations = annotations or ValueTable()
        self.recorded = recorded or ValueTable()

    @staticmethod
    def handles(procedure: str) -> bool:
        """Whether the procedure's catalog entry names this backend (`local`);
        it runs each by its method `_` + the name with `_` for `.`."""
        return load_catalog().hooks(procedure).backend == "local"

    async def judge(self, request: JudgmentRequest) -> Judgment:
        return self.judge_now(request)

    def judge_known(self, requests: list[JudgmentRequest]) -> list[Judgment | None]:
        """Every judgment at once: local procedures never wait. None for all
        from a subclass with its own `judge`, which must then be awaited."""
        if type(self).judge is not LocalBackend.judge:
            return [None] * len(requests)
        return [self.judge_now(r) for r in requests]

    def judge_now(self, request: JudgmentRequest) -> Judgment:
        crit = request.criterion
        name = _METHODS.get(crit.procedure)
        if name is None:
            name = _METHODS[crit.procedure] = "_" + crit.procedure.replace(".", "_")
        method: Callable[[JudgmentRequest, dict[str, Any]], Judgment] = getattr(self, name)
        return method(request, crit.params)

    def _rule_regex(self, request: JudgmentRequest, p: dict[str, Any]) -> Judgment:
        text = _field(request, p["field"])
        if text is None:
            return Judgment.failed(f"the item has no `{p['field']}`")
        try:
            rx = compile_regex(p["pattern"], p["ignore_case"])
        except ValueError as exc:
            return Judgment.failed(f"invalid pattern: {exc}")
        return Judgment(rx.search(text) is not None)

    def _rule_length(self, request: JudgmentRequest, p: dict[str, Any]) -> Judgment:
        text = _field(request, p["field"])
        if text is None:
            return Judgment.failed(f"the item has no `{p['field']}`")
        n = _length(text, p["unit"])
        if request.criterion.type.kind != "bool":
            return Judgment(n, raw=n)
        if p.get("over") is not None:
            return Judgment(n > p["over"], raw=n)
        return Judgment(n < p["under"], raw=n)

    def _rule_contains(self, request: JudgmentRequest, p: dict[str, Any]) -> Judgment:
        text = _field(request, p["field"])
        if text is None:
            return Judgment.failed(f"the item has no `{p['field']}`")
        hay = text.casefold() if p["ignore_case"] else text
        needles = [x.casefold() if p["ignore_case"] else x for x in p["phrases"]]
        found = [n in hay for n in needles]
        return Judgment(all(found) if p["mode"] == "all" else any(found))

    def _rule_json_valid(self, request: JudgmentRequest, p: dict[str, Any]) -> Judgment:
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

    def _rule_matches_reference(self, request: JudgmentRequest, p: dict[str, Any]) -> Judgment:
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

    def _lookup(
        self, table: ValueTable, field: dict[str, Any], request: JudgmentRequest, what: str
    ) -> tuple[bool, Any]:
        key = request.criterion.params["key"]
        found, value = table.get(request.item.id, request.candidate, key)
        if found:
            return True, value
        values = field.get(request.candidate, {})
        if key in values:
            return True, values[key]
        return False, f"no {what} `{key}` for item `{request.item.id}`, candidate `{request.candidate}`"

    def _human_annotation(self, request: JudgmentRequest, p: dict[str, Any]) -> Judgment:
        found, value = self._lookup(self.annotations, request.item.annotations, request, "annotation")
        if not found:
            return Judgment.failed(value)
        return Judgment(value, raw=value)

    def _recorded_value(self, request: JudgmentRequest, p: dict[str, Any]) -> Judgment:
        found, value = self._lookup(self.recorded, request.item.recorded, request, "recorded value")
        if not found:
            return Judgment.failed(value)
        if isinstance(value, dict):
            return self._read_distribution(value, p["read"], request)
        return Judgment(value, raw=value)

    def _read_distribution(self, dist: dict[str, Any], read: str, request: JudgmentRequest) -> Judgment:
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
