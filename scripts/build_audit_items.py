"""Regenerate the item files of the audit suites (examples/audit/) from the
shared data.

    .venv/bin/python scripts/build_audit_items.py [--data ../shared/data] [--out examples/audit]

Writes, deterministically (same input, byte-identical output):

- llmbar_natural.jsonl: 30 of the 100 LLMBar Natural pairs;
- llmbar_mt_bench.jsonl: 30 of the 200 MT-Bench human judgments as LLMBar
  processed them (turn 1).

Both take pairs at evenly spaced positions of their file (position
`i * N // 30`, so the whole file is covered, with no choice by content or
length). Each pair is a pairwise item `llmbar-natural-NNN` or
`llmbar-mt-bench-NNN` (NNN: the pair's 0-based position in its file), with
candidates `output_1` and `output_2` in LLMBar's order and `gold` the id of
the better one (LLMBar's `label` 1 or 2).

- mt_bench_short.jsonl: the MT-Bench turn-1 pointwise items of
  examples/mt_bench (scripts/build_mt_bench.py) that have no reference
  answer, a question of at most 500 characters and an answer of 300 to 900
  characters: short enough for the embedded model to judge in an audit's
  time budget, long enough to have a last sentence or paragraph to cut.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from build_mt_bench import mt_bench_pointwise, mt_bench_sources, write_jsonl

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data"
DEFAULT_OUT = ROOT / "examples" / "audit"

PAIRS = 30
LLMBAR = {  # item file -> (source file, id prefix, pairs in the source)
    "llmbar_natural.jsonl": ("LLMBar_Natural.json", "llmbar-natural", 100),
    "llmbar_mt_bench.jsonl": ("Processed_MT-Bench.json", "llmbar-mt-bench", 200),
}
# Bounds of the pointwise MT-Bench subset, in characters.
MAX_QUESTION = 500
ANSWER_RANGE = (300, 900)


def llmbar_pairs(path: Path, prefix: str, expected: int) -> list[dict]:
    """PAIRS pairs of an LLMBar file, at evenly spaced positions."""
    pairs = json.loads(path.read_text("utf-8"))
    assert len(pairs) == expected, f"{path}: expected {expected} pairs, found {len(pairs)}"
    rows = []
    for i in range(PAIRS):
        at = i * len(pairs) // PAIRS
        p = pairs[at]
        assert p["label"] in (1, 2), f"{path}: pair {at} has label {p['label']!r}"
        rows.append(
            {
                "id": f"{prefix}-{at:03d}",
                "input": p["input"],
                "responses": {"output_1": p["output_1"], "output_2": p["output_2"]},
                "gold": f"output_{p['label']}",
            }
        )
    return rows


def mt_bench_short(data: Path) -> list[dict]:
    """The short, reference-free MT-Bench turn-1 pointwise items."""
    rows = mt_bench_pointwise(*mt_bench_sources(data))
    lo, hi = ANSWER_RANGE
    return [
        r for r in rows if "reference" not in r and len(r["input"]) <= MAX_QUESTION and lo <= len(r["response"]) <= hi
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()
    for name, (source, prefix, expected) in LLMBAR.items():
        n = write_jsonl(args.out / name, llmbar_pairs(args.data / "llmbar" / source, prefix, expected))
        print(f"{args.out / name}: {n} items")
    n = write_jsonl(args.out / "mt_bench_short.jsonl", mt_bench_short(args.data))
    print(f"{args.out / 'mt_bench_short.jsonl'}: {n} items")


if __name__ == "__main__":
    main()
