"""What the audit reads of a judge of several graphs (a folder compiled per
instance): the planner and the suggester are told of every graph (the first
few of a large set), and which operators apply looks at every graph's
criteria and readouts, not the first graph's alone; a single graph is
described as before."""

import attrs

from rubriclang.audit import planner
from rubriclang.audit.judge import judge_info
from rubriclang.audit.planner import describe_judge
from rubriclang.checker import check_source
from rubriclang.interp.items import item_from_json

GRAPH = """rubric {name} {{ version = 1 }}
contract {{ scale = bool }}
criterion {criterion}: bool = llm.check {{ question = "{question}" }}
sink {criterion}
readout pointwise {{ output = bool }}
"""


def graph(name: str, criterion: str, question: str):
    result = check_source(GRAPH.format(name=name, criterion=criterion, question=question), f"{name}.rbg")
    assert result.graph is not None, result.diagnostics
    return result.graph


def judge_of(*graphs):
    items = [item_from_json({"id": "a", "input": "q", "response": "r"}, "t")]
    one = judge_info(graphs[0], items)
    return attrs.evolve(one, graphs={g.name: g for g in graphs})


def test_a_single_graph_is_described_on_its_own():
    text = describe_judge(judge_of(graph("alpha", "correct", "Is it right?")))
    assert text.splitlines()[0] == "name: alpha (binary judge, pointwise)"
    assert 'criterion correct: bool by llm.check - asks: "Is it right?"' in text
    assert "graph" not in text.splitlines()[0]


def test_every_graph_of_a_set_is_described_with_its_own_criteria():
    text = describe_judge(judge_of(graph("alpha", "correct", "Is it right?"), graph("beta", "polite", "Is it polite?")))
    assert text.splitlines()[0].startswith("a set of 2 graphs")
    for name, criterion, question in (("alpha", "correct", "Is it right?"), ("beta", "polite", "Is it polite?")):
        assert f"graph {name}:" in text
        assert f'criterion {criterion}: bool by llm.check - asks: "{question}"' in text


def test_a_large_set_shows_its_first_graphs_and_counts_the_rest():
    n = planner._GRAPHS_SHOWN + 3
    text = describe_judge(judge_of(*(graph(f"g{i}", f"c{i}", f"Question {i}?") for i in range(n))))
    assert f"graph g{planner._GRAPHS_SHOWN - 1}:" in text
    assert f"graph g{planner._GRAPHS_SHOWN}:" not in text
    assert "(and 3 more graphs like these)" in text


def test_an_operator_is_skipped_for_a_criterion_of_any_graph_of_a_set_not_only_the_first():
    from rubriclang.audit.applicability import why_skipped
    from rubriclang.audit.perturbations import load_perturbations

    fmt = check_source(
        """rubric beta { version = 1 }
contract { scale = bool }
criterion valid: bool = rule.json_valid { field = response }
sink valid
readout pointwise { output = bool }
""",
        "beta.rbg",
    ).graph
    assert fmt is not None
    reasons = [
        why_skipped(op, judge_of(graph("alpha", "correct", "Is it right?"), fmt))
        for op in load_perturbations().values()
        if "checks_format" in op.unless
    ]
    assert reasons and all(
        "criterion `valid` checks the response's format (rule.json_valid)" in (r or "") for r in reasons
    )


PAIRWISE = """rubric {name} {{ version = 1 }}
contract {{ scale = score[1, 5] }}
criterion quality: ordinal[1, 5] = llm.rate {{ question = "How good is it?" }}
sink quality
readout pairwise {{ epsilon = 0.25, resolve = {resolve} }}
"""


def test_the_order_shown_reaches_a_set_verdict_when_any_graph_resolves_by_position():
    from rubriclang.audit.applicability import why_skipped
    from rubriclang.audit.perturbations import load_perturbations

    def pairwise_graph(name, resolve):
        result = check_source(PAIRWISE.format(name=name, resolve=resolve), f"{name}.rbg")
        assert result.graph is not None, result.diagnostics
        return result.graph

    items = [item_from_json({"id": "a", "input": "q", "responses": {"x": "1", "y": "2"}}, "t")]
    swaps = [op for op in load_perturbations().values() if "order_shown" in op.needs]
    assert swaps

    def judge(*graphs):
        return attrs.evolve(judge_info(graphs[0], items), graphs={g.name: g for g in graphs})

    by_tie = judge(pairwise_graph("alpha", "tie"), pairwise_graph("beta", "tie"))
    assert all("`resolve = tie`, not by position" in (why_skipped(op, by_tie) or "") for op in swaps)
    mixed = judge(pairwise_graph("alpha", "tie"), pairwise_graph("beta", "first"))
    assert all(why_skipped(op, mixed) is None for op in swaps)


THRESHOLD = """rubric {name} {{ version = 1 }}
contract {{ scale = bool }}
criterion quality: ordinal[1, 5] = llm.rate {{ question = "How good is it?" }}
node good = transform.threshold(value: quality) {{ at = {at} }}
sink good
readout pointwise {{ output = bool }}
"""


def test_the_threshold_block_reads_a_set_only_when_every_graph_cuts_the_same_score_at_the_same_point():
    from rubriclang.audit.report_json import _threshold_sink

    def cut(name, at):
        result = check_source(THRESHOLD.format(name=name, at=at), f"{name}.rbg")
        assert result.graph is not None, result.diagnostics
        return result.graph

    same = _threshold_sink(judge_of(cut("alpha", 3), cut("beta", 3)))
    assert same is not None and same.ports["value"] == ("quality",)
    assert _threshold_sink(judge_of(cut("alpha", 3), cut("beta", 4))) is None
    assert _threshold_sink(judge_of(cut("alpha", 3), graph("beta", "correct", "Is it right?"))) is None
