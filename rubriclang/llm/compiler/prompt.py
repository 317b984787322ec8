"""The compiler's messages: the system prompt (the language and the catalog),
the spec, and the repair request that feeds diagnostics back.

A repair conversation holds the system prompt, the spec, the previous answer
and its findings, not every earlier attempt: the prompt stays the same size
however many repairs there are.
"""

from __future__ import annotations

import json
from typing import Any

from rubriclang.catalog import Catalog
from rubriclang.llm.compiler.ir import module_to_ir
from rubriclang.llm.compiler.reference import PRIMER, catalog_reference, example_program
from rubriclang.llm.compiler.spec import Spec, skeleton

_ROLE = """\
You compile rubrics written in prose into rubric graphs in the `.rbg`
language. A rubric graph decides how an LLM judge scores a candidate response
to a task: criteria ask the judge (or a rule) one focused question each about
the response, and operators compose the answers into the score. Never judge a
response yourself: no response exists yet; the graph will be run on responses
later.

Write a graph that is faithful to the rubric: every distinction the rubric
makes between its levels should be decidable from the criteria, and the
composition should reproduce the rubric's ordering of levels. Prefer a rule
(`rule.*`) where a string search decides a fact, a yes/no question
(`llm.check`) for a single fact, and a rating (`llm.rate`, with anchors that
describe every scale point the rubric describes) for graded qualities. Quote
the rubric's own wording in questions and anchors where it is precise.
"""

_TEXT_OUTPUT = """\
Answer with the complete program in one fenced block, ```rbg ... ```, and
nothing else."""

_IR_OUTPUT = """\
Answer with the program as one JSON object (the program's IR), and nothing
else. Types are objects such as {"kind": "ordinal", "lo": 1, "hi": 5},
{"kind": "bool"} or {"kind": "label", "labels": ["a", "b"]}; map keys are
strings ("1" for the scale point 1). The example program above, as IR:
"""


def system_message(catalog: Catalog, constrained: bool) -> str:
    """The role, the language primer and the catalog reference."""
    parts = [_ROLE, "# The language", PRIMER, "# The catalog", catalog_reference(catalog), "# Your answer"]
    if constrained:
        from rubriclang.syntax import parse

        parsed = parse(example_program(), "example.rbg")
        assert parsed.module is not None  # the shipped example parses
        example = module_to_ir(parsed.module)
        parts += [_IR_OUTPUT, json.dumps(example, ensure_ascii=False)]
    else:
        parts.append(_TEXT_OUTPUT)
    return "\n\n".join(p.rstrip("\n") for p in parts) + "\n"


def spec_message(spec: Spec) -> str:
    """The task, the rubric, the reference material and the fixed declarations."""
    parts = [f"Compile the rubric below into a graph named `{spec.name}`."]
    if spec.task_description:
        parts += ["## The task", spec.task_description]
    if spec.task_input:
        parts += ["## The task's input (what the responses answer)", spec.task_input]
    if spec.system_prompt:
        parts += ["## The system prompt the responses were written under", spec.system_prompt]
    parts += ["## The rubric", spec.rubric]
    if spec.reference:
        parts += ["## Reference material", spec.reference]
    if spec.reference_at_run_time:
        parts.append(
            "Each item will carry a reference answer at run time; `with_reference = true` shows it to the judge."
        )
    else:
        parts.append(
            "Items carry no reference answer at run time: do not use `with_reference` or "
            "`rule.matches_reference`; quote what the judge needs from the reference material."
            if spec.reference
            else "Items carry no reference answer at run time: do not use `with_reference` or `rule.matches_reference`."
        )
    parts += [
        "## Fixed declarations",
        "The program must contain exactly these declarations"
        + (":" if spec.description is not None else " (you may add a `description` to the header):"),
        "```rbg\n" + skeleton(spec) + "```",
    ]
    if spec.guidance:
        parts += ["## Guidance", spec.guidance]
    return "\n\n".join(p.rstrip("\n") for p in parts) + "\n"


def repair_message(findings: str, printed: str | None) -> str:
    """Ask for a corrected program. `printed` is the source printed from a
    JSON answer, which the findings' line numbers refer to."""
    parts = []
    if printed is not None:
        parts += ["Your JSON prints as this program:", "```rbg\n" + printed + "```"]
    parts += [
        "The program is not accepted. The findings:",
        findings.rstrip("\n"),
        "Correct every finding and answer with the whole corrected program, in the same form as before.",
    ]
    return "\n\n".join(parts) + "\n"


def messages(system: str, spec_text: str, previous: tuple[str, str] | None = None) -> tuple[dict[str, Any], ...]:
    """The conversation for one attempt; `previous` is (answer, repair
    request) of the attempt before, if any."""
    out = [{"role": "system", "content": system}, {"role": "user", "content": spec_text}]
    if previous is not None:
        answer, repair = previous
        out += [{"role": "assistant", "content": answer}, {"role": "user", "content": repair}]
    return tuple(out)
