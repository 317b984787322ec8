"""The workbench's planner (`rbg audit plan` in the browser) against a
scripted loopback server: offered only with a model profile, its rationale
shown per operator, and the planner's suite saved as the command writes it
for the same answer, without asking the model again."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from audit.helpers import Scripted, role_of

from .test_guard import form, found, project, rbg, signed_in  # noqa: F401  (project: a fixture)

PROPOSAL = {
    "operators": [
        {"name": "partial_completion", "rationale": "the rubric reads <only> the final number"},
        {"name": "bogus_op", "rationale": "x"},
    ]
}


def found_all(page: str, name: str) -> list[str]:
    """The values of the page's hidden fields `name`, in order."""
    return [html.unescape(v) for v in re.findall(rf'<input type="hidden" name="{name}" value="([^"]*)">', page)]


@pytest.fixture()
def server(project, monkeypatch):
    """A scripted planner, the project's profile `planner`; a private call cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(project / ".xdg"))
    s = Scripted(lambda role, body: json.dumps(PROPOSAL))
    with (project / "rubriclang.toml").open("a") as fh:
        fh.write(f'\n[models.planner]\nbase_url = "{s.url}"\nmodel = "scripted"\n')
    yield s
    s.close()


def test_the_planner_is_offered_only_with_a_profile(project):
    c, _ = signed_in(project)
    assert 'id="ask"' not in c.get("/workbench").text


def test_the_planners_rationale_is_shown_and_its_suite_saved_as_rbg_audit_plan_writes_it(project: Path, server):
    c, csrf = signed_in(project)
    page = c.post("/workbench", data=form(csrf, server="planner", action="ask")).text
    row = found(r'data-op="partial_completion">(.*?)</tr>', page)
    assert "proposed" in row and "the rubric reads &lt;only&gt; the final number" in row
    assert [role_of(b) for b in server.requests] == ["planner"]
    assert not (project / "wb.toml").exists()
    proposed = dict(zip(*(found_all(page, name) for name in ("proposed", "rationale")), strict=True))
    assert proposed == {"partial_completion": "the rubric reads <only> the final number"}
    saved = c.post(
        "/workbench",
        data=form(
            csrf, server="planner", action="save-plan", proposed=list(proposed), rationale=list(proposed.values())
        ),
    ).text
    assert 'id="saved"' in saved and "loads it: no error" in saved
    assert len(server.requests) == 1  # saved what was shown, not a new answer
    cli = rbg(
        "audit", "plan", "rubric.rbg", "items.jsonl", "-o", "cli.toml", "--base-url", server.url, "--model", "scripted"
    )
    assert cli.exit_code == 0, cli.output
    assert (project / "wb.toml").read_bytes() == (project / "cli.toml").read_bytes()


def test_a_planner_that_answers_nothing_usable_is_an_error_on_the_page(project, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(project / ".xdg"))
    s = Scripted(lambda role, body: json.dumps({"operators": [{"name": "bogus_op", "rationale": "x"}]}))
    try:
        with (project / "rubriclang.toml").open("a") as fh:
            fh.write(f'\n[models.planner]\nbase_url = "{s.url}"\n')
        c, csrf = signed_in(project)
        page = c.post("/workbench", data=form(csrf, server="planner", action="ask")).text
        assert "the planner" in found(r'id="errors">(.*?)</div>', page) and "no applicable operator" in page
    finally:
        s.close()
