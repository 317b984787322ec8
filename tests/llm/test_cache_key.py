"""The call key and the prompt hash are assembled from parts, for speed:
they must equal the hash of the whole request as canonical JSON (the
definition, so caches written before stay valid), and every input that
changes what the judge is shown must change the key."""

from __future__ import annotations

import hashlib
import json

import attrs
import pytest

from rubriclang.checker import check_source
from rubriclang.interp.items import Item
from rubriclang.llm.cache import call_key
from rubriclang.llm.client import ChatRequest, Sampling
from rubriclang.llm.prompting import prompt_hash, render


def _defined_key(identity, model, request, profile=None):
    key = {"server": identity, "body": request.body(model)}
    if profile is not None:
        key["profile"] = profile
    return hashlib.sha256(json.dumps(key, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


def _defined_prompt_hash(template_id, messages):
    blob = json.dumps({"template": template_id, "messages": list(messages)}, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


MESSAGES = [
    ({"role": "user", "content": "Rate it."},),
    ({"role": "system", "content": "Judge."}, {"role": "user", "content": 'Ünïcode "quoted" \\ back\nline \x00messages\x00 \u2028'}),
    (),
]
FORMATS = [None, {"type": "json_object"}, {"type": "json_schema", "json_schema": {"name": "n", "schema": {"type": "object", "z": 1, "a": [2]}}}]
SAMPLINGS = [Sampling(), Sampling(temperature=None, max_tokens=None, seed=None), Sampling(top_p=0.9, logprobs=True, top_logprobs=5)]


@pytest.mark.parametrize("messages", MESSAGES)
@pytest.mark.parametrize("response_format", FORMATS)
@pytest.mark.parametrize("sampling", SAMPLINGS)
@pytest.mark.parametrize("profile", [None, "strict", "\x00messages\x00"])
def test_the_assembled_key_is_the_hash_of_the_whole_request(messages, response_format, sampling, profile):
    request = ChatRequest(messages, sampling, response_format)
    for identity, model in [("http://h/v1", "m"), ('s "x" \x00messages\x00', "\x00messages\x00")]:
        assert call_key(identity, model, request, profile) == _defined_key(identity, model, request, profile)


@pytest.mark.parametrize("messages", MESSAGES)
def test_the_assembled_prompt_hash_is_the_hash_of_template_and_messages(messages):
    assert prompt_hash("rate@v2", messages) == _defined_prompt_hash("rate@v2", messages)


def test_keys_stay_right_when_calls_of_different_formats_and_samplings_alternate():
    formats = [{"type": "json_object"}, {"type": "json_object"}, {"type": "text"}, None]
    samplings = [Sampling(), Sampling(seed=1)]
    for _ in range(3):  # the second and third rounds are answered from the remembered frames
        for fmt in formats:
            for sampling in samplings:
                request = ChatRequest(MESSAGES[1], sampling, fmt)
                assert call_key("s", "m", request, "p") == _defined_key("s", "m", request, "p")


GRAPH = """rubric k { version = 1 }
contract { scale = score[1, 5] }
criterion helpful: ordinal[1, 5] = llm.rate {
  question = "How helpful is it?"
  anchors = { 1: "Useless.", 5: "Excellent." }
  with_reference = true
}
criterion harmful: bool = llm.check { question = "Is it harmful?" }
criterion tone: label{calm, rude} = llm.choose { question = "What tone?" }
criterion direct: ordinal[1, 5] = llm.rate {
  question = "How good is it overall?"
  anchors = { 1: "Bad.", 5: "Good." }
  template = prometheus
}
sink helpful
readout pointwise { output = ordinal[1, 5] }
"""


def _graph(text=GRAPH):
    graph = check_source(text, "k.rbg").graph
    assert graph is not None
    return graph


ITEM = Item(id="a", input="Task?", candidates={"response": "Answer."}, reference="Ref.", rubric="Rubric.")


def _keys(graph, item):
    out = {}
    for crit in graph.criteria:
        r = render(crit, item, "response")
        out[crit.name] = (call_key("s", "m", attrs.evolve(r.request, sampling=Sampling())), r.prompt_hash)
    return out


@pytest.mark.parametrize(
    "change",
    [
        {"input": "Task, reworded?"},
        {"candidates": {"response": "Answer, reworded."}},
        {"reference": "Another reference."},
        {"rubric": "Another rubric."},
    ],
)
def test_every_item_field_a_prompt_shows_changes_its_key_and_hash(change):
    graph = _graph()
    base = _keys(graph, ITEM)
    changed = _keys(graph, attrs.evolve(ITEM, **change))
    everyone = {"helpful", "harmful", "tone", "direct"}
    shown = {"reference": {"helpful"}, "rubric": {"direct"}}.get(next(iter(change)), everyone)
    for name in base:
        if name in shown:
            assert changed[name][0] != base[name][0] and changed[name][1] != base[name][1], name
        else:  # a field the prompt does not show leaves its key alone
            assert changed[name] == base[name], name


@pytest.mark.parametrize(
    "old, new",
    [
        ('"How helpful is it?"', '"How useful is it?"'),
        ('5: "Excellent."', '5: "Superb."'),
        ('"Is it harmful?"', '"Is it dangerous?"'),
        ("label{calm, rude}", "label{calm, rude, dry}"),
        ('"What tone?"', '"Which tone?"'),
        ('question = "What tone?"', 'question = "What tone?"\n  descriptions = { calm: "Even." }'),
    ],
)
def test_every_criterion_parameter_a_prompt_shows_changes_its_key(old, new):
    base = _keys(_graph(), ITEM)
    changed = _keys(_graph(GRAPH.replace(old, new)), ITEM)
    assert sum(changed[n][0] != base[n][0] for n in base) == 1
    # a fresh graph with the same text renders the same keys: nothing stale is remembered
    assert _keys(_graph(), ITEM) == base


def test_a_criterion_rendered_again_gives_the_same_request_as_the_first_time():
    graph = _graph()
    crit = graph.criteria[0]
    first, second = render(crit, ITEM, "response"), render(crit, ITEM, "response")
    assert first == second
    assert first.prompt_hash == _defined_prompt_hash(first.template, first.request.messages)
