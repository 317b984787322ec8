"""Record the model's answers in a folder of compile logs as fixtures for a
scripted loopback model, so a compilation can be replayed without the model.

    .venv/bin/python scripts/compile_fixtures.py GRAPHS/ OUT.json

OUT maps the SHA-256 of each request's conversation (its `messages` after
the system message, canonical JSON) to the answer's text and finish reason.
The system message is the language reference, drawn from the catalog: it is
left out of the key so that adding an operator or procedure does not orphan
the recording. The conversation is rebuilt from the log exactly as the
compiler sends it: the spec message of the `start` record, then, from the
second attempt on, the previous answer and its repair request.
tests/llm/test_compile_recorded.py answers from it.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path


def messages_key(messages) -> str:
    """The key of a request: its messages after the system message."""
    blob = json.dumps(list(messages)[1:], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def fixtures(folder: Path) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for log in sorted(folder.glob("*.compile.jsonl")):
        records = [json.loads(line) for line in log.read_text("utf-8").splitlines()]
        start = next(r for r in records if r["event"] == "start")
        previous = None
        for r in (r for r in records if r["event"] == "attempt"):
            msgs = [{"role": "system", "content": start["system"]}, {"role": "user", "content": start["spec"]}]
            if previous is not None:
                msgs += [
                    {"role": "assistant", "content": previous["answer"]},
                    {"role": "user", "content": previous["repair"]},
                ]
            out[messages_key(msgs)] = {"text": r["answer"], "finish_reason": r["finish_reason"]}
            previous = r
    return dict(sorted(out.items()))


def main(argv: list[str]) -> None:
    folder, target = Path(argv[0]), Path(argv[1])
    target.write_text(json.dumps(fixtures(folder), indent=1, sort_keys=True, ensure_ascii=False) + "\n", "utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
