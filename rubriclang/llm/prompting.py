"""Rendering an LLM criterion's prompt for one candidate.

The wording lives in versioned template files (`prompts/rate.v1.md`, ...),
never in code: a prompt change is a new file, so old traces keep naming the
prompt they were made with. A template has a `## system` and a `## user`
section; `{{name}}` is replaced by a value and `{{#name}} ... {{/name}}` is
kept only when `name` is not empty. Values are inserted in one pass, so a
response that contains `{{...}}` is shown as written, never expanded.

Each request asks for structured output (a JSON schema built from the
criterion's type) and the prompt asks for the same JSON in words, so a
server without structured output still gets a parseable answer.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import json
import re

import attrs

from rubriclang.catalog.types import JType, fmt_num
from rubriclang.checker.graph import Criterion
from rubriclang.interp.items import Item
from rubriclang.llm.client import ChatRequest

# procedure -> (template file, the key of the answer in the reply's JSON).
# Moving a procedure to a new template version is a deliberate edit here.
TEMPLATES = {
    "llm.rate": ("rate.v1", "score"),
    "llm.check": ("check.v1", "answer"),
    "llm.choose": ("choose.v1", "label"),
}
NUDGE = "nudge.v1"

_SECTION = re.compile(r"\{\{#(\w+)\}\}\n?(.*?)\{\{/\1\}\}\n?", re.S)
_FIELD = re.compile(r"\{\{(\w+)\}\}")
_COMMENT = re.compile(r"\A\s*<!--.*?-->\s*", re.S)
_HEADING = re.compile(r"^## (system|user|assistant)[ \t]*$", re.M)


class PromptError(ValueError):
    """The item lacks something the criterion's prompt needs (a reference)."""


@attrs.frozen
class Template:
    """A parsed template file: `name@vN` and its (role, text) sections."""

    id: str
    sections: tuple[tuple[str, str], ...]

    def fill(self, values: dict[str, str]) -> tuple[dict, ...]:
        """The chat messages, with `values` filled in."""
        return tuple({"role": role, "content": _fill(text, values)} for role, text in self.sections)


@attrs.frozen
class Rendered:
    """A criterion's request for one candidate. `request.sampling` is a
    placeholder: the backend applies the run's sampling."""

    request: ChatRequest
    prompt_hash: str
    template: str


def _fill(text: str, values: dict[str, str]) -> str:
    text = _SECTION.sub(lambda m: m.group(2) if values[m.group(1)] else "", text)
    return _FIELD.sub(lambda m: values[m.group(1)], text).strip()


@functools.cache
def load_template(stem: str) -> Template:
    """A template from the package's `prompts/` folder, e.g. `rate.v1`."""
    text = importlib.resources.files("rubriclang.llm").joinpath("prompts", f"{stem}.md").read_text(encoding="utf-8")
    text = _COMMENT.sub("", text)
    parts = _HEADING.split(text)
    sections = tuple((role, body.strip()) for role, body in zip(parts[1::2], parts[2::2]))
    name, version = stem.rsplit(".", 1)
    return Template(f"{name}@{version}", sections)


def answer_key(procedure: str) -> str:
    """The field of the reply's JSON that holds the answer."""
    return TEMPLATES[procedure][1]


def scale_phrase(t: JType) -> str:
    """The declared scale in words, e.g. `an integer from 1 to 5`."""
    what = "an integer" if t.kind == "ordinal" else "a number"
    return f"{what} from {fmt_num(t.lo)} to {fmt_num(t.hi)}"


def answer_schema(criterion: Criterion) -> dict:
    """The JSON Schema of the answer value, from the criterion's type."""
    t = criterion.type
    if t.kind == "bool":
        return {"type": "boolean"}
    if t.kind == "label":
        return {"type": "string", "enum": list(t.labels)}
    kind = "integer" if t.kind == "ordinal" else "number"
    return {"type": kind, "minimum": t.lo, "maximum": t.hi}


def response_format(criterion: Criterion) -> dict:
    """The structured-output request: `{"reason": ..., KEY: answer}`, the
    reason first so the model explains before it commits to an answer."""
    key = answer_key(criterion.procedure)
    schema = {
        "type": "object",
        "properties": {"reason": {"type": "string"}, key: answer_schema(criterion)},
        "required": ["reason", key],
        "additionalProperties": False,
    }
    return {"type": "json_schema", "json_schema": {"name": criterion.procedure.replace(".", "_"), "strict": True, "schema": schema}}


def _values(criterion: Criterion, item: Item, candidate: str) -> dict[str, str]:
    p = criterion.params
    t = criterion.type
    reference = ""
    if p.get("with_reference"):
        if not item.reference:
            raise PromptError("the item has no `reference` to show the judge (the criterion sets `with_reference = true`)")
        reference = item.reference
    values = {
        "input": item.input,
        "response": item.candidates[candidate],
        "reference": reference,
        "question": p["question"].strip(),
    }
    if criterion.procedure == "llm.rate":
        anchors = sorted((p.get("anchors") or {}).items())
        values["scale"] = scale_phrase(t)
        values["anchors"] = "\n".join(f"{fmt_num(k)}: {v}" for k, v in anchors)
    elif criterion.procedure == "llm.choose":
        desc = p.get("descriptions") or {}
        values["labels"] = "\n".join(f"- {lab}: {desc[lab]}" if desc.get(lab) else f"- {lab}" for lab in t.labels)
        values["label_names"] = ", ".join(t.labels)
    return values


def render(criterion: Criterion, item: Item, candidate: str) -> Rendered:
    """The request judging `candidate` of `item` on `criterion`; raises
    PromptError when the item lacks what the prompt needs."""
    template = load_template(TEMPLATES[criterion.procedure][0])
    messages = template.fill(_values(criterion, item, candidate))
    return Rendered(
        request=ChatRequest(messages, response_format=response_format(criterion)),
        prompt_hash=prompt_hash(template.id, messages),
        template=template.id,
    )


def prompt_hash(template_id: str, messages: tuple[dict, ...]) -> str:
    """A short content hash of what the judge is shown (not of the sampling
    or the response format, which the trace records elsewhere)."""
    blob = json.dumps({"template": template_id, "messages": list(messages)}, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def nudge(request: ChatRequest, reply: str, problem: str) -> ChatRequest:
    """The request again, after the unreadable `reply` and a note saying what
    was wrong with it: a different request, so never the same cached answer."""
    follow_up = load_template(NUDGE).fill({"problem": problem})
    turn = ({"role": "assistant", "content": reply}, *follow_up)
    return attrs.evolve(request, messages=request.messages + turn)
