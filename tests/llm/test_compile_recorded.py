"""BiGGen-Bench rubrics compiled per instance end to end, against a scripted
loopback model whose answers are the embedded SmolLM2-135M's own, recorded
from a real run (tests/llm/fixtures/, made by scripts/compile_fixtures.py;
docs/results.md has the run). Replaying them must give the run's figures:
the same conversations, so the same answers, checks, repairs and summary.
A request is keyed by its messages after the system one (the language
reference, which grows with the catalog), as the script keys them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from click.testing import CliRunner

from rubriclang.cli.main import cli

from .fault_server import FaultServer

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).with_name("fixtures")
ANSWERS = json.loads((FIXTURES / "biggen_smollm2_answers.json").read_text("utf-8"))
SUMMARY = json.loads((FIXTURES / "biggen_smollm2_summary.json").read_text("utf-8"))
ITEMS = ROOT / "examples" / "biggen" / "items.jsonl"


# The recording predates the `item` and `group` declarations (issues 26 and
# 28): a syntax error's notes listing the declaration keywords then lacked
# them. Repair requests are keyed as they read then; nothing else in them changed.
_BEFORE_ITEM = (
    ("`criterion`, `group`, `item`, `node`", "`criterion`, `node`"),
    ("`criterion`, `item`, `node`", "`criterion`, `node`"),
    ("`node`, `sink`, `readout` or `item`", "`node`, `sink` or `readout`"),
)


def _as_recorded(text: str) -> str:
    for now, then in _BEFORE_ITEM:
        text = text.replace(now, then)
    return text


def recorded(body: dict) -> dict:
    assert body["messages"][0]["role"] == "system"
    messages = [{**m, "content": _as_recorded(m["content"])} for m in body["messages"][1:]]
    blob = json.dumps(messages, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    key = hashlib.sha256(blob.encode()).hexdigest()
    return ANSWERS.get(key, {"text": "NO RECORDED ANSWER FOR THIS REQUEST"})


def test_recorded_embedded_answers_reproduce_the_runs_summary(tmp_path):
    ids = set(SUMMARY["by_id"])
    rows = [line for line in ITEMS.read_text("utf-8").splitlines() if json.loads(line)["id"] in ids]
    items = tmp_path / "items.jsonl"
    items.write_text("\n".join(rows) + "\n", "utf-8")
    out = tmp_path / "graphs"
    with FaultServer(recorded) as server:
        args = [
            "compile",
            "--from-items",
            str(items),
            "--rubric-field",
            "score_rubric",
            "--system-field",
            "system_prompt",
            "--out-dir",
            str(out),
            "--repairs",
            "1",
            "--base-url",
            server.url,
            "--no-cache",
            "--format",
            "json",
        ]
        r = CliRunner().invoke(cli, args)
        answers = [recorded(c.json)["text"] for c in server.chats]
    assert "NO RECORDED ANSWER FOR THIS REQUEST" not in answers
    summary = json.loads(r.stdout)
    for key in ("specs", "compiled", "failed", "attempts", "repaired_findings", "by_id"):
        assert summary[key] == SUMMARY[key], key
    assert r.exit_code == (0 if SUMMARY["compiled"] == SUMMARY["specs"] else 1)
    assert len(list(out.glob("*.rbg"))) == SUMMARY["compiled"]
