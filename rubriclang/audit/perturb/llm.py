"""LLM-made variants: what the generator is shown and asked to return, and
the validator's independent accept/reject.

A generator reply is first checked for shape (every text present, non-empty
and changed); only then does the validator see it. A validator that cannot
be reached, or whose reply cannot be read, gives `unavailable`, never
`reject`.
"""

from __future__ import annotations

import json
from typing import Any

from rubriclang.audit.llmcall import Asker, messages
from rubriclang.audit.perturbations import Perturbation
from rubriclang.audit.variants import Validation
from rubriclang.interp.items import POINTWISE_CANDIDATE, Item

_TEXT = {"type": "string"}
# The prompt versions new suites are made with (recorded in the sealed
# suite); both are shown the judge under audit.
GENERATE = "generate.v2"
VALIDATE = "validate.v2"
PROMPTS = {"generate": GENERATE, "validate": VALIDATE}

# `reasoning_style`: how each style asks the judge to reason (the generator
# writes it into the judge's own template, in the template's own words).
REASONING = {
    "direct": "answer directly, keeping any explanation to a few words",
    "step_by_step": "think it through step by step first, writing the reasoning out, then answer",
    "criterion_by_criterion": (
        "go through the criterion and each point of the scale (or each option) in turn, saying "
        "whether the response meets it, then answer"
    ),
}
REASONING_STYLES = tuple(REASONING)
_VERDICT: dict[str, dict[str, Any]] = {"reason": _TEXT, "verdict": {"type": "string", "enum": ["accept", "reject"]}}


def _tag(name: str, text: str) -> str:
    return f"<{name}>\n{text}\n</{name}>"


def _material(item: Item, cids: tuple[str, ...]) -> str:
    parts = [_tag("task", item.input)]
    for cid in cids:
        parts.append(_tag("response" if cid == POINTWISE_CANDIDATE else f"response id={cid}", item.candidates[cid]))
    return "\n\n".join(parts)


def _instruction(op: Perturbation, judge: str, style: str | None = None) -> dict[str, str]:
    """The values every generator and validator prompt shares; `judge` is
    the judge under audit as `planner.describe_judge` renders it."""
    instruction = op.instruction or op.summary
    if style:
        instruction += f" The reasoning style: {REASONING[style]}."
    return {
        "judge": judge,
        "instruction": instruction,
        "preserves": op.preserves or "everything else",
        "breaks": op.breaks,
    }


async def rewrite_item(
    asker: Asker, op: Perturbation, judge: str, item: Item
) -> tuple[dict | None, str | None, str | None]:
    """(changes, why it failed, model) for one item-side LLM operator.

    `changes` maps `input` and/or `candidates` to the new texts; every
    candidate is rewritten (a pairwise item's two the same way), so an
    invariant operator keeps the comparison fair."""
    cids = item.candidate_ids
    changes: dict = {}
    model = None
    if op.target == "input":
        answer = await asker.ask(
            messages(
                GENERATE,
                {
                    **_instruction(op, judge),
                    "material": _tag("task", item.input),
                    "form": '{"input": "<the rewritten task>"}',
                },
            ),
            {"input": _TEXT},
            "rewrite",
        )
        if answer.status != "ok":
            return None, answer.error, answer.model
        changes["input"], model = answer.fields["input"], answer.model
    elif op.target == "response":
        texts = []
        for cid in cids:
            answer = await asker.ask(
                messages(
                    GENERATE,
                    {
                        **_instruction(op, judge),
                        "material": _material(item, (cid,)),
                        "form": '{"response": "<the rewritten response>"}',
                    },
                ),
                {"response": _TEXT},
                "rewrite",
            )
            if answer.status != "ok":
                return None, answer.error, answer.model
            texts.append([cid, answer.fields["response"]])
            model = answer.model
        changes["candidates"] = texts
    else:  # input+response: one call, so renamings stay consistent across the texts
        if cids == (POINTWISE_CANDIDATE,):
            form, fields = (
                '{"input": "<the rewritten task>", "response": "<the rewritten response>"}',
                {"input": _TEXT, "response": _TEXT},
            )
        else:
            shape = ", ".join(f'"{c}": "<the rewritten response {c}>"' for c in cids)
            form, fields = (
                f'{{"input": "<the rewritten task>", "responses": {{{shape}}}}}',
                {"input": _TEXT, "responses": {"type": "object"}},
            )
        answer = await asker.ask(
            messages(GENERATE, {**_instruction(op, judge), "material": _material(item, cids), "form": form}),
            fields,
            "rewrite",
        )
        if answer.status != "ok":
            return None, answer.error, answer.model
        value, model = answer.fields, answer.model
        new = {POINTWISE_CANDIDATE: value["response"]} if "response" in fields else value["responses"]
        if set(new) != set(cids):
            return None, f"the generator returned responses for {sorted(new)}, not for {list(cids)}", model
        changes = {"input": value["input"], "candidates": [[cid, new[cid]] for cid in cids]}
    return changes, _unchanged(item, changes), model


def _unchanged(item: Item, changes: dict) -> str | None:
    """Why the rewrite is unusable (a text left unchanged), or None."""
    if "input" in changes and changes["input"].strip() == item.input.strip():
        return "the generator returned the task unchanged"
    for cid, text in changes.get("candidates", ()):
        if text.strip() == item.candidates[cid].strip():
            return "the generator returned a response unchanged"
    return None


def shown(item: Item) -> str:
    """An item's task and responses, as the validator sees them."""
    return _material(item, item.candidate_ids)


async def rewrite_text(asker: Asker, op: Perturbation, judge: str, what: str, text) -> tuple:
    """(new, why it failed, model) for a judge-side text: a criterion's
    `question` (a string), its `anchors` (a map of point -> text) or a
    `system` framing."""
    if isinstance(text, dict):
        shown_text = json.dumps({str(k): v for k, v in text.items()}, ensure_ascii=False, indent=1)
        form = "{" + f'"{what}": ' + "{" + ", ".join(f'"{k}": "<the rewritten description>"' for k in text) + "}}"
        answer = await asker.ask(
            messages(GENERATE, {**_instruction(op, judge), "material": _tag(what, shown_text), "form": form}),
            {what: {"type": "object"}},
            "rewrite",
        )
        if answer.status != "ok":
            return None, answer.error, answer.model
        new = answer.fields[what]
        if set(new) != {str(k) for k in text}:
            return None, f"the generator returned keys {sorted(new)}, not {sorted(str(k) for k in text)}", answer.model
        if all(new[str(k)].strip() == v.strip() for k, v in text.items()):
            return None, "the generator returned the descriptions unchanged", answer.model
        return new, None, answer.model
    form = f'{{"{what}": "<the rewritten {what}>"}}'
    answer = await asker.ask(
        messages(GENERATE, {**_instruction(op, judge), "material": _tag(what, text), "form": form}),
        {what: _TEXT},
        "rewrite",
    )
    if answer.status != "ok":
        return None, answer.error, answer.model
    new = answer.fields[what]
    if new.strip() == text.strip():
        return None, f"the generator returned the {what} unchanged", answer.model
    return new, None, answer.model


async def rewrite_template(
    asker: Asker, op: Perturbation, judge: str, rubric: str, text: str, style: str | None = None
) -> tuple:
    """(new template text, why it failed, model): the judge's whole prompt
    template rewritten; the generator is shown the criterion it serves, so
    the rewrite fits the task."""
    material = _tag("rubric", rubric) + "\n\n" + _tag("template", text)
    form = '{"template": "<the rewritten template: the same ## sections, every {{placeholder}} kept>"}'
    answer = await asker.ask(
        messages(GENERATE, {**_instruction(op, judge, style), "material": material, "form": form}),
        {"template": _TEXT},
        "rewrite",
    )
    if answer.status != "ok":
        return None, answer.error, answer.model
    new = answer.fields["template"]
    if new.strip() == text.strip():
        return None, "the generator returned the template unchanged", answer.model
    return new, None, answer.model


async def validate(
    asker: Asker, op: Perturbation, judge: str, original: str, rewrite: str, style: str | None = None
) -> Validation:
    """The validator's verdict on one rewrite."""
    values = {**_instruction(op, judge, style), "original": original, "rewrite": rewrite}
    answer = await asker.ask(messages(VALIDATE, values), _VERDICT, "verdict")
    if answer.status != "ok":
        return Validation("llm", "unavailable", answer.error or "", answer.model)
    return Validation("llm", answer.fields["verdict"], answer.fields["reason"].strip(), answer.model)
