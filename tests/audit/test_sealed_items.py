"""A sealed suite holds its items in the items-file format, and suites sealed
before (schema /1) read back to the same items."""

from __future__ import annotations

import json

import pytest

from rubriclang.audit.files import write_json
from rubriclang.audit.seal import SCHEMA, SealedError, content_hash, read_sealed, seal
from rubriclang.canonical import canonical_json
from rubriclang.interp.items import Item, ItemError, item_from_json, item_to_json

POINTWISE = Item(
    id="p1",
    input="q",
    candidates={"response": "r"},
    reference="ref",
    gold=4,
    annotations={"response": {"fluent": 3}},
    recorded={"response": {"k": True}},
    rubric="own",
)
# `z` first: sorted keys would put `a` first and swap the positions.
PAIRWISE = Item(
    id="w1",
    input="q",
    candidates={"z": "second text", "a": "first text"},
    gold="z",
    annotations={"z": {"k": 1}, "a": {"k": 2}},
)
BARE = Item(id="b", input="", candidates={"response": ""})


@pytest.mark.parametrize("item", [POINTWISE, PAIRWISE, BARE], ids=["pointwise", "pairwise", "bare"])
def test_an_item_written_as_json_reads_back_the_same_even_through_canonical_json(item):
    back = item_from_json(json.loads(canonical_json(item_to_json(item))), "x")
    assert back == item
    assert list(back.candidates) == list(item.candidates)


def test_the_written_item_is_in_the_documented_items_file_form():
    assert item_to_json(POINTWISE) == {
        "id": "p1",
        "input": "q",
        "response": "r",
        "reference": "ref",
        "gold": 4,
        "rubric": "own",
        "annotations": {"fluent": 3},
        "recorded": {"k": True},
    }
    assert item_to_json(PAIRWISE)["responses"] == [["z", "second text"], ["a", "first text"]]


@pytest.mark.parametrize(
    "responses, message",
    [
        ([["a", "x"]], "exactly two"),
        ([["a", "x"], ["a", "y"]], "twice"),
        ([["a", "x"], "b"], "pairs"),
        ("ab", "exactly two"),
    ],
)
def test_a_bad_responses_list_is_an_error_at_its_line(responses, message):
    with pytest.raises(ItemError, match=message) as err:
        item_from_json({"id": "1", "responses": responses}, "f.jsonl:3")
    assert str(err.value).startswith("f.jsonl:3")


def _write(tmp_path, doc):
    doc["hash"] = content_hash(doc)
    path = tmp_path / "sealed.json"
    write_json(str(path), doc)  # a sealed document's lists are made as they are written
    return str(path)


def test_a_new_suite_holds_items_in_the_items_file_form(tmp_path):
    doc = seal({"name": "j"}, [item_to_json(PAIRWISE)], [], [], [], {}, {}, {})
    assert doc["schema"] == SCHEMA
    sealed, raw = read_sealed(_write(tmp_path, doc))
    assert tuple(sealed.items) == (PAIRWISE,) and "responses" in raw["items"][0]


def test_a_suite_sealed_with_schema_1_reads_back_the_same_items(tmp_path):
    # What schema /1 wrote: the Item's attributes, candidates as pairs.
    def v1(it: Item) -> dict:
        return {
            "id": it.id,
            "input": it.input,
            "candidates": [[c, t] for c, t in it.candidates.items()],
            "reference": it.reference,
            "rubric": it.rubric,
            "gold": it.gold,
            "annotations": it.annotations,
            "recorded": it.recorded,
        }

    doc = seal({"name": "j"}, [v1(POINTWISE), v1(PAIRWISE), v1(BARE)], [], [], [], {}, {}, {})
    doc["schema"] = "rubriclang.audit.sealed/1"
    sealed, _ = read_sealed(_write(tmp_path, doc))
    assert tuple(sealed.items) == (POINTWISE, PAIRWISE, BARE)
    assert list(sealed.items[1].candidates) == ["z", "a"]


def test_a_sealed_item_that_is_not_an_item_is_a_sealed_error_not_a_traceback(tmp_path):
    doc = seal({"name": "j"}, [{"id": "1", "input": "q"}], [], [], [], {}, {}, {})
    with pytest.raises(SealedError, match=r"malformed sealed suite .*items\[0\].*neither `response`"):
        read_sealed(_write(tmp_path, doc))
