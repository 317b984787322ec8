"""A hand-built `rubriclang.audit.report/1` report for the HTML tests: an
ordinal judge with three repeats, invariant flips on the output, input and
judge prompt, a missed degradation, a failed variant, a skipped operator,
gold labels and an LLM summary, with HTML and script payloads in every kind
of text a report carries."""

from __future__ import annotations

import copy
from typing import Any

SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'
JS_URL = "javascript:alert(1)"
# If any of these ran, the page would show it: a changed title or a new element.
TITLE = "<script>document.title='PWNED'</script>"
MARK = "<img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">"
PAYLOADS = (SCRIPT, IMG, JS_URL, TITLE, MARK)

BAD_ITEM = "q2" + SCRIPT  # an item id with markup: it must never reach an id or an href


def rate(count, total, n, low=None, high=None) -> dict:
    value = count / total if total else None
    return {
        "value": value,
        "low": low if low is not None else value,
        "high": high if high is not None else value,
        "n": n,
        "count": count,
        "total": total,
    }


def summary(decisions: list) -> dict:
    decs = [
        {"status": "ok", "decision": d} if not isinstance(d, str) else {"status": d, "decision": None}
        for d in decisions
    ]
    values = [d for d in decisions if not isinstance(d, str)]
    return {
        "status": "ok" if values else "failed",
        "value": round(sum(values) / len(values), 6) if values else None,
        "decisions": decs,
    }


def item_texts(response: str, input_: str = "Explain why the sky is blue.", reference: str | None = None) -> dict:
    return {"input": input_, "candidates": [["response", response]], "reference": reference}


def finding(
    variant,
    item,
    operator,
    surface,
    relation,
    generator,
    outcome,
    changed,
    original,
    perturbed,
    base,
    result,
    loc,
    validation=None,
):
    return {
        "variant": variant,
        "item": item,
        "operator": operator,
        "surface": surface,
        "relation": relation,
        "generator": generator,
        "outcome": outcome,
        "changed": changed,
        "original": original,
        "perturbed": perturbed,
        "validation": validation
        or {"by": "structure", "verdict": "accept", "reason": "the structural check passed", "model": None},
        "baseline": summary(base),
        "result": summary(result),
        "localization": loc,
    }


def moved(node, kind, a, b, candidate="response") -> dict:
    return {"node": node, "kind": kind, "candidate": candidate, "original": a, "perturbed": b}


Q1_BASE, Q2_BASE, Q3_BASE = [4, 4, 5], [3, 3, 3], [5, 5, 5]
RESPONSE_1 = "Rayleigh scattering: short wavelengths scatter more.\n\nSo the sky looks blue."
RESPONSE_2 = f"The answer is {SCRIPT} because light scatters. See {JS_URL} and {IMG} for more."
RESPONSE_2_TYPOS = f"The answre is {SCRIPT} becuase light scatters. See {JS_URL} and {IMG} for more."
RESPONSE_3 = f"Blue light scatters most.\nIt fills the sky {TITLE}.\nThe answer: scattering {MARK}."

FLIPS = [
    finding(
        "q1/prompt_paraphrase",
        "q1",
        "prompt_paraphrase",
        "judge_prompt",
        "invariant",
        "llm",
        "flipped",
        ["criteria"],
        {"criteria": {"correct": {"question": "How factually correct is the response?"}}, "criterion_order": None},
        {
            "criteria": {"correct": {"question": f"To what degree is the answer factually right? {SCRIPT}"}},
            "criterion_order": None,
        },
        Q1_BASE,
        [2, 2, 3],
        {
            "moved": [
                moved("correct", "criterion", 4, 2),
                moved("quality", "operator", 4, 3),
                moved("concise", "operator", 4, 3),
            ],
            "absorbed": [],
            "reached_sink": True,
        },
        {"by": "llm", "verdict": "accept", "reason": f"same meaning {IMG}", "model": "validator-model"},
    ),
    finding(
        "q3/add_emoji",
        "q3",
        "add_emoji",
        "output",
        "invariant",
        "llm",
        "failed",
        ["candidates"],
        item_texts(RESPONSE_3),
        item_texts(RESPONSE_3 + " \U0001f308\u2728"),
        Q3_BASE,
        [5, "failed", 5],
        {"moved": [], "absorbed": [], "reached_sink": False},
        {"by": "llm", "verdict": "accept", "reason": "only emoji were added", "model": "validator-model"},
    ),
    finding(
        f"{BAD_ITEM}/typo_noise",
        BAD_ITEM,
        "typo_noise",
        "output",
        "invariant",
        "rule",
        "flipped",
        ["candidates"],
        item_texts(RESPONSE_2, reference=f"Scattering {IMG}"),
        item_texts(RESPONSE_2_TYPOS, reference=f"Scattering {IMG}"),
        Q2_BASE,
        [1, 1, 2],
        {
            "moved": [
                moved("correct", "criterion", 3, 1),
                moved("quality", "operator", 3, 2),
                moved("concise", "operator", 3, 2),
            ],
            "absorbed": [],
            "reached_sink": True,
        },
    ),
]

MISSES = [
    finding(
        "q3/partial_completion",
        "q3",
        "partial_completion",
        "output",
        "directional",
        "rule",
        "missed",
        ["candidates"],
        item_texts(RESPONSE_3),
        item_texts(RESPONSE_3.rsplit("\n", 1)[0]),
        Q3_BASE,
        [5, 5, 4],
        {
            "moved": [moved("clear", "criterion", 5, 4)],
            "absorbed": [{"node": "quality", "candidate": "response", "inputs": ["clear"]}],
            "reached_sink": False,
        },
    ),
]

COUNTS_ZERO = {"generated": 0, "accepted": 0, "rejected": 0, "unavailable": 0, "failed": 0}


def operator(
    name, surface, relation, generator, generated=3, accepted=3, rejected=0, unavailable=0, reason=None
) -> dict:
    counts = {
        "generated": generated,
        "accepted": accepted,
        "rejected": rejected,
        "unavailable": unavailable,
        "failed": 0,
    }
    return {
        "name": name,
        "surface": surface,
        "relation": relation,
        "generator": generator,
        "status": "skipped" if reason else "run",
        "reason": reason,
        "variants": COUNTS_ZERO if reason else counts,
    }


def invariant(variants, stable, flipped, failed, low=0.1, high=0.9) -> dict:
    return {
        "variants": variants,
        "stable": stable,
        "flipped": flipped,
        "failed": failed,
        "flip_rate": rate(flipped + failed, variants, variants, low, high),
        "judgment_flip_rate": rate(2 * (flipped + failed), 3 * variants, variants, low / 2, high / 2),
        "excess_over_noise": {"value": 0.25, "low": -0.05, "high": 0.5, "n": variants},
        "gold": None,
    }


def directional(variants, eligible, detected, missed) -> dict:
    return {
        "variants": variants,
        "eligible": eligible,
        "ineligible": variants - eligible,
        "detected": detected,
        "missed": missed,
        "failed": 0,
        "detection_rate": rate(detected, eligible, eligible, 0.0, 1.0),
    }


def by_item_entry(base, gold, variants: dict) -> dict:
    s = summary(base)
    return {
        "baseline": s,
        "gold": gold,
        "correct": None if gold is None else round(s["value"]) == gold,
        "repeat_flips": sum(abs(d - s["value"]) > 0.5 for d in base),
        "repeats": 3,
        "variants": {
            k: {"operator": op, "outcome": outcome, "result": summary(result)}
            for k, (op, outcome, result) in variants.items()
        },
    }


def make_report() -> dict:
    """A fresh copy of the fixture report (tests may change it)."""
    report: dict[str, Any] = {
        "schema": "rubriclang.audit.report/1",
        "suite": {
            "path": f"suites/{IMG}.toml",
            "sealed": "sha256:" + "ab" * 32,
            "repeats": 3,
            "tolerance": 0.5,
            "seed": 7,
        },
        "judge": {
            "name": "helpfulness",
            "path": f"rubrics/{IMG}.rbg",
            "hash": "sha256:" + "cd" * 32,
            "type": "ordinal",
            "mode": "pointwise",
            "output": "ordinal[1, 5]",
            "positive": None,
            "criteria": [
                {"name": "correct", "procedure": "llm.rate", "type": "ordinal[1, 5]"},
                {"name": "clear", "procedure": "llm.rate", "type": "ordinal[1, 5]"},
                {"name": "rambling", "procedure": "rule.length", "type": "bool"},
            ],
            "graphs": {f"helpfulness{SCRIPT}": "sha256:" + "cd" * 32},
            "compile": {"compiled": 3, "fallback": 0, "abstain": 0, "failed": 0},
            "backend": {"model": f"judge-model{SCRIPT}", "temperature": 0.7, "seed": 0},
        },
        "counts": {"items": 3, "variants": 7, "judgments": 30, "failed_judgments": 1},
        "operators": [
            operator("add_emoji", "output", "invariant", "llm"),
            operator(
                "input_paraphrase", "input", "invariant", "llm", generated=3, accepted=1, rejected=1, unavailable=1
            ),
            operator("partial_completion", "output", "directional", "rule"),
            operator("position_swap", "paired", "invariant", "rule", reason=f"needs pairwise items {SCRIPT}"),
            operator("prompt_paraphrase", "judge_prompt", "invariant", "llm", generated=1, accepted=1),
            operator("typo_noise", "output", "invariant", "rule", generated=1, accepted=1),
        ],
        "metrics": {
            "repeat_flip_rate": rate(1, 9, 3, 0.0, 0.333333),
            "invariant": {
                **invariant(6, 3, 2, 1),
                "gold": {
                    "accuracy": rate(3, 6, 3, 0.2, 0.8),
                    "agreement": rate(4, 6, 3, 0.3, 0.9),
                    "mae": {"value": 0.777778, "low": 0.3, "high": 1.2, "n": 3},
                },
            },
            "directional": directional(3, 2, 1, 1),
            "gold": {
                "accuracy": rate(2, 3, 3, 0.333333, 1.0),
                "agreement": rate(2, 3, 3, 0.333333, 1.0),
                "mae": {"value": 0.444444, "low": 0.0, "high": 1.0, "n": 3},
            },
        },
        "by_surface": {
            "input": {"invariant": invariant(1, 1, 0, 0, 0.0, 0.0), "directional": None},
            "judge_prompt": {"invariant": invariant(1, 0, 1, 0, 1.0, 1.0), "directional": None},
            "output": {"invariant": invariant(4, 2, 1, 1), "directional": directional(3, 2, 1, 1)},
        },
        "by_operator": {
            "add_emoji": {"invariant": invariant(3, 2, 0, 1), "directional": None},
            "input_paraphrase": {"invariant": invariant(1, 1, 0, 0, 0.0, 0.0), "directional": None},
            "partial_completion": {"invariant": None, "directional": directional(3, 2, 1, 1)},
            "prompt_paraphrase": {"invariant": invariant(1, 0, 1, 0, 1.0, 1.0), "directional": None},
            "typo_noise": {"invariant": invariant(1, 0, 1, 0, 1.0, 1.0), "directional": None},
        },
        "by_item": {
            "q1": by_item_entry(
                Q1_BASE,
                4,
                {
                    "q1/prompt_paraphrase": ("prompt_paraphrase", "flipped", [2, 2, 3]),
                    "q1/partial_completion": ("partial_completion", "detected", [2, 3, 3]),
                    "q1/add_emoji": ("add_emoji", "stable", [4, 4, 4]),
                    "q1/input_paraphrase": ("input_paraphrase", "stable", [4, 5, 4]),
                },
            ),
            BAD_ITEM: by_item_entry(
                Q2_BASE,
                2,
                {
                    f"{BAD_ITEM}/typo_noise": ("typo_noise", "flipped", [1, 1, 2]),
                    f"{BAD_ITEM}/partial_completion": ("partial_completion", "ineligible", [3, 3, 3]),
                },
            ),
            "q3": by_item_entry(
                Q3_BASE,
                None,
                {
                    "q3/add_emoji": ("add_emoji", "failed", [5, "failed", 5]),
                    "q3/partial_completion": ("partial_completion", "missed", [5, 5, 4]),
                },
            ),
        },
        "by_criterion": {
            name: {
                "procedure": proc,
                "repeat_move_rate": rate(k, 9, 3),
                "invariant_move_rate": rate(j, 6, 3),
                "directional_move_rate": rate(d, 3, 3),
                "in_flips": j,
                "in_detections": d,
                "graphs": 1,
            }
            for name, proc, k, j, d in (
                ("correct", "llm.rate", 1, 2, 1),
                ("clear", "llm.rate", 0, 1, 1),
                ("rambling", "rule.length", 0, 0, 0),
            )
        },
        "flips": FLIPS,
        "misses": MISSES,
        "notes": [f"1 validation was unavailable: the validator {IMG} could not be reached"],
        "summary": {
            "written_by": "llm",
            "model": f"summary-model{IMG}",
            "text": f"The judge flips under typos on {BAD_ITEM}.\n\nIt misses truncated answers. {TITLE} {MARK}",
            "error": None,
        },
    }
    report["flips"].sort(key=lambda f: f["variant"])
    return copy.deepcopy(report)
