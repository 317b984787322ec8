"""The checker: AST -> checked graph, reporting every error it can find.

Passes, in order: declarations (header, contract, sink, readouts), names,
criteria, operator ports and routes, cycles, types (in topological order, so
each operator sees its inputs' inferred types), reachability, contract and
readouts. An error in one node never stops the others from being checked, and
a node whose inputs failed is not checked again (no cascades).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import attrs

from rubriclang.catalog import Catalog, JType, load_catalog
from rubriclang.catalog.model import OperatorSpec, ProcedureSpec
from rubriclang.catalog.rules import RuleInput
from rubriclang.catalog.types import fmt_num
from rubriclang.checker.graph import (
    CheckedGraph,
    Criterion,
    Operator,
    PairwiseReadout,
    PointwiseReadout,
    Readout,
)
from rubriclang.checker.prompts import PromptChecker
from rubriclang.checker.values import check_block, suggest, suggest_qualified, type_from_ast
from rubriclang.diagnostics import Diagnostic, sorted_diagnostics
from rubriclang.diagnostics.codes import make
from rubriclang.diagnostics.span import Span
from rubriclang.syntax import ast

_SNAKE = re.compile(r"[a-z][a-z0-9_]*\Z")


@attrs.frozen
class CriterionCheck:
    """What a procedure's `check` hook sees of one criterion, and how it reports."""

    checker: _Checker
    decl: ast.CriterionDecl
    type: JType
    values: dict[str, Any]
    failed: set[str]
    prompts: PromptChecker

    def err(self, code: str, span: Span, message: str, notes: tuple[str, ...] = ()) -> None:
        self.checker.err(code, span, message, notes)

    def param_span(self, name: str) -> Span:
        """The span of the parameter's value (of the procedure when not given)."""
        return self.checker._param_span(self.decl, name)

    def map_keys(self, name: str) -> tuple[ast.String | ast.Number | ast.Bool | ast.Ident, ...]:
        """The key nodes of the map given for parameter `name`."""
        return self.checker._map_keys(self.decl, name)


@attrs.frozen
class CheckResult:
    """The checked graph (None when there are errors) and every diagnostic."""

    graph: CheckedGraph | None
    diagnostics: tuple[Diagnostic, ...]
    # The text of every other file the check read (prompt templates), for excerpts.
    sources: dict[str, str] = attrs.field(factory=dict)

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.is_error)


def check(module: ast.Module, catalog: Catalog | None = None) -> CheckResult:
    """Check a parsed module against the catalog."""
    return _Checker(module, catalog).run()


_Spec = TypeVar("_Spec", OperatorSpec, ProcedureSpec)


def _file_span(path: str) -> Span:
    return Span(path, 1, 1, 1, 1)


class _Checker:
    def __init__(self, module: ast.Module, catalog: Catalog | None):
        self.m = module
        # The standard catalog first: installed plugins are only looked up
        # (which costs a scan of every installed package's metadata) when the
        # file names an operator or procedure the standard catalog lacks.
        self.cat = catalog or load_catalog(plugins=False)
        self._with_plugins = catalog is not None
        self.diags: list[Diagnostic] = []
        self.decls: dict[str, ast.CriterionDecl | ast.NodeDecl] = {}
        self.types: dict[str, JType] = {}
        self.criteria: dict[str, Criterion] = {}
        self.op_params: dict[str, dict[str, Any]] = {}
        self.op_failed: dict[str, set[str]] = {}
        self.edges: dict[str, list[str]] = {}  # node -> nodes it reads
        self.broken: set[str] = set()  # nodes whose type could not be inferred
        self.sources: dict[str, str] = {}  # template files read

    def _lookup(self, find: Callable[[Catalog], _Spec | None]) -> _Spec | None:
        spec = find(self.cat)
        if spec is None and not self._with_plugins:
            self.cat = load_catalog(plugins=True)
            self._with_plugins = True
            spec = find(self.cat)
        return spec

    def err(self, code: str, span: Span, message: str, notes: Sequence[str] = ()) -> None:
        self.diags.append(make(code, span, message, notes))

    # -- driver ---------------------------------------------------------------

    def run(self) -> CheckResult:
        header, contract, sinks, readouts = self._declarations()
        header_values = self._header(header)
        scale = self._contract(contract)
        self._names()
        for decl in self.decls.values():
            if isinstance(decl, ast.CriterionDecl):
                self._criterion(decl)
            else:
                self._node_shape(decl)
        order = self._order()
        for name in order:
            decl = self.decls[name]
            if isinstance(decl, ast.NodeDecl):
                self._node_type(decl)
        sink = self._sink(sinks)
        if sink is not None:
            self._reachability(sink)
        readout_values = self._readouts(readouts, sink, scale)
        self._style()
        diags = tuple(sorted_diagnostics(self.diags))
        if any(d.is_error for d in diags):
            return CheckResult(None, diags, self.sources)
        # Without errors, the header, the contract and the sink are all there.
        assert header is not None and scale is not None and sink is not None
        operators = tuple(self._operator(d) for n in order if isinstance(d := self.decls[n], ast.NodeDecl))
        graph = CheckedGraph(
            name=header.name.value,
            header=header_values,
            scale=scale,
            criteria=tuple(self.criteria.values()),
            operators=operators,
            sink=sink,
            readouts=readout_values,
            path=self.m.path,
        )
        return CheckResult(graph, diags, self.sources)

    # -- declarations ---------------------------------------------------------

    def _declarations(
        self,
    ) -> tuple[ast.RubricDecl | None, ast.ContractDecl | None, list[ast.SinkDecl], list[ast.ReadoutDecl]]:
        header: ast.RubricDecl | None = None
        contract: ast.ContractDecl | None = None
        sinks: list[ast.SinkDecl] = []
        readouts: list[ast.ReadoutDecl] = []
        for d in self.m.decls:
            if isinstance(d, ast.RubricDecl):
                if header is None:
                    header = d
                else:
                    self.err("RB401", d.span, "a second `rubric` header", (f"the first is at {header.span}",))
            elif isinstance(d, ast.ContractDecl):
                if contract is None:
                    contract = d
                else:
                    self.err("RB402", d.span, "a second `contract`", (f"the first is at {contract.span}",))
            elif isinstance(d, ast.SinkDecl):
                sinks.append(d)
            elif isinstance(d, ast.ReadoutDecl):
                readouts.append(d)
            else:
                self.decls.setdefault(d.name.value, d)
        if header is None:
            self.err(
                "RB401",
                _file_span(self.m.path),
                "the file has no `rubric` header",
                ("start the file with `rubric NAME { version = 1 }`",),
            )
        if contract is None:
            self.err(
                "RB402",
                _file_span(self.m.path),
                "the file has no `contract`",
                ("add e.g. `contract { scale = score[1, 5] }`",),
            )
        return header, contract, sinks, readouts

    def _header(self, header: ast.RubricDecl | None) -> dict[str, Any]:
        if header is None:
            return {}
        values, _ = check_block(header.block, self.cat.blocks["rubric"].params, self.diags, "the `rubric` header", header.name.span)
        return {k: v for k, v in values.items() if v is not None}

    def _contract(self, contract: ast.ContractDecl | None) -> JType | None:
        if contract is None:
            return None
        values, _ = check_block(contract.block, self.cat.blocks["contract"].params, self.diags, "the `contract`", contract.span)
        scale = values.get("scale")
        if scale is not None and scale.optional:
            param = next(p for p in contract.block.params if p.name.value == "scale")
            self.err("RB203", param.value.span, "the contract's `scale` cannot be optional", ("an absent sink already reads out as abstain; drop the `?`",))
            return None
        return scale

    def _names(self) -> None:
        seen: dict[str, ast.Name] = {}
        for d in self.m.decls:
            if not isinstance(d, (ast.CriterionDecl, ast.NodeDecl)):
                continue
            name = d.name
            if name.value in seen:
                self.err("RB102", name.span, f"`{name.value}` is already declared", (f"first declared at {seen[name.value].span}",))
            else:
                seen[name.value] = name

    # -- criteria -------------------------------------------------------------

    def _criterion(self, d: ast.CriterionDecl) -> None:
        name = d.name.value
        declared = type_from_ast(d.type, self.diags)
        proc = self._lookup(lambda c: c.procedures.get(d.procedure.text))
        if proc is None:
            self.err(
                "RB104",
                d.procedure.span,
                f"unknown procedure `{d.procedure.text}`",
                suggest_qualified(d.procedure.text, self.cat.procedures) + ("see `docs/operators.md` for the procedures",),
            )
            self.broken.add(name)
            return
        where = f"`{proc.name}`"
        values, failed = check_block(d.block, self.cat.procedure_params(proc), self.diags, where, d.procedure.span)
        if declared is None:
            self.broken.add(name)
            return
        if declared.kind not in proc.produces:
            kinds = ", ".join(f"`{k}`" for k in proc.produces)
            self.err(
                "RB204",
                d.type.span,
                f"`{proc.name}` cannot produce `{declared}`: it produces {kinds}",
                self._procedure_hint(declared),
            )
            self.broken.add(name)
            return
        if values.get("on_error") == "abstain" and not declared.optional:
            self.err(
                "RB206",
                d.type.span,
                f"`{name}` abstains on error, so its type must be optional: `{declared.as_optional()}`",
            )
        prompt = None
        checker = PromptChecker(self.m.path, self.diags, self.sources)
        if proc.placeholders:  # a prompt procedure: its template and answer
            prompt = checker.prompt(d, proc, values, failed)
            checker.answer(d, proc, declared, values, failed)
        if proc.hooks.check is not None:  # checks that need the procedure's semantics
            proc.hooks.check(CriterionCheck(self, d, declared, values, failed, checker))
        self.types[name] = declared
        self.criteria[name] = Criterion(name, declared, proc.name, values, span=d.span, prompt=prompt)

    def _procedure_hint(self, declared: JType) -> tuple[str, ...]:
        makers = sorted(p.name for p in self.cat.procedures.values() if declared.kind in p.produces)
        if not makers:
            return ()
        return (f"procedures that produce `{declared.kind}`: " + ", ".join(makers),)

    def _param_span(self, d: ast.CriterionDecl | ast.NodeDecl, name: str) -> Span:
        for p in d.block.params:
            if p.name.value == name:
                return p.value.span
        return d.procedure.span if isinstance(d, ast.CriterionDecl) else d.operator.span

    def _map_keys(self, d: ast.CriterionDecl, name: str) -> tuple[ast.String | ast.Number | ast.Bool | ast.Ident, ...]:
        """The key nodes of the map given for parameter `name` (its first occurrence)."""
        value = next(p.value for p in d.block.params if p.name.value == name)
        return tuple(e.key for e in value.entries) if isinstance(value, ast.MapValue) else ()

    def _name_hint(self, name: str) -> tuple[str, ...]:
        return suggest(name, self.decls) or (f"declare `{name}` with `criterion {name}: ...` or `node {name} = ...`",)

    # -- operators: ports and routes -------------------------------------------

    def _node_shape(self, d: ast.NodeDecl) -> None:
        """Ports, arity, references and parameters of an operator node."""
        name = d.name.value
        op = self._lookup(lambda c: c.operators.get(d.operator.text))
        self.edges[name] = []
        for port in d.ports:
            for ref in port.refs:
                if ref.value in self.decls:
                    self.edges[name].append(ref.value)
                else:
                    self.err("RB101", ref.span, f"unknown name `{ref.value}`", self._name_hint(ref.value))
                    self.broken.add(name)
        if op is None:
            self.err(
                "RB103",
                d.operator.span,
                f"unknown operator `{d.operator.text}`",
                suggest_qualified(d.operator.text, self.cat.operators) + ("see `docs/operators.md` for the operators",),
            )
            self.broken.add(name)
            return
        where = f"`{op.name}`"
        seen: dict[str, ast.PortArg] = {}
        unknown: list[ast.PortArg] = []
        for port in d.ports:
            pname = port.name.value
            spec = op.port(pname)
            if spec is None:
                unknown.append(port)
                self.broken.add(name)
                continue
            if pname in seen:
                self.err("RB107", port.name.span, f"port `{pname}` is connected twice", (f"first connected at {seen[pname].name.span}",))
                self.broken.add(name)
                continue
            seen[pname] = port
            if not spec.variadic and port.is_list:
                self.err("RB108", port.span, f"port `{pname}` of {where} takes exactly one node, not a list", (f"write `{pname}: {port.refs[0].value if port.refs else 'NAME'}`",))
                self.broken.add(name)
            elif spec.variadic and not port.is_list:
                self.err("RB108", port.span, f"port `{pname}` of {where} takes a list", (f"write `{pname}: [{port.refs[0].value}]`",))
                self.broken.add(name)
            elif spec.variadic:
                n = len(port.refs)
                if n < spec.min or (spec.max is not None and n > spec.max):
                    self.err("RB108", port.span, f"port `{pname}` of {where} takes {spec.arity_text()}, got {n}")
                    self.broken.add(name)
        missing = [spec.name for spec in op.ports if spec.name not in seen]
        signature = f"its signature: {op.signature()}"
        if len(unknown) == 1 and len(missing) == 1:
            # One misnamed port: say so once, rather than "unknown" and "missing".
            port = unknown[0]
            self.err("RB106", port.name.span, f"{where} has no port `{port.name.value}`", (f"did you mean `{missing[0]}`, which is not connected?", signature))
            missing = []
        else:
            for port in unknown:
                self.err("RB106", port.name.span, f"{where} has no port `{port.name.value}`", suggest(port.name.value, missing or [p.name for p in op.ports]) + (signature,))
        for port_name in missing:
            self.err("RB105", d.operator.span, f"{where} needs its port `{port_name}` connected", (signature,))
            self.broken.add(name)
        values, failed = check_block(d.block, op.params, self.diags, where, d.operator.span)
        self.op_params[name] = values
        self.op_failed[name] = failed

    # -- graph order ------------------------------------------------------------

    def _order(self) -> list[str]:
        """A topological order of all nodes (source order among independent
        ones); every cycle is reported once and its nodes left out."""
        names = list(self.decls)
        index = {n: i for i, n in enumerate(names)}
        # Tarjan's strongly connected components, iterative.
        counter = 0
        low: dict[str, int] = {}
        num: dict[str, int] = {}
        stack: list[str] = []
        on_stack: set[str] = set()
        cyclic: set[str] = set()
        for root in names:
            if root in num:
                continue
            work = [(root, 0)]
            while work:
                node, i = work[-1]
                if i == 0:
                    num[node] = low[node] = counter
                    counter += 1
                    stack.append(node)
                    on_stack.add(node)
                succ = self.edges.get(node, [])
                if i < len(succ):
                    work[-1] = (node, i + 1)
                    nxt = succ[i]
                    if nxt not in num:
                        work.append((nxt, 0))
                    elif nxt in on_stack:
                        low[node] = min(low[node], num[nxt])
                    continue
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == num[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1 or node in self.edges.get(node, []):
                        self._report_cycle(sorted(comp, key=index.__getitem__))
                        cyclic.update(comp)
        self.broken |= cyclic
        # Kahn's algorithm, smallest source index first, so the order is fixed.
        import heapq

        indeg = {n: 0 for n in names if n not in cyclic}
        readers: dict[str, list[str]] = {n: [] for n in indeg}
        for n in indeg:
            for src in set(self.edges.get(n, [])):
                if src in indeg:
                    indeg[n] += 1
                    readers[src].append(n)
        heap = [index[n] for n, k in indeg.items() if k == 0]
        heapq.heapify(heap)
        order = []
        while heap:
            n = names[heapq.heappop(heap)]
            order.append(n)
            for r in readers[n]:
                indeg[r] -= 1
                if indeg[r] == 0:
                    heapq.heappush(heap, index[r])
        return order

    def _report_cycle(self, comp: list[str]) -> None:
        # Walk the cycle from its first node in source order, so the message reads as a path.
        members = set(comp)
        path = [comp[0]]
        while True:
            nxt = next((s for s in self.edges.get(path[-1], []) if s in members), None)
            if nxt is None or nxt == path[0] or nxt in path:
                break
            path.append(nxt)
        # Edges point from a node to what it reads; show the data flow instead.
        flow = list(reversed(path))
        text = " -> ".join(flow + [flow[0]])
        first = self.decls[comp[0]]
        self.err("RB301", first.name.span, f"cycle: {text}", ("a node cannot depend on its own value",))

    # -- operators: types -------------------------------------------------------

    def _node_type(self, d: ast.NodeDecl) -> None:
        name = d.name.value
        if name in self.broken:
            return
        op = self.cat.operators[d.operator.text]
        inputs = [ref.value for port in d.ports for ref in port.refs]
        if any(i in self.broken or i not in self.types for i in inputs):
            self.broken.add(name)  # an upstream error was already reported
            return
        ok = True
        by_port: dict[str, tuple[JType, ...]] = {}
        for port in d.ports:
            spec = op.port(port.name.value)
            assert spec is not None  # _node_shape reported an unknown port and marked the node broken
            slot_types = []
            for ref in port.refs:
                t = self.types[ref.value]
                if not t.accepts_kind(spec.accepts):
                    accepted = " or ".join(spec.accepts)
                    notes = [f"`{ref.value}` is `{t}`; port `{spec.name}` accepts {accepted}"]
                    notes.extend(_conversion_hint(ref.value, t, spec.accepts))
                    self.err("RB201", ref.span, f"cannot route `{ref.value}: {t}` into port `{spec.name}` of `{op.name}`", notes)
                    ok = False
                elif t.optional and not spec.absent:
                    self.err(
                        "RB201",
                        ref.span,
                        f"`{ref.value}: {t}` may be absent, but port `{spec.name}` of `{op.name}` needs a value",
                        (
                            "only value ports and reducer inputs accept optional values",
                            f"make `{ref.value}` always present: drop the `?` (and an `on_error = abstain` upstream), "
                            f"or give it a default with `transform.default(value: {ref.value}) {{ value = ... }}`",
                        ),
                    )
                    ok = False
                slot_types.append(t)
            by_port[spec.name] = tuple(slot_types)
        params = self.op_params[name]
        failed = self.op_failed[name]
        for param in op.params:
            if param.length_of and param.name not in failed and params.get(param.name) is not None:
                want = len(by_port.get(param.length_of, ()))
                got = len(params[param.name])
                if got != want:
                    self.err(
                        "RB203",
                        self._param_span(d, param.name),
                        f"`{param.name}` has {got} entries but `{param.length_of}` has {want} nodes",
                        (f"give one `{param.name[:-1] if param.name.endswith('s') else param.name}` per input, in the order of `{param.length_of}`",),
                    )
                    failed.add(param.name)
        if not ok or failed:
            self.broken.add(name)
            return
        out, problems = op.rule(RuleInput(by_port, params))
        for code, message, param in problems:
            span = self._param_span(d, param) if param else d.name.span
            self.err(code, span, message)
        if problems:
            self.broken.add(name)
            return
        self.types[name] = out

    def _operator(self, d: ast.NodeDecl) -> Operator:
        op = self.cat.operators[d.operator.text]
        ports = {p.name: tuple(r.value for r in port.refs) for p in op.ports for port in d.ports if port.name.value == p.name}
        return Operator(d.name.value, op.name, op.kind, ports, self.op_params[d.name.value], self.types[d.name.value], span=d.span)

    # -- sink, reachability, readouts -------------------------------------------

    def _sink(self, sinks: list[ast.SinkDecl]) -> str | None:
        if not sinks:
            self.err("RB302", _file_span(self.m.path), "the graph has no sink", ("add `sink NAME` naming the node the readout reads",))
            return None
        for extra in sinks[1:]:
            self.err("RB303", extra.span, f"a second sink `{extra.target.value}`", (f"the first is `{sinks[0].target.value}` at {sinks[0].span}", "combine them with a reducer and sink that"))
            if extra.target.value not in self.decls:
                self.err("RB101", extra.target.span, f"unknown name `{extra.target.value}`", self._name_hint(extra.target.value))
        target = sinks[0].target
        if target.value not in self.decls:
            self.err("RB101", target.span, f"unknown name `{target.value}`", self._name_hint(target.value))
            return None
        if len(sinks) > 1:
            return None
        return target.value

    def _reachability(self, sink: str) -> None:
        seen = {sink}
        todo = [sink]
        while todo:
            for src in self.edges.get(todo.pop(), []):
                if src not in seen:
                    seen.add(src)
                    todo.append(src)
        for name, d in self.decls.items():
            if name not in seen:
                self.err("RB304", d.name.span, f"`{name}` does not reach the sink `{sink}`, so it cannot affect the verdict", ("route it into the graph, or remove it",))

    def _readouts(self, readouts: list[ast.ReadoutDecl], sink: str | None, scale: JType | None) -> dict[str, Readout]:
        sink_type = self.types.get(sink) if sink and sink not in self.broken else None
        if sink is not None and sink_type is not None and scale is not None and not sink_type.as_optional(False).fits(scale):
            self.err(
                "RB403",
                self._sink_span(sink),
                f"the sink `{sink}` is `{sink_type}`, which does not fit the contract's scale `{scale}`",
                self._fit_hint(sink, sink_type, scale),
            )
            sink_type = None
        if not readouts:
            self.err("RB405", _file_span(self.m.path), "the graph has no readout", ("add `readout pointwise { output = ... }` and/or `readout pairwise { ... }`",))
        out: dict[str, Readout] = {}
        for r in readouts:
            mode = r.mode.value
            if mode not in ("pointwise", "pairwise"):
                self.err("RB406", r.mode.span, f"unknown readout mode `{mode}`", suggest(mode, ("pointwise", "pairwise")) + ("the modes are `pointwise` and `pairwise`",))
                continue
            first = next(o for o in readouts if o.mode.value == mode)
            if first is not r:
                self.err("RB406", r.mode.span, f"a second `{mode}` readout", (f"the first is at {first.span}",))
                continue
            values, failed = check_block(r.block, self.cat.blocks[mode].params, self.diags, f"the `{mode}` readout", r.mode.span)
            if failed:
                continue
            if mode == "pointwise":
                pairwise_only = next((c for c in self.criteria.values() if "side_by_side" in self.cat.hooks(c.procedure).traits), None)
                if pairwise_only is not None:
                    self.err("RB407", r.mode.span, f"a pointwise readout cannot run `{pairwise_only.name}`: `{pairwise_only.procedure}` judges two candidates side by side", (f"`{pairwise_only.name}` is at {pairwise_only.span}; remove the pointwise readout, or judge one response at a time with `llm.rate` or `llm.check`",))
                    continue
                out[mode] = PointwiseReadout(values["output"], values["quantize"], values["ties"], span=r.span)
                if scale is not None:
                    self._check_pointwise(r, values["output"], scale)
            else:
                out[mode] = PairwiseReadout(values["epsilon"], values["resolve"], span=r.span)
                if scale is not None:
                    self._check_pairwise(r, values["epsilon"], scale)
        return out

    def _sink_span(self, sink: str) -> Span:
        return next(d.target.span for d in self.m.decls if isinstance(d, ast.SinkDecl))

    def _fit_hint(self, sink: str, t: JType, scale: JType) -> tuple[str, ...]:
        if t.numeric and scale.numeric:
            if t.kind == "score" and scale.kind == "ordinal":
                return (f"the sink's values need not be integers: declare the contract as `scale = score[{fmt_num(scale.lo)}, {fmt_num(scale.hi)}]`; the pointwise readout still quantizes to an ordinal `output`",)
            notes = [f"rescale it onto the scale (`transform.rescale(value: {sink}) {{ to = score[{fmt_num(scale.lo)}, {fmt_num(scale.hi)}] }}`) or widen the contract"]
            decl = self.decls.get(sink)
            if isinstance(decl, ast.NodeDecl) and decl.operator.text == "reduce.sum":
                notes.append("a mean of the inputs stays on their scale; a sum does not")
            return tuple(notes)
        if t.kind == "label" and scale.kind == "label":
            extra = ", ".join(f"`{x}`" for x in t.labels if x not in scale.labels)
            return (f"the sink can be {extra}, which the contract's scale lacks: add it to the scale",)
        return ("map it onto the scale first (e.g. `transform.map`)",) if t.kind != scale.kind else ()

    def _check_pointwise(self, r: ast.ReadoutDecl, output: JType, scale: JType) -> None:
        span = next(p.value.span for p in r.block.params if p.name.value == "output")
        if output.optional:
            self.err("RB404", span, "a readout's `output` cannot be optional", ("an absent sink already reads out as abstain",))
        elif scale.numeric:
            if not output.numeric:
                kind = "ordinal" if float(scale.lo).is_integer() and float(scale.hi).is_integer() else "score"
                self.err("RB404", span, f"`output = {output}` cannot hold values of the numeric scale `{scale}`", (f"e.g. `output = {kind}[{fmt_num(scale.lo)}, {fmt_num(scale.hi)}]`",))
            elif not (output.lo <= scale.lo and scale.hi <= output.hi):
                self.err(
                    "RB404",
                    span,
                    f"`output = {output}` does not cover the contract's scale `{scale}`",
                    (f"quantizing a value in [{fmt_num(scale.lo)}, {fmt_num(scale.hi)}] could fall outside it",),
                )
        elif scale.kind == "bool" and output.kind != "bool":
            self.err("RB404", span, f"`output = {output}` cannot hold the contract's `bool` values", ("write `output = bool`",))
        elif scale.kind == "label" and not (output.kind == "label" and set(scale.labels) <= set(output.labels)):
            self.err("RB404", span, f"`output = {output}` cannot hold the contract's `{scale}` values", (f"write `output = {scale}`",))

    def _check_pairwise(self, r: ast.ReadoutDecl, epsilon: float, scale: JType) -> None:
        if not scale.numeric:
            self.err(
                "RB404",
                r.mode.span,
                f"a pairwise readout compares numbers, but the contract's scale is `{scale}`",
                ("map the sink to a number (e.g. `transform.map`) and use a numeric scale",),
            )
        elif epsilon >= scale.hi - scale.lo:
            span = next((p.value.span for p in r.block.params if p.name.value == "epsilon"), r.mode.span)
            self.err(
                "RB404",
                span,
                f"`epsilon = {fmt_num(epsilon)}` is at least the width of the scale `{scale}`, so no candidate can ever be preferred",
                (f"epsilon is the largest difference that still counts as a tie; keep it well below {fmt_num(scale.hi - scale.lo)}",),
            )

    # -- style --------------------------------------------------------------------

    def _style(self) -> None:
        for name, d in self.decls.items():
            if not _SNAKE.match(name):
                self.err("RB501", d.name.span, f"`{name}` is not snake_case", (f"e.g. `{_snake(name)}`",))
            if isinstance(d, ast.CriterionDecl) and "rates" in self.cat.hooks(d.procedure.text).traits:
                crit = self.criteria.get(name)
                written = any(p.name.value == "anchors" for p in d.block.params)
                # A malformed `anchors` was reported already; do not also say it is missing.
                # A template of the user's own states its scale unless it shows the anchors.
                own = any(p.name.value == "prompt" for p in d.block.params) and (crit is None or crit.prompt is None or "anchors}}" not in crit.prompt.text)
                if crit is not None and not own and (not written or crit.params.get("anchors") == {}):
                    lo, hi = fmt_num(crit.type.lo), fmt_num(crit.type.hi)
                    self.err(
                        "RB502",
                        d.name.span,
                        f"`{name}` rates on a scale without anchors, so each call decides what its points mean",
                        (f"describe at least both ends of the scale, e.g. `anchors = {{ {lo}: \"...\", {hi}: \"...\" }}`",),
                    )
            if isinstance(d, ast.NodeDecl) and d.operator.text.startswith("reduce."):
                refs = [r for p in d.ports for r in p.refs]
                if len(refs) == 1 and d.operator.text in self.cat.operators and name not in self.broken:
                    self.err("RB503", d.operator.span, f"`{d.operator.text}` over a single input reduces nothing", (f"route `{refs[0].value}` directly, or add the inputs that were meant to be there",))


def _conversion_hint(name: str, t: JType, accepts: tuple[str, ...]) -> tuple[str, ...]:
    """How to turn a value of type `t` into one the port accepts, where there is a usual way."""
    if "numeric" in accepts and t.kind == "bool":
        return (f"a bool is not a number: map it first, e.g. `transform.map(value: {name}) {{ values = {{ true: 5, false: 1 }} }}`",)
    if "numeric" in accepts and t.kind == "label":
        table = ", ".join(f"{label}: {i}" for i, label in enumerate(t.labels, 1))
        return (f"a label is not a number: map it first, e.g. `transform.map(value: {name}) {{ values = {{ {table} }} }}`",)
    if accepts == ("bool",) and t.numeric:
        middle = (t.lo + t.hi) // 2 if t.kind == "ordinal" else (t.lo + t.hi) / 2
        return (f"turn it into a bool first, e.g. `transform.threshold(value: {name}) {{ at = {fmt_num(middle)} }}`",)
    return ()


def _snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()
    s = re.sub(r"_+", "_", re.sub(r"[^a-z0-9_]", "_", s)).strip("_")
    return s if s[:1].isalpha() else "n_" + s
