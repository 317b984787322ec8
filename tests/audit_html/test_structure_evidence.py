"""The report's evidence shows a structured field (a conversation, documents,
JSON) by its form, both sides, with the turns and documents the other side
lacks marked; its texts are escaped."""

from __future__ import annotations

import json
from typing import Any

from rubriclang.audit.html.evidence import changes
from rubriclang.audit.html.structure import kind_of

from .dom import Dom, Node, tree
from .fixture import IMG, SCRIPT

CALL = {"id": "c1", "type": "function", "function": {"name": "lookup" + IMG, "arguments": json.dumps({"q": SCRIPT})}}
KEPT = [{"role": "user", "content": "Find it"}, {"role": "assistant", "content": "Done."}]
WITH_CALL: list[dict[str, Any]] = [
    KEPT[0],
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "found " + SCRIPT},
    KEPT[1],
]
DOCS = [{"id": "d1", "title": SCRIPT, "text": "one"}, {"id": "d2", "text": "two"}]


def _ids(document) -> str:
    return next(e.text for e in document.elements() if e.tag == "code")


def _outline(ol: Node) -> list[str]:
    """Each item of a list as shown: a folded run as its summary, a turn as
    its role and a document as its id (`*`: marked changed)."""
    out = []
    for li in (c for c in ol.children if isinstance(c, Node)):
        if "same" in li.classes:
            out.append(next(e for e in li.elements() if e.tag == "summary").text)
        else:
            name = li.all("role")[0].text if "turn" in li.classes else _ids(li)
            out.append(name + ("*" if "changed" in li.classes else ""))
    return out


def _finding(original: dict, perturbed: dict) -> dict:
    return {"original": original, "perturbed": perturbed}


def test_a_dropped_tool_call_shows_both_trajectories_with_the_dropped_turn_marked():
    html = changes(
        _finding(
            {"input": "task", "candidates": [["response", WITH_CALL]], "reference": None},
            {"input": "task", "candidates": [["response", KEPT]], "reference": None},
        )
    )
    pane = tree(html).all("changes")[0].children[0]  # the one changed field
    before, after = (s.all("conversation")[0] for s in pane.all("side"))
    # The dropped turn is marked; the turns both sides have fold away, still there when opened.
    assert _outline(before) == ["1 unchanged turn", "assistant*", "1 unchanged turn"]
    assert _outline(after) == ["2 unchanged turns"]
    assert [r.text for r in before.all("role")] == ["user", "assistant", "tool", "assistant"]
    call = before.all("call")[0]
    assert json.loads(call.all("json")[0].text) == {"q": SCRIPT}
    assert call.all("result")[0].all("text")[0].text == "found " + SCRIPT
    dom = Dom(html)
    assert {"script", "img"}.isdisjoint(dom.tags()) and SCRIPT in dom.text and IMG in dom.text


def test_shuffled_documents_show_by_id_with_nothing_marked_and_unchanged_fields_fold_structured():
    html = changes(
        _finding(
            {"input": DOCS, "candidates": [["response", {"a": 1}]], "reference": None},
            {"input": DOCS[::-1], "candidates": [["response", {"a": 1}]], "reference": None},
        )
    )
    root = tree(html)
    before, after = (s.all("documents")[0] for s in root.all("side"))
    # A reordering folds nothing and marks nothing: the order is what changed.
    assert _outline(before) == ["d1", "d2"] and _outline(after) == ["d2", "d1"]
    assert not root.all("changed")
    (unchanged,) = root.all("unchanged")
    assert json.loads(unchanged.all("json")[0].text) == {"a": 1}


def test_a_value_is_read_as_a_conversation_or_documents_only_when_it_is_valid_as_one():
    assert kind_of(WITH_CALL) == "conversation"
    assert kind_of(DOCS) == "documents"
    assert kind_of(["a", "b"]) == "list"
    assert kind_of([{"role": "tool", "tool_call_id": "nowhere", "content": "x"}]) == "json"
    assert kind_of([]) == "json" and kind_of({"id": 1}) == "json" and kind_of("text") == "text"


def test_a_judge_patchs_parameters_stay_diffed_as_text_word_by_word():
    html = changes(
        _finding(
            {"criteria": {"tone": {"labels": ["formal", "casual"], "max": 4}}, "criterion_order": None},
            {"criteria": {"tone": {"labels": ["formal", "chatty"], "max": 5}}, "criterion_order": None},
        )
    )
    dom = Dom(html)
    assert {"del", "ins"} <= dom.tags() and not dom.with_class("entries") and not dom.with_class("json")


def test_the_items_other_declared_fields_show_by_name_changed_or_folded():
    html = changes(
        _finding(
            {
                "input": "q",
                "candidates": [["response", "a"]],
                "reference": None,
                "fields": {"docs": DOCS, "tags": ["x"]},
            },
            {
                "input": "q",
                "candidates": [["response", "a"]],
                "reference": None,
                "fields": {"docs": DOCS[:1], "tags": ["x"]},
            },
        )
    )
    root = tree(html)
    (pane,) = root.all("changes")[0].kids("field")
    assert pane.children[0].text == "docs"
    before, after = (s.all("documents")[0] for s in pane.all("side"))
    assert _outline(before) == ["1 unchanged document", "d2*"] and _outline(after) == ["1 unchanged document"]
    summary = next(e for e in root.all("unchanged")[0].elements() if e.tag == "summary")
    assert summary.text == "Unchanged: input, response, tags"


def test_a_whole_report_with_structured_evidence_holds_only_the_reports_own_elements():
    from rubriclang.audit.html import render_html

    from .fixture import make_report
    from .test_render import ALLOWED_TAGS

    report = make_report()
    flip = report["flips"][0]
    flip["original"] = {"input": DOCS, "candidates": [["response", WITH_CALL]], "reference": None}
    flip["perturbed"] = {"input": DOCS[::-1], "candidates": [["response", KEPT]], "reference": None}
    page = render_html(report)
    dom = Dom(page)
    assert dom.tags() <= ALLOWED_TAGS and "<script" not in page.lower() and "<img" not in page.lower()
    # The original's two folded runs around its dropped turn, the variant's one; two lists of documents.
    assert len(dom.with_class("same")) == 3 and len(dom.with_class("documents")) == 2
    assert render_html(report) == page  # byte for byte


def test_the_audit_preview_shows_structured_variants_by_their_form():
    from rubriclang.audit.preview import render_preview

    from .test_render import ALLOWED_TAGS

    variant = {
        "variant": "t1/tool_calls.drop",
        "item": "t1",
        "operator": "tool_calls.drop",
        "validation": {"by": "structure", "verdict": "accept"},
        "original": {
            "input": "task",
            "candidates": [["response", WITH_CALL]],
            "reference": None,
            "fields": {"d": DOCS},
        },
        "perturbed": {
            "input": "task",
            "candidates": [["response", KEPT]],
            "reference": None,
            "fields": {"d": DOCS[:1]},
        },
    }
    page = render_preview({"sealed": "abc", "variants": [variant], "validation": [], "counts": {}, "skipped": {}})
    dom = Dom(page)
    assert dom.tags() <= ALLOWED_TAGS and "<script" not in page.lower() and "<img" not in page.lower()
    rows = [[c for c in tr.children if hasattr(c, "tag")] for tr in tree(page).elements() if tr.tag == "tr"]
    assert [r[0].text for r in rows] == ["candidate response", "d"]
    before, after = rows[0][1], rows[0][2]
    assert _outline(before.all("conversation")[0]) == ["1 unchanged turn", "assistant*", "1 unchanged turn"]
    assert [e.text for e in after.all("role")] == ["user", "assistant"]
    assert _outline(rows[1][1].all("documents")[0]) == ["1 unchanged document", "d2*"]


def test_a_paraphrased_tool_result_shows_its_call_with_the_result_marked():
    reworded = [dict(m, content="found it: " + SCRIPT) if m["role"] == "tool" else m for m in WITH_CALL]
    html = changes(
        _finding(
            {"input": "task", "candidates": [["response", WITH_CALL]], "reference": None},
            {"input": "task", "candidates": [["response", reworded]], "reference": None},
        )
    )
    before, after = (s.all("conversation")[0] for s in tree(html).all("side"))
    # The calling turn is unchanged itself, but its result changed: it stays in view.
    assert _outline(before) == _outline(after) == ["1 unchanged turn", "assistant", "1 unchanged turn"]
    assert [r.classes for r in after.all("result")] == [["result", "changed"]]
    assert after.all("result")[0].all("text")[0].text == "found it: " + SCRIPT
