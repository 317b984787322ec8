"""`rbg audit suggest`: a model proposes custom operators that fit the
judge's task, each checked as a suite's `[[custom]]` table is checked (its
name, surface and relation), to be reviewed before use."""

from __future__ import annotations

from rubriclang.audit.judge import JudgeInfo
from rubriclang.audit.llmcall import messages
from rubriclang.audit.perturbations import CUSTOM_SURFACES, RELATIONS, load_perturbations
from rubriclang.audit.planner import PlanError, describe_items, describe_judge
from rubriclang.audit.suite import NAME
from rubriclang.interp.items import Item

_FIELDS = ("name", "surface", "relation", "instruction", "rationale")


def _problem(entry, taken: set[str]) -> str | None:
    if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) and entry[k].strip() for k in _FIELDS):
        return f"not an entry with {', '.join(f'`{k}`' for k in _FIELDS)}"
    if not NAME.fullmatch(entry["name"]):
        return "not a valid operator name (lower case letters, digits and _)"
    if entry["name"] in taken:
        return "already a catalog operator or proposed twice"
    if entry["surface"] not in CUSTOM_SURFACES:
        return f"surface `{entry['surface']}` is not one of {', '.join(CUSTOM_SURFACES)}"
    if entry["relation"] not in RELATIONS:
        return f"relation `{entry['relation']}` is not one of {', '.join(RELATIONS)}"
    return None


async def suggest(asker, judge: JudgeInfo, items: list[Item]) -> tuple[list[dict], list[tuple[str, str]]]:
    """(valid proposals, [(what was dropped, why)]); raises PlanError when
    the model gives no valid proposal."""
    values = {"judge": describe_judge(judge), "items": describe_items(items), "surfaces": ", ".join(CUSTOM_SURFACES)}
    answer = await asker.ask(messages("suggest.v1", values), {"operators": {"type": "array"}}, "suggest")
    if answer.status != "ok":
        raise PlanError(f"the generator model gave no usable suggestion: {answer.error}")
    kept, dropped, taken = [], [], set(load_perturbations())
    for entry in answer.fields["operators"]:
        why = _problem(entry, taken)
        if why:
            name = entry.get("name") if isinstance(entry, dict) else None
            label = name if isinstance(name, str) else str(entry)
            dropped.append((label[:60], why))
            continue
        taken.add(entry["name"])
        kept.append({k: " ".join(entry[k].split()) if k == "rationale" else entry[k].strip() for k in _FIELDS})
    if not kept:
        raise PlanError(
            "the generator model suggested no valid operator"
            + (f" (dropped: {', '.join(n for n, _ in dropped)})" if dropped else "")
        )
    return kept, dropped
