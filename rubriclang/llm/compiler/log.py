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
from types import TracebackType
from typing import Any

from rubriclang.safeio import write_atomic


class CompileLog:
    """Writes the records of one compilation to `path`, replacing an older
    log. The whole log is rewritten atomically (`safeio.write_atomic`) at
    each record, so a kill or a full disk leaves the log as it was before
    the record, never torn, and the older log stays whole until the first
    record of the new one is written; a log holds a few records.
    `within`: the folder the command was given (see `write_atomic`)."""

    def __init__(self, path: str, within: str | None = None):
        self.path, self.within = path, within
        self._text = ""
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)

    def write(self, event: str, **fields: Any) -> None:
        record = {"event": event, **fields}
        text = self._text + json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
        write_atomic(self.path, text, within=self.within)
        self._text = text

    def close(self) -> None:
        """Nothing to release: each record is written whole."""

    def __enter__(self) -> CompileLog:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def default_log_path(output: str) -> str:
    """`out/judge.rbg` -> `out/judge.compile.jsonl`: the log sits next to the output."""
    root, ext = os.path.splitext(output)
    return (root if ext == ".rbg" else output) + ".compile.jsonl"
