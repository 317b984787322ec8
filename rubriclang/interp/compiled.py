"""The folder `rbg compile SPECS.jsonl --out-dir` writes, as its readers see
it: each id's graph (`ID.rbg`, its first line stamped with the spec's hash)
and compile log (`ID.compile.jsonl`), and each id's state. The compiler
(`llm/compiler/batch.py`) writes it; graph sets (`interp/graphset.py`) read
it, so it lives below both (docs/compiler.md).
"""

from __future__ import annotations

import itertools
import os
import re
from typing import Any

from rubriclang.jsonl import readable_prefix
from rubriclang.safeio import open_regular

_HEADER = re.compile(r"# rbg compile: spec (\S+) (sha256:[0-9a-f]{64})\n")

COMPILED, FAILED, ERROR, PENDING = "compiled", "failed", "error", "pending"


def graph_path(out_dir: str, sid: str) -> str:
    return os.path.join(out_dir, sid + ".rbg")


def log_path(out_dir: str, sid: str) -> str:
    return os.path.join(out_dir, sid + ".compile.jsonl")


def header(sid: str, shash: str) -> str:
    """The graph file's first lines: the spec it was compiled from."""
    return f"# rbg compile: spec {sid} {shash}\n\n"


def graph_spec_hash(path: str) -> str | None:
    """The spec hash in a compiled graph's header; None without one."""
    try:
        with open_regular(path, "r", encoding="utf-8") as fh:
            m = _HEADER.match(fh.readline())
    except (OSError, UnicodeDecodeError):
        return None
    return m.group(2) if m else None


def read_log(path: str) -> list[dict[str, Any]]:
    """The records of a compile log up to its first torn or damaged line (a
    kill, or an edit): the compilation then reads as unfinished, and `rbg
    compile` does it again (rubriclang.jsonl's `readable_prefix`)."""
    return list(itertools.takewhile(lambda r: isinstance(r, dict), readable_prefix(path)))


def status(out_dir: str, sid: str, shash: str | None = None) -> tuple[str, list[dict[str, Any]]]:
    """(compiled, failed, error or pending; the log's records) of `sid` in
    `out_dir`. With `shash`, a graph or log of another spec is pending."""
    records = read_log(log_path(out_dir, sid))
    recorded = records[0].get("spec_hash") if records and records[0].get("event") == "spec" else None
    end = records[-1] if records and records[-1].get("event") == "end" else None
    if shash is not None and recorded != shash:
        return PENDING, records
    if end is None:
        # Killed between writing the graph (atomically, and only once it was
        # accepted) and logging the end: the graph, stamped with its spec's
        # hash, is the outcome, so it is never compiled again.
        found = graph_spec_hash(graph_path(out_dir, sid))
        want = shash if shash is not None else recorded
        return (COMPILED if found is not None and found == want else PENDING), records
    if end.get("outcome") == COMPILED:
        found = graph_spec_hash(graph_path(out_dir, sid))
        return (COMPILED if found is not None and found == recorded else PENDING), records
    return (FAILED if end.get("outcome") == FAILED else ERROR), records


def recorded_fallback(fallback: str | None, out_dir: str) -> str | None:
    """The fallback policy as the compile log records it: `abstain`, or the
    fallback graph's path relative to the folder, which can then move with it."""
    if fallback is None or fallback == "abstain":
        return fallback
    return os.path.relpath(fallback, out_dir)


def recorded_policy(records: list[dict[str, Any]], out_dir: str) -> str | None:
    """The fallback policy of a compile log's records: `abstain`, a graph
    path from here, or None."""
    p = records[0].get("fallback") if records and records[0].get("event") == "spec" else None
    if p is None or p == "abstain":
        return p
    return os.path.normpath(os.path.join(out_dir, p))
