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
- mt_bench_single_multi_turn.md, mt_bench_pair_multi_turn.md: FastChat's
  two-turn judge prompts `single-v1-multi-turn` and `pair-v2-multi-turn`,
  the same way; each conversation's turns (`### User:` / `### Assistant
  A:` blocks, FastChat's `{question_1}`, `{answer_1}`, ...) become a
  section over the candidate conversation that writes each turn under
  FastChat's own heading for its role (`multi_turn_template`), so a
  conversation of two turns is shown exactly as FastChat shows it.
- answers.jsonl, answers_math.jsonl: the six shortest MT-Bench turn-1 answers
  of examples/mt_bench/items.jsonl without and with a GPT-4 reference answer
  (by question plus answer length, then id).
- pairs_math.jsonl: the six shortest human-judged turn-1 pairs of
  examples/mt_bench/items_pairwise.jsonl with a reference answer.
- answers_multi_turn.jsonl, pairs_multi_turn.jsonl: the six shortest
  two-turn conversations and pairs of examples/mt_bench/items_multi_turn.jsonl
  and items_pairwise_multi_turn.jsonl.

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

from build_mt_bench import (
    mt_bench_conversations,
    mt_bench_multi_turn,
    mt_bench_pairwise,
    mt_bench_pairwise_multi_turn,
    mt_bench_pointwise,
    mt_bench_sources,
    read_jsonl,
    write_jsonl,
)

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
# template file -> FastChat's two-turn prompt name, and the placeholder of
# each conversation it shows, by FastChat's assistant name in it.
MULTI_TURN = {
    "mt_bench_single_multi_turn.md": ("single-v1-multi-turn", {"A": "response"}),
    "mt_bench_pair_multi_turn.md": ("pair-v2-multi-turn", {"A": "response_a", "B": "response_b"}),
}
SMALL = 6
_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def template(prompt: dict, file: str) -> str:
    """One FastChat judge prompt as a rubriclang template."""
    parts = {}
    for key in ("system_prompt", "prompt_template"):
        text = _copied(prompt, key)
        unknown = set(_FIELD.findall(text)) - set(FIELDS)
        assert not unknown, f"{prompt['name']}: unexpected fields {sorted(unknown)}"
        parts[key] = _FIELD.sub(lambda m: "{{" + FIELDS[m.group(1)] + "}}", text)
    return _header(prompt) + f"## system\n{parts['system_prompt']}\n\n## user\n{parts['prompt_template']}\n"


RENAMED = "text is FastChat's, with its format fields renamed to rubriclang's\nplaceholders."
SECTIONED = (
    "text is FastChat's; each conversation's two turns are a section over the\n"
    "candidate conversation that writes each turn under FastChat's heading."
)


def _header(prompt: dict, how: str = RENAMED) -> str:
    return (
        "<!--\n"
        f"MT-Bench's judge prompt `{prompt['name']}` ({prompt['description']}), from\n"
        "lm-sys/FastChat @ 0e6d3e4b, fastchat/llm_judge/data/judge_prompts.jsonl\n"
        "(Apache-2.0, see LICENSE). Built by scripts/build_mt_bench_judges.py: the\n"
        f"{how} Do not edit; rebuild. FastChat reads `{prompt['output_format']}`.\n"
        "-->\n"
    )


def _copied(prompt: dict, key: str) -> str:
    text = prompt[key]
    # A template's own syntax must not appear in the copied text, or it
    # would be read as a tag or a section heading (`## x`; FastChat's
    # `### User:` is text).
    assert "{{" not in text and not re.search(r"^##[ \t]", text, re.M), f"{prompt['name']}: {key} has template syntax"
    return text


def multi_turn_template(prompt: dict, shown: dict[str, str]) -> str:
    """One FastChat two-turn judge prompt as a rubriclang template: each of
    its conversations, FastChat's `### User:` and `### Assistant X:`
    blocks for two turns, becomes a section over the candidate conversation
    `shown[X]` that writes each turn under FastChat's heading for its role.
    Asserts every other character is FastChat's."""
    text = _copied(prompt, "prompt_template")
    sections = {}
    for name, placeholder in shown.items():
        field = "answer" if len(shown) == 1 else f"answer_{name.lower()}"
        turns = "".join(f"### User:\n{{question_{k}}}\n\n### Assistant {name}:\n{{{field}_{k}}}\n\n" for k in (1, 2))
        assert text.count(turns) == 1, f"{prompt['name']}: assistant {name}'s turns are not FastChat's two blocks"
        marker = f"\x00{name}\x00"
        text = text.replace(turns, marker)
        sections[marker] = (
            f"{{{{#{placeholder}}}}}\n"
            "{{#is_user}}\n### User:\n{{/is_user}}\n"
            f"{{{{#is_assistant}}}}\n### Assistant {name}:\n{{{{/is_assistant}}}}\n"
            "{{content}}\n\n"
            f"{{{{/{placeholder}}}}}\n"
        )
    unknown = _FIELD.findall(text)
    assert not unknown, f"{prompt['name']}: unexpected fields {sorted(unknown)}"
    for marker, section in sections.items():
        text = text.replace(marker, section)
    return _header(prompt, SECTIONED) + f"## system\n{_copied(prompt, 'system_prompt')}\n\n## user\n{text}\n"


def _size(r: dict) -> int:
    def length(value) -> int:
        return len(value) if isinstance(value, str) else sum(len(m["content"]) for m in value)

    shown = r["responses"].values() if "responses" in r else [r["response"]]
    return len(r.get("input", "")) + sum(length(s) for s in shown)


def _shortest(rows: list[dict], has_reference: bool = False) -> list[dict]:
    picked = [r for r in rows if ("reference" in r) == has_reference]
    return sorted(picked, key=lambda r: (_size(r), r["id"]))[:SMALL]


def build(data: Path, out: Path) -> list[Path]:
    prompts = {p["name"]: p for p in read_jsonl(data / "mt_bench" / "judge_prompts.jsonl")}
    wanted = {*PROMPTS.values(), *(name for name, _ in MULTI_TURN.values())}
    assert wanted <= set(prompts), f"judge_prompts.jsonl lacks {sorted(wanted - set(prompts))}"
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for file, name in PROMPTS.items():
        path = out / file
        path.write_text(template(prompts[name], file), encoding="utf-8", newline="\n")
        written.append(path)
    for file, (name, shown) in MULTI_TURN.items():
        path = out / file
        path.write_text(multi_turn_template(prompts[name], shown), encoding="utf-8", newline="\n")
        written.append(path)
    sources = mt_bench_sources(data)
    conversations = mt_bench_conversations(data)
    pointwise = mt_bench_pointwise(*sources)
    pairwise = mt_bench_pairwise(data, *sources)
    for file, rows in (
        ("answers.jsonl", _shortest(pointwise, False)),
        ("answers_math.jsonl", _shortest(pointwise, True)),
        ("pairs_math.jsonl", _shortest(pairwise, True)),
        ("answers_multi_turn.jsonl", _shortest(mt_bench_multi_turn(conversations))),
        ("pairs_multi_turn.jsonl", _shortest(mt_bench_pairwise_multi_turn(conversations))),
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
