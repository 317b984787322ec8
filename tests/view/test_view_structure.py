"""The item page shows declared structured fields by their kind: turns with
their roles, tool calls with their arguments and each result beside its
call, documents with ids and titles, JSON indented, lists as lists; every
text escaped, every empty value said; the static export shows the same."""

from __future__ import annotations

import json

import pytest
from audit_html.dom import Dom, Node, tree

from rubriclang.cli.view import load_sources
from rubriclang.items.render import json_text
from rubriclang.view.export import export
from rubriclang.view.pages import Site, export_name

from .structure_fixture import CALL_ARGS, IMG, SCRIPT, make_structured_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return make_structured_run(tmp_path_factory.mktemp("structured"))


@pytest.fixture(scope="module")
def sources(run):
    return load_sources((str(run["graph"]), str(run["items"]), str(run["trace"])))


def _page(sources, item_id: str) -> str:
    return Site(sources).render("item", {"src": "trace.jsonl", "id": item_id})


def _sides(page: str) -> dict[str, Node]:
    """Each side's title -> its body (the element after the title)."""
    out = {}
    for side in tree(page).all("side"):
        h2, body = [c for c in side.children if isinstance(c, Node)]
        out[h2.text] = body
    return out


def _fields(page: str) -> dict[str, Node]:
    return {s.children[0].text: s.children[1] for s in tree(page).all("field", "section")}


def _turns(conversation: Node) -> list[tuple[str, str]]:
    return [(t.all("role")[0].text, t.all("turn-no")[0].text.strip()) for t in conversation.kids("turn")]


def test_a_conversation_shows_each_turn_with_its_role(sources):
    sides = _sides(_page(sources, "full"))
    assert list(sides) == ["Input", "Response"]
    assert sides["Input"].classes == ["conversation"]
    assert _turns(sides["Input"]) == [("system", "[0]"), ("user", "[1]")]
    assert sides["Input"].kids("turn")[1].all("text")[0].text == "Weather in Paris? " + SCRIPT
    # The tool message ([1]) is shown beside its call, not again as a turn of its own.
    assert _turns(sides["Response"]) == [("assistant", "[0]"), ("assistant", "[2]")]
    # Content given as a list of text parts reads as its text.
    assert sides["Response"].kids("turn")[1].all("text")[0].text == "It will be sunny [d1]."


def test_each_tool_call_shows_its_name_indented_arguments_and_its_result_beside_it(sources):
    calling = _sides(_page(sources, "full"))["Response"].kids("turn")[0]
    first, second = calling.kids("call")
    request, results = first.kids("request")[0], first.kids("results")[0]
    head = [c.text for c in request.all("head")[0].children if isinstance(c, Node) and "judged" not in c.classes]
    assert head == ["weather" + IMG, "call_1"]
    assert request.all("json")[0].text == json_text(CALL_ARGS)
    assert json.loads(request.all("json")[0].text) == CALL_ARGS
    (result,) = results.kids("result")
    assert (result.all("role")[0].text, result.all("turn-no")[0].text.strip()) == ("tool", "[1]")
    assert result.all("text")[0].text == "Sunny " + SCRIPT
    # A call with no result says so.
    assert second.kids("results")[0].text == "(no result)"
    assert second.all("json")[0].text == "{}"


def test_documents_json_and_lists_show_by_their_declared_kind(sources):
    fields = _fields(_page(sources, "full"))
    assert list(fields) == ["documents", "tags", "meta"]
    docs = fields["documents"].kids("document")
    assert [[c.text for c in d.all("head")[0].children if isinstance(c, Node)] for d in docs] == [
        ["d1", "Forecast " + SCRIPT],
        ["7"],
    ]
    assert docs[0].all("text")[0].text == "Sun all week."
    assert docs[1].all("empty")[0].text == "empty"
    assert [e.text for e in fields["tags"].kids("entry")] == ["[0] travel", "[1] " + IMG]
    assert json.loads(fields["meta"].text) == {"source": SCRIPT, "turns": [1, 2]}


def test_payloads_in_every_structured_place_are_text(sources):
    dom = Dom(_page(sources, "full"))
    assert "img" not in dom.tags()
    # The page's one script is the viewer's own.
    assert [e.attrs for e in dom.elements if e.tag == "script"] == [{"src": "/static/view.js", "defer": None}]
    # In the input, a tool's name, an argument, a tool result, a document's title, a list and JSON.
    assert dom.text.count(SCRIPT) == 5 and dom.text.count(IMG) == 3


def test_empty_values_say_so_instead_of_a_blank_box(sources):
    page = _page(sources, "empty")
    sides, fields = _sides(page), _fields(page)
    assert sides["Input"].kids("turn")[0].all("empty")[0].text == "empty"
    assert sides["Response"].text == "(no turns)"
    assert {k: v.text for k, v in fields.items()} == {
        "documents": "(no documents)",
        "tags": "(absent)",
        "meta": "(absent)",
    }


def test_the_static_export_renders_the_same_structure(tmp_path, sources):
    export(sources, str(tmp_path))
    for item_id in ("full", "empty"):
        name = export_name("item", {"id": item_id, "src": "trace.jsonl"})
        exported = (tmp_path / name).read_text(encoding="utf-8")
        live = _page(sources, item_id)
        start, end = '<section class="sides">', "<h2>Graph</h2>"
        assert exported[exported.index(start) : exported.index(end)] == live[live.index(start) : live.index(end)]
        assert _sides(exported)["Response"].classes == _sides(live)["Response"].classes


def test_without_the_rubric_a_structured_item_is_refused_with_a_hint_to_give_it(tmp_path, run):
    from click.testing import CliRunner

    from rubriclang.cli.main import cli

    r = CliRunner().invoke(cli, ["view", str(run["items"]), str(run["trace"]), "--export", str(tmp_path / "out")])
    assert r.exit_code == 2
    assert "items.jsonl:1: `response` must be a string, got an array" in r.output
    assert "declares it (`item { ... }`)" in r.output


def test_the_text_filter_finds_words_in_every_declared_field(sources):
    from rubriclang.view.table import Query

    table = sources.traces[0].table

    def found(text: str) -> list[str]:
        return [r.item for r in table.query(Query(text=text)).rows]

    # A document's title, a list entry, a JSON value, a tool's result.
    assert found("forecast") == found("travel") == found('"turns"') == found("sunny <script>") == ["full"]


def test_a_pairwise_items_two_runs_show_side_by_side_as_conversations(tmp_path):
    from click.testing import CliRunner

    from rubriclang.cli.main import cli

    from .structure_fixture import TRAJECTORY

    graph = tmp_path / "pair.rbg"
    graph.write_text(
        "rubric runs { version = 1 }\nitem { input: text, response: conversation }\n"
        "contract { scale = score[0, 1] }\n"
        'criterion done: score[0, 1] = recorded.value { key = "done" }\n'
        "sink done\nreadout pairwise { epsilon = 0.1, resolve = tie }\n",
        encoding="utf-8",
    )
    short = [{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": ""}]
    item = {
        "id": "pair",
        "input": "Weather in Paris?",
        "responses": [["long", TRAJECTORY], ["short", short]],
        "recorded": {"long": {"done": 1}, "short": {"done": 0}},
    }
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps(item) + "\n", encoding="utf-8")
    r = CliRunner().invoke(cli, ["run", str(graph), str(items), "--out", str(tmp_path / "trace.jsonl")])
    assert r.exit_code == 0, r.output
    sides = _sides(_page(load_sources((str(graph), str(items), str(tmp_path / "trace.jsonl"))), "pair"))
    assert list(sides) == ["Input", "Candidate long", "Candidate short"]
    assert sides["Input"].text == "Weather in Paris?"
    assert _turns(sides["Candidate long"]) == [("assistant", "[0]"), ("assistant", "[2]")]
    assert _turns(sides["Candidate short"]) == [("user", "[0]"), ("assistant", "[1]")]
    assert sides["Candidate short"].kids("turn")[1].all("empty")[0].text == "empty"


def test_a_compare_judges_prompt_on_the_item_page_shows_both_runs_in_the_order_asked(tmp_path, monkeypatch):
    from click.testing import CliRunner
    from llm.fault_server import FaultServer

    from rubriclang.cli.main import cli
    from rubriclang.items.render import render
    from rubriclang.items.shape import FieldSpec

    from .structure_fixture import TRAJECTORY

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    graph = tmp_path / "pair.rbg"
    graph.write_text(
        "rubric runs { version = 1 }\nitem { input: text, response: conversation }\n"
        "contract { scale = score[0, 1] }\n"
        'criterion better: score[0, 1] = llm.compare { question = "Which run is better?"\n order = both }\n'
        "sink better\nreadout pairwise { epsilon = 0.1, resolve = tie }\n",
        encoding="utf-8",
    )
    short = [{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": "No idea."}]
    items = tmp_path / "items.jsonl"
    items.write_text(
        json.dumps({"id": "p", "input": "Weather?", "responses": {"long": TRAJECTORY, "short": short}}) + "\n"
    )
    trace = tmp_path / "trace.jsonl"
    with FaultServer(answer=lambda body: json.dumps({"reason": "first", "preference": "A"})) as server:
        r = CliRunner().invoke(cli, ["run", str(graph), str(items), "--out", str(trace), "--base-url", server.url])
        assert r.exit_code == 0, r.output
        asked = sorted((c.body or {})["messages"][-1]["content"] for c in server.chats)
    judgment = tree(_page(load_sources((str(graph), str(items), str(trace))), "p")).all("judgment")[0]
    prompts = [d for d in judgment.elements() if d.tag == "details" and d.children[0].text.startswith("prompt")]
    assert [p.children[0].text.split(" (")[0] for p in prompts] == [
        "prompt, order long, short",
        "prompt, order short, long",
    ]
    shown = sorted(next(e for e in p.elements() if e.tag == "pre" and "Which run" in e.text).text for p in prompts)
    assert shown == asked  # the page renders the prompts the judge was sent, byte for byte
    spec = FieldSpec("response", "conversation")
    assert all(render(spec, TRAJECTORY) in text and render(spec, short) in text for text in shown)


def _badges(node: Node) -> list[str]:
    """The per-element judgments in an element's own heading."""
    return [b.text for b in node.all("head")[0].kids("judged")]


def test_each_elements_judgments_stand_beside_it_and_the_criteria_keep_their_values(sources, run):
    response = _sides(_page(sources, "full"))["Response"]
    first, last = response.kids("turn")
    # Per assistant turn (its index): the first calls two tools, one too many.
    assert _badges(first) == ["one_call: false"] and _badges(last) == ["one_call: true"]
    # Per tool call (its id), beside the call; the tool's result has none of its own.
    assert [_badges(c.kids("request")[0]) for c in first.kids("call")] == [["args_ok: true"], ["args_ok: true"]]
    assert _badges(first.kids("call")[0].kids("results")[0].kids("result")[0]) == []
    # The same values as the trace's elements, keyed as it keys them.
    rec = json.loads(run["trace"].read_text(encoding="utf-8").splitlines()[0])
    elements = rec["criteria"]["one_call"]["response"]["elements"]
    assert [(e["key"], e["value"]) for e in elements] == [(0, False), (2, True)]
    # The criteria's section still shows each criterion's value per candidate: the list.
    values = {
        c.children[1].text: next(e.text for e in c.elements() if e.tag == "strong")
        for c in tree(_page(sources, "full")).all("criterion", "section")
    }
    assert values["one_call"] == "[false, true]" and values["args_ok"] == "[true, true]"


def test_per_element_judgments_of_a_shared_field_name_each_candidate(tmp_path):
    from click.testing import CliRunner

    from rubriclang.cli.main import cli

    graph = tmp_path / "pair.rbg"
    graph.write_text(
        "rubric cites { version = 1 }\nitem { documents: documents }\n"
        "contract { scale = score[0, 1] }\n"
        'criterion cites: bool = rule.citations_valid each document in documents { documents = "documents" }\n'
        "node any_doc = reduce.any(inputs: [cites])\n"
        "node score = transform.map(value: any_doc) { values = { true: 1, false: 0 } }\n"
        "sink score\nreadout pairwise { epsilon = 0.1, resolve = tie }\n",
        encoding="utf-8",
    )
    docs = [{"id": "d1", "text": "one"}, {"id": "d2", "text": "two"}]
    item = {"id": "p", "input": "q", "documents": docs, "responses": {"a": "See [d1].", "b": "See [d2]."}}
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps(item) + "\n", encoding="utf-8")
    r = CliRunner().invoke(cli, ["run", str(graph), str(items), "--out", str(tmp_path / "trace.jsonl")])
    assert r.exit_code == 0, r.output
    fields = _fields(_page(load_sources((str(graph), str(items), str(tmp_path / "trace.jsonl"))), "p"))
    assert [_badges(d) for d in fields["documents"].kids("document")] == [
        ["cites (a): true", "cites (b): false"],
        ["cites (a): false", "cites (b): true"],
    ]


def test_another_graphs_per_element_criteria_are_not_put_beside_this_traces_elements(tmp_path, run):
    from .structure_fixture import GRAPH

    other = tmp_path / "other.rbg"
    other.write_text(GRAPH.replace("rubric trajectory_view", "rubric another_judge"), encoding="utf-8")
    page = _page(load_sources((str(other), str(run["items"]), str(run["trace"]))), "full")
    assert not tree(page).all("judged") and "<svg" not in page
    assert _turns(_sides(page)["Response"]) == [("assistant", "[0]"), ("assistant", "[2]")]


@pytest.mark.parametrize(
    ("kind", "value", "label"),
    [
        ("text", "", "empty"),
        ("text", "  \n", "blank: 3 whitespace characters"),
        ("documents", [{"id": "d1", "text": "\t"}], "blank: 1 whitespace character"),
        ("conversation", [{"role": "user", "content": ""}], "empty"),
        ("list", ["a", " "], "blank: 1 whitespace character"),
    ],
)
def test_an_empty_or_blank_text_of_any_kind_is_marked_not_left_blank(kind, value, label):
    # The viewer and the audit report's evidence share this renderer: a
    # literal "(empty)" could be the data's own text, a marked element cannot.
    from rubriclang.audit.html.structure import field

    html = str(field(kind, value))
    assert f'<span class="empty" role="note" aria-label="{label} text"' in html
    assert "(empty)" not in html
