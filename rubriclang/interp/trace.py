"""Traces: one JSON object per item, append-only, flushed per item.

Serialization is canonical (sorted keys, fixed separators), so the same
judgments give byte-identical traces. The schema is documented in
docs/traces.md; `SCHEMA` changes whenever a field changes meaning.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Iterator

from rubriclang.catalog import load_catalog
from rubriclang.catalog.types import JType
from rubriclang.checker.graph import CheckedGraph, PairwiseReadout, PointwiseReadout
from rubriclang.interp.backend import Judgment
from rubriclang.interp.compose import Composition
from rubriclang.interp.items import Item, ItemError
from rubriclang.interp.readout import Decision
from rubriclang.jsonl import read_jsonl

SCHEMA = "rubriclang.trace/1"


def _plain(x: Any) -> Any:
    if isinstance(x, JType):
        return str(x)
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _explicit(params: dict, specs) -> dict:
    """The parameters that differ from their catalog defaults: writing a default
    out, or the catalog gaining a parameter with a default, changes no hash."""
    defaults = {p.name: p.default for p in specs if not p.required}
    return {k: v for k, v in params.items() if k not in defaults or v != defaults[k] or type(v) is not type(defaults[k])}


def _criterion_params(c) -> dict:
    """The criterion's explicit parameters, with its own prompt template's
    text (not just its path): editing the template changes the hashes."""
    cat = load_catalog()
    params = _plain(_explicit(c.params, cat.procedure_params(cat.procedures[c.procedure])))
    if c.prompt is not None:
        params["prompt"] = {"path": c.prompt.path, "text": c.prompt.text}
    return params


def _operator_params(o) -> dict:
    return _plain(_explicit(o.params, load_catalog().operators[o.operator].params))


def graph_json(graph: CheckedGraph) -> dict:
    """The graph's meaning as plain data: no layout, no comments, no spans, and
    no parameter that merely repeats its default."""

    def readout(r):
        if isinstance(r, PointwiseReadout):
            return {"output": str(r.output), "quantize": r.quantize, "ties": r.ties}
        assert isinstance(r, PairwiseReadout)
        return {"epsilon": r.epsilon, "resolve": r.resolve}

    return {
        "name": graph.name,
        "header": _plain(graph.header),
        "scale": str(graph.scale),
        "criteria": [
            {"name": c.name, "type": str(c.type), "procedure": c.procedure, "params": _criterion_params(c)}
            for c in graph.criteria
        ],
        "operators": [
            {"name": o.name, "operator": o.operator, "ports": _plain(o.ports), "params": _operator_params(o)}
            for o in graph.operators
        ],
        "sink": graph.sink,
        "readouts": {k: readout(v) for k, v in sorted(graph.readouts.items())},
    }


def graph_hash(graph: CheckedGraph) -> str:
    """A content hash of the graph's canonical form: reformatting or editing
    comments leaves it unchanged."""
    return "sha256:" + hashlib.sha256(canonical_json(graph_json(graph)).encode()).hexdigest()


def criterion_hashes(graph: CheckedGraph) -> dict[str, str]:
    """Each criterion's definition hash: replay uses it to refuse judgments
    recorded for a criterion that has since been redefined."""
    out = {}
    for c in graph.criteria:
        body = {"type": str(c.type), "procedure": c.procedure, "params": _criterion_params(c)}
        out[c.name] = hashlib.sha256(canonical_json(body).encode()).hexdigest()[:16]
    return out


def judgment_json(j: Judgment, procedure: str) -> dict:
    out = {
        "value": list(j.value) if isinstance(j.value, tuple) else j.value,
        "raw": j.raw,
        "error": j.error,
        "procedure": procedure,
        "backend": j.backend,
        "model": j.model,
        "prompt_hash": j.prompt_hash,
        "attempts": j.attempts,
        "latency_ms": j.latency_ms,
    }
    # Written only for LLM judgments, so traces of local ones stay as they were.
    if j.fingerprint is not None:
        out["profile"] = j.profile
        out["fingerprint"] = j.fingerprint
    return out


def judgment_from_json(d: dict) -> Judgment:
    return Judgment(
        d["value"],
        raw=d.get("raw"),
        error=d.get("error"),
        backend=d.get("backend", "local"),
        model=d.get("model"),
        prompt_hash=d.get("prompt_hash"),
        attempts=d.get("attempts", 1),
        latency_ms=d.get("latency_ms"),
        profile=d.get("profile"),
        fingerprint=d.get("fingerprint"),
    )


def trace_record(
    graph: CheckedGraph,
    ghash: str,
    chashes: dict[str, str],
    item: Item,
    mode: str,
    judgments: dict[str, dict[str, Judgment]],
    comp: Composition,
) -> dict:
    cids = item.candidate_ids
    procs = {c.name: c.procedure for c in graph.criteria}
    values = comp.values
    return {
        "schema": SCHEMA,
        "item": item.id,
        "graph": {"name": graph.name, "hash": ghash, "criteria": chashes},
        "mode": mode,
        "contract": {"scale": str(graph.scale)},
        "candidates": list(cids),
        "criteria": {
            name: {cid: judgment_json(j, procs[name]) for cid, j in per.items()}
            for name, per in judgments.items()
        },
        "criterion_errors": comp.errors,
        "operators": {
            o.name: {cid: values[o.name][cid] for cid in cids}
            for o in graph.operators
            if o.name in values
        },
        "sink": {cid: values[graph.sink][cid] for cid in cids} if graph.sink in values else None,
        "readout": comp.decision.to_json(),
        "gold": item.gold,
    }


class TraceWriter:
    """Appends records to a JSON Lines file, one flushed line per item."""

    def __init__(self, path: str):
        self.path = path
        self._fh = open(path, "a", encoding="utf-8")

    def write(self, record: dict) -> None:
        self._fh.write(canonical_json(record) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()


def read_traces(path: str) -> Iterator[tuple[int, dict]]:
    """(line, record) from a trace file; raises ItemError naming a bad line."""
    for where, rec in read_jsonl(path, ItemError, what="trace line"):
        if not isinstance(rec, dict) or rec.get("schema") != SCHEMA:
            raise ItemError(where, f"not a {SCHEMA} trace record")
        yield int(where.rsplit(":", 1)[1]), rec


def finished_items(path: str, ghash: str) -> set[str]:
    """Ids already traced in `path`, for resuming. A torn last line (from a
    killed run) is cut off; a record of another graph is an error."""
    if not os.path.exists(path):
        return set()
    with open(path, "rb") as fh:
        data = fh.read()
    if data and not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
        with open(path, "r+b") as fh:
            fh.truncate(keep)
    done = set()
    for n, rec in read_traces(path):
        if rec["graph"]["hash"] != ghash:
            raise ItemError(
                f"{path}:{n}",
                f"this trace was written by another version of the graph ({rec['graph']['hash'][:19]}...)",
                "write to a new --out file, or remove this one to start over",
            )
        done.add(rec["item"])
    return done


def decision_of(rec: dict) -> Decision:
    return Decision.from_json(rec["readout"])
