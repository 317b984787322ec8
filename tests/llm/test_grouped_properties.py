"""Properties of groups over random choices of members: grouping changes the
hash of exactly its members (graph hash aside), formatting a grouped file is
idempotent and keeps its meaning, and a group's prompt asks for exactly its
members, in the group's order."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rubriclang.checker import check_source
from rubriclang.fmt import format_source
from rubriclang.interp.items import Item
from rubriclang.interp.trace import criterion_hashes
from rubriclang.llm.prompting import prepare_group
from rubriclang.syntax import parse

POOL = {
    "a": 'criterion a: ordinal[1, 5] = llm.rate { question = "A?", anchors = { 1: "Low.", 5: "High." } }',
    "b": 'criterion b: score[0, 10] = llm.rate { question = "B?", anchors = { 0: "None.", 10: "All." } }',
    "c": 'criterion c: bool = llm.check { question = "C?" }',
    "d": 'criterion d: label{x, y} = llm.choose { question = "D?" }',
    "e": 'criterion e: bool = llm.check { question = "E?" }',
}
TAIL = """node xd = transform.map(value: d) { values = { x: 1, y: 5 } }
node m = reduce.mean(inputs: [a, xd])
node n = gate.cap(value: m, when: c) { max = 3 }
node o = gate.cap(value: n, when: e) { max = 4 }
node p = reduce.max(inputs: [o, b])
sink p
readout pointwise { output = score[0, 10] }
"""


def source(groups: list[list[str]]) -> str:
    lines = ["rubric r { version = 1 }", "contract { scale = score[0, 10] }", *POOL.values()]
    lines += [f"group g{i} = [{', '.join(members)}]" for i, members in enumerate(groups)]
    return "\n".join(lines) + "\n" + TAIL


@st.composite
def groupings(draw) -> list[list[str]]:
    """Disjoint groups of two or more criteria, each in a random order."""
    names = draw(st.permutations(sorted(POOL)))
    groups, at = [], 0
    while at <= len(names) - 2 and draw(st.booleans()):
        size = draw(st.integers(2, len(names) - at))
        groups.append(list(names[at : at + size]))
        at += size
    return groups


@settings(max_examples=25, deadline=None)
@given(groupings())
def test_grouping_changes_the_hashes_of_its_members_only_and_formats_stably(groups):
    plain = check_source(source([]), "r.rbg")
    grouped = check_source(source(groups), "r.rbg")
    assert plain.graph is not None and grouped.graph is not None, grouped.diagnostics
    before, after = criterion_hashes(plain.graph), criterion_hashes(grouped.graph)
    members = {m for g in groups for m in g}
    assert {n for n in before if before[n] != after[n]} == members
    text = format_source(source(groups)).output
    assert text is not None
    assert format_source(text).output == text
    assert parse(text, "r.rbg").module == parse(source(groups), "r.rbg").module


@settings(max_examples=25, deadline=None)
@given(groupings().filter(bool))
def test_a_groups_prompt_asks_for_its_members_in_its_order(groups):
    graph = check_source(source(groups), "r.rbg").graph
    assert graph is not None
    by_name = {c.name: c for c in graph.criteria}
    item = Item("i", "Task?", {"response": "An answer."})
    for g in groups:
        members = tuple(by_name[m] for m in g)
        prompt = prepare_group(members, item, "response")
        assert prompt.response_format is not None
        schema = prompt.response_format["json_schema"]["schema"]
        assert schema["required"] == [*g, "reason"]
        text = prompt.render().request.messages[1]["content"]
        assert [text.index(f"`{m}`:") for m in g] == sorted(text.index(f"`{m}`:") for m in g)
