"""`rbg view`'s defences against a page elsewhere driving it (issue 30 item
7): the token on every page and action, the Host (DNS rebinding), the
origin and the per-session CSRF token of a POST, paths confined to the
project, and data's text escaped."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from rubriclang.cli.main import cli
from rubriclang.view.guard import Guard, OutsideProject, confine

TOKEN = "t0ken-for-guard-tests"
PORT = 8123
BASE = f"http://127.0.0.1:{PORT}"
SCRIPT = "<script>alert(1)</script>"


def rbg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture()
def project(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    assert rbg("init").exit_code == 0
    return tmp_path


def app_of(project: Path):
    from rubriclang.cli.view import project_landing, project_workbench
    from rubriclang.view import landing as pages
    from rubriclang.view.server import make_app

    landing = project_landing()
    return make_app(landing.sources, TOKEN, lambda site: pages.render(site, landing), PORT, project_workbench())


def client_of(project: Path, base: str = BASE) -> TestClient:
    return TestClient(app_of(project), base_url=base, follow_redirects=False)


def found(pattern: str, text: str) -> str:
    """The first group of `pattern`'s match in `text`, which must match."""
    match = re.search(pattern, text, re.S)
    assert match is not None, pattern
    return match.group(1)


def signed_in(project: Path) -> tuple[TestClient, str]:
    """A client holding the token cookie, and its session's CSRF token."""
    c = client_of(project)
    assert c.get(f"/?token={TOKEN}").status_code == 303
    page = c.get("/workbench")
    assert page.status_code == 200
    return c, found(r'name="csrf" value="([^"]+)"', page.text)


def form(csrf: str, **fields) -> dict:
    return {"csrf": csrf, "judge": "rubric.rbg", "items": "items.jsonl", "suite": "wb.toml", "action": "plan", **fields}


def test_every_page_and_action_without_the_token_is_refused(project):
    c = client_of(project)
    for path in ("/", "/workbench", "/static/view.css", "/items?src=x"):
        assert c.get(path).status_code == 403, path
    assert c.get(f"/workbench?token=wrong{TOKEN}").status_code == 403
    assert c.post("/workbench", data=form("x")).status_code == 403
    assert c.post("/notes?n=0", data={"item": "a", "text": "b"}).status_code == 403


def test_a_post_without_the_sessions_csrf_token_is_refused(project):
    c, csrf = signed_in(project)
    assert c.post("/workbench", data={**form(csrf), "csrf": ""}).status_code == 403
    assert c.post("/workbench", data={**form(csrf), "csrf": csrf[:-1] + "x"}).status_code == 403
    no_csrf = form(csrf)
    del no_csrf["csrf"]
    assert c.post("/workbench", data=no_csrf).status_code == 403
    assert c.post("/workbench", data=form(csrf)).status_code == 200


def test_the_first_answer_gives_the_session_its_csrf_cookie_once(project):
    c = client_of(project)
    first = c.get(f"/?token={TOKEN}")
    cookies = first.headers.get_list("set-cookie")
    assert any(v.startswith("rbg_view_csrf=") and "HttpOnly" in v and "SameSite=strict" in v for v in cookies)
    assert not [v for v in c.get("/").headers.get_list("set-cookie") if v.startswith("rbg_view_csrf=")]


def test_the_csrf_token_belongs_to_its_session(project):
    """Another session's token (a second browser) does not fit this one's cookie."""
    one, csrf_one = signed_in(project)
    _two, csrf_two = signed_in(project)
    assert csrf_one != csrf_two
    assert one.post("/workbench", data=form(csrf_two)).status_code == 403


def test_a_cross_site_form_post_is_refused_even_with_token_and_csrf(project):
    c, csrf = signed_in(project)
    for origin in ("http://evil.example", "null", f"http://localhost:{PORT + 1}", f"https://127.0.0.1:{PORT}"):
        refused = c.post("/workbench", data=form(csrf), headers={"Origin": origin})
        assert refused.status_code == 403 and "another site" in refused.text, origin
    refused = c.post("/workbench", data=form(csrf), headers={"Referer": "http://evil.example/page"})
    assert refused.status_code == 403
    refused = c.post("/workbench", data=form(csrf), headers={"Referer": f"{BASE}.evil.example/"})
    assert refused.status_code == 403
    assert c.post("/workbench", data=form(csrf), headers={"Origin": BASE}).status_code == 200
    assert c.post("/workbench", data=form(csrf), headers={"Referer": f"{BASE}/workbench"}).status_code == 200
    assert not (project / "wb.toml").exists()  # plan writes nothing


def test_a_dns_rebinding_host_is_refused_with_the_token(project):
    for base in ("http://evil.example:8123", f"http://127.0.0.1:{PORT + 1}", "http://127.0.0.1.evil.example:8123"):
        c = client_of(project, base)
        assert c.get(f"/?token={TOKEN}").status_code == 403, base
    assert client_of(project, f"http://localhost:{PORT}").get(f"/?token={TOKEN}").status_code == 303


@pytest.mark.parametrize(
    "host, ok",
    [
        ("127.0.0.1:80", True),
        ("localhost:80", True),
        ("127.0.0.1:81", False),
        ("127.0.0.1", False),
        ("evil:80", False),
        ("[::1]:80", False),
        ("", False),
    ],
)
def test_the_host_must_be_loopback_and_the_servers_port(host, ok):
    assert Guard(TOKEN, 80).host_ok(host) is ok


def test_confine_refuses_traversal_absolute_paths_and_links_out(tmp_path):
    root = tmp_path / "project"
    (root / "data").mkdir(parents=True)
    (root / "data" / "items.jsonl").write_text("")
    (root / "out.jsonl").symlink_to("/etc/passwd")
    (root / "data" / "inner.jsonl").symlink_to(root / "data" / "items.jsonl")
    assert confine(str(root), "data/items.jsonl") == os.path.realpath(root / "data" / "items.jsonl")
    assert confine(str(root), "data/inner.jsonl") == os.path.realpath(root / "data" / "items.jsonl")
    for bad in (
        "../../etc/passwd",
        "data/../../x",
        "/etc/passwd",
        str(root / "data" / "items.jsonl"),
        "out.jsonl",
        "~/x",
        "",
        "a\x00b",
        "..\\..\\x",
    ):
        with pytest.raises(OutsideProject):
            confine(str(root), bad)


@pytest.mark.parametrize("field", ["judge", "items", "suite"])
@pytest.mark.parametrize("path", ["../../etc/passwd", "/etc/passwd", "link-out.jsonl"])
def test_the_workbench_reads_and_writes_nothing_outside_the_project(project, tmp_path_factory, field, path):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.jsonl").write_text(json.dumps({"id": "s", "input": "SECRET-INPUT", "response": "x"}) + "\n")
    (project / "link-out.jsonl").symlink_to(outside / "secret.jsonl")
    c, csrf = signed_in(project)
    page = c.post("/workbench", data=form(csrf, **{field: path}, action="save"))
    assert page.status_code == 200
    errors = re.search(r'id="errors">(.*?)</div>', page.text, re.S)
    assert errors and (
        "outside the project" in errors.group(1)
        or "not a path inside" in errors.group(1)
        or "climbs out" in errors.group(1)
    )
    assert "SECRET-INPUT" not in page.text and not (project / "wb.toml").exists()
    assert sorted(p.name for p in outside.iterdir()) == ["secret.jsonl"]
    assert "link-out.jsonl" not in c.get("/workbench").text  # not offered either


def test_script_in_file_names_and_in_a_judges_errors_is_shown_as_text(project):
    name = "<img src=x onerror=alert(1)>"
    (project / f"{name}.jsonl").write_text('{"id": "a", "input": "q", "response": "1"}\n')
    (project / "bad.rbg").write_text(f"rubric x {{ version = 1 }}\n{SCRIPT}\n")
    c, csrf = signed_in(project)
    page = c.post("/workbench", data=form(csrf, items=f"{name}.jsonl", judge="bad.rbg"))
    assert name not in page.text and "&lt;img src=x onerror=alert(1)&gt;" in page.text
    errors = found(r'id="errors">(.*?)</div>', page.text)
    assert "bad.rbg:2:" in errors and "<script" not in errors and "&lt;script" in errors


def test_script_in_an_items_id_is_escaped_on_the_projects_pages(project):
    """(The item's texts and a model's reply, shown beside a trace given
    with its items, are escaped too: test_view_pages.py.)"""
    items = project / "items.jsonl"
    items.write_text(json.dumps({"id": SCRIPT, "input": "q", "response": "42", "reference": "42"}) + "\n")
    assert rbg("run", "rubric.rbg", items).exit_code == 0
    c, _ = signed_in(project)
    link = found(r'href="(/items\?[^"]+)"', c.get("/").text).replace("&amp;", "&")
    listing = c.get(link).text
    assert SCRIPT not in listing and "&lt;script&gt;alert(1)&lt;/script&gt;" in listing
