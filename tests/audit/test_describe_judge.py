"""What the planner and the suggester are told of the judge: every graph of
a set compiled per instance (the first few of a large one), and a single
graph exactly as before."""

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
