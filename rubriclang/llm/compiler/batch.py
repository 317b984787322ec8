"""Compiling many specs at once: one graph per task instance (docs/compiler.md).

A specs file is JSON Lines, one spec a line: the TOML spec's tables plus an
`id`. Each spec compiles into `OUT/<id>.rbg`, with its compile log beside it
(`OUT/<id>.compile.jsonl`). The graph's first line records the spec's hash
(`# rbg compile: spec ID sha256:HEX`) and the log's first record holds it
too, so a rerun skips every spec already compiled or failed within the
budget with that hash, and compiles again only the changed ones and those
a kill interrupted (their calls are then answered by the call cache).
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import os
import re
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import attrs

from rubriclang.canonical import canonical_json
from rubriclang.interp.compiled import (
    COMPILED,
    ERROR,
    FAILED,
    PENDING,
    graph_path,
    header,
    log_path,
    recorded_fallback,
    status,
)
from rubriclang.llm.compiler.log import CompileLog
from rubriclang.llm.compiler.spec import Spec, SpecError, resolve_fallback, spec_from_dict

if TYPE_CHECKING:
    from rubriclang.llm.client import ChatClient

# Ids become file names: no separators, no leading dot, nothing a shell or a
# file system would read differently.
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}\Z")


@attrs.frozen
class SpecLine:
    """One spec of a specs file: its id, where it was read, the validated
    spec and the hash of its JSON (without the id)."""

    id: str
    where: str
    spec: Spec
    hash: str
    # contract.fallback resolved from the specs file's folder (or `abstain`).
    fallback: str | None = None


def spec_hash(fields: dict[str, Any]) -> str:
    """The hash of a spec's tables, canonical JSON: key order and layout do not count."""
    return "sha256:" + hashlib.sha256(canonical_json(fields).encode()).hexdigest()


def check_id(value: Any, where: str) -> str:
    """A spec's (or item's) id as a file name stem; SpecError otherwise."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise SpecError(where, "`id` must be a string or an integer")
    text = str(value)
    if not _ID.match(text):
        raise SpecError(
            where,
            f"id `{text}` cannot name a file: use letters, digits, `.`, `_` and `-` (starting with a letter or digit, "
            "at most 200)",
        )
    return text


def read_specs(path: str) -> list[SpecLine]:
    """Every spec of a JSON Lines specs file, validated; SpecError at
    `path:line` (with the id) on the first bad one."""
    from rubriclang.jsonl import read_jsonl

    out: list[SpecLine] = []
    seen: dict[str, str] = {}
    for where, obj in read_jsonl(path, SpecError, what="spec line"):
        out.append(_spec_line(obj, where, seen, os.path.dirname(path)))
    if not out:
        raise SpecError(path, "the file holds no specs: write one JSON object per line")
    return out


def _spec_line(obj: Any, where: str, seen: dict[str, str], base: str = "") -> SpecLine:
    if not isinstance(obj, dict):
        raise SpecError(where, "a spec line must be a JSON object with an `id` and the spec's tables")
    if "id" not in obj:
        raise SpecError(where, "the spec has no `id`: give every spec a unique `id` (it names the graph file)")
    sid = check_id(obj["id"], where)
    named = f"{where}: spec `{sid}`"
    if sid in seen:
        raise SpecError(named, f"duplicate id (first at {seen[sid]}): ids must be unique within a file")
    seen[sid] = where
    fields = {k: v for k, v in obj.items() if k != "id"}
    try:
        spec = spec_from_dict(fields, named)
        fallback = resolve_fallback(spec.fallback, base, named)
    except SpecError as exc:
        raise SpecError(named, exc.message, exc.hint) from None
    return SpecLine(sid, where, spec, spec_hash(fields), fallback)


@attrs.frozen
class ItemFields:
    """Where a spec's parts are in an items file's rows (`--from-items`):
    field names, or dotted paths into nested objects."""

    rubric: str
    input: str = "input"
    id: str = "id"
    reference: str | None = None
    system_prompt: str | None = None
    scale: str = "ordinal[1, 5]"


def specs_from_items(path: str, fields: ItemFields) -> list[SpecLine]:
    """One spec per row of an items file whose rows carry their own rubric.
    Candidates in the rows are never read. A rubric that is an object (such
    as BiGGen-Bench's `score_rubric`) becomes its `key: value` lines."""
    from rubriclang.jsonl import read_jsonl

    out: list[SpecLine] = []
    seen: dict[str, str] = {}
    for where, row in read_jsonl(path, SpecError, what="item line"):
        if not isinstance(row, dict):
            raise SpecError(where, "an item must be a JSON object")
        sid = check_id(_field(row, fields.id, where, "--id-field"), where)
        named = f"{where}: item `{sid}`"
        rubric = _text(_field(row, fields.rubric, named, "--rubric-field"), named, fields.rubric)
        spec: dict[str, Any] = {
            "rubric": {"name": _name(sid), "text": rubric},
            "task": {"input": _text(_field(row, fields.input, named, "--input-field"), named, fields.input)},
            "contract": {"scale": fields.scale},
        }
        if fields.system_prompt:
            spec["task"]["system_prompt"] = _text(
                _field(row, fields.system_prompt, named, "--system-field"), named, fields.system_prompt
            )
        if fields.reference:
            spec["reference"] = {
                "text": _text(_field(row, fields.reference, named, "--reference-field"), named, fields.reference)
            }
        out.append(_spec_line({"id": sid, **spec}, where, seen))
    if not out:
        raise SpecError(path, "the file holds no items")
    return out


def _field(row: dict[str, Any], path: str, where: str, option: str) -> Any:
    value: Any = row
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            raise SpecError(where, f"the row has no `{path}` (named by {option})")
        value = value[part]
    return value


def _text(value: Any, where: str, field: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        return "\n".join(f"{k}: {v}" for k, v in value.items())
    raise SpecError(where, f"`{field}` must be a string (or an object of strings), got {type(value).__name__}")


def _name(sid: str) -> str:
    """A snake_case rubric name from an id: `planning-travel.0` -> `planning_travel_0`."""
    name = re.sub(r"[^a-z0-9]+", "_", sid.lower()).strip("_")
    return name if name[:1].isalpha() else "rubric_" + name


# -- compiling ------------------------------------------------------------------------


async def compile_many(
    specs: Iterable[SpecLine],
    client: ChatClient,
    out_dir: str,
    *,
    concurrency: int = 1,
    retry_failed: bool = False,
    progress: Callable[[str, str], None] | None = None,
    **options: Any,
) -> dict[str, str]:
    """Compile each spec that `out_dir` does not already hold (compiled, or
    failed within the budget unless `retry_failed`) with its hash; up to
    `concurrency` at once. `options` go to `compile_rubric`. Returns id ->
    what happened this time: skipped, compiled, failed or error (a call
    that failed for good: run again to resume)."""
    from rubriclang.llm.client import LLMError
    from rubriclang.llm.compiler.loop import compile_rubric

    os.makedirs(out_dir, exist_ok=True)
    sem = asyncio.Semaphore(max(1, concurrency))
    done: dict[str, str] = {}

    async def one(s: SpecLine) -> None:
        if not to_compile(out_dir, s, retry_failed):
            done[s.id] = "skipped"
            return
        async with sem:
            target = graph_path(out_dir, s.id)
            if os.path.exists(target):
                os.unlink(target)  # another spec's graph: never run in this one's place
            with CompileLog(log_path(out_dir, s.id), within=out_dir) as log:
                log.write(
                    "spec", id=s.id, spec_hash=s.hash, source=s.where, fallback=recorded_fallback(s.fallback, out_dir)
                )
                try:
                    result = await compile_rubric(
                        s.spec, client, log=log, out=target, header=header(s.id, s.hash), within=out_dir, **options
                    )
                except LLMError:
                    done[s.id] = ERROR
                    return
            done[s.id] = COMPILED if result.ok else FAILED
        if progress is not None:
            progress(s.id, done[s.id])

    await asyncio.gather(*(one(s) for s in specs))
    return done


def to_compile(out_dir: str, s: SpecLine, retry_failed: bool) -> bool:
    """Whether `compile_many` compiles `s` into `out_dir`: it is not there
    yet, or failed within the budget and `retry_failed`."""
    now, _ = status(out_dir, s.id, s.hash)
    return not (now == COMPILED or (now == FAILED and not retry_failed))


# -- the summary ----------------------------------------------------------------------

# The compiler's own findings (not checker diagnostics), by the start of their text.
_PROBLEMS = (
    ("the answer holds no program", "no-program"),
    ("the answer was cut off", "cut-off"),
    ("the answer is not valid JSON", "bad-json"),
    ("the JSON does not fit the IR schema", "bad-ir"),
)


def problem_code(problem: str) -> str:
    """A short name for a non-checker finding of an attempt: `no-program`,
    `cut-off`, `bad-json`, `bad-ir`, or `contract` (the program misses the spec)."""
    return next((code for start, code in _PROBLEMS if problem.startswith(start)), "contract")


def summarize(specs: Iterable[SpecLine], out_dir: str, this_run: dict[str, str] | None = None) -> dict[str, Any]:
    """The state of every spec in `out_dir`, read from the compile logs (so
    a resumed run counts what earlier runs did too): how many compiled,
    failed within the budget, stopped on an error or are still pending; the
    attempts each used; which findings needed repairs, most often first."""
    counts: collections.Counter[str] = collections.Counter()
    attempts: dict[str, collections.Counter[int]] = {COMPILED: collections.Counter(), FAILED: collections.Counter()}
    findings: collections.Counter[str] = collections.Counter()
    per_id = {}
    for s in specs:
        state, records = status(out_dir, s.id, s.hash)
        counts[state] += 1
        n = sum(1 for r in records if r.get("event") == "attempt")
        per_id[s.id] = {"status": state, "attempts": n}
        if state in attempts:
            attempts[state][n] += 1
        for r in records:
            if r.get("event") == "attempt" and not r.get("accepted"):
                codes = {d["code"] for d in r.get("diagnostics", ()) if d.get("severity") == "error"}
                codes |= {problem_code(p) for p in r.get("problems", ())}
                findings.update(codes)
    out = {
        "specs": sum(counts.values()),
        "compiled": counts[COMPILED],
        "failed": counts[FAILED],
        "error": counts[ERROR],
        "pending": counts[PENDING],
        "attempts": {k: {str(n): c for n, c in sorted(v.items())} for k, v in attempts.items()},
        "repaired_findings": [[code, n] for code, n in sorted(findings.items(), key=lambda kv: (-kv[1], kv[0]))],
        "by_id": per_id,
        "out_dir": out_dir,
    }
    if this_run is not None:
        out["this_run"] = dict(sorted(collections.Counter(this_run.values()).items()))
    return out


def summary_text(s: dict[str, Any]) -> str:
    rate = f" ({100 * s['compiled'] / s['specs']:.0f}%)" if s["specs"] else ""
    lines = [f"Compiled {s['compiled']} of {s['specs']} specs{rate} into {s['out_dir']}"]
    lines.append(
        f"  compiled {s['compiled']}   failed within the budget {s['failed']}   error {s['error']}   pending "
        f"{s['pending']}"
    )
    if "this_run" in s:
        lines.append("  this run: " + ", ".join(f"{k} {v}" for k, v in s["this_run"].items()))
    for state in (COMPILED, FAILED):
        if s["attempts"][state]:
            lines.append(
                f"  attempts used ({state}): " + ", ".join(f"{n}: {c}" for n, c in s["attempts"][state].items())
            )
    if s["repaired_findings"]:
        lines.append(
            "  findings that needed a repair (attempts): "
            + ", ".join(f"{c} {n}" for c, n in s["repaired_findings"][:10])
        )
    if s["error"] or s["pending"]:
        lines.append("  run the same command again to resume: compiled and failed specs are not compiled again")
    return "\n".join(lines)


def compiled_ids(out_dir: str) -> Iterator[str]:
    """The ids with a compile log in `out_dir`, sorted."""
    for name in sorted(os.listdir(out_dir)):
        if name.endswith(".compile.jsonl"):
            yield name[: -len(".compile.jsonl")]
