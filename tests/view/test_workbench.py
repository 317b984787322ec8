"""The audit workbench of `rbg view` (issue 30 item 2): the catalog with each
operator's surface, relation, generator and validation, the plan's reason
per operator, and a saved suite that is byte for byte `rbg audit init`'s for
the same choices, checked by `rbg audit`'s own loader."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from rubriclang.audit.perturbations import load_perturbations
from rubriclang.audit.suite import load_suite

from .test_guard import BASE, TOKEN, form, found, project, rbg, signed_in  # noqa: F401  (project: a fixture)

URL = "http://127.0.0.1:8000/v1"


def _saved(c: TestClient, csrf: str, **fields) -> str:
    page = c.post("/workbench", data=form(csrf, **{"action": "save", **fields}))
    assert page.status_code == 200
    return page.text


def _all_on(c: TestClient) -> list[str]:
    return re.findall(r'name="op" value="([^"]+)" checked', c.get("/workbench").text)


def _with_llm_criterion(project: Path) -> None:
    rubric = project / "rubric.rbg"
    text = rubric.read_text()
    text = re.sub(r"^# (criterion shows_work.*?\n)# (  question.*?\n)# (\}\n)", r"\1\2\3", text, flags=re.S | re.M)
    text = text.replace("reduce.all(inputs: [correct, brief])", "reduce.all(inputs: [correct, brief, shows_work])")
    assert "criterion shows_work" in text and "# criterion shows_work" not in text
    rubric.write_text(text)


def _with_profile(project: Path) -> None:
    with (project / "rubriclang.toml").open("a") as fh:
        fh.write(f'\n[models.strong]\nbase_url = "{URL}"\nmodel = "m"\n')


@pytest.mark.parametrize(
    "judge, server, init_args",
    [("rules", "", []), ("llm", "", []), ("llm", "strong", ["--base-url", URL])],
    ids=["rule-judge", "llm-judge-embedded", "llm-judge-profile"],
)
def test_the_saved_suite_is_byte_for_byte_rbg_audit_inits(project, judge, server, init_args):
    if judge == "llm":
        _with_llm_criterion(project)
    _with_profile(project)
    c, csrf = signed_in(project)
    page = _saved(c, csrf, op=_all_on(c), server=server)
    assert 'id="saved"' in page and "`rbg audit` loads it: no error" in page, page
    result = rbg("audit", "init", "rubric.rbg", "items.jsonl", "-o", "cli.toml", *init_args)
    assert result.exit_code == 0, result.output
    assert (project / "wb.toml").read_bytes() == (project / "cli.toml").read_bytes()


def test_the_catalog_shows_every_operator_with_its_surface_relation_generator_and_validation(project):
    c, _ = signed_in(project)
    page = c.get("/workbench").text
    rows = dict(re.findall(r'<tr[^>]*data-op="([^"]+)">(.*?)</tr>', page, re.S))
    ops = load_perturbations()
    assert list(rows) == list(ops)
    for name, op in ops.items():
        for shown in (op.surface, op.relation, op.generator):
            assert f"<td>{shown}</td>" in rows[name]
        assert op.validation.replace("'", "&#39;").replace('"', "&#34;") in rows[name]


def test_plan_gives_a_reason_per_operator_and_writes_nothing(project):
    c, csrf = signed_in(project)
    page = c.post("/workbench", data=form(csrf, op=_all_on(c))).text
    plan = re.findall(r'data-op="([^"]+)">.*?<td>(in the suite|left out)(.*?)</td>\s*</tr>', page, re.S)
    assert len(plan) == len(load_perturbations())
    assert all(status == "in the suite" or "note" in why for _, status, why in plan)
    assert 'id="suite-text"' in page and not (project / "wb.toml").exists()


def test_switched_off_operators_and_repeats_reach_the_suite(project):
    _with_llm_criterion(project)
    c, csrf = signed_in(project)
    on = _all_on(c)
    _saved(c, csrf, op=on, suite="all.toml")
    every = load_suite(str(project / "all.toml")).operators or ()
    assert len(every) >= 2
    page = _saved(c, csrf, op=[o for o in on if o != every[0]], repeats="3")
    assert "loads it: no error" in page
    suite = load_suite(str(project / "wb.toml"))
    assert suite.repeats == 3 and suite.operators == every[1:]
    assert f"#   {every[0]}: switched off" in (project / "wb.toml").read_text()


def test_bad_numbers_are_refused_saying_what_to_give(project):
    c, csrf = signed_in(project)
    for fields, words in (
        ({"repeats": "0"}, "from 1 to 100"),
        ({"repeats": "two"}, "not a whole number"),
        ({"tolerance": "-1"}, "at least 0"),
        ({"tolerance": "nan"}, "at least 0"),
        ({"suite": "suite.txt"}, "should end in .toml"),
        ({"judge": ""}, "pick a judge"),
    ):
        page = _saved(c, csrf, **fields)
        assert words in page and not (project / "wb.toml").exists(), fields


def test_an_existing_suite_is_replaced_only_when_confirmed(project):
    (project / "wb.toml").write_text("# mine\n")
    c, csrf = signed_in(project)
    page = _saved(c, csrf, op=_all_on(c))
    assert "exists" in page and 'id="overwrite"' in page
    assert (project / "wb.toml").read_text() == "# mine\n"
    page = _saved(c, csrf, op=_all_on(c), overwrite="1")
    assert 'id="saved"' in page and (project / "wb.toml").read_text().startswith("# An audit suite")


def test_a_saved_suite_that_fails_the_check_is_shown_at_its_line(tmp_path):
    from rubriclang.view.workbench import _checked

    suite = tmp_path / "s.toml"
    (tmp_path / "items.jsonl").write_text("")
    (tmp_path / "x.rbg").write_text("")
    suite.write_text('judge = "x.rbg"\nitems = "items.jsonl"\nrepeats = 0\n')
    assert _checked(str(suite)) == {
        "check": f"{suite}:3: `repeats` must be between 1 and 100, not 0",
        "check_line": 3,
    }


def test_the_landing_page_links_the_workbench_only_when_served(project):
    c, _ = signed_in(project)
    assert 'href="/workbench"' in c.get("/").text
    assert rbg("view", "--export", project / "site").exit_code == 0
    assert "workbench" not in (project / "site" / "index.html").read_text()


def test_the_workbench_needs_a_project(project):
    from rubriclang.view.server import make_app
    from rubriclang.view.sources import Sources

    c = TestClient(make_app(Sources(), TOKEN), base_url=BASE)
    assert c.get(f"/workbench?token={TOKEN}").status_code == 404


def test_traces_in_the_runs_folder_are_not_offered_as_items(project):
    assert rbg("run", "rubric.rbg", "items.jsonl").exit_code == 0
    assert any((project / "runs").glob("*.jsonl"))
    c, _ = signed_in(project)
    offered = re.findall(r'<option value="([^"]+)"', c.get("/workbench").text)
    assert "items.jsonl" in offered and "rubric.rbg" in offered
    assert not [o for o in offered if o.startswith("runs/")]


def test_the_projects_config_is_never_a_suite_even_when_confirmed(project):
    before = (project / "rubriclang.toml").read_bytes()
    c, csrf = signed_in(project)
    page = _saved(c, csrf, op=_all_on(c), suite="rubriclang.toml", overwrite="1")
    assert "is the project&#39;s config" in page and (project / "rubriclang.toml").read_bytes() == before


def test_the_estimate_is_rbg_audit_estimates_text_for_the_saved_suite(project):
    import html

    _with_llm_criterion(project)
    c, csrf = signed_in(project)
    early = _saved(c, csrf, op=_all_on(c), action="estimate")
    assert "is not saved yet" in early
    _saved(c, csrf, op=_all_on(c))
    page = _saved(c, csrf, op=_all_on(c), action="estimate")
    shown = html.unescape(found(r'<pre id="estimate">(.*?)</pre>', page))
    cli = rbg("audit", "wb.toml", "--estimate")
    assert cli.exit_code == 0, cli.output
    assert shown.strip() == cli.output.strip() and "judge" in shown and "calls" in shown


def test_each_role_can_have_a_server_of_its_own(project):
    _with_llm_criterion(project)
    _with_profile(project)
    c, csrf = signed_in(project)
    page = _saved(c, csrf, op=_all_on(c), server="strong", role_validator="")
    assert "loads it: no error" in page
    suite = load_suite(str(project / "wb.toml"))
    assert suite.judge_model.base_url == URL and suite.generator.base_url == URL and suite.validator.base_url is None
    assert suite.operators and any(load_perturbations()[o].generator == "llm" for o in suite.operators)
    # A judge on the server, variants from the embedded model: the rule operators only, 5 repeats.
    page = _saved(c, csrf, op=_all_on(c), role_judge="strong", suite="judge-only.toml")
    suite = load_suite(str(project / "judge-only.toml"))
    assert suite.judge_model.base_url == URL and suite.generator.base_url is None and suite.repeats == 5
    assert suite.operators and all(load_perturbations()[o].generator == "rule" for o in suite.operators)


def test_a_role_naming_no_profile_is_refused(project):
    c, csrf = signed_in(project)
    page = _saved(c, csrf, role_generator="nosuch")
    assert "generator: no one-server profile `nosuch`" in page and not (project / "wb.toml").exists()


def test_a_profiles_credentials_never_reach_the_page(project):
    _with_llm_criterion(project)
    secret = "s3cret-in-url"
    with (project / "rubriclang.toml").open("a") as fh:
        fh.write(f'\n[models.keyed]\nbase_url = "http://127.0.0.1:9/v1?key={secret}"\n')
    c, csrf = signed_in(project)
    pages = [c.get("/workbench").text]
    pages.append(_saved(c, csrf, op=_all_on(c), server="keyed"))
    pages.append(_saved(c, csrf, op=_all_on(c), server="keyed", action="estimate"))
    assert 'id="saved"' in pages[1] and 'id="estimate"' in pages[2]
    assert secret in (project / "wb.toml").read_text()  # the file is the command's, credentials and all
    assert not [p for p in pages if secret in p]


def test_preview_makes_the_variants_rbg_audit_preview_makes_and_shows_them_side_by_side(project):
    c, csrf = signed_in(project)
    early = _saved(c, csrf, op=_all_on(c), action="preview")
    assert "is not saved yet" in early
    _saved(c, csrf, op=_all_on(c))
    page = _saved(c, csrf, op=_all_on(c), action="preview")
    folder = found(r'id="previewed">.*?sealed in <code>([^<]+)</code>', page)
    assert folder.startswith("audits/") and "original<pre>" in page and "perturbed<pre>" in page
    assert not (project / folder / "report.json").exists()  # nothing judged
    cli = rbg("audit", "preview", "wb.toml", "--out", "cli-preview")
    assert cli.exit_code == 0, cli.output
    assert (project / folder / "preview.json").read_bytes() == (project / "cli-preview" / "preview.json").read_bytes()
