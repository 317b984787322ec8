"""The structured summary of an audit: findings, recommended actions,
limitations and follow-up audits, each entry pointing at the figures (dotted
paths into report.json) and the items (item or variant ids) it rests on.

Without a model it is computed from the figures by fixed rules
(`written_by: rules`, the same report gives the same summary). With a model
(`--summary`, or a `[summarizer]` table) the model is asked for the same
structure; every pointer is checked against the report, and an entry with a
pointer the report does not hold is dropped and noted (`written_by: llm`).
"""

from __future__ import annotations

import json
from typing import Any

from rubriclang.audit.llmcall import messages
from rubriclang.catalog import load_catalog

_MAX_FLIPS = 8
SECTIONS = ("findings", "actions", "limitations", "follow_ups")
# Thresholds of the rules (documented in docs/audit.md).
HIGH_NOISE = 0.1  # a repeat flip rate above this is a finding
LOW_DETECTION = 0.5  # a degradation operator detected less often is a finding
FEW_REPEATS = 3  # a model judge audited with fewer repeats gets a follow-up


def figures(report: dict) -> dict:
    """The part of the report the summariser sees: headline metrics, the
    per-operator blocks, the criteria and a few flips (no texts)."""
    flips = [
        {
            "variant": f["variant"],
            "operator": f["operator"],
            "outcome": f["outcome"],
            "moved": sorted({m["node"] for m in f["localization"]["moved"] if m["kind"] == "criterion"}),
        }
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


def _entry(text: str, figs: list[str], items=()) -> dict:
    return {"text": text, "figures": figs, "items": sorted(set(items))}


def _pct(rate: dict) -> str:
    return f"{rate['value']:.0%} ({rate.get('count', '?')}/{rate.get('total', rate.get('n', '?'))})"


def _measured(rate: dict | None) -> bool:
    return rate is not None and rate.get("value") is not None


def nothing_measured(report: dict) -> bool:
    """Whether the audit measured nothing: every judgment failed (or none was made)."""
    c = report["counts"]
    return c["judgments"] == c["failed_judgments"]


def rule_summary(report: dict) -> dict:
    """The summary computed from the figures alone."""
    out: dict[str, list] = {k: [] for k in SECTIONS}
    m = report["metrics"]
    noise = m["repeat_flip_rate"]
    catalog = load_catalog()
    llm_judge = any(catalog.hooks(c["procedure"]).backend == "llm" for c in report["judge"]["criteria"])
    if nothing_measured(report):
        out["findings"].append(
            _entry(
                f"Nothing was measured: all {report['counts']['judgments']} judgment(s) failed, so no rate of this "
                "audit has a value. Read why in runs.jsonl, fix the judge or its server, and run again with "
                "`--retry-errors`.",
                ["counts.failed_judgments", "counts.judgments"],
            )
        )
    collapsed = (m.get("decisions") or {}).get("collapsed")
    if collapsed is not None:
        value = collapsed["decision"] if collapsed["status"] == "ok" else collapsed["status"]
        out["findings"].append(
            _entry(
                f"The judge's decisions collapse to one value: all {m['decisions']['judgments']} judgment(s) of the "
                f"original items measured are `{value}`. A flip rate of 0 then says only that it never changes its "
                "answer, not that it is robust.",
                ["metrics.decisions.collapsed"],
            )
        )
        out["actions"].append(
            _entry(
                "Read a few judgments in runs.jsonl: check that the judge's prompt and answer pattern let it give "
                "every decision, and that its server answers as the pattern expects.",
                ["metrics.decisions.values"],
            )
        )
    noise_value = noise["value"] if _measured(noise) else 0.0
    if _measured(noise) and noise["value"] > HIGH_NOISE:
        out["findings"].append(
            _entry(
                f"The judge disagrees with itself on repeats: repeat flip rate {_pct(noise)}.",
                ["metrics.repeat_flip_rate"],
            )
        )
        out["actions"].append(
            _entry(
                "Lower the judge's temperature, or aggregate several samples per criterion, before reading other "
                "rates.",
                ["metrics.repeat_flip_rate"],
            )
        )
    for name, block in sorted(report["by_operator"].items()):
        inv, dire = block.get("invariant"), block.get("directional")
        if inv and _measured(inv["flip_rate"]) and inv["flip_rate"]["value"] > noise_value and inv["flipped"]:
            flipped = [f["variant"] for f in report["flips"] if f["operator"] == name]
            out["findings"].append(
                _entry(
                    f"`{name}` (meant not to change the verdict) flipped {_pct(inv['flip_rate'])}, above the repeat "
                    + (f"noise of {noise['value']:.0%}." if _measured(noise) else "noise (not measured: 1 repeat)."),
                    [f"by_operator.{name}.invariant.flip_rate", "metrics.repeat_flip_rate"],
                    flipped,
                )
            )
            out["actions"].append(
                _entry(
                    f"Read the flipped `{name}` variants and make the criteria they moved insensitive to that change.",
                    [f"by_operator.{name}.invariant.flip_rate"],
                    flipped,
                )
            )
        if dire and _measured(dire["detection_rate"]) and dire["detection_rate"]["value"] < LOW_DETECTION:
            missed = [f["variant"] for f in report["misses"] if f["operator"] == name]
            out["findings"].append(
                _entry(
                    f"The degradation `{name}` is detected only {_pct(dire['detection_rate'])}.",
                    [f"by_operator.{name}.directional.detection_rate"],
                    missed,
                )
            )
            out["actions"].append(
                _entry(
                    f"Add or sharpen a criterion that checks what `{name}` removes.",
                    [f"by_operator.{name}.directional.detection_rate"],
                    missed,
                )
            )
        if dire and dire["contradicted"] and _measured(dire["contradiction_rate"]):
            out["findings"].append(
                _entry(
                    f"`{name}` moved the verdict the wrong way (better) {_pct(dire['contradiction_rate'])}.",
                    [f"by_operator.{name}.directional.contradiction_rate"],
                )
            )
    for op in report["operators"]:
        if op["status"] == "skipped":
            out["limitations"].append(
                _entry(f"`{op['name']}` was not run: {op['reason']}", [f"operators.{op['name']}"])
            )
    base = m["baselines"]
    if base["unstable"]:
        out["limitations"].append(
            _entry(
                f"{base['unstable']} item(s) have no stable baseline (their repeats disagree): flips on them may be "
                "noise.",
                ["metrics.baselines.unstable"],
                base["unstable_items"],
            )
        )
    if report["counts"]["failed_judgments"]:
        out["limitations"].append(
            _entry(
                f"{report['counts']['failed_judgments']} judgment(s) failed; they measured nothing and are left out of "
                "every rate (see each rate's coverage). Judge them again "
                "with `--retry-errors`.",
                ["counts.failed_judgments"],
            )
        )
    if llm_judge and report["suite"]["repeats"] < FEW_REPEATS:
        out["follow_ups"].append(
            _entry(
                f"Run again with `repeats = {FEW_REPEATS}` or more: {report['suite']['repeats']} repeat(s) measure "
                "the judge's noise poorly.",
                ["suite.repeats", "metrics.repeat_flip_rate"],
            )
        )
    if report["judge"]["mode"] == "pairwise" and not any(
        o["name"] == "position_swap" and o["status"] == "run" for o in report["operators"]
    ):
        out["follow_ups"].append(
            _entry("Audit the pairwise judge with `position_swap`, to measure position bias.", ["judge.mode"])
        )
    if not out["findings"]:
        out["findings"].append(_entry(_checked(report), _checked_figures(report)))
    return {"written_by": "rules", "model": None, "error": None, "dropped": [], **out}


def _checked(report: dict) -> str:
    """The finding that none fired: what the rules checked, on what."""
    inv = sorted(n for n, b in report["by_operator"].items() if b.get("invariant"))
    dire = sorted(n for n, b in report["by_operator"].items() if b.get("directional"))
    noise = "" if _measured(report["metrics"]["repeat_flip_rate"]) else " (not measured: 1 repeat)"
    return (
        "No finding. Checked: a repeat flip rate above "
        f"{HIGH_NOISE:.0%}{noise}; an invariant operator flipping more often than the repeat noise "
        f"({', '.join(inv) or 'none run'}); a degradation detected in under {LOW_DETECTION:.0%} of its eligible "
        f"variants, or moving the verdict the wrong way ({', '.join(dire) or 'none run'}); decisions collapsed to "
        "one value. None of these was found."
    )


def _checked_figures(report: dict) -> list[str]:
    figs = ["metrics.repeat_flip_rate"]
    for name, block in sorted(report["by_operator"].items()):
        if block.get("invariant"):
            figs.append(f"by_operator.{name}.invariant.flip_rate")
        if block.get("directional"):
            figs.append(f"by_operator.{name}.directional.detection_rate")
    return figs


def resolve(report: dict, path: str) -> bool:
    """Whether the dotted `path` names a figure of the report (a list of
    named objects, such as `operators`, is indexed by their names)."""
    node = report
    parts = path.split(".")
    while parts:
        # The longest run of parts that names a key: an operator's name may
        # hold dots (`documents.shuffle`).
        n = next((n for n in range(len(parts), 0, -1) if _child(node, ".".join(parts[:n])) is not _ABSENT), 0)
        if not n:
            return False
        node, parts = _child(node, ".".join(parts[:n])), parts[n:]
    return True


_ABSENT = object()


def _child(node: Any, key: str) -> Any:
    if isinstance(node, dict):
        return node.get(key, _ABSENT)
    if isinstance(node, list):
        return next((x for x in node if isinstance(x, dict) and x.get("name") == key), _ABSENT)
    return _ABSENT


def _ids(report: dict) -> set[str]:
    ids = set(report["by_item"])
    for entry in report["by_item"].values():
        ids.update(entry.get("variants", {}))
    return ids


def clean(report: dict, answer: dict) -> tuple[dict[str, list], list[str]]:
    """The model's sections with every entry whose pointers the report
    holds; the others dropped, each with a note saying why."""
    ids, out, dropped = _ids(report), {}, []
    for section in SECTIONS:
        kept = []
        for i, e in enumerate(answer.get(section) or []):
            if not (isinstance(e, dict) and isinstance(e.get("text"), str) and e["text"].strip()):
                dropped.append(f"{section}[{i}]: not an entry with a `text`")
                continue
            figs = [f for f in e.get("figures") or [] if isinstance(f, str)]
            items = [x for x in e.get("items") or [] if isinstance(x, str)]
            bad = [f for f in figs if not resolve(report, f)] + [x for x in items if x not in ids]
            if bad or not figs or len(figs) != len(e.get("figures") or []) or len(items) != len(e.get("items") or []):
                dropped.append(
                    f"{section}[{i}]: points at {', '.join(map(json.dumps, bad)) or 'no figure'}, which the report "
                    "does not hold"
                )
                continue
            kept.append(_entry(e["text"].strip(), figs, items))
        out[section] = kept
    return out, dropped


_FIELDS = {k: {"type": "array"} for k in SECTIONS}


async def summarise(asker, report: dict) -> dict:
    """The model's structured summary, cleaned; a model that cannot be used
    gives the rule summary, with `error` saying why."""
    text = json.dumps(figures(report), sort_keys=True, ensure_ascii=False, indent=1)
    answer = await asker.ask(messages("summary.v2", {"figures": text}), _FIELDS, "summary")
    if answer.status != "ok":
        return {
            **rule_summary(report),
            "error": (
                f"the summarizer model could not be used ({answer.error}); this summary is computed from the figures"
            ),
        }
    sections, dropped = clean(report, answer.value)
    if not any(sections.values()):
        return {
            **rule_summary(report),
            "dropped": dropped,
            "error": (
                f"the summarizer model ({answer.model}) gave no entry that points at figures of this report; this "
                "summary is computed from the figures"
            ),
        }
    return {"written_by": "llm", "model": answer.model, "error": None, "dropped": dropped, **sections}


def render_text(summary: dict) -> list[str]:
    """The summary's lines in report.txt."""
    who = (
        "written by an LLM; check it against the figures"
        if summary["written_by"] == "llm"
        else "computed from the figures"
    )
    lines = [f"Summary ({who}):"]
    if summary.get("error"):
        lines.append(f"  ({summary['error']})")
    for section in SECTIONS:
        for e in summary[section]:
            refs = ", ".join(e["figures"] + e["items"][:5]) + (
                f" and {len(e['items']) - 5} more" if len(e["items"]) > 5 else ""
            )
            lines.append(f"  {section.rstrip('s').replace('_', '-')}: {e['text']} [{refs}]")
    if not any(summary.get(section) for section in SECTIONS):
        lines.append("  (no entry: no finding, action, limitation or follow-up)")
    lines += [f"  dropped: {d}" for d in summary.get("dropped", [])]
    return lines
