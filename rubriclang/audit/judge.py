"""What the audit needs to know about the judge: its type (read from the
graphs and the items, never declared), the fields its criteria read, and the
criteria that make some operators meaningless.

The judge is a set of graphs keyed by id, each item judged by its own: a
folder compiled per instance (`interp.graphset.GraphSet`, with its fallback
policy), or one graph, the set of one that judges every item.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence

import attrs

from rubriclang.canonical import canonical_json
from rubriclang.catalog import load_catalog
from rubriclang.catalog.types import JType
from rubriclang.checker.graph import CheckedGraph, Criterion
from rubriclang.interp.graphset import GraphSet, Resolved
from rubriclang.interp.items import Item
from rubriclang.interp.trace import graph_hash

# What an audit's judge is given as: one graph, or a folder of them.
JudgeSource = CheckedGraph | GraphSet


class JudgeError(Exception):
    """The judge cannot be audited on these items (and why)."""


def is_llm(criterion: Criterion) -> bool:
    return load_catalog().hooks(criterion.procedure).backend == "llm"


def has_trait(criterion: Criterion, trait: str) -> bool:
    """Whether the criterion's procedure has the trait (see `ProcedureImpl`)."""
    return trait in load_catalog().hooks(criterion.procedure).traits


def reads(criterion: Criterion) -> frozenset[str]:
    """The item fields a criterion's judgment depends on: LLM procedures read
    the input, the response and (with `with_reference`) the reference; local
    ones the field they name, or the response and the reference. Annotations
    and recorded values are keyed by item id: they read no text at all."""
    p = criterion.params
    if is_llm(criterion):
        return frozenset({"input", "response", *(("reference",) if p.get("with_reference") else ())})
    if has_trait(criterion, "reads_field"):  # a structure rule names every field it reads
        return frozenset(load_catalog().hooks(criterion.procedure).fields_named(p))
    if has_trait(criterion, "reads_reference"):
        return frozenset({"response", "reference"})
    return frozenset()


@attrs.frozen
class JudgeInfo:
    """The judge under audit, as the audit sees it: `graphs` by id (every
    graph of the set, one type), `routes` item id -> how it is judged, and
    `graph`, the graph whose readout the type was read from."""

    graph: CheckedGraph
    mode: str  # pointwise or pairwise
    type: str  # binary, ordinal, categorical or pairwise
    output: JType | None  # the pointwise readout's output
    positive: bool | None  # binary: the "good" verdict
    reads: frozenset[str]  # input, response, reference; `order` for pairwise judges
    graphs: dict[str, CheckedGraph] = attrs.Factory(dict)
    routes: dict[str, Resolved] = attrs.Factory(dict)

    @property
    def by_id(self) -> dict[str, CheckedGraph]:
        """Every graph of the judge by id: `graphs`, or `graph` alone for a
        judge made without them."""
        return self.graphs or {self.graph.name: self.graph}

    @property
    def criteria(self) -> tuple[Criterion, ...]:
        """The criteria of every graph of the set, graph by graph."""
        return tuple(c for g in self.graphs.values() for c in g.criteria)

    @property
    def llm_criteria(self) -> tuple[Criterion, ...]:
        return tuple(c for c in self.criteria if is_llm(c))

    def response_criteria(self, trait: str) -> tuple[str, ...]:
        """Criteria whose procedure has `trait` and that read the response."""
        return tuple(dict.fromkeys(c.name for c in self.criteria if has_trait(c, trait) and "response" in reads(c)))

    @property
    def side_by_side(self) -> tuple[str, ...]:
        """Criteria that see both candidates at once, in an order."""
        return tuple(dict.fromkeys(c.name for c in self.criteria if has_trait(c, "side_by_side")))

    @property
    def has_anchors(self) -> bool:
        return any(c.params.get("anchors") or c.params.get("descriptions") for c in self.llm_criteria)

    @property
    def hashes(self) -> dict[str, str]:
        """Graph id -> graph hash, sorted by id."""
        return {gid: graph_hash(self.graphs[gid]) for gid in sorted(self.graphs)}

    @property
    def hash(self) -> str:
        """The hash of the whole set (its graph ids and hashes); a set of one
        graph hashes as that graph does."""
        hashes = self.hashes
        if len(hashes) == 1:
            return next(iter(hashes.values()))
        return "sha256:" + hashlib.sha256(canonical_json(hashes).encode()).hexdigest()

    @property
    def judged(self) -> Mapping[str, str]:
        """Item id -> the id of the graph that judges it, for the items some
        graph judges: a view of `routes`, not a copy (one per item)."""
        return _Judged(self.routes)

    @property
    def graph_id(self) -> str:
        """The id of `graph`."""
        return next(gid for gid, g in self.graphs.items() if g is self.graph)

    def only(self, gid: str) -> JudgeInfo:
        """The judge as the set of its one graph `gid` (what a patch of that graph sees)."""
        g = self.graphs[gid]
        return attrs.evolve(
            self, graph=g, graphs={gid: g}, routes={i: r for i, r in self.routes.items() if r.gid == gid}
        )


class _Judged(Mapping):
    """`JudgeInfo.judged`: the routes' graph ids, where an item has one."""

    def __init__(self, routes: dict[str, Resolved]):
        self._routes = routes

    def __getitem__(self, item: str) -> str:
        gid = self._routes[item].gid
        if gid is None:
            raise KeyError(item)
        return gid

    def __iter__(self) -> Iterator[str]:
        return (item for item, r in self._routes.items() if r.gid is not None)

    def __len__(self) -> int:
        return sum(r.gid is not None for r in self._routes.values())


def judge_graphs(source: JudgeSource) -> dict[str, CheckedGraph]:
    """Every graph of the judge by id, the compiled ones (by id) before the
    fallbacks: one graph's by its name."""
    return source.by_id() if isinstance(source, GraphSet) else {source.name: source}


def routes(source: JudgeSource, items: Iterable[Item]) -> dict[str, Resolved]:
    """Item id -> how the judge judges it."""
    if isinstance(source, GraphSet):
        return {it.id: source.resolve(it) for it in items}
    one = Resolved(source.name, source)  # frozen: every item's, held once
    return {it.id: one for it in items}


def judge_info(source: JudgeSource, items: Sequence[Item], positive: bool = True) -> JudgeInfo:
    """The judge's type and reads; raises JudgeError when the items and the
    graphs' readouts do not fit together, or the graphs of a set do not
    answer in one type (naming the first that differs)."""
    modes = {it.mode for it in items}
    if len(modes) > 1:
        raise JudgeError("the items mix pointwise (`response`) and pairwise (`responses`) items; audit them separately")
    mode = modes.pop() if modes else "pointwise"
    graphs = judge_graphs(source)
    if not graphs:
        raise JudgeError(
            f"the folder `{source.folder if isinstance(source, GraphSet) else source.path}` has no graph that "
            "compiled: there is no judge to audit"
        )
    infos = {gid: _one(g, mode, positive) for gid, g in graphs.items()}
    first_id, first = next(iter(infos.items()))
    for gid, info in infos.items():
        if (info.type, info.output) != (first.type, first.output):
            raise JudgeError(
                f"the judge's graphs answer in different types: `{gid}` in {_kind(info)}, `{first_id}` in "
                f"{_kind(first)}; every graph of a folder (its fallbacks too) must answer in one type (audit "
                "them apart)"
            )
    fields = frozenset().union(*(i.reads for i in infos.values()))
    return attrs.evolve(first, reads=fields, graphs=graphs, routes=routes(source, items))


def _kind(info: JudgeInfo) -> str:
    return f"{info.type} ({info.output})" if info.output is not None else info.type


def _one(graph: CheckedGraph, mode: str, positive: bool) -> JudgeInfo:
    """One graph's judge info (its type, from its readout of `mode`)."""
    if mode not in graph.readouts:
        have = ", ".join(graph.readouts) or "none"
        raise JudgeError(
            f"the items are {mode}, but the judge `{graph.name}` ({graph.path}) has no `{mode}` readout (it has: "
            f"{have})"
        )
    fields = frozenset().union(*(reads(c) for c in graph.criteria))
    if mode == "pairwise":
        return JudgeInfo(graph, mode, "pairwise", None, None, fields | {"order"})
    output = graph.pointwise_readout.output
    kind = {"bool": "binary", "label": "categorical"}.get(output.kind, "ordinal")
    return JudgeInfo(graph, mode, kind, output, positive if kind == "binary" else None, fields)
