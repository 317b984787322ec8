"""Properties of the checker on random graphs built from the catalog: well-typed
graphs check without errors, and neither the names of nodes nor the order of
declarations changes what the checker finds."""

from __future__ import annotations

import random

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import CATALOG, CORPUS, SEED_FILES, SEEDS, Graph, applications, values_of, well_typed_graphs

from rubriclang.catalog import JType
from rubriclang.checker import check, check_source
from rubriclang.syntax import ast, parse


@settings(deadline=None, max_examples=200)
@given(well_typed_graphs())
def test_well_typed_graph_checks_without_errors(graph: Graph):
    result = check_source(graph.text, "g.rbg")
    assert not result.errors, (graph.text, result.errors)
    assert result.graph is not None
    assert result.graph.sink == graph.sink
    assert result.graph.sink_type == graph.sink_type
    assert set(result.graph.nodes) == set(graph.names)


def _member(x, t: JType) -> bool:
    if x is None:
        return t.optional
    if t.kind == "bool":
        return isinstance(x, bool)
    if t.kind == "label":
        return x in t.labels
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    if t.kind == "ordinal" and not float(x).is_integer():
        return False
    slack = 1e-9 * max(1.0, abs(t.lo), abs(t.hi))  # bounds are rounded to 12 digits
    return t.lo - slack <= x <= t.hi + slack


@settings(deadline=None, max_examples=200)
@given(applications(), st.data())
def test_inferred_type_holds_every_value_the_operator_computes(application, data):
    """The checker's output types are sound: an operator's value on any inputs of
    its input types lies in the type the checker infers for it."""
    pool, app = application
    ports = {}
    for port, refs in app.slots.items():
        values = [data.draw(values_of(pool[r]), label=r) for r in refs]
        spec = CATALOG.operators[app.operator].port(port)
        assert spec is not None
        ports[port] = values if spec.variadic else values[0]
    types = {port: pool[refs[0]] for port, refs in app.slots.items()}
    params = {spec.name: spec.default for spec in CATALOG.operators[app.operator].params} | app.params
    out = CATALOG.operators[app.operator].function(ports, params, types)
    assert _member(out, app.type), (app.text, ports, out, str(app.type))


def _renamed(module: ast.Module, suffix: str) -> ast.Module:
    """Every criterion, node and group renamed, consistently, by appending `suffix`."""

    def name(n: ast.Name) -> ast.Name:
        return attrs.evolve(n, value=n.value + suffix)

    def decl(d):
        if isinstance(d, (ast.CriterionDecl, ast.NodeDecl, ast.GroupDecl)):
            d = attrs.evolve(d, name=name(d.name))
        if isinstance(d, ast.GroupDecl):
            d = attrs.evolve(d, members=tuple(name(m) for m in d.members))
        if isinstance(d, ast.NodeDecl):
            ports = tuple(attrs.evolve(p, refs=tuple(name(r) for r in p.refs)) for p in d.ports)
            d = attrs.evolve(d, ports=ports)
        if isinstance(d, ast.SinkDecl):
            d = attrs.evolve(d, target=name(d.target))
        return d

    return attrs.evolve(module, decls=tuple(decl(d) for d in module.decls))


def _summary(module: ast.Module):
    result = check(module)
    codes = sorted(d.code for d in result.diagnostics)
    return codes, result.graph.sink_type if result.graph else None


def _repeats_a_declaration(module: ast.Module) -> bool:
    """Whether a name, the header, the contract or a readout mode is declared twice."""
    keys: list[object] = []
    for d in module.decls:
        if isinstance(d, (ast.CriterionDecl, ast.NodeDecl, ast.GroupDecl)):
            keys.append(d.name.value)
        elif isinstance(d, ast.ReadoutDecl):
            keys.append(("readout", d.mode.value))
        elif not isinstance(d, ast.SinkDecl):
            keys.append(type(d))
    return len(keys) != len(set(keys))


def _metamorphic(module: ast.Module, order: list[int], suffix: str) -> None:
    before = _summary(module)
    assert _summary(_renamed(module, suffix)) == before
    # Of two declarations of one thing the first counts (RB102, RB401, RB402
    # and RB406 say so), so there the order of declarations matters by design.
    if not _repeats_a_declaration(module):
        shuffled = attrs.evolve(module, decls=tuple(module.decls[i] for i in order))
        assert _summary(shuffled) == before


@settings(deadline=None, max_examples=100)
@given(well_typed_graphs(), st.randoms(use_true_random=False), st.sampled_from(("_x", "_2", "_b_c")))
def test_renaming_or_reordering_a_well_typed_graph_changes_nothing(graph: Graph, rnd, suffix: str):
    module = parse(graph.text, "g.rbg").module
    assert module is not None
    order = list(range(len(module.decls)))
    rnd.shuffle(order)
    _metamorphic(module, order, suffix)


_PARSED = {
    path.relative_to(CORPUS).as_posix(): module
    for path, text in zip(SEED_FILES, SEEDS, strict=True)
    if (module := parse(text, "seed.rbg").module) is not None
}


@pytest.mark.parametrize("case", sorted(_PARSED))
def test_renaming_or_reordering_a_corpus_program_keeps_its_diagnostic_codes(case: str):
    # Every parseable corpus case, valid or not, in a few fixed orders.
    module = _PARSED[case]
    for seed in range(3):
        order = list(range(len(module.decls)))
        random.Random(seed).shuffle(order)
        _metamorphic(module, order, "_x")
