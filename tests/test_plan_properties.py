"""The compiled plan computes exactly what the reference semantics (each operator's catalog function)
compute, on random well-typed graphs and random judgments, including absent
values."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from rubriclang.checker import check_source
from rubriclang.interp.plan import compile_plan

NUMERIC_TYPES = ["ordinal[1, 5]", "score[0, 1]", "score[1, 10]", "ordinal[0, 3]"]


@st.composite
def graphs(draw):
    lines = ["rubric g { version = 1 }", "contract { scale = score[-1000, 1000] }"]
    numeric, boolean = [], []
    for i in range(draw(st.integers(2, 5))):
        t = draw(st.sampled_from(NUMERIC_TYPES + ["bool"]))
        opt = draw(st.booleans())
        suffix = "?" if opt else ""
        extra = ', on_error = abstain' if opt else ""
        lines.append(f'criterion c{i}: {t}{suffix} = human.annotation {{ key = "c{i}"{extra} }}')
        (boolean if t == "bool" else numeric).append((f"c{i}", opt))
    if not numeric:
        lines.append('criterion cn: ordinal[1, 5] = human.annotation { key = "cn" }')
        numeric.append(("cn", False))
    boolean_req = [n for n, opt in boolean if not opt]
    for j in range(draw(st.integers(1, 7))):
        kind = draw(st.sampled_from(["mean", "wmean", "min", "max", "median", "sum", "rescale", "invert", "clamp", "cap", "floor", "veto", "mask", "threshold", "map", "count", "any"]))
        name = f"n{j}"
        pick = lambda pool, k=1: draw(st.lists(st.sampled_from(pool), min_size=k, max_size=max(k, 3)))  # noqa: E731
        names = [n for n, _ in numeric]
        if kind in ("mean", "min", "max", "median", "sum"):
            ins = pick(names)
            lines.append(f"node {name} = reduce.{kind}(inputs: [{', '.join(ins)}])")
        elif kind == "wmean":
            ins = pick(names)
            ws = draw(st.lists(st.integers(1, 4), min_size=len(ins), max_size=len(ins)))
            lines.append(f"node {name} = reduce.weighted_mean(inputs: [{', '.join(ins)}]) {{ weights = [{', '.join(map(str, ws))}] }}")
        elif kind == "rescale":
            lines.append(f"node {name} = transform.rescale(value: {draw(st.sampled_from(names))}) {{ to = score[0, 100] }}")
        elif kind == "invert":
            lines.append(f"node {name} = transform.invert(value: {draw(st.sampled_from(names))})")
        elif kind == "clamp":
            lines.append(f"node {name} = transform.clamp(value: {draw(st.sampled_from(names))}) {{ lo = -500, hi = 500 }}")
        elif kind in ("cap", "floor", "veto", "mask") and boolean_req:
            param = {"cap": " { max = 2 }", "floor": " { min = 3 }", "veto": "", "mask": ""}[kind]
            if kind == "veto":
                continue  # `to` must lie inside the value's interval; covered by the example tests
            lines.append(f"node {name} = gate.{kind}(value: {draw(st.sampled_from(names))}, when: {draw(st.sampled_from(boolean_req))}){param}")
            if kind == "mask":
                numeric.append((name, True))
                continue
        elif kind == "threshold":
            src = draw(st.sampled_from([n for n, _ in numeric if n.startswith("c")]))
            lines.append(f"node {name} = transform.threshold(value: {src}) {{ at = 1 }}")
            boolean.append((name, True))
            continue
        elif kind in ("count", "any") and boolean:
            ins = pick([n for n, _ in boolean])
            lines.append(f"node {name} = reduce.{kind}(inputs: [{', '.join(ins)}])")
            if kind == "count":
                numeric.append((name, True))
            continue
        elif kind == "map" and boolean:
            lines.append(f"node {name} = transform.map(value: {draw(st.sampled_from([n for n, _ in boolean]))}) {{ values = {{ true: 5, false: 1 }} }}")
        else:
            continue
        numeric.append((name, True))
    lines.append(f"sink {numeric[-1][0]}")
    lines.append("readout pointwise { output = score[-1000, 1000] }")
    return "\n".join(lines) + "\n"


def _values(draw_values, graph):
    row = []
    for c in graph.criteria:
        t = c.type
        if t.kind == "bool":
            v = draw_values(st.booleans())
        elif t.kind == "ordinal":
            v = draw_values(st.integers(int(t.lo), int(t.hi)))
        else:
            v = draw_values(st.floats(t.lo, t.hi, allow_nan=False))
        if t.optional and draw_values(st.booleans()):
            v = None
        row.append(v)
    return row


def _reference(graph, row):
    nodes = graph.nodes
    values = {c.name: v for c, v in zip(graph.criteria, row)}
    out = []
    for op in graph.operators:
        from rubriclang.catalog import load_catalog

        spec = load_catalog().operators[op.operator]
        ports = {p: [values[s] for s in slots] if spec.port(p).variadic else values[slots[0]] for p, slots in op.ports.items()}
        types = {p: nodes[s[0]].type for p, s in op.ports.items() if len(s) == 1}
        values[op.name] = spec.function(ports, op.params, types)
        out.append(values[op.name])
    return tuple(out)


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b and type(a) is type(b)


@settings(max_examples=150, deadline=None)
@given(graphs(), st.data())
def test_compiled_plan_matches_reference_semantics(src, data):
    # Unreachable nodes and style are warnings; the graph itself must be valid.
    result = check_source(src, "g.rbg")
    assert result.graph is not None, [d for d in result.diagnostics if d.is_error]
    graph = result.graph
    plan = compile_plan(graph)
    for _ in range(5):
        row = _values(data.draw, graph)
        got = plan(*row)
        want = _reference(graph, row)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert _same(g, w), (plan.source, row, got, want)
