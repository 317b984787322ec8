"""Regenerate the item files of the MT-Bench examples from the shared data.

    .venv/bin/python scripts/build_mt_bench.py [--data ../shared/data] [--out examples]

Writes, deterministically (same input, byte-identical output):

- examples/mt_bench/items.jsonl: 80 pointwise items, one per MT-Bench
  question, turn 1: the question, one model's answer (the six models in turn,
  by question id) and, for the 30 math, reasoning and coding questions, GPT-4's
  reference answer. No `gold`: no judgment of these answers is released with
  them.
- examples/mt_bench/items_pairwise.jsonl: the MT-Bench human pairwise
  judgments (turn 1, as processed by LLMBar) whose two answers are, byte for
  byte, answers in `model_answer/`; candidates `a` and `b` in LLMBar's order,
  `gold` the one the human preferred.
- examples/mt_bench/items_multi_turn.jsonl: 80 pointwise items, both turns
  of each question as one conversation (`response`: the user's two
  questions and one model's two answers, OpenAI chat messages), the model
  rotating as for turn 1. No `gold`.
- examples/mt_bench/items_pairwise_multi_turn.jsonl: 80 pairwise items, both
  turns of two models' conversations on one question (candidates `a` and
  `b`: the model of the pointwise item and the next one, by name). No
  `gold`: the human judgments of the shared data are of turn 1.
- examples/prometheus/items.jsonl: the 320 Prometheus MT-Bench evaluation
  records (turn 2 of 80 questions, 4 models): the instruction (the dialogue so
  far) as `input`, the response, the reference answer, the question's score
  rubric as `rubric`, and `gold` = the mean of the three GPT-4 scores rounded
  to the nearest integer (a mean of three integers is never halfway).

The rubrics, READMEs and licence files are written by hand; this script only
rebuilds what is derived from the data, and fails loudly when the data is not
what it expects.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data"
DEFAULT_OUT = ROOT / "examples"

# The section headings of the Prometheus absolute-grading prompt, in order;
# each record's `instruction` is that prompt, filled in.
PROMETHEUS_HEADINGS = (
    "###Task Description:\n",
    "\n\n###The instruction to evaluate:\n",
    "\n\n###Response to evaluate:\n",
    "\n\n###Reference Answer (Score 5):\n",
    "\n\n###Score Rubrics:\n",
    "\n\n###Feedback: ",
)


def write_jsonl(path: Path, rows: list[dict]) -> int:
    """One compact JSON object per line, `\\n` line ends; returns the count."""
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return len(rows)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


# --- MT-Bench, turn 1 ---------------------------------------------------------


def mt_bench_sources(data: Path) -> tuple[dict[int, str], dict[int, str], dict[str, dict[int, str]]]:
    """Turn-1 questions and reference answers by question id, and each
    model's turn-1 answers by model and question id."""
    folder = data / "mt_bench"
    questions = {q["question_id"]: q["turns"][0] for q in read_jsonl(folder / "question.jsonl")}
    references = {
        r["question_id"]: r["choices"][0]["turns"][0] for r in read_jsonl(folder / "reference_answer_gpt-4.jsonl")
    }
    answers: dict[str, dict[int, str]] = {}
    for path in sorted((folder / "model_answer").glob("*.jsonl")):
        for a in read_jsonl(path):
            answers.setdefault(a["model_id"], {})[a["question_id"]] = a["choices"][0]["turns"][0]
    assert len(questions) == 80 and len(references) == 30 and len(answers) == 6, "unexpected MT-Bench data"
    assert all(set(by_q) == set(questions) for by_q in answers.values()), "a model lacks answers"
    return questions, references, answers


def with_reference(row: dict, reference: str | None) -> dict:
    if reference is not None:
        row["reference"] = reference
    return row


def mt_bench_pointwise(questions, references, answers) -> list[dict]:
    """One item per question; the answering model rotates through the six
    (sorted by name) with the question id, so each model answers 13 or 14
    questions spread over all eight categories."""
    models = sorted(answers)
    rows = []
    for n, qid in enumerate(sorted(questions)):
        model = models[n % len(models)]
        row = {"id": f"mtb-{qid}-{model}", "input": questions[qid], "response": answers[model][qid]}
        rows.append(with_reference(row, references.get(qid)))
    return rows


def mt_bench_pairwise(data: Path, questions, references, answers) -> list[dict]:
    """The human-judged pairs whose two answers both appear verbatim in
    `model_answer/` (the others are answers of other runs of the models)."""
    judged = json.loads((data / "llmbar" / "Processed_MT-Bench.json").read_text("utf-8"))
    qid_of = {text: qid for qid, text in questions.items()}
    known = {(qid, text) for by_q in answers.values() for qid, text in by_q.items()}
    rows = []
    for n, pair in enumerate(judged):
        qid = qid_of[pair["input"]]  # every judged question is an MT-Bench one
        if (qid, pair["output_1"]) not in known or (qid, pair["output_2"]) not in known:
            continue
        assert pair["label"] in (1, 2)
        row = {
            "id": f"mtb-{qid}-h{n:03d}",
            "input": pair["input"],
            "responses": {"a": pair["output_1"], "b": pair["output_2"]},
        }
        row = with_reference(row, references.get(qid))
        row["gold"] = "a" if pair["label"] == 1 else "b"
        rows.append(row)
    return rows


# --- MT-Bench, both turns ------------------------------------------------------


def mt_bench_conversations(data: Path) -> dict[str, dict[int, list[dict]]]:
    """Each model's two-turn conversation on each question, by model and
    question id: the user's two questions and the model's two answers as
    OpenAI chat messages, texts unchanged."""
    folder = data / "mt_bench"
    questions = {q["question_id"]: q["turns"] for q in read_jsonl(folder / "question.jsonl")}
    assert len(questions) == 80 and all(len(t) == 2 for t in questions.values()), "unexpected MT-Bench questions"
    out: dict[str, dict[int, list[dict]]] = {}
    for path in sorted((folder / "model_answer").glob("*.jsonl")):
        for a in read_jsonl(path):
            answers = a["choices"][0]["turns"]
            assert len(answers) == 2, f"{a['model_id']} {a['question_id']}: not two turns"
            turns = questions[a["question_id"]]
            out.setdefault(a["model_id"], {})[a["question_id"]] = [
                {"role": role, "content": text}
                for pair in zip(turns, answers, strict=True)
                for role, text in zip(("user", "assistant"), pair, strict=True)
            ]
    assert len(out) == 6 and all(set(by_q) == set(questions) for by_q in out.values()), "a model lacks answers"
    return out


def mt_bench_multi_turn(conversations: dict[str, dict[int, list[dict]]]) -> list[dict]:
    """One item per question, both turns; the model rotates as in
    `mt_bench_pointwise`."""
    models = sorted(conversations)
    rows = []
    for n, qid in enumerate(sorted(conversations[models[0]])):
        model = models[n % len(models)]
        rows.append({"id": f"mtb2-{qid}-{model}", "response": conversations[model][qid]})
    return rows


def mt_bench_pairwise_multi_turn(conversations: dict[str, dict[int, list[dict]]]) -> list[dict]:
    """One pair per question, both turns: the rotating model of
    `mt_bench_multi_turn` as `a`, the next model by name as `b`."""
    models = sorted(conversations)
    rows = []
    for n, qid in enumerate(sorted(conversations[models[0]])):
        a, b = models[n % len(models)], models[(n + 1) % len(models)]
        rows.append(
            {"id": f"mtb2-{qid}-{a}-vs-{b}", "responses": {"a": conversations[a][qid], "b": conversations[b][qid]}}
        )
    return rows


# --- Prometheus: MT-Bench turn 2, with GPT-4 scores -----------------------------


def prometheus_sections(prompt: str) -> tuple[str, str, str, str]:
    """(instruction, response, reference, rubric) of one filled-in prompt;
    asserts the prompt is rebuilt exactly from its parts."""
    starts = [prompt.index(h) for h in PROMETHEUS_HEADINGS]
    assert starts[0] == 0 and starts == sorted(starts) and prompt.endswith(PROMETHEUS_HEADINGS[-1])
    bodies = [
        prompt[s + len(h) : e] for s, h, e in zip(starts, PROMETHEUS_HEADINGS, starts[1:], strict=False)
    ]  # each heading's body ends where the next starts
    assert (
        "".join(h + b for h, b in zip(PROMETHEUS_HEADINGS, bodies, strict=False)) + PROMETHEUS_HEADINGS[-1] == prompt
    )  # the last heading, with no body, is added after
    _task, instruction, response, reference, rubric = bodies
    return instruction, response, reference, rubric


def rounded_mean(scores: list[int]) -> int:
    """The mean of the GPT-4 scores, to the nearest integer. Three integers
    never average to a half, so no tie rule is needed; the assert keeps it so."""
    mean = sum(scores) / len(scores)
    assert mean % 1 != 0.5
    return math.floor(mean + 0.5)


def prometheus_items(data: Path) -> list[dict]:
    records = json.loads((data / "prometheus" / "mt_bench_eval.json").read_text("utf-8"))
    assert len(records) == 320
    rows = []
    for rec in sorted(records, key=lambda r: (r["idx"], r["response_source"])):
        instruction, response, reference, rubric = prometheus_sections(rec["instruction"])
        assert len(rec["gpt4_score"]) == 3 and all(s in (1, 2, 3, 4, 5) for s in rec["gpt4_score"])
        rows.append(
            {
                "id": f"pm-{rec['idx']}-{rec['response_source']}",
                # As Prometheus was shown them: the instruction ends
                # "Assistant: ", where the response goes.
                "input": instruction,
                "response": response,
                "reference": reference,
                "rubric": rubric,
                "gold": rounded_mean(rec["gpt4_score"]),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the examples folder")
    args = ap.parse_args(argv)
    questions, references, answers = mt_bench_sources(args.data)
    conversations = mt_bench_conversations(args.data)
    written = {
        "mt_bench/items.jsonl": mt_bench_pointwise(questions, references, answers),
        "mt_bench/items_pairwise.jsonl": mt_bench_pairwise(args.data, questions, references, answers),
        "mt_bench/items_multi_turn.jsonl": mt_bench_multi_turn(conversations),
        "mt_bench/items_pairwise_multi_turn.jsonl": mt_bench_pairwise_multi_turn(conversations),
        "prometheus/items.jsonl": prometheus_items(args.data),
    }
    for name, rows in written.items():
        path = args.out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        print(f"{path}: {write_jsonl(path, rows)} items")


if __name__ == "__main__":
    main()
