"""The viewer's pages and server without a browser: the token, the headers,
escaping, filters, paging, the graph's decided path, compare, notes, export."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from audit_html.dom import Dom
from starlette.testclient import TestClient

from rubriclang.audit.notes import read_notes
from rubriclang.cli.view import load_sources
from rubriclang.view.export import export
from rubriclang.view.server import make_app
from rubriclang.view.table import Query

from .fixture import BAD_ID, BOOL_GRAPH, FAILED, MARK, PAYLOADS, VETOED, make_judged, make_run

TOKEN = "t0ken-for-tests"


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict[str, Path]:
    return make_run(tmp_path_factory.mktemp("run"))


@pytest.fixture(scope="module")
def sources(run):
    return load_sources(
        (
            str(run["graph"]),
            str(run["items"]),
            str(run["trace"]),
            str(run["trace2"]),
            str(run["eval"]),
            str(run["audit"]),
        )
    )


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
    seen = [
        r.item
        for p in range(1, first.pages + 1)
        for r in table.query(Query(sort="decision", desc=True, page=p), size=50).rows
    ]
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


def _items_shown(client, href: str) -> list[str]:
    """Every item the items view lists for `href`, over all its pages."""
    shown: list[str] = []
    page: str | None = href
    while page:
        dom = Dom(client.get(page).text)
        shown += [
            e.attrs["href"] for e in dom.elements if e.tag == "a" and e.attrs.get("href", "").startswith("/item?")
        ]
        page = next((e.attrs["href"] for e in dom.elements if e.tag == "a" and e.attrs.get("rel") == "next"), None)
    from urllib.parse import parse_qs, urlsplit

    return sorted(parse_qs(urlsplit(h).query)["id"][0] for h in shown)


def test_every_metric_cell_links_to_exactly_the_items_it_rests_on(client, run, sources):
    import json

    data = json.loads(run["eval"].read_text(encoding="utf-8"))["modes"]["pointwise"]
    dom = Dom(_get(client, "/eval").text)
    cells = [e.attrs["href"] for e in dom.elements if e.tag == "a" and "cell" in (e.attrs.get("class") or "").split()]
    metrics = sum(len(ms) for ms in data["metrics"].values()) + sum(len(ms) for ms in data["differences"].values())
    assert len(cells) == metrics and len(set(cells)) == 1
    left_out = {x["item"] for x in data["left_out"]["by_item"]}
    assert left_out == {FAILED}
    expected = sorted(r.item for r in sources.trace("trace.jsonl").table.rows if r.item not in left_out)
    assert _items_shown(client, cells[0]) == expected and len(expected) == data["scored"]


def test_every_count_of_the_plots_links_to_exactly_its_items(client, sources):
    from urllib.parse import parse_qs, urlsplit

    rows = sources.trace("trace.jsonl").table.rows
    dom = Dom(_get(client, "/eval").text)
    links = [e.attrs["href"] for e in dom.elements if e.tag == "a" and e.attrs.get("href", "").startswith("/items?")]
    confusion = [h for h in links if "decision=" in h]
    assert confusion
    for href in confusion:
        q = {k: v[0] for k, v in parse_qs(urlsplit(href).query).items()}
        want = sorted(
            r.item for r in rows if r.decision == q["decision"] and r.gold is not None and str(r.gold) == q["gold"]
        )
        assert _items_shown(client, href) == want and want


@pytest.fixture(scope="module")
def bool_run(tmp_path_factory) -> dict[str, Path]:
    return make_judged(tmp_path_factory.mktemp("bool"), BOOL_GRAPH, lambda n: n % 4 == 0)


def _client(*paths: Path) -> TestClient:
    return TestClient(
        make_app(load_sources(tuple(map(str, paths))), TOKEN), base_url="http://127.0.0.1:8123", follow_redirects=False
    )


def _eval_confusions(client) -> dict[str, tuple[list[list[tuple[str, str | None]]], str]]:
    """Column -> (each row's cells as (count, link)), the note under it) of the evaluation's confusion tables."""
    import re

    page = _get(client, "/eval").text
    out = {}
    for name, table, note in re.findall(
        r"<h4>Confusion of (.*?):.*?</h4>\s*(<table class=\"eval-confusion\">.*?</table>)\s*(<p class=\"note\">[^<]*)?",
        page,
        re.S,
    ):
        rows = []
        for tr in re.findall(r"<tr><th>[^<]*</th>(.*?)</tr>", table.split("<tbody>")[1], re.S):
            rows.append(
                [
                    (k or plain, href.replace("&amp;", "&") or None)
                    for href, k, plain in re.findall(r'<td[^>]*>(?:<a href="([^"]*)">(\d+)</a>|(\d+))</td>', tr)
                ]
            )
        out[name] = (rows, note)
    return out


def test_each_cell_of_an_evaluations_confusion_matrix_links_to_exactly_its_items(bool_run):
    import json

    client = _client(bool_run["graph"], bool_run["items"], bool_run["trace"], bool_run["eval"])
    gold = {i["id"]: i["gold"] for i in map(json.loads, bool_run["items"].read_text(encoding="utf-8").splitlines())}
    decided = {r.item: r.decision for r in load_sources((str(bool_run["trace"]),)).traces[0].table.rows}
    tables = _eval_confusions(client)
    assert set(tables) == {"short_enough", "equal baseline"}
    rows, _ = tables["short_enough"]
    conf = json.loads(bool_run["eval"].read_text(encoding="utf-8"))["modes"]["pointwise"]["confusion"]["short_enough"]
    assert [[int(k) for k, _ in row] for row in rows] == conf[
        "counts"
    ]  # rows gold, columns decision, as rbg eval writes them
    seen = []
    for g, row in zip(conf["gold"], rows, strict=True):
        for p, (k, href) in zip(conf["predicted"], row, strict=True):
            want = sorted(i for i, d in decided.items() if d == p and str(gold[i]).lower() == g)
            assert href is not None and _items_shown(client, href) == want and len(want) == int(k)
            seen += want
    assert len(seen) == len(set(seen)) == sum(map(sum, conf["counts"]))
    # The baseline's decisions are not in the trace: drawn, not linked, and said so.
    rows, note = tables["equal baseline"]
    assert rows and all(href is None for row in rows for _, href in row) and "in no trace" in note


def test_a_trace_that_does_not_reproduce_an_evaluations_counts_gets_no_links_from_it(bool_run, tmp_path):
    part = tmp_path / "part.jsonl"
    part.write_text(
        "".join(bool_run["trace"].read_text(encoding="utf-8").splitlines(keepends=True)[:60]), encoding="utf-8"
    )
    rows, note = _eval_confusions(_client(part, bool_run["eval"]))["short_enough"]
    assert rows and all(href is None for row in rows for _, href in row) and "reproduce these counts" in note


def test_a_metric_link_to_an_evaluation_that_is_not_there_is_not_found(client):
    assert _get(client, "/items?src=trace.jsonl&scored=7:pointwise").status_code == 404


def test_compare_lists_the_transitions_of_the_changed_cap(client, sources):
    cmp = sources.compares[0]
    assert cmp.impact.transitions() and all(t.startswith("4 -> 3") for t, _ in cmp.impact.transitions())
    text = Dom(_get(client, "/compare?n=0").text).text
    assert "4 -> 3" in text


def test_a_note_is_saved_atomically_in_the_audit_folder_and_shown(client, run):
    page = _get(client, "/audit?n=0").text  # sets the cookies
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    assert csrf is not None
    refused = client.post("/notes?n=0", data={"item": "q1", "text": "no token", "csrf": csrf.group(1)})
    assert refused.status_code == 403
    refused = client.post("/notes?n=0", data={"token": TOKEN, "item": "q1", "text": "no session token"})
    assert refused.status_code == 403
    saved = client.post(
        "/notes?n=0", data={"token": TOKEN, "csrf": csrf.group(1), "item": "q1", "text": "Check <b>this</b>"}
    )
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
    assert not any(
        h.startswith(("/", "http")) for p in tmp_path.glob("*.html") for h in Dom(p.read_text(encoding="utf-8")).hrefs()
    )


def test_an_export_holds_one_file_per_listing_its_pages_and_sorts_are_that_file_with_a_query(tmp_path, sources):
    from rubriclang.view.pages import export_name

    export(sources, str(tmp_path))
    listings = {p.name for p in tmp_path.glob("items-*.html")}
    hrefs = {
        h
        for name in listings
        for h in Dom((tmp_path / name).read_text(encoding="utf-8")).hrefs()
        if h.startswith("items-")
    }
    with_query = {h for h in hrefs if "?" in h}
    assert any("page=2" in h for h in with_query) and any("sort=item" in h for h in with_query)
    assert all(h.split("?")[0] in listings for h in hrefs)  # every page and sort of a listing is in its one file
    assert not (tmp_path / export_name("items", {"page": "2", "src": "trace.jsonl"})).exists()


def test_the_export_filters_from_a_json_file_of_rows_with_no_script_from_data(tmp_path, sources):
    import json

    from rubriclang.view.pages import CSP, export_name

    export(sources, str(tmp_path))
    items = Dom((tmp_path / export_name("items", {"src": "trace.jsonl"})).read_text(encoding="utf-8"))
    form = next(e for e in items.elements if e.tag == "form")
    data = json.loads((tmp_path / form.attrs["data-rows"]).read_text(encoding="utf-8"))
    table = sources.trace("trace.jsonl").table
    assert [r["item"] for r in data["rows"]] == [r.item for r in table.rows]
    assert all((tmp_path / r["href"]).is_file() for r in data["rows"])
    assert [data["rows"][i]["item"] for i in data["orders"]["decision"]] == [
        r.item for r in table.query(Query(sort="decision"), size=10**6).rows
    ]
    assert sorted(data["rows"][i]["item"] for i in data["scored"]["0:pointwise"]) == sorted(
        r.item for r in table.rows if r.item != FAILED
    )
    for page in tmp_path.glob("*.html"):
        dom = Dom(page.read_text(encoding="utf-8"))
        assert all(e.attrs.get("src") == "static/view.js" for e in dom.elements if e.tag == "script"), page.name
        if page.name.startswith(("items", "audit", "eval", "index")):
            assert (
                next(e.attrs["content"] for e in dom.elements if e.tag == "meta" and e.attrs.get("http-equiv")) == CSP
            )


def test_inputs_are_left_unchanged(run, sources, client):
    before = {p: p.read_bytes() for p in run.values() if p.is_file()}
    _get(client, "/items?src=trace.jsonl")
    _get(client, f"/item?src=trace.jsonl&id={VETOED}")
    assert {p: p.read_bytes() for p in before} == before


@pytest.mark.parametrize(
    "content, said",
    [
        ('{"a": 1}\n', "neither a trace record"),
        ("garbage\n", "not JSON"),
        ('{"schema": "rubriclang.trace/1"}\n', "x.jsonl:1"),
    ],
)
def test_unusable_paths_are_refused_with_exit_2(tmp_path, content, said):
    from click.testing import CliRunner

    from rubriclang.cli.view import view

    path = tmp_path / "x.jsonl"
    path.write_text(content, encoding="utf-8")
    result = CliRunner().invoke(view, [str(path), "--export", str(tmp_path / "out")])
    assert result.exit_code == 2 and said in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_pairwise_decisions_and_gold_are_named_by_position_as_rbg_eval_names_them():
    from rubriclang.view.table import row_of

    def rec(readout: dict, gold) -> dict:
        return {
            "item": "p",
            "mode": "pairwise",
            "candidates": ["x", "y"],
            "criteria": {},
            "gold": gold,
            "readout": {"status": "ok", "decision": None, "raw": None, "margin": None, "error": None, **readout},
        }

    second = row_of(1, rec({"decision": "y", "margin": -1.0}, "x"))
    assert (second.decision, second.decided, second.gold_label) == ("y", "second", "first")
    tie = row_of(1, rec({"decision": "tie", "margin": 0.0}, "tie"))
    assert (tie.decided, tie.gold_label) == ("tie", "tie")
    abstained = row_of(1, rec({"status": "abstain"}, "y"))
    assert (abstained.decided, abstained.gold_label) == ("abstain", "second")


def test_the_eval_page_keeps_the_command_lines_order_and_names_each_subtraction(client, run):
    import html
    import json
    import re

    from rubriclang.evaluation.metrics import DEFINITIONS, METRICS

    data = json.loads(run["eval"].read_text(encoding="utf-8"))
    columns = [c["name"] for c in data["columns"]]
    assert columns[1] == "equal baseline" and sorted(columns) != columns  # sorted, the baseline would come first
    page = _get(client, "/eval").text
    headers = [html.unescape(h) for h in re.findall(r"<th>([^<]*)</th>", page)]
    assert headers[:3] == ["metric", *columns]
    assert f"{columns[0]} − equal baseline" in headers  # the first column minus the baseline, named
    kind = data["modes"]["pointwise"]["kind"]
    rows = [(html.unescape(f), m) for f, m in re.findall(r'<td title="([^"]*)">(\w+)</td>', page)]
    assert rows[: len(METRICS[kind])] == [(DEFINITIONS[m].formula, m) for m in METRICS[kind]]
