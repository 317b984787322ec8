"""Build examples/ragchecker/items.jsonl from RAGChecker's meta-evaluation.

    .venv/bin/python scripts/build_ragchecker.py [--data ../shared/data/ragchecker_meta] [--out examples/ragchecker]

The source holds one record per question and annotator (two annotators
each); plain code pairs the two records of each of the first 100 questions
(refusing a pair whose question, answers or responses differ), and
`rbg items convert` makes one pairwise item of each: the question
(`input`), the ground-truth answer (`reference`), the two RAG systems'
responses (candidates `model1`, `model2`, in the source's order), their
system names (`model1_name`, `model2_name`), and gold from the two
annotators' `overall_label` (-2..2, positive: model2 better): each
annotator's label as the candidate it prefers or `tie`, the majority of the
two, and a split (one prefers a response, the other does not, or they
prefer different ones) written as `tie`. Each annotator's three labels are
kept (`annotator1`, `annotator2`), and `dataset` and `query_id` passed through.
The systems' critiques (RAGChecker's own model output) are left out. LICENSE
and NOTICE are copied beside it. Deterministic: the same data gives
byte-identical files.
"""

from __future__ import annotations

import json
from pathlib import Path

from example_slices import convert, copy_licences, main, write_jsonl

QUESTIONS = 100
SHARED = ("dataset", "query_id", "query", "gt_answer")
LABELS = ("correctness_label", "completeness_label", "overall_label")


def build(data: Path, out: Path, scratch: Path) -> str:
    records = json.loads((data / "human_labeled_data.json").read_text("utf-8"))
    pairs: dict[int, list[dict]] = {}
    for r in records:
        pairs.setdefault(r["instance_id"], []).append(r)
    rows = []
    for instance, pair in list(pairs.items())[:QUESTIONS]:
        if len(pair) != 2:
            raise SystemExit(f"instance {instance}: {len(pair)} annotator records, expected 2")
        a, b = pair
        for key in SHARED:
            if a[key] != b[key]:
                raise SystemExit(f"instance {instance}: the annotators' records differ in `{key}`")
        for m in ("model1", "model2"):
            if (a[m]["model_name"], a[m]["response"]) != (b[m]["model_name"], b[m]["response"]):
                raise SystemExit(f"instance {instance}: the annotators' records differ in `{m}`")
        rows.append(
            {
                "instance_id": instance,
                **{k: a[k] for k in SHARED},
                **{m: {"model_name": a[m]["model_name"], "response": a[m]["response"]} for m in ("model1", "model2")},
                "annotator1": {k: a[k] for k in LABELS},
                "annotator2": {k: b[k] for k in LABELS},
            }
        )
    convert(
        write_jsonl(scratch / "ragchecker.jsonl", rows),
        out / "items.jsonl",
        *("--field", "id=instance_id", "--field", "input=query", "--field", "reference=gt_answer"),
        *("--field", "responses.model1=model1.response", "--field", "responses.model2=model2.response"),
        *("--field", "model1_name=model1.model_name", "--field", "model2_name=model2.model_name"),
        *("--field", "annotator1=annotator1", "--field", "annotator2=annotator2"),
        *("--gold", "annotator1.overall_label", "--gold", "annotator2.overall_label"),
        *("--label", "-2=model1,-1=model1,0=tie,1=model2,2=model2", "--on-tie", "tie", "--keep-unmapped"),
    )
    copy_licences(data, out, ("LICENSE", "NOTICE"))
    return f"ragchecker: {len(rows)} pairwise items"


if __name__ == "__main__":
    main(__doc__, "ragchecker_meta", "ragchecker", build)
