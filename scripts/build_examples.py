"""Regenerate the data files of the real-data examples from the shared data.

    .venv/bin/python scripts/build_examples.py [--data ../shared/data] [--out examples]

Writes, deterministically (same input, byte-identical output):

- examples/topical_chat/: items.jsonl (gold = the human overall score) and
  annotations.jsonl (the five human aspect scores, for `--annotations`);
- examples/llm_rubric/: items.jsonl (all 223 dialogues), items_test.jsonl (the
  held-out half, see `split`), recorded.jsonl (GPT-3.5's answer distributions
  for Q0-Q8, for `--recorded`);
- examples/gsm8k/: items.jsonl (each selected problem three times: GSM8K's
  solution with an answer sentence, the same solution bare, and the solution
  stopped one step early) and LICENSE (copied);
- examples/biggen/: items.jsonl (the first instance of each of BiGGen-Bench's
  first 20 tasks, with its own `score_rubric`; the responses are the data
  set's placeholders), for `rbg compile --from-items`.

The rubrics, READMEs and licence notices of the first two folders are written
by hand; this script only rebuilds what is derived from the data.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
DEFAULT_DATA = ROOT.parent / "shared" / "data"

TOPICAL_ASPECTS = ("understandability", "naturalness", "coherence", "engagingness", "groundedness")
LLM_RUBRIC_QUESTIONS = ("Q0", "Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "Q7", "Q8")
# Q8 is the one 3-point question: its `answer4_prob` is 0 on every dialogue,
# and humans answer it 1-3. Its distribution is written over 1-3 only.
LLM_RUBRIC_POINTS = {q: 3 if q == "Q8" else 4 for q in LLM_RUBRIC_QUESTIONS}
GSM8K_PROBLEMS = 150

_CALCULATOR = re.compile(r"<<[^>]*>>")
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def write_jsonl(path: Path, rows) -> int:
    """Write one compact JSON object per line; returns the number of rows."""
    n = 0
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


def split(item_id: str) -> str:
    """`dev` or `test`, by the parity of the SHA-256 of the id: fixed before
    any figure was measured, and independent of the data's order."""
    return "dev" if int(hashlib.sha256(item_id.encode()).hexdigest(), 16) % 2 == 0 else "test"


# --- Topical-Chat --------------------------------------------------------------


def topical_chat(data: Path, out: Path) -> str:
    rows = json.loads((data / "topical_chat" / "topical_chat.json").read_text("utf-8"))
    items, values = [], []
    for n, row in enumerate(rows):
        item_id = f"tc-{n:03d}"
        history = "\n".join(line.strip() for line in row["source"].strip().split("\n") if line.strip())
        items.append(
            {
                "id": item_id,
                "input": f"Dialogue history:\n{history}\n\nFact:\n{row['context'].strip()}",
                "response": row["system_output"].strip(),
                "gold": row["scores"]["overall"],
            }
        )
        values += [{"item": item_id, "key": k, "value": row["scores"][k]} for k in TOPICAL_ASPECTS]
    write_jsonl(out / "items.jsonl", items)
    write_jsonl(out / "annotations.jsonl", values)
    return f"topical_chat: {len(items)} items, {len(values)} annotations"


# --- LLM-Rubric ----------------------------------------------------------------


def _transcript(messages: list[dict]) -> str:
    return "\n\n".join(f"{m['role'].upper()}: {m['content'].strip()}" for m in messages)


def llm_rubric(data: Path, out: Path) -> str:
    src = data / "llm_rubric"
    dialogues = {d["_id"]: d for d in json.loads((src / "real_data.json").read_text("utf-8"))}
    with open(src / "human_judges_real_convs_FIXED_ANON.tsv", encoding="utf-8") as fh:
        humans = list(csv.DictReader(fh, delimiter="\t"))
    # One annotator per dialogue in this release; a second would need a rule for gold.
    ids = [h["text_id"] for h in humans]
    if len(set(ids)) != len(ids):
        raise SystemExit("llm_rubric: a dialogue has several human ratings; decide how gold combines them")
    order = [
        line.strip() for line in (src / "real_dialogue_ids.tsv").read_text("utf-8").splitlines()[1:] if line.strip()
    ]
    gold = {h["text_id"]: int(h["Q0"]) for h in humans}
    items = [
        {
            "id": i,
            "input": f"An information-seeking conversation about: {dialogues[i]['topic'].strip()}",
            "response": _transcript(dialogues[i]["messages"]),
            "gold": gold[i],
        }
        for i in order
    ]
    with open(src / "gpt-3.5-turbo-16k_real_evaluations_FIXED.tsv", encoding="utf-8") as fh:
        machine = {(r["text_id"], r["criterion"]): r for r in csv.DictReader(fh, delimiter="\t")}
    recorded = []
    for i in order:
        for q in LLM_RUBRIC_QUESTIONS:
            r = machine[(i, q)]
            dist = {str(k): float(r[f"answer{k}_prob"]) for k in range(1, LLM_RUBRIC_POINTS[q] + 1)}
            recorded.append({"item": i, "key": q, "value": dist})
    n_all = write_jsonl(out / "items.jsonl", items)
    n_test = write_jsonl(out / "items_test.jsonl", [it for it in items if split(it["id"]) == "test"])
    write_jsonl(out / "recorded.jsonl", recorded)
    return f"llm_rubric: {n_all} items ({n_test} held out), {len(recorded)} recorded distributions"


# --- GSM8K ---------------------------------------------------------------------


def _stopped_early(body_lines: list[str]) -> tuple[str, str] | None:
    """The solution without its last step, and the last number it then ends on."""
    if len(body_lines) < 2:
        return None
    text = "\n".join(body_lines[:-1])
    numbers = _NUMBER.findall(text)
    return (text, numbers[-1]) if numbers else None


def _value(number: str) -> float:
    return float(number.replace(",", ""))


def gsm8k(data: Path, out: Path) -> str:
    src = data / "gsm8k"
    items = []
    with open(src / "test.jsonl", encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            if len(items) == 3 * GSM8K_PROBLEMS:
                break
            row = json.loads(line)
            body, answer = row["answer"].split("####")
            answer = answer.strip()
            # The calculator annotations `<<6*2=12>>` are GSM8K's training aid,
            # not something a model writes; the responses leave them out.
            lines = [_CALCULATOR.sub("", x).strip() for x in body.strip().split("\n") if x.strip()]
            early = _stopped_early(lines)
            if early is None or _value(early[1]) == _value(answer):
                continue
            base = {"input": row["question"], "reference": row["answer"]}
            solution = "\n".join(lines)
            responses = (
                ("full", f"{solution}\nThe answer is {answer}.", True),
                # The bare solution ends on its last step, whose last number is
                # usually, but not always, the answer: a real test of reading
                # "the final number" off worked text.
                ("bare", solution, True),
                ("early", f"{early[0]}\nThe answer is {early[1]}.", False),
            )
            for variant, response, gold in responses:
                items.append({"id": f"gsm8k-{n:04d}-{variant}", **base, "response": response, "gold": gold})
    write_jsonl(out / "items.jsonl", items)
    shutil.copyfile(src / "LICENSE", out / "LICENSE")
    return f"gsm8k: {len(items)} items from {len(items) // 3} problems"


BIGGEN_TASKS = 20
_BIGGEN_FIELDS = ("id", "system_prompt", "input", "reference_answer", "score_rubric", "response")


def biggen(data: Path, out: Path) -> str:
    with open(data / "biggen" / "sample_responses.json", encoding="utf-8") as fh:
        rows = json.load(fh)
    items, tasks = [], set()
    for row in rows.values():
        task = (row["capability"], row["task"])
        if task in tasks or len(items) == BIGGEN_TASKS:
            continue
        tasks.add(task)
        items.append({k: row[k] for k in _BIGGEN_FIELDS})
    write_jsonl(out / "items.jsonl", items)
    return f"biggen: {len(items)} instances, one per task"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    parser.add_argument("--out", type=Path, default=EXAMPLES, help="where the example folders are")
    args = parser.parse_args(argv)
    for name, build in (
        ("topical_chat", topical_chat),
        ("llm_rubric", llm_rubric),
        ("gsm8k", gsm8k),
        ("biggen", biggen),
    ):
        out = args.out / name
        out.mkdir(parents=True, exist_ok=True)
        print(build(args.data, out))


if __name__ == "__main__":
    main()
