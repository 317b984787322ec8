"""The language reference the compiler shows the model, drawn from the catalog.

Every procedure, operator and block is rendered from the catalog data (its
signature, parameters, docs and example), so the prompt can never disagree
with the checker that judges the model's answer. Only the syntax primer is
written here, and a test holds its example to the checker.
"""

from __future__ import annotations

from rubriclang.catalog import Catalog
from rubriclang.catalog.model import ParamSpec

PRIMER = '''\
A `.rbg` file is a flat list of declarations; `#` starts a comment; commas
between parameters are optional.

    rubric NAME { version = 1, description = "..." }   # the header, once
    contract { scale = ordinal[1, 5] }                  # the sink's scale, once
    criterion NAME: TYPE = PROCEDURE { PARAM = VALUE ... }
    node NAME = OPERATOR(PORT: NODE, PORT: [NODE, NODE]) { PARAM = VALUE ... }
    sink NAME                                           # the one node read out
    readout pointwise { output = TYPE }                 # and/or:
    readout pairwise { epsilon = 0.25, resolve = abstain }

Criteria judge each candidate response (they have no inputs); nodes compose
criteria and other nodes through named ports; every node must reach the sink;
no cycles. Names are snake_case and chosen to be stable.

Types: `bool`; `ordinal[lo, hi]` (integers); `score[lo, hi]` (reals);
`label{a, b, c}`; a trailing `?` makes a type optional (may be absent).
An `ordinal` fits wherever a `score` with the same bounds does. `bool` is not a
number: map it (`transform.map`) before using it as one.

Values: strings ("..." with escapes, or """...""" over several lines),
numbers, true/false, bare names for choices (`quantize = nearest`), lists
`[a, b]`, maps `{ 1: "...", 5: "..." }`, and types (`to = score[0, 1]`).

A complete example:

    rubric chat_helpfulness {
      version = 1
      description = "Helpfulness of one assistant answer."
    }

    contract { scale = score[1, 5] }

    criterion correct: ordinal[1, 5] = llm.rate {
      question = "How factually correct is the response?"
      anchors = { 1: "Mostly wrong or misleading.", 5: "Fully correct." }
    }

    criterion complete: ordinal[1, 5] = llm.rate {
      question = "Does the response address every part of the request?"
      anchors = { 1: "Ignores most of the request.", 5: "Addresses every part." }
    }

    criterion harmful: bool = llm.check {
      question = "Does the response give instructions that could cause serious harm?"
    }

    criterion rambling: bool = rule.length { over = 400 }

    node quality = reduce.weighted_mean(inputs: [correct, complete]) { weights = [2, 1] }
    node concise = gate.cap(value: quality, when: rambling) { max = 4 }
    node safe = gate.veto(value: concise, when: harmful) { to = 1 }

    sink safe

    readout pointwise { output = ordinal[1, 5] }
'''


def example_program() -> str:
    """The primer's complete example, as source text."""
    body = PRIMER.split("A complete example:\n\n", 1)[1]
    return "\n".join(line[4:] for line in body.split("\n"))


def catalog_reference(catalog: Catalog) -> str:
    """Procedures, operators and blocks, with signatures, parameters and docs."""
    out = ["## Procedures (criterion NAME: TYPE = PROCEDURE { ... })", ""]
    for proc in catalog.procedures.values():
        out.append(f"### {proc.name} -> {' | '.join(proc.produces)}")
        out.append(_para(proc.summary + " " + proc.doc))
        out.extend(_params(proc.params))
        if proc.example:
            out.append("Example:")
            out.extend("    " + line for line in proc.example.splitlines())
        out.append("")
    out.append("Every procedure also takes:")
    out.extend(_params(catalog.common_params))
    out += ["", "## Operators (node NAME = OPERATOR(PORT: ...) { ... })", ""]
    for op in catalog.operators.values():
        out.append(f"### {op.signature()}  [{op.kind}]")
        out.append(_para(op.summary + " " + op.doc))
        out.extend(_params(op.params))
        if op.example:
            out.append("Example: " + op.example)
        out.append("")
    out += [
        "Port kinds: `numeric` is ordinal or score; a `?` after the kinds means",
        "the port accepts optional values.",
        "",
    ]
    out += ["## Blocks", ""]
    for name, block in catalog.blocks.items():
        head = {"rubric": "rubric NAME { ... }", "contract": "contract { ... }"}.get(name, f"readout {name} {{ ... }}")
        out.append(f"### {head}")
        out.append(_para(block.summary))
        out.extend(_params(block.params))
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _para(text: str) -> str:
    return " ".join(text.split())


def _params(params: tuple[ParamSpec, ...]) -> list[str]:
    if not params:
        return ["Parameters: none."]
    lines = ["Parameters:"]
    for p in params:
        if p.required:
            how = "required"
        elif p.default is not None:
            how = f"default {_literal(p.default)}"
        else:
            how = "optional"
        doc = f": {_para(p.doc)}" if p.doc else ""
        lines.append(f"- `{p.name}` ({p.type_text()}, {how}){doc}")
    return lines


def _literal(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
