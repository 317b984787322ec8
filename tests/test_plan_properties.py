"""The compiled plan computes exactly what the reference semantics (each operator's catalog function)
compute, on random well-typed graphs and random judgments, including absent
values; the compiled composition (readout included) gives exactly what the
general path gives, on judgments that fail or need coercing too."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from rubriclang.catalog.types import JType
from rubriclang.checker import check_source
from rubriclang.checker.graph import PairwiseReadout, PointwiseReadout
from rubriclang.interp.backend import Judgment
from rubriclang.interp.compose import Composer
from rubriclang.interp.plan import compile_plan
from rubriclang.interp.readout import pairwise, pointwise, pointwise_source, reader

NUMERIC_TYPES = ["ordinal[1, 5]", "score[0, 1]", "score[1, 10]", "ordinal[0, 3]"]


@st.composite
def graphs(draw, readouts=("readout pointwise { output = score[-1000, 1000] }",)):
    lines = ["rubric g { version = 1 }", "contract { scale = score[-1000, 1000] }"]
    numeric: list[tuple[str, bool]] = []  # (name, optional)
    boolean: list[tuple[str, bool]] = []
    for i in range(draw(st.integers(2, 5))):
        t = draw(st.sampled_from([*NUMERIC_TYPES, "bool"]))
        opt = draw(st.booleans())
        suffix = "?" if opt else ""
        extra = ", on_error = abstain" if opt else ""
        lines.append(f'criterion c{i}: {t}{suffix} = human.annotation {{ key = "c{i}"{extra} }}')
        (boolean if t == "bool" else numeric).append((f"c{i}", opt))
    if not numeric:
        lines.append('criterion cn: ordinal[1, 5] = human.annotation { key = "cn" }')
        numeric.append(("cn", False))
    boolean_req = [n for n, opt in boolean if not opt]
    for j in range(draw(st.integers(1, 7))):
        kind = draw(
            st.sampled_from(
                [
                    "mean",
                    "wmean",
                    "min",
                    "max",
                    "median",
                    "sum",
                    "rescale",
                    "invert",
                    "clamp",
                    "cap",
                    "floor",
                    "veto",
                    "mask",
                    "threshold",
                    "map",
                    "count",
                    "any",
                ]
            )
        )
        name = f"n{j}"
        pick = lambda pool, k=1: draw(st.lists(st.sampled_from(pool), min_size=k, max_size=max(k, 3)))  # noqa: E731
        names = [n for n, _ in numeric]
        if kind in ("mean", "min", "max", "median", "sum"):
            ins = pick(names)
            lines.append(f"node {name} = reduce.{kind}(inputs: [{', '.join(ins)}])")
        elif kind == "wmean":
            ins = pick(names)
            ws = draw(st.lists(st.integers(1, 4), min_size=len(ins), max_size=len(ins)))
            lines.append(
                f"node {name} = reduce.weighted_mean(inputs: [{', '.join(ins)}]) {{ weights = "
                f"[{', '.join(map(str, ws))}] }}"
            )
        elif kind == "rescale":
            lines.append(
                f"node {name} = transform.rescale(value: {draw(st.sampled_from(names))}) {{ to = score[0, 100] }}"
            )
        elif kind == "invert":
            lines.append(f"node {name} = transform.invert(value: {draw(st.sampled_from(names))})")
        elif kind == "clamp":
            lines.append(
                f"node {name} = transform.clamp(value: {draw(st.sampled_from(names))}) {{ lo = -500, hi = 500 }}"
            )
        elif kind in ("cap", "floor", "veto", "mask") and boolean_req:
            param = {"cap": " { max = 2 }", "floor": " { min = 3 }", "veto": "", "mask": ""}[kind]
            if kind == "veto":
                continue  # `to` must lie inside the value's interval; covered by the example tests
            lines.append(
                f"node {name} = gate.{kind}(value: {draw(st.sampled_from(names))}, when: "
                f"{draw(st.sampled_from(boolean_req))}){param}"
            )
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
            lines.append(
                f"node {name} = transform.map(value: {draw(st.sampled_from([n for n, _ in boolean]))}) {{ values = {{ "
                "true: 5, false: 1 } }"
            )
        else:
            continue
        numeric.append((name, True))
    lines.append(f"sink {numeric[-1][0]}")
    lines.append(draw(st.sampled_from(readouts)))
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
    values = {c.name: v for c, v in zip(graph.criteria, row, strict=True)}
    out = []
    for op in graph.operators:
        from rubriclang.catalog import load_catalog

        spec = load_catalog().operators[op.operator]
        variadic = {p.name for p in spec.ports if p.variadic}
        ports = {p: [values[s] for s in slots] if p in variadic else values[slots[0]] for p, slots in op.ports.items()}
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
        for g, w in zip(got, want, strict=True):
            assert _same(g, w), (plan.source, row, got, want)


READOUTS = (
    "readout pointwise { output = score[-1000, 1000] }",
    "readout pointwise { output = ordinal[-1000, 1000] }",
    "readout pointwise { output = ordinal[-1000, 1000], quantize = floor }",
    "readout pointwise { output = ordinal[-1000, 1000], ties = down }",
    "readout pairwise { epsilon = 0.5, resolve = tie }",
    "readout pointwise { output = ordinal[-1000, 1000] }\nreadout pairwise { epsilon = 0, resolve = first }",
)

# Values a backend or a recorded trace may hand over: canonical ones, and
# ones that need coercing (3.0 for an ordinal) or fail (out of range, wrong type).
ODD_VALUES = st.sampled_from([None, 3.0, 2.5, -1, 11, 0.5, True, "x", float("nan"), float("inf"), -0.0, 10**30])


def _judgment(draw, t):
    if draw(st.integers(0, 9)) == 0:
        return Judgment.failed("backend down")
    if draw(st.integers(0, 3)) == 0:
        return Judgment(draw(ODD_VALUES))
    if t.kind == "bool":
        return Judgment(draw(st.booleans()))
    if t.kind == "ordinal":
        return Judgment(draw(st.integers(int(t.lo), int(t.hi))))
    return Judgment(draw(st.floats(t.lo, t.hi, allow_nan=False) | st.integers(int(t.lo), int(t.hi))))


@settings(max_examples=150, deadline=None)
@given(graphs(READOUTS), st.data())
def test_compiled_composition_and_decision_match_the_general_path(src, data):
    graph = check_source(src, "g.rbg").graph
    assert graph is not None
    composer = Composer(graph)
    for _ in range(5):
        mode = data.draw(st.sampled_from(sorted(graph.readouts)))
        cids = ("response",) if mode == "pointwise" else ("a", "b")
        judgments = {c.name: {cid: _judgment(data.draw, c.type) for cid in cids} for c in graph.criteria}
        # repr tells 2 from 2.0 and 0.0 from -0.0: what a trace would show.
        general = composer._compose(mode, cids, judgments)
        assert repr(composer.compose(mode, cids, judgments)) == repr(general)
        assert repr(composer.decide(mode, cids, judgments)) == repr(general.decision)


SINKS = st.one_of(
    st.none(), st.integers(-12, 12), st.floats(allow_nan=True), st.sampled_from([2.5, -2.5, 0.5, -0.0, 10.0, True])
)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([JType("ordinal", lo=1, hi=10), JType("score", lo=-10, hi=10), JType("score", lo=0, hi=1)]),
    st.sampled_from([JType("ordinal", lo=0, hi=10), JType("ordinal", lo=-10, hi=10), JType("score", lo=-10, hi=10)]),
    st.sampled_from(["nearest", "floor", "ceil"]),
    st.sampled_from(["up", "down"]),
    SINKS,
)
def test_compiled_pointwise_readout_decides_as_pointwise(scale, output, how, ties, sink):
    readout = PointwiseReadout(output, how, ties)
    want = pointwise(readout, scale, sink)
    assert repr(reader(readout, scale, 0)(("response",), {"response": (sink,)})) == repr(want)
    source = pointwise_source(readout, scale, "x", "r_")
    if source is not None:  # where its condition holds, the inline case decides as `pointwise`
        condition, decision, constants = source
        got = eval(f"lambda x: ({decision}) if {condition} else None", constants)(sink)
        assert got is None or repr(got) == repr(want)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([0, 0.5, 2]), st.sampled_from(["tie", "abstain", "first", "second"]), SINKS, SINKS)
def test_compiled_pairwise_readout_decides_as_pairwise(epsilon, resolve, s1, s2):
    readout, scale = PairwiseReadout(epsilon, resolve), JType("score", lo=-10, hi=10)
    got = reader(readout, scale, 1)(("a", "b"), {"a": ("x", s1), "b": ("y", s2)})
    assert repr(got) == repr(pairwise(readout, scale, ("a", "b"), {"a": s1, "b": s2}))


# Types whose sums the plan may write out (integral, small) or must leave to
# fsum (floats, or integers past 2**53), and weights integral or not.
SUM_TYPES = ["ordinal[1, 5]", "ordinal[-3, 3]", "score[-1, 1]", "score[0, 1]", "ordinal[0, 90000000000000000]"]
SUM_WEIGHTS = st.sampled_from([1, 2, 3, 0, 0.5, 1.0, 2.0, 0.1])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(SUM_TYPES), min_size=1, max_size=4), st.data())
def test_compiled_means_sum_exactly_as_fsum_does(types, data):
    lines = ["rubric g { version = 1 }", "contract { scale = score[-10, 100000000000000000] }"]
    lines += [f'criterion c{i}: {t} = human.annotation {{ key = "c{i}" }}' for i, t in enumerate(types)]
    ins = ", ".join(f"c{i}" for i in range(len(types)))
    ws = data.draw(st.lists(SUM_WEIGHTS, min_size=len(types), max_size=len(types)).filter(any))
    weights = ", ".join(map(str, ws))
    lines += [
        f"node m = reduce.mean(inputs: [{ins}])",
        f"node w = reduce.weighted_mean(inputs: [{ins}]) {{ weights = [{weights}] }}",
        "node both = reduce.min(inputs: [m, c0])",
        "node all = reduce.max(inputs: [both, w])",
        "sink all",
        "readout pointwise { output = score[-10, 100000000000000000] }",
    ]
    result = check_source("\n".join(lines) + "\n", "g.rbg")
    assert result.graph is not None, [d.message for d in result.diagnostics if d.is_error]
    plan = compile_plan(result.graph)
    for _ in range(5):
        row = []
        for c in result.graph.criteria:
            t = c.type
            if t.kind == "ordinal":
                row.append(data.draw(st.integers(int(t.lo), int(t.hi))))
            else:  # -0.0 included: fsum's sign of zero must be kept
                row.append(data.draw(st.floats(t.lo, t.hi, allow_nan=False) | st.sampled_from([-0.0, 0.0])))
        # repr tells 2 from 2.0 and 0.0 from -0.0.
        assert repr(plan(*row)) == repr(_reference(result.graph, row)), (plan.source, row)


def test_compiled_mean_of_integers_past_2_53_rounds_once_as_fsum():
    # Added one by one, 2**53 + 1 + 1 rounds twice (back to 2**53); fsum gives 2**53 + 2.
    src = """rubric g { version = 1 }
contract { scale = score[0, 100000000000000000] }
criterion big: ordinal[0, 100000000000000000] = human.annotation { key = "big" }
criterion a: ordinal[1, 5] = human.annotation { key = "a" }
criterion b: ordinal[1, 5] = human.annotation { key = "b" }
node s = reduce.weighted_mean(inputs: [big, a, b]) { weights = [1, 1, 1] }
sink s
readout pointwise { output = score[0, 100000000000000000] }
"""
    graph = check_source(src, "g.rbg").graph
    assert graph is not None
    row = [2**53, 1, 1]
    assert compile_plan(graph)(*row) == _reference(graph, row) == (math.fsum((2**53, 1, 1)) / 3,)
