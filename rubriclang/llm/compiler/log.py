"""The compile log: one JSON object per line, written as the compilation goes,
so a compilation that is interrupted still leaves a record of its attempts.

Records (`event`): `start` (the spec, model, server and settings), one
`attempt` per model answer (the answer, the program checked, its diagnostics
and other problems, whether it was accepted, and the call's cost), and `end`
(the outcome: `compiled`, `failed` or `error`). docs/compiler.md has the keys.
No API key reaches the log: the compiler never holds one.
"""

from __future__ import annotations

import json
import os
from typing import Any


class CompileLog:
    """Writes the records of one compilation to `path`, replacing an older log."""

    def __init__(self, path: str):
        self.path = path
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        self._fh = open(path, "w", encoding="utf-8")  # noqa: SIM115 (the log stays open across calls; close() closes it)

    def write(self, event: str, **fields: Any) -> None:
        record = {"event": event, **fields}
        self._fh.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> CompileLog:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def default_log_path(output: str) -> str:
    """`out/judge.rbg` -> `out/judge.compile.jsonl`: the log sits next to the output."""
    root, ext = os.path.splitext(output)
    return (root if ext == ".rbg" else output) + ".compile.jsonl"
