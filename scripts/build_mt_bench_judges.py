"""Regenerate MT-Bench's judge prompts as rubriclang templates, and the small
item files of examples/judges/, from the shared data.

    .venv/bin/python scripts/build_mt_bench_judges.py [--data ../shared/data] [--out examples/judges]

Writes, deterministically (same input, byte-identical output):

- mt_bench_single.md, mt_bench_single_math.md, mt_bench_pair.md,
  mt_bench_pair_math.md: FastChat's turn-1 judge prompts `single-v1`,
  `single-math-v1`, `pair-v2` and `pair-math-v1`
  (mt_bench/judge_prompts.jsonl), each as a `## system` / `## user`
  template. The prompt text is copied unchanged; only FastChat's Python
  format fields are renamed to rubriclang's placeholders (FIELDS).
- answers.jsonl, answers_math.jsonl: the six shortest MT-Bench turn-1 answers
  of examples/mt_bench/items.jsonl without and with a GPT-4 reference answer
  (by question plus answer length, then id).
- pairs_math.jsonl: the six shortest human-judged turn-1 pairs of
  examples/mt_bench/items_pairwise.jsonl with a reference answer.

The graphs, suites, README and licence notice are written by hand; this
script only rebuilds what is derived from the data, and fails loudly when the
data is not what it expects.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from build_mt_bench import mt_bench_pairwise, mt_bench_pointwise, mt_bench_sources, read_jsonl, write_jsonl  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data"
DEFAULT_OUT = ROOT / "examples" / "judges"

# template file -> FastChat's prompt name
PROMPTS = {
    "mt_bench_single.md": "single-v1",
    "mt_bench_single_math.md": "single-math-v1",
    "mt_bench_pair.md": "pair-v2",
    "mt_bench_pair_math.md": "pair-math-v1",
}
# FastChat's format fields (turn 1) -> rubriclang's placeholders.
FIELDS = {
    "question": "input",
    "answer": "response",
    "answer_a": "response_a",
    "answer_b": "response_b",
    "ref_answer_1": "reference",
}
SMALL = 6
_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def template(prompt: dict, file: str) -> str:
    """One FastChat judge prompt as a rubriclang template."""
    parts = {}
    for key in ("system_prompt", "prompt_template"):
        text = prompt[key]
        # A template's own syntax must not appear in the copied text, or it
        # would be read as a tag or a section heading.
        assert "{{" not in text and not re.search(r"^##", text, re.M), f"{prompt['name']}: {key} has template syntax"
        unknown = set(_FIELD.findall(text)) - set(FIELDS)
        assert not unknown, f"{prompt['name']}: unexpected fields {sorted(unknown)}"
        parts[key] = _FIELD.sub(lambda m: "{{" + FIELDS[m.group(1)] + "}}", text)
    return (
        "<!--\n"
        f"MT-Bench's judge prompt `{prompt['name']}` ({prompt['description']}), from\n"
        "lm-sys/FastChat @ 0e6d3e4b, fastchat/llm_judge/data/judge_prompts.jsonl\n"
        "(Apache-2.0, see LICENSE). Built by scripts/build_mt_bench_judges.py: the\n"
        "text is FastChat's, with its format fields renamed to rubriclang's\n"
        f"placeholders. Do not edit; rebuild. FastChat reads `{prompt['output_format']}`.\n"
        "-->\n"
        "## system\n"
        f"{parts['system_prompt']}\n"
        "\n"
        "## user\n"
        f"{parts['prompt_template']}\n"
    )


def _shortest(rows: list[dict], has_reference: bool) -> list[dict]:
    def size(r: dict) -> int:
        shown = r["responses"].values() if "responses" in r else [r["response"]]
        return len(r["input"]) + sum(len(s) for s in shown)

    picked = [r for r in rows if ("reference" in r) == has_reference]
    return sorted(picked, key=lambda r: (size(r), r["id"]))[:SMALL]


def build(data: Path, out: Path) -> list[Path]:
    prompts = {p["name"]: p for p in read_jsonl(data / "mt_bench" / "judge_prompts.jsonl")}
    assert set(PROMPTS.values()) <= set(prompts), "judge_prompts.jsonl lacks a turn-1 prompt"
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for file, name in PROMPTS.items():
        path = out / file
        path.write_text(template(prompts[name], file), encoding="utf-8", newline="\n")
        written.append(path)
    sources = mt_bench_sources(data)
    pointwise = mt_bench_pointwise(*sources)
    pairwise = mt_bench_pairwise(data, *sources)
    for file, rows in (
        ("answers.jsonl", _shortest(pointwise, False)),
        ("answers_math.jsonl", _shortest(pointwise, True)),
        ("pairs_math.jsonl", _shortest(pairwise, True)),
    ):
        assert len(rows) == SMALL, f"{file}: only {len(rows)} rows"
        write_jsonl(out / file, rows)
        written.append(out / file)
    return written


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    for path in build(args.data, args.out):
        print(path)


if __name__ == "__main__":
    main()
