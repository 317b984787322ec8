"""The interpreter: determinism under concurrency, error policies, modes, resume."""

import asyncio
import hashlib
import json
import random
from typing import Any

import pytest
from conftest import REPO_ROOT

import rubriclang
from rubriclang.canonical import canonical_json
from rubriclang.interp.backend import Judgment
from rubriclang.interp.engine import Interpreter
from rubriclang.interp.items import ItemError, item_from_json

GRAPH = """
rubric helpful { version = 1 }
contract { scale = score[1, 5] }
criterion a: ordinal[1, 5] = human.annotation { key = "a" }
criterion b: ordinal[1, 5] = human.annotation { key = "b" }
criterion c: score[0, 1]? = human.annotation { key = "c", on_error = abstain }
criterion long: bool = rule.length { over = 5 }
node c5 = transform.rescale(value: c) { to = score[1, 5] }
node q = reduce.weighted_mean(inputs: [a, b, c5]) { weights = [2, 1, 1] }
node capped = gate.cap(value: q, when: long) { max = 3 }
sink capped
readout pointwise { output = ordinal[1, 5] }
readout pairwise { epsilon = 0.5, resolve = tie }
"""


class JitteryAnnotations:
    """A backend that answers deterministically but after random delays, so
    completion order differs from submission order."""

    name = "jittery"

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def handles(self, procedure):
        return procedure == "human.annotation"

    async def judge(self, request):
        await asyncio.sleep(self.rng.random() * 0.002)
        return _annotation(request)


def _annotation(request):
    key = request.criterion.params["key"]
    h = int(hashlib.sha256(f"{request.item.id}/{request.candidate}/{key}".encode()).hexdigest(), 16)
    if key == "c":
        return Judgment(None, error="no rating") if h % 7 == 0 else Judgment((h % 101) / 100)
    return Judgment(1 + h % 5)


def _items(n):
    for i in range(n):
        words = " ".join(["word"] * (i % 9))
        yield item_from_json({"id": f"i{i}", "input": "q", "response": words}, "test")


def _traces(concurrency: int, seed: int) -> str:
    from rubriclang.interp.local import LocalBackend

    rubric = rubriclang.loads(GRAPH)
    interp = Interpreter(rubric.graph, [JitteryAnnotations(seed), LocalBackend()], concurrency)

    async def go():
        return [canonical_json(r.record) async for r in interp.run(_items(120))]

    return "\n".join(asyncio.run(go()))


def test_traces_are_byte_identical_sequential_and_highly_concurrent():
    sequential = _traces(concurrency=1, seed=1)
    concurrent = _traces(concurrency=64, seed=2)
    assert sequential == concurrent
    assert len(sequential.splitlines()) == 120


def test_abstaining_criterion_is_skipped_by_the_reducer():
    rubric = rubriclang.loads(GRAPH)
    res = rubric.evaluate({"id": "x", "input": "", "response": "short", "annotations": {"a": 5, "b": 2}})
    # `c` has no annotation and abstains: mean over a and b with weights 2, 1.
    assert res.composition.values["q"]["response"] == pytest.approx(4.0)
    assert res.composition.decision.decision == 4
    assert "c" in res.composition.errors


def test_a_judgment_made_with_an_error_keeps_no_value():
    assert Judgment(4, error="timed out").value is None
    assert Judgment(4)._replace(error="timed out").value is None
    assert Judgment(4, error="timed out")._replace(error=None) == Judgment(None)
    assert Judgment.failed("down", raw="r") == Judgment(None, raw="r", error="down")
    # However it was made, it composes as the failure it is, compiled or not.
    from rubriclang.interp.compose import Composer

    composer = Composer(rubriclang.loads(GRAPH).graph)
    judgments = {"a": {"r": Judgment(5, error="down")}, "b": {"r": Judgment(5)}, "c": {"r": Judgment(1.0)}}
    judgments["long"] = {"r": Judgment(False)}
    for d in (
        composer.compose("pointwise", ("r",), judgments).decision,
        composer.decide("pointwise", ("r",), judgments),
    ):
        assert d.status == "error" and "criterion `a` failed for candidate `r`: down" in (d.error or "")


def test_failing_criterion_fails_the_item_with_the_reason():
    rubric = rubriclang.loads(GRAPH)
    res = rubric.evaluate({"id": "x", "input": "", "response": "short", "annotations": {"a": 5}})
    d = res.composition.decision
    assert d.status == "error"
    assert d.error is not None and "criterion `b` failed" in d.error and "no annotation `b`" in d.error
    assert res.record["readout"]["status"] == "error"


def test_out_of_domain_value_is_an_error_not_a_clamp():
    rubric = rubriclang.loads(GRAPH)
    res = rubric.evaluate({"id": "x", "input": "", "response": "s", "annotations": {"a": 7, "b": 2}})
    assert res.composition.decision.status == "error"
    assert "7 lies outside `ordinal[1, 5]`" in (res.composition.decision.error or "")


def test_pairwise_prefers_by_more_than_epsilon_else_resolves():
    rubric = rubriclang.loads(GRAPH)
    item: dict[str, Any] = {
        "id": "p",
        "input": "",
        "responses": {"x": "s", "y": "s"},
        "annotations": {"x": {"a": 5, "b": 5, "c": 1.0}, "y": {"a": 3, "b": 5, "c": 1.0}},
    }
    res = rubric.evaluate(item)
    assert res.mode == "pairwise"
    d = res.composition.decision
    assert d.decision == "x" and d.margin == pytest.approx(1.0)
    item["annotations"]["y"]["a"] = 5
    item["annotations"]["y"]["c"] = 0.9
    d = rubric.evaluate(item).composition.decision
    assert d.decision == "tie"  # margin 0.1 <= epsilon 0.5, resolve = tie


def test_graph_without_the_needed_readout_is_a_clear_error():
    src = GRAPH.replace("readout pairwise { epsilon = 0.5, resolve = tie }\n", "")
    rubric = rubriclang.loads(src)
    with pytest.raises(Exception, match="has no `pairwise` readout"):
        rubric.evaluate({"id": "p", "input": "", "responses": {"x": "a", "y": "b"}})


def test_pairwise_item_needs_two_candidates():
    with pytest.raises(ItemError, match="exactly two `responses`"):
        item_from_json({"id": "p", "responses": {"x": "a", "y": "b", "z": "c"}}, "f.jsonl:3")


def test_reformatting_does_not_change_the_graph_hash():
    a = rubriclang.loads(GRAPH)
    b = rubriclang.loads("# a comment\n" + GRAPH.replace(" { version = 1 }", " {\n  version = 1\n}"))
    assert a.interpreter.hash == b.interpreter.hash
    c = rubriclang.loads(GRAPH.replace("weights = [2, 1, 1]", "weights = [1, 1, 1]"))
    assert c.interpreter.hash != a.interpreter.hash


def test_writing_a_default_out_changes_no_hash():
    a = rubriclang.loads(GRAPH)
    b = rubriclang.loads(GRAPH.replace('{ key = "a" }', '{ key = "a", on_error = fail }'))
    assert a.interpreter.hash == b.interpreter.hash
    assert a.interpreter.criterion_hashes == b.interpreter.criterion_hashes


def test_trace_records_every_judgment_operator_value_and_decision():
    rubric = rubriclang.loads(GRAPH)
    rec = rubric.evaluate(
        {"id": "x", "input": "", "response": "one two three four five six", "annotations": {"a": 5, "b": 5, "c": 1.0}}
    ).record
    assert rec["schema"] == "rubriclang.trace/1"
    assert set(rec["criteria"]) == {"a", "b", "c", "long"}
    assert rec["criteria"]["long"]["response"]["raw"] == 6
    assert rec["operators"]["q"]["response"] == 5.0
    assert rec["operators"]["capped"]["response"] == 3
    assert rec["readout"] == {"status": "ok", "decision": 3, "raw": 3, "margin": None, "error": None}
    json.loads(canonical_json(rec))


class HalfKnown(JitteryAnnotations):
    """Answers some judgments at once (`judge_known`), the rest when awaited;
    with `broken`, its `judge_known` raises instead."""

    def __init__(self, seed: int, broken: bool = False):
        super().__init__(seed)
        self.broken = broken
        self.awaited = 0

    def judge_known(self, requests):
        if self.broken:
            raise RuntimeError("a bug in the fast path")
        return [_annotation(r) if r.criterion.params["key"] == "a" else None for r in requests]

    async def judge(self, request):
        self.awaited += 1
        return await super().judge(request)


@pytest.mark.parametrize("broken", [False, True])
def test_judgments_known_at_once_or_awaited_give_the_same_traces(broken):
    from rubriclang.interp.local import LocalBackend

    graph = rubriclang.loads(GRAPH).graph
    items = list(_items(30))

    async def traces(backend):
        interp = Interpreter(graph, [backend, LocalBackend()], concurrency=4)
        return [canonical_json(r.record) async for r in interp.run(items)]

    backend = HalfKnown(1, broken)
    assert asyncio.run(traces(backend)) == asyncio.run(traces(JitteryAnnotations(1)))
    # each item's `a` was known at once, and only `b` and `c` awaited, unless the fast path broke
    assert backend.awaited == (3 if broken else 2) * len(items)


def test_a_local_backend_subclass_with_its_own_judge_is_awaited_for_every_judgment():
    from rubriclang.interp.local import LocalBackend

    class Counting(LocalBackend):
        calls = 0

        async def judge(self, request):
            Counting.calls += 1
            return self.judge_now(request)

    graph = rubriclang.loads(GRAPH).graph
    items = list(_items(5))

    async def go():
        return [r async for r in Interpreter(graph, [JitteryAnnotations(1), Counting()]).run(items)]

    asyncio.run(go())
    assert Counting.calls == len(items)  # the rule `long`, once per item


def test_api_docstring_example_runs_as_written(monkeypatch):
    import doctest

    from rubriclang import api

    monkeypatch.chdir(REPO_ROOT)
    failed, attempted = doctest.testmod(api, raise_on_error=False, report=True)
    assert attempted >= 4 and failed == 0
