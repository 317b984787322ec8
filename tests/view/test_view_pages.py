"""The viewer's pages and server without a browser: the token, the headers,
escaping, filters, paging, the graph's decided path, compare, notes, export."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("jinja2")

from audit_html.dom import Dom  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from rubriclang.cli.view import load_sources  # noqa: E402
from rubriclang.view.export import export  # noqa: E402
from rubriclang.view.notes import read_notes  # noqa: E402
from rubriclang.view.server import make_app  # noqa: E402
from rubriclang.view.table import Query  # noqa: E402

from .fixture import BAD_ID, FAILED, MARK, PAYLOADS, VETOED, make_run  # noqa: E402

TOKEN = "t0ken-for-tests"


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict[str, Path]:
    return make_run(tmp_path_factory.mktemp("run"))


@pytest.fixture(scope="module")
def sources(run):
    return load_sources((str(run["graph"]), str(run["items"]), str(run["trace"]), str(run["trace2"]), str(run["audit"])))


@pytest.fixture()
def client(sources):
    c = TestClient(make_app(sources, TOKEN), base_url="http://127.0.0.1:8123", follow_redirects=False)
    return c


def _get(client, url: str):
    sep = "&" if "?" in url else "?"
    return client.get(f"{url}{sep}token={TOKEN}", follow_redirects=True)


def test_requests_without_the_token_are_refused(client):
    assert client.get("/").status_code == 403
    assert client.get("/items?src=trace.jsonl&token=wrong").status_code == 403
    assert client.get("/static/view.js").status_code == 403


def test_the_token_sets_a_strict_cookie_and_redirects_it_out_of_the_address(client):
    first = client.get(f"/items?src=trace.jsonl&token={TOKEN}")
    assert first.status_code == 303 and "token" not in first.headers["location"]
    cookie = first.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    assert client.get(first.headers["location"]).status_code == 200  # the cookie is enough now


def test_another_host_name_is_refused_even_with_the_token(sources):
    other = TestClient(make_app(sources, TOKEN), base_url="http://evil.example:8123")
    assert other.get(f"/?token={TOKEN}").status_code == 403


def test_every_page_has_a_csp_allowing_only_the_viewers_own_script(client):
    page = _get(client, "/items?src=trace.jsonl")
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "default-src 'none'" in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    report = _get(client, "/report?n=0")
    assert "script-src 'none'" in report.headers["content-security-policy"]


def test_payloads_in_ids_inputs_responses_and_replies_are_text(client):
    page = _get(client, f"/item?src=trace.jsonl&id={BAD_ID}")
    assert page.status_code == 200
    dom = Dom(page.text)
    scripts = [e for e in dom.elements if e.tag == "script"]
    assert [s.attrs.get("src") for s in scripts] == ["/static/view.js"]
    assert "img" not in dom.tags()
    assert BAD_ID in dom.text and MARK in dom.text and "Reply <script>" in dom.text
    for payload in PAYLOADS[:1]:
        assert payload in dom.text


def test_filters_select_errors_disagreements_ranges_and_text(sources):
    table = sources.trace("trace.jsonl").table
    assert [r.item for r in table.query(Query(status="error")).rows] == [FAILED]
    assert all(r.disagrees for r in table.query(Query(disagree=True), size=1000).rows)
    ranged = table.query(Query(low=2, high=4), size=1000).rows
    assert ranged and all(2 <= r.number <= 4 for r in ranged)
    # The text search reaches the items' inputs, not only their ids.
    assert [r.item for r in table.query(Query(text="something dangerous")).rows] == [VETOED]


def test_sorting_and_paging_cover_every_item_once(sources):
    table = sources.trace("trace.jsonl").table
    q = Query(sort="decision", desc=True)
    first = table.query(q, size=50)
    seen = [r.item for p in range(1, first.pages + 1) for r in table.query(Query(sort="decision", desc=True, page=p), size=50).rows]
    assert sorted(seen) == sorted(r.item for r in table.rows) and first.pages == 3
    numbers = [table.by_item[i].number for i in seen if table.by_item[i].number is not None]
    assert numbers == sorted(numbers, reverse=True)


def test_the_item_graph_highlights_the_veto_that_decided(client):
    dom = Dom(_get(client, f"/item?src=trace.jsonl&id={VETOED}").text)
    on = {e.attrs["data-node"] for e in dom.elements if e.tag == "g" and "on" in e.attrs.get("class", "").split()}
    # harmful fired the veto: the path runs through it, not through `correct`.
    assert on == {"safe", "harmful"}
    plain = Dom(_get(client, "/item?src=trace.jsonl&id=q001").text)
    on = {e.attrs["data-node"] for e in plain.elements if e.tag == "g" and "on" in e.attrs.get("class", "").split()}
    assert {"safe", "concise", "correct"} <= on and "harmful" not in on


def test_the_item_page_renders_the_prompt_from_the_template_with_the_reply(client):
    text = Dom(_get(client, "/item?src=trace.jsonl&id=q001").text).text
    assert "How correct is the response?" in text  # the rendered prompt
    assert "What is 1 + 1?" in text and "It is 2." in text  # input and candidate
    assert "Reply <script>" in text  # the raw reply, as text


def test_compare_lists_the_transitions_of_the_changed_cap(client, sources):
    cmp = sources.compares[0]
    assert cmp.impact.transitions() and all(t.startswith("4 -> 3") for t, _ in cmp.impact.transitions())
    text = Dom(_get(client, "/compare?n=0").text).text
    assert "4 -> 3" in text


def test_a_note_is_saved_atomically_in_the_audit_folder_and_shown(client, run):
    _get(client, "/audit?n=0")  # sets the cookie
    refused = client.post("/notes?n=0", data={"item": "q1", "text": "no token"})
    assert refused.status_code == 403
    saved = client.post("/notes?n=0", data={"token": TOKEN, "item": "q1", "text": "Check <b>this</b>"})
    assert saved.status_code == 303
    assert read_notes(str(run["audit"])) == {"q1": "Check <b>this</b>"}
    page = Dom(client.get("/audit?n=0").text)
    assert "Check <b>this</b>" in page.text and "b" not in page.tags()
    assert sorted(p.name for p in run["audit"].iterdir()) == ["notes.json", "report.json"]


def test_the_export_writes_linked_pages_that_need_no_server(tmp_path, sources):
    n = export(sources, str(tmp_path))
    names = {p.name for p in tmp_path.iterdir()}
    assert n > 120 and "index.html" in names and "static" in names
    index = Dom((tmp_path / "index.html").read_text(encoding="utf-8"))
    for href in index.hrefs():
        assert (tmp_path / href).is_file(), href
    assert not any(h.startswith(("/", "http")) for p in tmp_path.glob("*.html") for h in Dom(p.read_text(encoding="utf-8")).hrefs())


def test_inputs_are_left_unchanged(run, sources, client):
    before = {p: p.read_bytes() for p in run.values() if p.is_file()}
    _get(client, "/items?src=trace.jsonl")
    _get(client, f"/item?src=trace.jsonl&id={VETOED}")
    assert {p: p.read_bytes() for p in before} == before


@pytest.mark.parametrize("content, said", [('{"a": 1}\n', "neither a trace record"), ("garbage\n", "not JSON"),
                                           ('{"schema": "rubriclang.trace/1"}\n', "x.jsonl:1")])
def test_unusable_paths_are_refused_with_exit_2(tmp_path, content, said):
    from click.testing import CliRunner

    from rubriclang.cli.view import view

    path = tmp_path / "x.jsonl"
    path.write_text(content, encoding="utf-8")
    result = CliRunner().invoke(view, [str(path), "--export", str(tmp_path / "out")])
    assert result.exit_code == 2 and said in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()
