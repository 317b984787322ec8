"""Criterion calls in flight: the bound, the order calls start in, and what
cancelling an item (or ending a run early) does to its calls."""

import asyncio

import pytest

import rubriclang
from rubriclang.interp.backend import Judgment
from rubriclang.interp.engine import Interpreter
from rubriclang.interp.items import item_from_json
from rubriclang.interp.slots import Slots

GRAPH = """
rubric gated { version = 1 }
contract { scale = score[1, 5] }
criterion a: ordinal[1, 5] = human.annotation { key = "a" }
criterion b: ordinal[1, 5] = human.annotation { key = "b" }
node m = reduce.mean(inputs: [a, b])
sink m
readout pointwise { output = score[1, 5] }
"""


class Gated:
    """A backend whose every judgment waits until the test lets it finish;
    it records the calls started, running and cancelled."""

    name = "gated"

    def __init__(self):
        self.started: list[str] = []
        self.running = 0
        self.peak = 0
        self.cancelled: list[str] = []
        self.gates: dict[str, asyncio.Event] = {}

    def handles(self, procedure):
        return procedure == "human.annotation"

    def gate(self, key: str) -> asyncio.Event:
        return self.gates.setdefault(key, asyncio.Event())

    async def judge(self, request):
        key = f"{request.item.id}/{request.criterion.name}"
        self.started.append(key)
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            await self.gate(key).wait()
        except asyncio.CancelledError:
            self.cancelled.append(key)
            raise
        finally:
            self.running -= 1
        return Judgment(3)


def _items(n):
    return [item_from_json({"id": f"i{i}", "input": "q", "response": "r"}, "test") for i in range(n)]


async def _settle():
    for _ in range(5):
        await asyncio.sleep(0)


def _open_all(backend: Gated):
    for i in range(100):
        for c in "ab":
            backend.gate(f"i{i}/{c}").set()


def test_calls_start_at_most_the_bound_at_once_in_the_order_submitted():
    backend = Gated()
    interp = Interpreter(rubriclang.loads(GRAPH).graph, [backend], concurrency=3)

    async def go():
        run = asyncio.ensure_future(_collect(interp.run(_items(4))))
        await _settle()
        assert backend.started == ["i0/a", "i0/b", "i1/a"]  # the bound, in order
        backend.gate("i0/b").set()  # a later call finishing frees a slot for the next in line
        await _settle()
        assert backend.started == ["i0/a", "i0/b", "i1/a", "i1/b"]
        _open_all(backend)
        return await run

    results = asyncio.run(go())
    assert [r.item.id for r in results] == ["i0", "i1", "i2", "i3"]
    assert backend.peak == 3
    assert len(backend.started) == 8 and not backend.cancelled


async def _collect(agen):
    return [r async for r in agen]


def test_cancelling_an_items_evaluation_cancels_its_running_calls_and_never_starts_its_waiting_ones():
    backend = Gated()
    interp = Interpreter(rubriclang.loads(GRAPH).graph, [backend], concurrency=1)

    async def go():
        first = asyncio.ensure_future(interp.evaluate_async(_items(1)[0]))
        await _settle()
        assert backend.started == ["i0/a"]  # i0/b waits for the one slot
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        await _settle()
        assert backend.cancelled == ["i0/a"]
        # The slot is free again, and the cancelled item's waiting call was dropped.
        second = asyncio.ensure_future(interp.evaluate_async(_items(2)[1]))
        await _settle()
        assert backend.started == ["i0/a", "i1/a"]
        _open_all(backend)
        return await second

    result = asyncio.run(go())
    assert result.composition.decision.status == "ok"


def test_closing_a_run_early_cancels_every_call_in_flight_and_starts_no_more():
    backend = Gated()
    interp = Interpreter(rubriclang.loads(GRAPH).graph, [backend], concurrency=4)

    async def go():
        run = interp.run(_items(10))
        backend.gate("i0/a").set()
        backend.gate("i0/b").set()
        first = await run.__anext__()
        await _settle()
        running = list(backend.started[2:])
        await run.aclose()
        await _settle()
        return first, running

    first, running = asyncio.run(go())
    assert first.item.id == "i0"
    assert len(running) == 4 and sorted(backend.cancelled) == sorted(running)
    assert len(backend.started) == 6  # nothing started after the run was closed


class Abort(BaseException):
    """Not an Exception: the interpreter records none of these as a failed judgment."""


def test_a_backend_raising_a_base_exception_raises_it_from_the_item_not_a_hang():
    class Aborting(Gated):
        async def judge(self, request):
            raise Abort

    interp = Interpreter(rubriclang.loads(GRAPH).graph, [Aborting()], concurrency=2)

    async def go():
        return await asyncio.wait_for(interp.evaluate_async(_items(1)[0]), 5)

    with pytest.raises(Abort):
        asyncio.run(go())


def test_a_backend_raising_an_exception_gives_a_failed_judgment_and_the_item_still_composes():
    class Broken(Gated):
        async def judge(self, request):
            if request.criterion.name == "a":
                raise ValueError("no such thing")
            return Judgment(4)

    interp = Interpreter(rubriclang.loads(GRAPH).graph, [Broken()], concurrency=2)

    async def go():
        return [r async for r in interp.run(_items(3))]

    results = asyncio.run(asyncio.wait_for(go(), 5))
    assert [r.item.id for r in results] == ["i0", "i1", "i2"]
    for r in results:
        failed = r.judgments["a"]["response"]
        assert failed.error == "backend error: ValueError: no such thing"
        assert r.judgments["b"]["response"].value == 4


def test_a_backend_whose_judge_is_not_a_coroutine_function_gives_failed_judgments_not_a_broken_run():
    class Sync(Gated):
        def judge(self, request):  # a plugin's bug: `judge` must be `async def`
            if request.criterion.name == "a":
                raise ValueError("at once")
            return Judgment(4)

    interp = Interpreter(rubriclang.loads(GRAPH).graph, [Sync()], concurrency=2)

    async def go():
        return [r async for r in interp.run(_items(3))]

    results = asyncio.run(asyncio.wait_for(go(), 5))
    assert [r.item.id for r in results] == ["i0", "i1", "i2"]
    for r in results:
        assert r.judgments["a"]["response"].error == "backend error: ValueError: at once"
        assert r.judgments["b"]["response"].error.startswith("backend error: TypeError: ")


def test_shared_slots_bound_the_calls_of_several_interpreters_together():
    backend = Gated()
    graph = rubriclang.loads(GRAPH).graph
    slots = Slots(3)
    one, two = Interpreter(graph, [backend], 8), Interpreter(graph, [backend], 8)
    one.share_slots(slots)
    two.share_slots(slots)

    async def go():
        items = _items(4)
        tasks = [asyncio.ensure_future(i.evaluate_async(it)) for i, it in zip([one, two, one, two], items, strict=True)]
        await _settle()
        assert backend.running == 3
        _open_all(backend)
        return await asyncio.gather(*tasks)

    assert [r.item.id for r in asyncio.run(go())] == ["i0", "i1", "i2", "i3"]
    assert backend.peak == 3
