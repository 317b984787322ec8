"""The call key and the prompt hash are assembled from parts, for speed:
they must equal the hash of the whole request as canonical JSON (the
definition, so caches written before stay valid), and every input that
changes what the judge is shown must change the key. A judge's request is
keyed by its prompt's digest (key version 2: template and shown values, no
rendering), which must change whenever the rendered messages would."""

from __future__ import annotations

import hashlib
import json

import attrs
import pytest

from rubriclang import template as template_module
from rubriclang.checker import check_source
from rubriclang.interp.items import Item
from rubriclang.llm.cache import call_key, call_keys
from rubriclang.llm.client import ChatRequest, Sampling
from rubriclang.llm.prompting import nudge, prepare, prompt_hash, render
from rubriclang.template import fill_digest, parse


def _defined_key(identity, model, request, profile=None):
    """Version 1 (the messages) or, for a request with a prompt digest, 2."""
    body = request.body(model)
    if request.prompt_digest is not None:
        body["messages"] = "prompt/2:" + request.prompt_digest
    key = {"server": identity, "body": body}
    if profile is not None:
        key["profile"] = profile
    return hashlib.sha256(
        json.dumps(key, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()
    ).hexdigest()


def _defined_prompt_hash(template_id, messages):
    blob = json.dumps(
        {"template": template_id, "messages": list(messages)}, sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


MESSAGES = [
    ({"role": "user", "content": "Rate it."},),
    (
        {"role": "system", "content": "Judge."},
        {"role": "user", "content": 'Ünïcode "quoted" \\ back\nline \x00messages\x00 \u2028'},
    ),
    (),
]
FORMATS = [
    None,
    {"type": "json_object"},
    {"type": "json_schema", "json_schema": {"name": "n", "schema": {"type": "object", "z": 1, "a": [2]}}},
]
SAMPLINGS = [
    Sampling(),
    Sampling(temperature=None, max_tokens=None, seed=None),
    Sampling(top_p=0.9, logprobs=True, top_logprobs=5),
]


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


# --- key version 2: the prompt's digest stands for the rendered messages ---------

OWN = '''criterion own: bool = llm.check {
  question = "Is it kind?"
  prompt = """
## system
Judge {{question}}
## user
{{#reference}}Reference: {{reference}}
{{/reference}}{{response}}
"""
}
'''


def _variants():
    """(criterion, item) pairs: every criterion of GRAPH and one with its own
    template, over items that differ in each field, some only in a field a
    prompt does not show, some with values that run into each other."""
    graphs = [
        _graph(),
        _graph(GRAPH.replace("sink helpful", OWN + "sink helpful")),
        _graph(GRAPH.replace('"Is it harmful?"', '"Is it harmful? Say so."')),
    ]
    items = [
        ITEM,
        attrs.evolve(ITEM, input="Task"),
        attrs.evolve(ITEM, input="Task?", candidates={"response": "Answer.\x00"}),
        attrs.evolve(ITEM, input="Task?A", candidates={"response": "nswer."}),
        attrs.evolve(ITEM, input="", candidates={"response": "Task?Answer."}),
        attrs.evolve(ITEM, reference="Ref. 2"),
        attrs.evolve(ITEM, reference=""),
        attrs.evolve(ITEM, rubric="Rubric 2."),
        attrs.evolve(ITEM, rubric=None),
        attrs.evolve(ITEM, id="other id"),  # not shown: the same prompts
    ]
    out = []
    for graph in graphs:
        for crit in graph.criteria:
            for item in items:
                try:
                    out.append((crit, item, render(crit, item, "response")))
                except Exception:  # an item without the reference a prompt needs
                    continue
    return out


def test_two_prompts_share_a_digest_only_when_they_render_the_same_messages():
    # (the response format, sampling and server are in the key beside the digest)
    by_digest: dict = {}
    by_request: dict = {}
    for _crit, _item, rendered in _variants():
        request = rendered.request
        shown = json.dumps(request.messages)
        by_digest.setdefault(request.prompt_digest, set()).add(shown)
        by_request.setdefault(shown, set()).add(request.prompt_digest)
    assert len(by_digest) >= 30  # 6 criteria, each shown 4 to 7 ways
    assert all(len(shown) == 1 for shown in by_digest.values())  # one digest, one rendering
    # and one rendering, one digest: the digest reads only the values shown
    assert all(len(digests) == 1 for digests in by_request.values())


def test_a_judge_request_is_keyed_by_its_digest_as_the_key_defines():
    for crit, item, rendered in _variants()[:12]:
        request = attrs.evolve(rendered.request, sampling=Sampling(seed=3), affinity="x")
        assert request.prompt_digest == prepare(crit, item, "response").digest
        key = call_key("s", "m", request, "p")
        assert key == _defined_key("s", "m", request, "p")
        # the messages are not read: a request without them has the same key
        assert key == call_key("s", "m", attrs.evolve(request, messages=()), "p")
        # and version 1, the key of the messages, is the second place to look
        assert call_keys("s", "m", request, "p") == [
            key,
            _defined_key("s", "m", attrs.evolve(request, prompt_digest=None), "p"),
        ]


def test_the_key_still_changes_with_server_model_profile_sampling_and_format():
    request = render(_graph().criteria[0], ITEM, "response").request
    keys = {
        call_key("s", "m", request),
        call_key("s2", "m", request),
        call_key("s", "m2", request),
        call_key("s", "m", request, "p"),
        call_key("s", "m", attrs.evolve(request, sampling=Sampling(seed=1))),
        call_key("s", "m", attrs.evolve(request, response_format=None)),
        call_key("s", "m", attrs.evolve(request, prompt_digest=None)),
    }
    assert len(keys) == 7


def test_a_template_digest_changes_with_its_text_and_with_the_fill_rules(monkeypatch):
    def digest(text, name="t@v1"):
        template, problems = parse(text, name)
        assert template is not None, problems
        return fill_digest(template)

    base = digest("## system\nJudge.\n## user\n{{response}}")
    assert digest("## system\nJudge.\n## user\n{{response}}", "other@v9") == base  # the name renders nothing
    assert digest("## system\nJudge!\n## user\n{{response}}") != base
    assert digest("## user\nJudge.\n{{response}}") != base
    assert digest("## system\nJudge.\n## user\n{{input}}") != base
    assert digest("## system\nJudge.\n## user\n{{#response}}{{response}}{{/response}}") != base
    monkeypatch.setattr(template_module, "FILL_VERSION", template_module.FILL_VERSION + 1)
    assert digest("## system\nJudge.\n## user\n{{response}}") != base


def test_an_edited_own_template_changes_the_key():
    own = _graph(GRAPH.replace("sink helpful", OWN + "sink helpful")).criteria[-1]
    edited = _graph(
        GRAPH.replace("sink helpful", OWN.replace("Judge {{question}}", "Judge: {{question}}") + "sink helpful")
    ).criteria[-1]
    first, second = render(own, ITEM, "response"), render(edited, ITEM, "response")
    assert first.request.messages != second.request.messages
    assert call_key("s", "m", first.request) != call_key("s", "m", second.request)


def test_a_nudged_request_is_keyed_by_its_messages_never_by_the_first_prompt():
    rendered = render(_graph().criteria[0], ITEM, "response")
    again = nudge(rendered.request, "no idea", "no `score` found")
    assert again.prompt_digest is None and again.prompt_hash is None
    assert call_key("s", "m", again) == _defined_key("s", "m", again)
    assert call_key("s", "m", again) != call_key("s", "m", rendered.request)


def test_a_comment_only_edit_renders_the_same_messages_under_another_key():
    # The prompt hash, cached with the call, names the template: a hit must never report another's.
    own = _graph(GRAPH.replace("sink helpful", OWN + "sink helpful")).criteria[-1]
    noted = _graph(
        GRAPH.replace("sink helpful", OWN.replace('"""\n## system', '"""\n<!-- a note -->\n## system') + "sink helpful")
    ).criteria[-1]
    first, second = render(own, ITEM, "response"), render(noted, ITEM, "response")
    assert first.request.messages == second.request.messages and first.template != second.template
    assert first.prompt_hash != second.prompt_hash
    assert call_key("s", "m", first.request) != call_key("s", "m", second.request)
