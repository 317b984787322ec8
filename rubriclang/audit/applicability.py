"""Which operators make sense for a judge, and why the others are skipped.

The conditions are named in perturbations.toml (`needs`, `unless`); each has its
test here and a reason that the report prints for a skipped operator.
"""

from __future__ import annotations

from rubriclang.audit.judge import JudgeInfo, reads
from rubriclang.audit.perturbations import Perturbation
from rubriclang.checker.graph import CheckedGraph, PairwiseReadout
from rubriclang.items.shape import FieldSpec

_FIELD_WORDS = {"input": "the task input", "response": "the response", "order": "the candidates' order"}


def _needs(cond: str, judge: JudgeInfo) -> str | None:
    if cond == "llm_criteria":
        if not judge.llm_criteria:
            return "the judge has no llm.* criteria, so it has no prompt or rubric text to perturb"
    elif cond == "anchors":
        if not judge.has_anchors:
            return "no llm.* criterion has anchors or label descriptions to paraphrase"
    elif cond == "pairwise":
        if judge.mode != "pairwise":
            return "it needs pairwise items (two candidates to swap)"
    elif cond == "order_shown":
        # Each graph of a set (one for most judges): the order reaches a verdict if any reads it.
        readouts = [g.readouts.get("pairwise") for g in judge.by_id.values()]
        if (
            judge.mode == "pairwise"
            and not judge.side_by_side
            and all(isinstance(r, PairwiseReadout) and r.resolve not in ("first", "second") for r in readouts)
        ):
            resolves = " or ".join(
                dict.fromkeys(f"`resolve = {r.resolve}`" for r in readouts if isinstance(r, PairwiseReadout))
            )
            return (
                "every criterion of this judge sees one candidate at a time (none is an `llm.compare`), and its "
                f"pairwise readout resolves close calls by {resolves}, not by position: the "
                "candidates' order cannot reach the verdict, so position bias cannot show (a 0% flip rate would "
                "say nothing); a criterion that sees both candidates in one prompt is an `llm.compare`"
            )
    elif cond == "pointwise":
        if judge.mode != "pointwise":
            return "directional operators apply to pointwise judges only"
    elif cond == "ordered_output":
        if judge.type == "categorical":
            return f"the judge's output `{judge.output}` has no order, so a degradation has no direction"
    else:  # perturbations.toml naming an unknown condition is a bug, not a user's mistake
        raise ValueError(f"unknown condition `{cond}` in perturbations.toml")
    return None


def _unless(cond: str, judge: JudgeInfo) -> str | None:
    if cond == "measures_length":
        names = judge.response_criteria("measures_length")
        if names:
            return (
                f"criterion `{names[0]}` measures the response's length (rule.length), which this operator "
                "changes by design"
            )
    elif cond == "checks_format":
        names = judge.response_criteria("checks_format")
        if names:
            return (
                f"criterion `{names[0]}` checks the response's format "
                f"({next(c.procedure for c in judge.criteria if c.name == names[0])}), which this operator "
                "changes by design"
            )
    else:
        raise ValueError(f"unknown condition `{cond}` in perturbations.toml")
    return None


_NEEDS_WORDS = {
    "llm_criteria": "the judge has llm.* criteria",
    "anchors": "an llm.* criterion has anchors or label descriptions",
    "pairwise": "pairwise items",
    "order_shown": (
        "a criterion sees both candidates in one prompt (`llm.compare`), or the pairwise readout resolves "
        "close calls by position"
    ),
    "pointwise": "pointwise items",
    "ordered_output": "a binary or ordinal output",
}
_UNLESS_WORDS = {
    "measures_length": "no criterion measures the response's length",
    "checks_format": "no criterion checks the response's format",
}


def conditions(op: Perturbation) -> list[str]:
    """When the operator applies, in words (for `rbg audit catalog`)."""
    out = [_NEEDS_WORDS[cond] for cond in op.needs]
    if op.changes:
        out.append("a criterion reads " + " or ".join(_FIELD_WORDS[f] for f in op.changes))
        out.append("that field is declared text, or not declared")
    if op.acts_on:
        out.append("a criterion reads a declared " + " or ".join(f"`{k}`" for k in op.acts_on) + " field")
    return out + [_UNLESS_WORDS[cond] for cond in op.unless]


def target_fields(op: Perturbation, graph: CheckedGraph) -> tuple[FieldSpec, ...]:
    """The declared fields of `graph` that an operator on structured fields
    may perturb: of a kind it acts on, read by some criterion (a rule that
    names it, a prompt that shows it), in declaration order."""
    shape = graph.item_shape
    if shape is None or not op.acts_on:
        return ()
    read = set().union(*(reads(c) | {f.name for f in c.item_fields} for c in graph.criteria))
    return tuple(f for f in shape.fields if f.kind in op.acts_on and f.name in read)


def _structured_text(op: Perturbation, judge: JudgeInfo) -> str | None:
    """Why a text operator cannot perturb a field declared structured."""
    for g in judge.by_id.values():
        shape = g.item_shape
        for name in op.changes:
            spec = shape.get(name) if shape is not None and name in ("input", "response") else None
            if spec is not None and spec.structured:
                return (
                    f"the judge `{g.name}` declares `{name}: {spec.type_text}`: this operator rewrites text, and "
                    "would change the field's rendering, not its value, which rules read; the operators on "
                    "structured fields (`rbg audit catalog`) perturb it"
                )
    return None


def why_skipped(op: Perturbation, judge: JudgeInfo) -> str | None:
    """None when `op` applies to `judge`, else the reason it is skipped."""
    for cond in op.needs:
        reason = _needs(cond, judge)
        if reason:
            return reason
    if op.acts_on and not any(target_fields(op, g) for g in judge.by_id.values()):
        kinds = " or ".join(f"`{k}`" for k in op.acts_on)
        return (
            f"no criterion of this judge reads a declared {kinds} field (`item {{ ... }}`), so this operator "
            "has nothing to perturb that could move its verdict"
        )
    reason = _structured_text(op, judge)
    if reason:
        return reason
    fields = op.changes
    if fields and not set(fields) & judge.reads:
        words = " or ".join(_FIELD_WORDS[f] for f in fields)
        hint = ""
        if "fields" in op.options and "response" in judge.reads:
            hint = f' (`[options.{op.name}] fields = ["response"]` rewrites the response instead)'
        return f"no criterion of this judge reads {words}, so this operator cannot move its verdict{hint}"
    for cond in op.unless:
        reason = _unless(cond, judge)
        if reason:
            return reason
    return None
