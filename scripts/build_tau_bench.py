"""Build examples/tau_bench/items.jsonl from tau-bench's airline runs.

    .venv/bin/python scripts/build_tau_bench.py [--data ../shared/data/tau_bench_airline] [--out examples/tau_bench]

The runs of every fourth task, the first 8 of them (tasks 0, 6, 12, 16,
25, 29, 33, 37: 4 trials each, 32 records, 10 rewarded, in source order),
become pointwise items whose candidate is the agent's trajectory: `traj`,
OpenAI chat-completions messages (the system policy, user and assistant
turns, tool calls and results), kept as written except that a tool call id
the log reuses is renamed `ID~2` in the call and its result (docs/items.md,
`--conversation`). Gold is the environment's reward (1.0: `true`). The
task's gold actions and required outputs are kept as JSON fields (`actions`,
`outputs`), with the simulated user's instruction (`user_instruction`) and
`user_id`; the reward's details, the user simulator's cost and `source` are
left out by name. Plain code takes the slice; `rbg items convert` does the
rest. LICENSE is copied beside it. Deterministic: the same data gives
byte-identical files.
"""

from __future__ import annotations

import json
from pathlib import Path

from example_slices import convert, copy_licences, main

TASKS = 8


def build(data: Path, out: Path, scratch: Path) -> str:
    records = json.loads((data / "gpt-4o-airline.json").read_text("utf-8"))
    tasks: list[object] = []
    for r in records:
        if r["task_id"] not in tasks:
            tasks.append(r["task_id"])
    keep = set(tasks[::4][:TASKS])
    chosen = [r for r in records if r["task_id"] in keep]
    src = scratch / "tau_bench.json"
    src.write_text(json.dumps(chosen, ensure_ascii=False), "utf-8")
    convert(
        src,
        out / "items.jsonl",
        *("--field", "id=task{task_id}-trial{trial}", "--field", "response=traj", "--conversation", "response"),
        *("--field", "actions=info.task.actions", "--field", "outputs=info.task.outputs"),
        *("--field", "user_instruction=info.task.instruction", "--field", "user_id=info.task.user_id"),
        *("--gold", "reward", "--label", "1=true,0=false", "--field", "task_id=task_id", "--field", "trial=trial"),
        *("--ignore", "info.reward_info", "--ignore", "info.user_cost", "--ignore", "info.source"),
    )
    copy_licences(data, out, ("LICENSE",))
    return f"tau_bench: {len(chosen)} runs of {len(keep)} tasks"


if __name__ == "__main__":
    main(__doc__, "tau_bench_airline", "tau_bench", build)
