"""`rbg audit plan`: a model proposes operators for a judge, each with a
one-line rationale, and they are written into an editable suite. The
planner only proposes: it runs nothing, and every proposal is checked
against the built-in operators and the judge (unknown or inapplicable names are
dropped, and said to be).
"""

from __future__ import annotations

import json

from rubriclang.audit.applicability import target_fields, why_skipped
from rubriclang.audit.judge import JudgeInfo
from rubriclang.audit.llmcall import messages
from rubriclang.audit.perturbations import Perturbation, load_perturbations
from rubriclang.checker.graph import CheckedGraph
from rubriclang.interp.items import Item
from rubriclang.llm.prompting import listed_points

_EXCERPT = 300
_EXAMPLES = 3
_GRAPHS_SHOWN = 8  # of a judge's graphs, described to the planner: the prompt stays short
_PROPOSAL = {"operators": {"type": "array"}}


class PlanError(Exception):
    """The planner model gave no usable proposal."""


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + " ..."


def describe_judge(judge: JudgeInfo) -> str:
    """The judge as the audit's models see it: each criterion with its
    question and, where it has one, its rubric (the scale's anchors or the
    labels' descriptions), one point a line. A judge of several graphs (a
    folder compiled per instance) is described graph by graph, the first
    `_GRAPHS_SHOWN` of them, since each item is judged by its own."""
    graphs = judge.by_id
    if len(graphs) == 1:
        return "\n".join(_graph_lines(judge, next(iter(graphs.values())), f"({judge.type} judge, {judge.mode})"))
    lines = [
        f"a set of {len(graphs)} graphs, one {judge.type} judge ({judge.mode}): each item is judged by its own graph"
    ]
    for gid, g in list(graphs.items())[:_GRAPHS_SHOWN]:
        lines.append(f"graph {gid}:")
        lines += ["  " + line for line in _graph_lines(judge, g)]
    if len(graphs) > _GRAPHS_SHOWN:
        lines.append(f"(and {len(graphs) - _GRAPHS_SHOWN} more graphs like these)")
    return "\n".join(lines)


def _graph_lines(judge: JudgeInfo, g: CheckedGraph, kind: str | None = None) -> list[str]:
    lines = [f"name: {g.name}" + (f" {kind}" if kind else "")]
    if g.header.get("description"):
        lines.append(f"description: {g.header['description']}")
    for c in g.criteria:
        question = c.params.get("question")
        detail = (
            f' - asks: "{_clip(question)}"'
            if question
            else f" {json.dumps({k: v for k, v in c.params.items() if k != 'on_error'}, default=str)}"
        )
        lines.append(f"criterion {c.name}: {c.type} by {c.procedure}{detail}")
        if question and (c.params.get("anchors") or c.params.get("descriptions")):
            lines += [f"  {point}" for point in listed_points(c)[1]]
    lines.append(f"sink: {g.sink}; output: {judge.output if judge.output is not None else 'a preferred candidate'}")
    return lines


def describe_items(items: list[Item]) -> str:
    out = []
    for it in items[:_EXAMPLES]:
        parts = [f"task: {_clip(it.input)}"] + [f"response {cid}: {_clip(text)}" for cid, text in it.candidates.items()]
        out.append("\n".join(parts))
    return "\n\n".join(out)


def acts_on(op: Perturbation, judge: JudgeInfo) -> str:
    """For an operator on structured fields, the declared fields it would
    perturb (why it applies), as a sentence; else nothing."""
    names = dict.fromkeys(f"`{f.name}`" for g in judge.by_id.values() for f in target_fields(op, g))
    return f" It would perturb the declared field(s) {', '.join(names)}, which a criterion reads." if names else ""


def candidates(judge: JudgeInfo) -> tuple[dict[str, Perturbation], list[tuple[str, str]]]:
    """(applicable operators by name, [(name, why skipped)])."""
    ok, skipped = {}, []
    for name, op in load_perturbations().items():
        reason = why_skipped(op, judge)
        if reason:
            skipped.append((name, reason))
        else:
            ok[name] = op
    return ok, skipped


async def plan(
    asker, judge: JudgeInfo, items: list[Item]
) -> tuple[list[tuple[Perturbation, str]], list[tuple[str, str]], list[tuple[str, str]]]:
    """(chosen operators with their rationale, proposals dropped with why,
    inapplicable operators with why); raises PlanError."""
    ok, skipped = candidates(judge)
    catalog = "\n".join(
        f"{name} ({op.surface}, {op.relation}): {op.summary}{acts_on(op, judge)}" for name, op in ok.items()
    )
    values = {"judge": describe_judge(judge), "items": describe_items(items), "catalog": catalog}
    answer = await asker.ask(messages("plan.v1", values), _PROPOSAL, "plan")
    if answer.status != "ok":
        raise PlanError(f"the planner model gave no usable proposal: {answer.error}")
    chosen, dropped, seen = [], [], set()
    for entry in answer.value["operators"]:
        name = entry.get("name") if isinstance(entry, dict) else None
        rationale = entry.get("rationale") if isinstance(entry, dict) else None
        if not isinstance(name, str):
            dropped.append((str(entry)[:60], "not an operator entry"))
        elif name in seen:
            continue
        elif name not in load_perturbations():
            dropped.append((name, "not a catalog operator"))
        elif name not in ok:
            dropped.append((name, dict(skipped)[name]))
        else:
            seen.add(name)
            line = " ".join(str(rationale or "").split()) or ok[name].summary
            chosen.append((ok[name], line))
    if not chosen:
        raise PlanError(
            "the planner model proposed no applicable operator"
            + (f" (dropped: {', '.join(n for n, _ in dropped)})" if dropped else "")
        )
    return chosen, dropped, skipped
