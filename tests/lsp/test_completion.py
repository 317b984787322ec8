"""Completion at a cursor (`|` in each case), on text that is being typed
and so usually does not parse."""

from __future__ import annotations

import pytest

from rubriclang.catalog import load_catalog
from rubriclang.lsp.completion import complete
from rubriclang.lsp.context import declared_names

HEAD = 'criterion a: bool = llm.check {}\ncriterion b: ordinal[1, 5] = llm.rate { question = "😀?" }\n'


def labels(source: str) -> list[str]:
    offset = source.index("|")
    return [item.label for item in complete(source.replace("|", "", 1), offset, load_catalog()).items]


def test_an_empty_file_offers_the_declaration_keywords():
    assert labels("|") == ["rubric", "contract", "criterion", "node", "sink", "readout", "item", "group"]


def test_a_finished_declaration_is_followed_by_keywords():
    assert "node" in labels(HEAD + "|")
    assert "sink" in labels(HEAD + "sink b\nre|")


def test_procedures_after_a_criterions_equals_sign():
    found = labels("criterion c: label{x, y} = |")
    assert "llm.choose" in found and "rule.regex" in found
    assert not any(name.startswith(("reduce.", "gate.")) for name in found)


def test_operators_after_a_nodes_equals_sign():
    found = labels(HEAD + "node n = |")
    assert {"reduce.mean", "gate.veto", "transform.map"} <= set(found)
    assert not any(name.startswith("llm.") for name in found)


@pytest.mark.parametrize("namespace", ["transform", "reduce", "gate"])
def test_only_the_namespace_being_typed(namespace):
    found = labels(HEAD + f"node n = {namespace}.|")
    assert found and all(name.startswith(namespace + ".") for name in found)


def test_completion_replaces_the_whole_dotted_word():
    text = HEAD + "node n = reduce.we"
    result = complete(text, len(text), load_catalog())
    assert text[result.start :] == "reduce.we"


def test_port_names_inside_an_operator_call_leave_out_connected_ones():
    assert labels(HEAD + "node n = gate.cap(|") == ["value", "when"]
    assert labels(HEAD + "node n = gate.cap(when: a, |)") == ["value"]


def test_port_completion_inserts_the_colon():
    text = HEAD + "node n = transform.not("
    (item,) = complete(text, len(text), load_catalog()).items
    assert item.insert == "value: "


def test_node_names_in_a_single_port_and_in_a_list():
    assert labels(HEAD + "node n = transform.not(value: |)") == ["a", "b"]
    assert labels(HEAD + "node n = reduce.mean(inputs: [b, |])") == ["a", "b"]


def test_a_node_is_not_offered_to_itself():
    assert labels(HEAD + "node n = reduce.mean(inputs: [|])\nnode m = transform.not(value: n)") == ["a", "b", "m"]


def test_node_names_after_sink():
    assert labels(HEAD + "node n = transform.not(value: a)\nsink |") == ["a", "b", "n"]


def test_parameters_of_a_criterions_procedure_including_common_ones():
    assert labels("criterion c: bool = llm.check { | }") == [
        "question",
        "with_reference",
        "prompt",
        "answer",
        "model",
        "on_error",
    ]


def test_parameters_already_given_are_left_out():
    assert labels('criterion c: bool = llm.check { question = "x" | }') == [
        "with_reference",
        "prompt",
        "answer",
        "model",
        "on_error",
    ]


def test_a_parameter_after_a_type_value_is_a_parameter_name():
    assert labels("readout pointwise { output = ordinal[1, 5] | }") == ["quantize", "ties"]


def test_parameters_of_each_kind_of_block():
    assert labels("rubric r { | }") == ["version", "description"]
    assert labels("contract { | }") == ["scale"]
    assert labels("readout pairwise { | }") == ["epsilon", "resolve"]
    assert labels(HEAD + "node n = reduce.weighted_mean(inputs: [b]) { | }") == ["weights"]


def test_parameter_items_carry_their_spec():
    text = "readout pairwise { "
    item = next(i for i in complete(text, len(text), load_catalog()).items if i.label == "resolve")
    assert item.insert == "resolve = "
    assert "abstain" in item.detail and "neither candidate" in item.documentation


def test_values_of_a_choice_or_boolean_parameter():
    assert labels("readout pairwise { resolve = | }") == ["abstain", "tie", "first", "second"]
    assert labels("criterion c: bool = llm.check { with_reference = | }") == ["true", "false"]


def test_an_unknown_operator_has_no_ports_or_parameters():
    assert labels(HEAD + "node n = reduce.nope(|") == []
    assert labels(HEAD + "node n = reduce.nope(inputs: [a]) { | }") == []


def test_nothing_inside_a_string_a_prompt_or_a_comment():
    assert labels('criterion c: bool = llm.check { question = "wh|" }') == []
    assert labels('criterion c: bool = llm.check {\n  question = """\n    Is 😀 it |') == []
    assert labels("# node n = |") == []


def test_nothing_inside_a_map_value():
    assert labels("criterion c: ordinal[1, 5] = llm.rate { anchors = { 1: | } }") == []


def test_a_broken_declaration_above_does_not_hide_the_context_below():
    assert labels("node n = reduce.mean(inputs: [a\ncriterion c: bool = llm.check { | }") == [
        "question",
        "with_reference",
        "prompt",
        "answer",
        "model",
        "on_error",
    ]


def test_declared_names_come_from_declarations_only():
    text = HEAD + "node n = transform.not(value: a)  node m = transform.not(value: n)\nsink n\n# node fake\n"
    assert declared_names(text) == [("a", "criterion"), ("b", "criterion"), ("n", "node"), ("m", "node")]


SHAPE = "item { input: conversation, documents: documents, tags: list[text]? }\n"


def test_a_field_of_the_item_shape_is_completed_with_the_kinds_it_may_be_declared_as():
    assert labels("item { tags: | }") == ["text", "number", "bool", "json", "list[text]", "documents", "conversation"]
    assert labels("item { input: | }") == ["text", "conversation"]
    assert labels("item { input: conversation\n  | }") == ["response", "reference", "rubric"]


def test_after_a_criterions_procedure_each_is_offered_then_its_element_in_and_a_declared_field():
    assert labels(SHAPE + "criterion a: bool = llm.check |")[0] == "each"
    assert labels(SHAPE + "criterion a: bool = llm.check each |") == [
        "document",
        "text",
        "turn",
        "assistant_turn",
        "tool_call",
    ]
    assert labels(SHAPE + "criterion a: bool = llm.check each document |") == ["in"]
    assert labels(SHAPE + "criterion a: bool = llm.check each document in |") == ["documents"]
    assert labels(SHAPE + "criterion a: bool = llm.check each tool_call in |") == ["input"]
    assert labels(SHAPE + "criterion a: bool = llm.check each text in t| {}") == ["tags"]


def test_each_is_not_offered_after_a_criterions_block_or_its_field():
    assert "each" not in labels(SHAPE + "criterion a: bool = llm.check {}\n|")
    assert "each" not in labels(SHAPE + "criterion a: bool = llm.check each turn in input |")
    block = labels(SHAPE + "criterion a: bool = llm.check each turn in input { | }")
    assert block[:2] == ["question", "with_reference"]
