"""Traces: one JSON object per item, append-only, written per item.

Serialization is canonical (sorted keys, fixed separators), so the same
judgments give byte-identical traces. The schema is documented in
docs/traces.md; `SCHEMA` changes whenever a field changes meaning.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Container, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

import attrs

from rubriclang.canonical import canonical_json
from rubriclang.catalog import load_catalog
from rubriclang.catalog.model import ParamSpec
from rubriclang.catalog.types import JType
from rubriclang.checker.graph import CheckedGraph, Criterion, Operator, PairwiseReadout, PointwiseReadout, Readout
from rubriclang.errors import LocatedError
from rubriclang.interp.backend import Judgment
from rubriclang.interp.compose import Composition
from rubriclang.interp.items import Item, ItemError
from rubriclang.interp.readout import Decision
from rubriclang.items.shape import RENDER_VERSION
from rubriclang.jsonl import JsonLines
from rubriclang.safeio import atomic_file, file_kind

SCHEMA = "rubriclang.trace/1"


def _plain(x: Any) -> Any:
    if isinstance(x, JType):
        return str(x)
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def _explicit(params: dict[str, Any], specs: Iterable[ParamSpec]) -> dict[str, Any]:
    """The parameters that differ from their catalog defaults: writing a default
    out, or the catalog gaining a parameter with a default, changes no hash."""
    defaults = {p.name: p.default for p in specs if not p.required}
    return {
        k: v for k, v in params.items() if k not in defaults or v != defaults[k] or type(v) is not type(defaults[k])
    }


def _criterion_params(c: Criterion) -> dict[str, Any]:
    """The criterion's explicit parameters, with its own prompt template's
    text (not just its path): editing the template changes the hashes."""
    cat = load_catalog()
    params: dict[str, Any] = _plain(_explicit(c.params, cat.procedure_params(cat.procedures[c.procedure])))
    if c.prompt is not None:
        params["prompt"] = {"path": c.prompt.path, "text": c.prompt.text}
        if c.prompt.rewritten_from is not None:  # an audit's rewrite keeps the built-in reply schema
            params["prompt"]["rewritten_from"] = c.prompt.rewritten_from
    if c.item_fields:  # the declared structured fields it shows, and the version of their rendering
        params["item_fields"] = {"fields": [f.to_json() for f in c.item_fields], "render": RENDER_VERSION}
    return params


def _each(c: Criterion) -> dict[str, Any]:
    """A per-element criterion's `each` (only then: other criteria hash as they did)."""
    return {} if c.each is None else {"each": {"element": c.each[0], "field": c.each[1]}}


def _group(c: Criterion) -> dict[str, Any]:
    """A grouped criterion's group, its name and members in order (only
    then: ungrouped criteria hash as they did). The members' definitions
    reach a member's hash through `criterion_hashes`, since each shapes the
    one prompt that answers them all."""
    return {} if c.group is None else {"group": {"name": c.group.name, "members": list(c.group.members)}}


def _operator_params(o: Operator) -> dict[str, Any]:
    params: dict[str, Any] = _plain(_explicit(o.params, load_catalog().operators[o.operator].params))
    return params


def graph_json(graph: CheckedGraph) -> dict[str, Any]:
    """The graph's meaning as plain data: no layout, no comments, no spans, and
    no parameter that merely repeats its default."""

    def readout(r: Readout) -> dict[str, Any]:
        if isinstance(r, PointwiseReadout):
            return {"output": str(r.output), "quantize": r.quantize, "ties": r.ties}
        assert isinstance(r, PairwiseReadout)
        return {"epsilon": r.epsilon, "resolve": r.resolve}

    return {
        "name": graph.name,
        "header": _plain(graph.header),
        "scale": str(graph.scale),
        "criteria": [
            {
                "name": c.name,
                "type": str(c.type),
                "procedure": c.procedure,
                "params": _criterion_params(c),
                **_each(c),
                **_group(c),
            }
            for c in graph.criteria
        ],
        "operators": [
            {"name": o.name, "operator": o.operator, "ports": _plain(o.ports), "params": _operator_params(o)}
            for o in graph.operators
        ],
        "sink": graph.sink,
        "readouts": {k: readout(v) for k, v in sorted(graph.readouts.items())},
        # Only a declared shape is written: graphs without one hash as they did.
        **({"item": graph.item_shape.to_json()} if graph.item_shape is not None else {}),
    }


def graph_hash(graph: CheckedGraph) -> str:
    """A content hash of the graph's canonical form: reformatting or editing
    comments leaves it unchanged."""
    return "sha256:" + hashlib.sha256(canonical_json(graph_json(graph)).encode()).hexdigest()


def criterion_hashes(graph: CheckedGraph) -> dict[str, str]:
    """Each criterion's definition hash: replay uses it to refuse judgments
    recorded for a criterion that has since been redefined."""
    bodies = {
        c.name: {"type": str(c.type), "procedure": c.procedure, "params": _criterion_params(c), **_each(c)}
        for c in graph.criteria
    }
    out = {}
    for c in graph.criteria:
        body = bodies[c.name]
        if c.group is not None:  # what its peers ask shapes its prompt too
            body = {**body, **_group(c), "peers": [bodies[m] for m in c.group.members if m != c.name]}
        out[c.name] = hashlib.sha256(canonical_json(body).encode()).hexdigest()[:16]
    return out


def judgment_json(j: Judgment, procedure: str) -> dict[str, Any]:
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
    # Written only for per-element criteria: each element's key and judgment.
    if j.elements is not None:
        out["elements"] = [{"key": key, **_element_json(e)} for key, e in j.elements]
    return out


def _element_json(j: Judgment) -> dict[str, Any]:
    out = judgment_json(j, "")
    del out["procedure"]  # the criterion's, written once beside the elements
    return out


def judgment_from_json(d: dict[str, Any]) -> Judgment:
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
        elements=None if "elements" not in d else tuple((e["key"], judgment_from_json(e)) for e in d["elements"]),
    )


def item_hash(item: Item) -> str:
    """A digest of what a judgment of `item` can read: its input, its
    candidates (ids, texts and order), reference, own rubric, annotations
    and recorded values. Not its id (the key it is found by), its gold label
    (relabelling gold leaves the judgments valid), nor the `graph` it is
    routed to (the record's graph hash says which graph judged it)."""
    body = {
        "input": item.input,
        "candidates": [[cid, text] for cid, text in item.candidates.items()],
        "reference": item.reference,
        "rubric": item.rubric,
        "annotations": item.annotations,
        "recorded": item.recorded,
    }
    if item.fields:  # declared fields (a rubric's `item` shape): items without any hash as they did
        body["fields"] = item.fields
    return "sha256:" + hashlib.sha256(canonical_json(body).encode()).hexdigest()


class Tracer:
    """The trace records of one graph's items. What every record of the
    graph shares (its hashes, each criterion's procedure, the contract's
    scale, the operators' names) is worked out once, not per item."""

    __slots__ = ("_at", "_names", "_operators", "_procedures", "_scale", "criterion_hashes", "graph", "hash")

    def __init__(self, graph: CheckedGraph):
        self.graph = graph
        self.hash = graph_hash(graph)
        self.criterion_hashes = criterion_hashes(graph)
        self._procedures = {c.name: c.procedure for c in graph.criteria}
        self._scale = str(graph.scale)
        self._operators = tuple(o.name for o in graph.operators)
        # The last composition's node names, and where each operator and the
        # sink are in its rows (the same names for every item composed whole).
        self._names: tuple[str, ...] | None = None
        self._at: tuple[tuple[tuple[str, int], ...], int | None] = ((), None)

    def _positions(self, names: tuple[str, ...]) -> tuple[tuple[tuple[str, int], ...], int | None]:
        if names is not self._names:
            index = {n: i for i, n in enumerate(names)}
            ops = tuple((n, index[n]) for n in self._operators if n in index)
            self._names, self._at = names, (ops, index.get(self.graph.sink))
        return self._at

    def record(
        self, item: Item, mode: str, judgments: dict[str, dict[str, Judgment]], comp: Composition
    ) -> dict[str, Any]:
        """The record of `item`, judged (`judgments`) and composed (`comp`) in `mode`."""
        graph = self.graph
        cids = item.candidate_ids
        procs = self._procedures
        rows = comp.rows
        ops, sink = self._positions(comp.names)
        return {
            "schema": SCHEMA,
            "item": item.id,
            "graph": {"name": graph.name, "hash": self.hash, "criteria": self.criterion_hashes},
            "mode": mode,
            "contract": {"scale": self._scale},
            "candidates": list(cids),
            "criteria": {
                name: {cid: judgment_json(j, procs[name]) for cid, j in per.items()} for name, per in judgments.items()
            },
            "criterion_errors": comp.errors,
            "operators": {name: {cid: rows[cid][i] for cid in cids} for name, i in ops},
            "sink": None if sink is None else {cid: rows[cid][sink] for cid in cids},
            "readout": comp.decision.to_json(),
            "gold": item.gold,
            "item_hash": item_hash(item),
        }


class OutputError(LocatedError):
    """A trace file that cannot be written: a full disk, an I/O error, a
    file that changed under the run. What was written before stays."""


class TraceWriter:
    """Appends records to a trace file, one line per item, each written to
    the file (not a buffer) before the next.

    Given the `TraceFile` that `scan_trace` read, it first checks that the
    file has not changed since, then cuts a torn last line in place (never
    rewriting the file). A failed write raises OutputError at once."""

    def __init__(self, path: str, state: TraceFile | None = None):
        self.path = path
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0), 0o666)
        except OSError as exc:
            raise OutputError(path, f"cannot write it: {exc.strerror or exc}") from None
        if state is not None:
            self._continue(state)

    def _continue(self, state: TraceFile) -> None:
        size = os.fstat(self._fd).st_size
        if size != state.size:
            self.close()
            raise OutputError(
                self.path,
                f"the file changed while it was read ({state.size} bytes, now {size})",
                "is another run writing it?",
            )
        if state.end < size:
            try:
                os.ftruncate(self._fd, state.end)
            except OSError as exc:
                self.close()
                raise OutputError(self.path, f"cannot cut its torn last line: {exc.strerror or exc}") from None

    def write(self, record: dict[str, Any]) -> None:
        data = (canonical_json(record) + "\n").encode("utf-8")
        try:
            while data:
                data = data[os.write(self._fd, data) :]
        except OSError as exc:
            # A partial line may be left: resuming cuts it, as after a kill.
            raise OutputError(
                self.path,
                f"cannot write it: {exc.strerror or exc}",
                "fix the cause (free space?) and run the same command again: it resumes",
            ) from None

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


_STATUSES = frozenset({"ok", "abstain", "error"})
_MODES = {"pointwise": 1, "pairwise": 2}
_FIELDS = (("item", str), ("graph", dict), ("mode", str), ("candidates", list), ("criteria", dict), ("readout", dict))


def check_record(rec: Any, where: str) -> dict[str, Any]:
    """`rec` if it is a well-formed trace record, else ItemError at `where`.

    The one check every reader of traces (replay, eval, diff, resume) relies
    on, so none of them meets a missing field or a null where a judgment
    belongs: the fields they read are present and have their types."""
    # On the replay hot path: exact-class tests (JSON decodes to plain types).
    if rec.__class__ is not dict or rec.get("schema") != SCHEMA:
        raise ItemError(where, f"not a {SCHEMA} trace record")
    for name, kind in _FIELDS:
        if rec.get(name).__class__ is not kind:
            raise _bad(
                where,
                f"the trace record has no `{name}`"
                if name not in rec
                else f"`{name}` must be {_KINDS[kind]}, got {_kind(rec[name])}",
            )
    graph = rec["graph"]
    if graph.get("hash").__class__ is not str or graph.get("name").__class__ is not str:
        raise _bad(where, "`graph` needs a string `name` and `hash`")
    if graph.get("criteria").__class__ is not dict:
        raise _bad(where, "`graph.criteria` must be an object of criterion hashes")
    mode, cids = rec["mode"], rec["candidates"]
    want = _MODES.get(mode)
    if want is None:
        raise _bad(where, f"`mode` must be pointwise or pairwise, got `{mode}`")
    # One or two candidates: the first and the last are all of them.
    if (
        len(cids) != want
        or cids[0].__class__ is not str
        or cids[-1].__class__ is not str
        or (want == 2 and cids[0] == cids[1])
    ):
        raise _bad(where, f"`candidates` must be {want} distinct candidate id(s) for a {mode} record")
    for name, per in rec["criteria"].items():
        if per.__class__ is not dict:
            raise _bad(where, f"`criteria.{name}` must be an object of judgments by candidate, got {_kind(per)}")
        for cid in cids:
            j = per.get(cid)
            if j.__class__ is not dict or "value" not in j:
                raise _bad(
                    where, f"`criteria.{name}.{cid}` must be a judgment (an object with a `value`), got {_kind(j)}"
                )
            error = j.get("error")
            if error is not None and error.__class__ is not str:
                raise _bad(where, f"`criteria.{name}.{cid}.error` must be a string or null")
            if "elements" in j:
                _check_elements(j, f"criteria.{name}.{cid}", where)
    if rec["readout"].get("status") not in _STATUSES:
        raise _bad(where, "`readout.status` must be ok, abstain or error")
    if rec.get("item_hash", "").__class__ is not str:
        raise _bad(where, "`item_hash` must be a string")
    return rec


def _check_elements(j: dict[str, Any], at: str, where: str) -> None:
    """A per-element judgment's elements: each an object with a `key` and a
    `value`, and, unless it failed, its value the list of theirs (what replay
    composes is what each element's judgment recorded)."""
    elements = j["elements"]
    if elements.__class__ is not list or any(
        e.__class__ is not dict or "key" not in e or "value" not in e for e in elements
    ):
        raise _bad(where, f"`{at}.elements` must be a list of element judgments (objects with a `key` and a `value`)")
    if j.get("error") is None and j["value"] != [e["value"] for e in elements]:
        raise _bad(where, f"`{at}.value` is not the list of its elements' values")


def _bad(where: str, message: str) -> ItemError:
    return ItemError(where, message, "this line was not written by `rbg run`; remove it, or judge the item again")


_KINDS: dict[type, str] = {str: "a string", dict: "an object", list: "an array"}


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return _KINDS.get(type(value), type(value).__name__)


def _records(lines: JsonLines) -> Iterator[tuple[int, dict[str, Any]]]:
    seen: dict[str, int] = {}
    for where, rec in lines:
        check_record(rec, where)
        n = lines.count
        first = seen.setdefault(rec["item"], n)
        if first != n:
            raise ItemError(
                where,
                f"item `{rec['item']}` is traced twice (first at {lines.path}:{first})",
                "a trace holds one line per item: remove one of them",
            )
        yield n, rec


def read_traces(path: str, items: ItemsNow | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, record) from a trace file, each checked by `check_record`, no
    item twice; raises ItemError naming a bad line. With `items` (what the
    records are now scored against), once every record is read, an
    ItemError naming the first record whose item has changed since it was
    judged (`ItemsNow.refusal`), and every record without an `item_hash`
    counted in `items.unverified`."""
    stale: list[Stale] = []
    for n, rec in _records(JsonLines(path, ItemError, what="trace line")):
        if items is not None:
            items.check(rec, path, n, stale)
        yield n, rec
    if stale:
        assert items is not None
        raise items.refusal(path, stale)


class Stale(NamedTuple):
    """A trace record of an item whose content changed since it was judged."""

    line: int  # the record's line in the traces
    item: str
    at: str  # where the item is now (`ITEMS:line`)


STALE_SHOWN = 5  # stale records named in a refusal; the count covers them all


def stale_error(traces: str, stale: list[Stale], what: str, hint: str) -> ItemError:
    """The refusal of `stale` records of `traces`: at the first one's line,
    how many there are, the first few by item and line, and the way out."""
    shown = ", ".join(f"`{s.item}` ({traces}:{s.line}, now {s.at})" for s in stale[:STALE_SHOWN])
    more = f" and {len(stale) - STALE_SHOWN} more" if len(stale) > STALE_SHOWN else ""
    return ItemError(
        f"{traces}:{stale[0].line}",
        f"{len(stale)} trace record(s) judged other content than {what} holds now under the same id (input, "
        f"responses, reference, rubric, annotations or recorded values changed): {shown}{more}; their judgments do "
        "not apply to these items",
        hint,
    )


class ItemsNow:
    """The items that trace records are paired with by id (to be scored,
    replayed or resumed), with their `item_hash`: the one check that a
    record's judgments are of the item as it is now. Records of items not
    here are not checked (they are not scored); records written before
    traces carried `item_hash` cannot be, and are kept in `unverified`
    (traces path -> their lines) for `warnings`."""

    def __init__(self, items: Iterable[Item] | Mapping[str, Item], path: str):
        self.path = path
        # A mapping (by id) is kept and each item hashed when its record is
        # checked: one that reads items on demand then holds no hash per item.
        self._items: Mapping[str, Item] | None = None
        self._now: dict[str, tuple[str, int]] = {}
        if isinstance(items, Mapping):
            self._items = items
        else:
            self._now = {it.id: (item_hash(it), it.line) for it in items}
        self.unverified: dict[str, set[int]] = {}  # traces path -> lines (a file may be read more than once)

    def check(self, rec: dict[str, Any], traces: str, line: int, stale: list[Stale]) -> None:
        """Add `rec` (at `traces:line`) to `stale` when its item changed."""
        if self._items is not None:
            it = self._items.get(rec["item"])
            now = None if it is None else (item_hash(it), it.line)
        else:
            now = self._now.get(rec["item"])
        if now is None:
            return
        judged = rec.get("item_hash")
        if judged is None:
            self.unverified.setdefault(traces, set()).add(line)
        elif judged != now[0]:
            stale.append(Stale(line, rec["item"], f"{self.path}:{now[1]}" if now[1] else self.path))

    def refusal(self, traces: str, stale: list[Stale]) -> ItemError:
        return stale_error(
            traces,
            stale,
            f"`{self.path}`",
            "judge the changed items again (`rbg run GRAPH ITEMS --out TRACES --rejudge-changed` replaces their "
            "records), or give the items the traces were written from",
        )

    def warnings(self) -> list[str]:
        """One line per trace file with records that could not be checked."""
        return [
            unverified_warning(traces, len(lines), min(lines), self.path)
            for traces, lines in sorted(self.unverified.items())
        ]


def unverified_warning(traces: str, n: int, first: int, items_path: str) -> str:
    """The warning for `n` records of `traces` without an `item_hash`, the first at line `first`."""
    return (
        f"{n} record(s) of `{traces}` (the first at line {first}) carry no `item_hash` (written by an older "
        f"rubriclang): they cannot be checked against `{items_path}`; judge them again to check them"
    )


# Records are canonical JSON with sorted keys: every one starts like this.
RECORD_START = b'{"candidates":'


@attrs.frozen
class TraceFile:
    """What an existing --out holds, for resuming: the graph hash of its
    records, each traced item's readout status (file order) and line, and
    where complete lines end (`end`; `size` is the file's size, more when a
    kill tore the last line)."""

    path: str
    exists: bool
    graph: str | None = None  # the records' graph hash; None when there are none
    statuses: dict[str, str] = attrs.field(factory=dict)
    lines: dict[str, int] = attrs.field(factory=dict)  # item -> line number
    end: int = 0
    size: int = 0
    # criterion -> judge fingerprint -> (first line, profile, model) of the
    # LLM judgments in the file, so a resumed run can refuse another judge.
    judges: dict[str, dict[str, tuple[int, str | None, str | None]]] = attrs.field(factory=dict)
    # item -> the `item_hash` of its record (None in records written before it was recorded)
    hashes: dict[str, str | None] = attrs.field(factory=dict)

    def stale(self, item: Item, items_path: str) -> Stale | None:
        """The record of `item` when it judged other content than `item` has
        now (not when it has no `item_hash`: `unverified` counts those)."""
        judged = self.hashes.get(item.id)
        if judged is None or judged == item_hash(item):
            return None
        return Stale(self.lines[item.id], item.id, f"{items_path}:{item.line}" if item.line else items_path)

    def changed(self, items: Iterable[Item], items_path: str) -> list[Stale]:
        """The records of `items` that judged other content than they have now, in file order."""
        return sorted(s for it in items if (s := self.stale(it, items_path)) is not None)

    def warnings(self, items_path: str) -> list[str]:
        """The warning for the records without an `item_hash`, which resuming cannot check (none or one)."""
        lines = [self.lines[i] for i, h in self.hashes.items() if h is None]
        return [unverified_warning(self.path, len(lines), min(lines), items_path)] if lines else []

    def other_judges(
        self, expected: dict[str, str], skip: Container[int] = ()
    ) -> list[tuple[str, int, str | None, str | None]]:
        """(criterion, line, profile, model) of each judge in the file that
        is not the one this run would ask (`expected`: criterion ->
        fingerprint), outside the items in `skip` (those being re-judged)."""
        out = []
        for crit, seen in sorted(self.judges.items()):
            for fp, (line, profile, model) in sorted(seen.items(), key=lambda kv: kv[1][0]):
                if crit in expected and fp != expected[crit] and line not in skip:
                    out.append((crit, line, profile, model))
        return out

    def counts(self, skip: Container[str] = ()) -> dict[str, int]:
        """ok / abstain / error among the traced items, less `skip`."""
        out = dict.fromkeys(sorted(_STATUSES), 0)
        for item, status in self.statuses.items():
            if item not in skip:
                out[status] += 1
        return out

    def errored(self) -> set[str]:
        """The items whose readout is an error."""
        return {item for item, status in self.statuses.items() if status == "error"}


def scan_trace(path: str, ghash: str | frozenset[str]) -> TraceFile:
    """Read an existing trace file (streaming, nothing changed) before a run
    appends to it: every line must be a trace record that the run may
    continue (`_resumable`), no item twice, and a torn last line must look
    like the start of a record. Raises ItemError naming the file (and line)
    otherwise, and for an --out that is not a regular file, or whose folder
    is missing. `ghash` is the graph's hash, or for a folder of graphs the
    set of hashes its records may have."""
    if not usable_out(path):
        return TraceFile(path, exists=False)
    lines = JsonLines(path, ItemError, what="trace line", keep_torn=True)
    statuses: dict[str, str] = {}
    numbers: dict[str, int] = {}
    judges: dict[str, dict[str, tuple[int, str | None, str | None]]] = {}
    hashes: dict[str, str | None] = {}
    for n, rec in _records(lines):
        _resumable(rec, f"{path}:{n}", ghash)
        statuses[rec["item"]] = rec["readout"]["status"]
        numbers[rec["item"]] = n
        hashes[rec["item"]] = rec.get("item_hash")
        for crit, per in rec["criteria"].items():
            for j in per.values():
                fp = j.get("fingerprint")
                if fp is not None and fp not in judges.get(crit, {}):
                    judges.setdefault(crit, {})[fp] = (n, j.get("profile"), j.get("model"))
    torn = lines.torn
    if torn and not torn.isspace() and not (torn.startswith(RECORD_START) or RECORD_START.startswith(torn)):
        raise ItemError(
            f"{path}:{lines.count + 1}",
            "the last line is not a trace record, nor the start of one",
            "is this a trace file? give --out a new file",
        )
    return TraceFile(
        path,
        True,
        (ghash if isinstance(ghash, str) else None) if statuses else None,
        statuses,
        numbers,
        lines.end,
        lines.end + len(torn),
        judges,
        hashes,
    )


def _resumable(rec: dict[str, Any], where: str, ghash: str | frozenset[str]) -> None:
    """Raise ItemError at `where` unless a run of the graph `ghash` (or of a
    set of graphs) may append to the file holding `rec`."""
    if rec["graph"]["hash"] != ghash if isinstance(ghash, str) else rec["graph"]["hash"] not in ghash:
        raise ItemError(
            where,
            f"this trace was written by another version of the graph ({rec['graph']['hash'][:19]}...)",
            "write to a new --out file, or remove this one to start over",
        )


def usable_out(path: str) -> bool:
    """Whether --out exists; ItemError when it cannot be a trace file: not a
    regular file (a pipe, a device, a folder, this command's own stdout), not
    readable and writable, or a new file in a missing or read-only folder."""
    if not os.path.lexists(path):
        folder = os.path.dirname(path) or "."
        if not os.path.isdir(folder):
            problem = "is not a folder" if os.path.exists(folder) else "does not exist"
            raise ItemError(path, f"the folder `{folder}` {problem}", "create it first, or give another --out")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise ItemError(path, f"the folder `{folder}` is not writable", "give another --out")
        return False
    try:
        st = os.stat(path)
    except OSError as exc:
        raise ItemError(path, f"cannot read it: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ItemError(
            path,
            f"--out must be a regular file, and this is {file_kind(st.st_mode)}",
            "traces are read back to resume: give a file path",
        )
    if not os.access(path, os.R_OK | os.W_OK):
        raise ItemError(path, "the file is not readable and writable", "give another --out, or change its permissions")
    for fd, name in ((1, "standard output"), (2, "standard error")):
        try:
            other = os.fstat(fd)
        except OSError:
            continue
        if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
            raise ItemError(path, f"--out is this command's {name}", "give --out a file of its own")
    return True


def without_items(state: TraceFile, items: set[str]) -> TraceFile:
    """Rewrite the trace file without the lines of `items` (nor a torn last
    line), atomically: a temporary file in the same folder with the file's
    permissions, fsynced, renamed over it, the folder fsynced. A kill at
    any moment leaves the old file or the new one, whole (`safeio.atomic_file`).
    Returns what the new file holds."""
    drop = {state.lines[i] for i in items}
    target = os.path.realpath(state.path)
    statuses: dict[str, str] = {}
    numbers: dict[str, int] = {}
    by_line = {n: item for item, n in state.lines.items()}
    try:
        with open(target, "rb") as src:
            st = os.fstat(src.fileno())
            if st.st_size != state.size:
                raise OutputError(
                    state.path,
                    f"the file changed while it was read ({state.size} bytes, now {st.st_size})",
                    "is another run writing it?",
                )
            with atomic_file(target) as out:
                kept = 0
                for n, raw in enumerate(iter(lambda: src.readline(), b""), 1):
                    if src.tell() > state.end:
                        break  # the torn last line
                    if n in drop:
                        continue
                    out.write(raw)
                    kept += 1
                    if n in by_line:
                        statuses[by_line[n]] = state.statuses[by_line[n]]
                        numbers[by_line[n]] = kept
                end = out.tell()
    except OSError as exc:
        raise OutputError(
            state.path, f"cannot rewrite it: {exc.strerror or exc}", "nothing was changed; fix the cause and run again"
        ) from None
    hashes = {i: state.hashes.get(i) for i in statuses}
    return TraceFile(state.path, True, state.graph if statuses else None, statuses, numbers, end, end, hashes=hashes)


def decision_of(rec: dict[str, Any]) -> Decision:
    return Decision.from_json(rec["readout"])
