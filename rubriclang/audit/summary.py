"""The optional LLM-written summary of an audit's findings (`--summary`).

It is marked as written by a model, and is given only the report's figures,
so that everything it says can be checked against them.
"""

from __future__ import annotations

import json

from rubriclang.audit.llmcall import messages

_MAX_FLIPS = 8


def figures(report: dict) -> dict:
    """The part of the report the summariser sees: headline metrics, the
    per-operator blocks, the criteria and a few flips (no texts)."""
    flips = [
        {"variant": f["variant"], "operator": f["operator"], "outcome": f["outcome"], "moved": sorted({m["node"] for m in f["localization"]["moved"] if m["kind"] == "criterion"})}
        for f in (report["flips"] + report["misses"])[:_MAX_FLIPS]
    ]
    return {
        "judge": {k: report["judge"][k] for k in ("name", "type", "mode")},
        "counts": report["counts"],
        "metrics": report["metrics"],
        "by_operator": report["by_operator"],
        "by_criterion": report["by_criterion"],
        "skipped": {op["name"]: op["reason"] for op in report["operators"] if op["status"] == "skipped"},
        "some_findings": flips,
    }


async def summarise(asker, report: dict) -> dict:
    """`{"written_by": "llm", "model", "text", "error"}`; a model that cannot
    be used leaves `text` null and says why in `error`."""
    text = json.dumps(figures(report), sort_keys=True, ensure_ascii=False, indent=1)
    answer = await asker.ask(messages("summary.v1", {"figures": text}), {"summary": {"type": "string"}}, "summary")
    if answer.status != "ok":
        return {"written_by": "llm", "model": answer.model, "text": None, "error": answer.error}
    return {"written_by": "llm", "model": answer.model, "text": answer.value["summary"].strip(), "error": None}
