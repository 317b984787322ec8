"""A graph's operators compiled into one Python function, for speed.

The checked graph is turned into straight-line code: one assignment per
operator, in the evaluation order, each from the plan template of the
operator's catalog entry. The generated source never contains text from the
`.rbg` file: variables are `v0, v1, ...`, and every parameter (criterion
names included) is a constant bound by name in the function's namespace
(the plain literals among them compiled in as AST constants), so a rubric
remains data. Operators without a template (or whose template
declines, say for absent inputs) call their entry's function, with the ports
it expects; tests check that the compiled plan and the functions agree on
random graphs and judgments.
"""

from __future__ import annotations

import ast
import functools
from types import CodeType
from typing import Any, Protocol

from rubriclang.catalog import load_catalog
from rubriclang.catalog.entries import PlanSite
from rubriclang.catalog.model import OperatorSpec
from rubriclang.checker.graph import CheckedGraph
from rubriclang.interp.backend import Judgment
from rubriclang.interp.domain import canonical_test


def compile_plan(graph: CheckedGraph) -> Plan:
    """A function from the criteria's values (in `graph.criteria` order) to
    the operators' values (in `graph.operators` order), for one candidate."""
    body, ns = _operators(graph)
    args = ", ".join(f"v{i}" for i in range(len(graph.criteria)))
    outs = _tuple(range(len(graph.criteria), len(graph.criteria) + len(graph.operators)))
    plan: Plan = _define(graph, "_plan", args, [*("    " + line for line in body), f"    return {outs}"], ns)
    return plan


def compile_compose(graph: CheckedGraph, one: list[str], tail: list[str], constants: dict[str, Any]) -> Any:
    """A function `(mode, cids, judgments)` that builds each candidate's
    row (every node's value: criteria, then operators, in graph order, as
    `(*values, *compile_plan(graph)(*values))` gives it) into `rows`, a dict
    candidate -> row, then runs the caller's `tail`: lines of the function
    (indented four spaces) that return its result from `mode, cids, rows`
    and the caller's `constants`. For a single candidate, the caller's `one`
    runs first: lines (indented eight spaces) that may return early, from
    `mode, cid, row` (that candidate and its row) and `x` (its sink's value).

    It reads each criterion's judgment (`judgments[criterion][candidate]`);
    as soon as one has no value (it failed, or is absent) or one that is not
    already canonical for its type, it returns `general(mode, cids, judgments)` instead
    (`general` is one of `constants`): the general path, which coerces the
    value or explains why it fails."""
    row, values, sink, ns = _candidate(graph, constants)
    # One candidate (pointwise) is the common case: straight-line code, no loop.
    body = [
        "    if len(cids) == 1:",
        "        cid = cids[0]",
        *("        " + line for line in row),
        f"        row = {values}",
        *([f"        x = {sink}", *one] if one else []),
        "        rows = {cid: row}",
        "    else:",
        "        rows = {}",
        "        for cid in cids:",
        *("            " + line for line in row),
        f"            rows[cid] = {values}",
        *tail,
    ]
    return _define(graph, "_compose", "mode, cids, judgments", body, ns)


def compile_decide(graph: CheckedGraph, one: list[str], constants: dict[str, Any]) -> Any:
    """A function `(mode, cids, judgments)` that returns only the decision,
    keeping no node's value: for a single candidate, the caller's `one`
    (lines indented eight spaces that return the decision from `mode` and
    `x`, the sink's value, or fall through), then `point[mode](x)` when
    `mode` is one of `point`'s; `general(mode, cids, judgments)` (both are
    `constants`) for anything else, and where `compile_compose`'s function
    would take its general path."""
    row, _values, sink, ns = _candidate(graph, constants)
    body = [
        "    if len(cids) == 1:",
        *("        " + line for line in ["cid = cids[0]", *row, f"x = {sink}"]),
        *one,
        "        if mode in point:",
        "            return point[mode](x)",
        "    return general(mode, cids, judgments)",
    ]
    return _define(graph, "_decide", "mode, cids, judgments", body, ns)


def _candidate(graph: CheckedGraph, constants: dict[str, Any]) -> tuple[list[str], str, str, dict[str, Any]]:
    """One candidate's lines (unindented): each criterion's value read and
    tested as `v0, v1, ...` (to `return general(mode, cids, judgments)`
    when one is not plainly usable), then each operator's; the tuple of
    every node's value and the sink's variable, as source; the namespace."""
    # Judgments are named tuples: reading fields by position is about half
    # the cost of reading them by name, on the replay hot path. A judgment
    # with an error has no value (`Judgment`), so the value's test suffices:
    # None is never canonical.
    value = Judgment._fields.index("value")
    row, ns = [], dict(constants)
    for i, c in enumerate(graph.criteria):
        test, bounds = canonical_test(c.type, f"v{i}", f"c{i}_")
        ns.update(bounds)
        ns[f"c{i}_name"] = c.name
        row += [
            f"v{i} = judgments[c{i}_name][cid][{value}]",
            f"if not ({test}):",
            "    return general(mode, cids, judgments)",
        ]
    ops, ops_ns = _operators(graph, present=True)
    ns.update(ops_ns)
    row += ops
    values = _tuple(range(len(graph.criteria) + len(graph.operators)))
    sink = ([c.name for c in graph.criteria] + [o.name for o in graph.operators]).index(graph.sink)
    return row, values, f"v{sink}", ns


def _operators(graph: CheckedGraph, present: bool = False) -> tuple[list[str], dict[str, Any]]:
    """One assignment per operator (unindented), reading the criteria as `v0, v1, ...`,
    and the constants those assignments name. `present`: every criterion's
    value is known to be there, so templates see its type as not optional
    (and may take their fast form for inputs that are absent only in general)."""
    catalog = load_catalog()
    nodes = graph.nodes
    seen = {c.name: c.type.as_optional(False) if present else c.type for c in graph.criteria}
    var = {c.name: f"v{i}" for i, c in enumerate(graph.criteria)}
    ns: dict[str, Any] = {}
    body = []
    for j, op in enumerate(graph.operators):
        out = f"v{len(graph.criteria) + j}"
        k = f"k{j}_"
        spec = catalog.operators[op.operator]
        slots = [s for slots in op.ports.values() for s in slots]
        site = PlanSite(
            tuple(var[s] for s in slots), tuple(seen[s] if s in seen else nodes[s].type for s in slots), op.params, k
        )
        # A list input (`list[T]`) is read by the operator's function, element by element.
        emitted = spec.plan(site) if spec.plan and not any(t.many for t in site.types) else None
        if emitted is not None:
            expr, constants = emitted
            stray = [name for name in constants if not name.startswith(k)]
            if stray:  # a catalog bug: applications would share (and clobber) names
                raise ValueError(f"the plan template of `{op.operator}` binds {stray}, not prefixed with {k!r}")
            ns.update(constants)
        else:
            ports = ", ".join(
                f"{p!r}: [{', '.join(var[s] for s in op.ports[p])}]"
                if _variadic(spec, p)
                else f"{p!r}: {var[op.ports[p][0]]}"
                for p in op.ports
            )
            ns[k + "fn"] = spec.function
            ns[k + "params"] = op.params
            ns[k + "types"] = {p: nodes[s[0]].type for p, s in op.ports.items() if len(s) == 1}
            expr = f"{k}fn({{{ports}}}, {k}params, {k}types)"
        body.append(f"{out} = {expr}")
        var[op.name] = out
    return body, ns


def _tuple(indices: range) -> str:
    names = ", ".join(f"v{i}" for i in indices)
    return f"({names}{',' if names else ''})"


def _define(graph: CheckedGraph, name: str, args: str, body: list[str], ns: dict[str, Any]) -> Any:
    """The function `name` of `body`, compiled in `ns`, with its source (where
    constants are read by name) as `.source`."""
    source = f"def {name}({args}):\n" + "\n".join(body) + "\n"
    literals = tuple((k, type(v), repr(v), v) for k, v in ns.items() if type(v) in _LITERAL)
    exec(_compiled(f"<plan of {graph.name}>", source, literals), ns)  # catalog templates only
    fn = ns[name]
    fn.source = source
    return fn


# The same source and literals (a run's or an audit's many interpreters of
# one graph) compile once: the fold costs more than the compile. A literal
# is keyed by its type and repr too, so 0.0 and -0.0, or 1 and True, differ.
@functools.lru_cache(maxsize=256)
def _compiled(filename: str, source: str, literals: tuple[tuple[str, type, str, Any], ...]) -> CodeType:
    tree = _Fold({k: v for k, _, _, v in literals}).visit(ast.parse(source))
    return compile(tree, filename, "exec")


# Values compiled into the code as constants rather than read from the
# namespace: a constant load costs less than a global one, on the hot path.
_LITERAL = (int, float, str, bool, type(None))


class _Fold(ast.NodeTransformer):
    """Each name the function reads and never binds whose value in `ns` is
    a plain literal, made that constant (an AST node holding the value, so
    no text is parsed: a rubric remains data)."""

    def __init__(self, ns: dict[str, Any]):
        self.ns = ns
        self.bound: set[str] = set()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        self.bound = {a.arg for a in node.args.args} | {
            n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
        }
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        value = self.ns.get(node.id, self)
        if type(value) in _LITERAL and isinstance(node.ctx, ast.Load) and node.id not in self.bound:
            return ast.copy_location(ast.Constant(value), node)
        return node


def _variadic(spec: OperatorSpec, port: str) -> bool:
    p = spec.port(port)
    assert p is not None, (spec.name, port)  # the checker accepted only the operator's ports
    return bool(p.variadic)


class Plan(Protocol):
    """The compiled function, with its source (for tests' messages)."""

    source: str

    def __call__(self, *values: Any) -> tuple[Any, ...]: ...
