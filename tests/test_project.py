"""Projects (docs/project.md): `rbg init`, the `[project]` and `[check]`
settings found upward, the daily commands' defaults (the command line
wins), and `rbg view`'s landing page over a project's outputs."""

from __future__ import annotations

import importlib
import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from rubriclang.cli.main import cli

TOKEN = "t0ken-for-tests"


def rbg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture()
def project(tmp_path, monkeypatch) -> Path:
    """A project made by `rbg init` in an empty folder, the current folder."""
    monkeypatch.chdir(tmp_path)
    result = rbg("init")
    assert result.exit_code == 0, result.output
    return tmp_path


def _runs(root: Path) -> list[Path]:
    return sorted((root / "runs").glob("*.traces.jsonl"))


def _setting(root: Path, old: str, new: str) -> None:
    config = root / "rubriclang.toml"
    text = config.read_text()
    assert old in text
    config.write_text(text.replace(old, new, 1))


# -- the whole loop --------------------------------------------------------------


def test_init_run_and_view_export_from_an_empty_folder_lists_the_run(project):
    run = rbg("run", "rubric.rbg", "items.jsonl")
    assert run.exit_code == 0, run.output
    [trace] = _runs(project)
    assert f"writing to runs/{trace.name}" in run.stderr and f"traces: runs/{trace.name}" in run.stdout
    assert re.fullmatch(r"\d{8}T\d{6}Z-rubric\.traces\.jsonl", trace.name)
    assert len(trace.read_text().splitlines()) == 5

    exported = rbg("view", "--export", "out")
    assert exported.exit_code == 0, exported.output
    index = (project / "out" / "index.html").read_text()
    row = index[index.index(trace.name) - 400 : index.index(trace.name) + 1200]
    assert 'href="items-' in row and "rubric.rbg" in row and "items.jsonl" in row and "finished" in row
    assert "agrees with gold" in row and "(5/5 items" in row
    # Figures by the viewer's one number rule (docs/view.md "Numbers"): 3 decimals, not a percentage.
    assert "1.000 [0.566, 1.000]" in row and "%" not in row


def test_the_served_landing_page_lists_the_run_and_needs_the_token(project):
    from starlette.testclient import TestClient

    from rubriclang.cli.view import project_landing
    from rubriclang.view import landing as pages
    from rubriclang.view.server import make_app

    assert rbg("run", "rubric.rbg", "items.jsonl").exit_code == 0
    landing = project_landing()
    app = make_app(landing.sources, TOKEN, lambda site: pages.render(site, landing))
    client = TestClient(app, base_url="http://127.0.0.1:8123", follow_redirects=False)
    assert client.get("/").status_code == 403
    page = client.get(f"/?token={TOKEN}", follow_redirects=True)
    assert page.status_code == 200 and _runs(project)[0].name in page.text
    items = client.get(f"/items?src={_runs(project)[0].name}")
    assert items.status_code == 200 and "q3" in items.text


def test_starter_rubric_checks_clean_with_no_warning(project):
    result = rbg("check", "--strict", "rubric.rbg")
    assert result.exit_code == 0 and "All checks passed" in result.output, result.output


def test_starter_audit_suite_runs_into_the_projects_audits_folder(project):
    result = rbg("audit", "audit.toml")
    assert result.exit_code == 0, result.output
    [folder] = (project / "audits").iterdir()
    assert (folder / "report.json").is_file() and f"audits/{folder.name}" in result.stderr


# -- rbg init ----------------------------------------------------------------------


def test_init_refuses_to_overwrite_and_names_the_files(tmp_path):
    (tmp_path / "rubric.rbg").write_text("mine\n")
    (tmp_path / ".gitignore").write_text("mine\n")
    result = rbg("init", tmp_path)
    assert result.exit_code == 2
    assert "rubric.rbg" in result.stderr and ".gitignore" in result.stderr and "--force" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [".gitignore", "rubric.rbg"]  # nothing written
    assert (tmp_path / "rubric.rbg").read_text() == "mine\n"


def test_init_with_force_overwrites_and_makes_a_missing_folder(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "rubric.rbg").write_text("mine\n")
    assert rbg("init", "--force", tmp_path / "p").exit_code == 0
    assert "rubric starter" in (tmp_path / "p" / "rubric.rbg").read_text()
    assert rbg("init", tmp_path / "new" / "proj").exit_code == 0
    suite = (tmp_path / "new" / "proj" / "audit.toml").read_text()
    assert 'judge = "rubric.rbg"' in suite and 'items = "items.jsonl"' in suite


# -- settings: validation at their line ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("[project]\nruns = 'runs'\nconcurrency = 0\n", 3, "`project.concurrency` must be between 1 and 4096"),
        ("[project]\nrunz = 'out'\n", 2, "did you mean `runs`?"),
        ("[projct]\nruns = 'out'\n", 1, "did you mean `project`?"),
        ("[project]\ncache = 3\n", 2, "`project.cache` must be true (the user's call cache)"),
        ("[check]\n\nignore = 'RB504'\n", 3, "`check.ignore` must be a list"),
        ("[project]\nruns = [\n", 2, "not valid TOML"),
    ],
)
def test_a_bad_setting_is_an_error_at_its_line(project, text, line, words):
    (project / "rubriclang.toml").write_text(text)
    result = rbg("run", "rubric.rbg", "items.jsonl")
    assert result.exit_code == 2 and f"rubriclang.toml:{line}" in result.stderr and words in result.stderr, (
        result.output
    )
    assert "Traceback" not in result.output and not (project / "runs").exists()


def test_pyproject_tool_table_is_a_project_too(tmp_path, monkeypatch):
    assert rbg("init", tmp_path).exit_code == 0
    (tmp_path / "rubriclang.toml").unlink()
    (tmp_path / "pyproject.toml").write_text('[tool.rubriclang.project]\nruns = "out/traces"\n')
    monkeypatch.chdir(tmp_path)
    assert rbg("run", "rubric.rbg", "items.jsonl").exit_code == 0
    assert len(list((tmp_path / "out" / "traces").glob("*.traces.jsonl"))) == 1


# -- defaults, and the command line over them -------------------------------------------


def test_out_on_the_command_line_wins_over_the_runs_folder(project):
    result = rbg("run", "rubric.rbg", "items.jsonl", "--out", "mine.jsonl")
    assert result.exit_code == 0 and (project / "mine.jsonl").is_file()
    assert not (project / "runs").exists() and "writing to" not in result.stderr


@pytest.mark.parametrize(("command", "module"), [("run", "run"), ("eval", "evaluate")])
def test_concurrency_comes_from_the_project_unless_given(project, monkeypatch, command, module):
    cli_module = importlib.import_module(f"rubriclang.cli.{module}")
    seen = []
    original = cli_module.interpreter

    def spy(graph, backends, concurrency):
        seen.append(concurrency)
        return original(graph, backends, concurrency)

    monkeypatch.setattr(cli_module, "interpreter", spy)
    _setting(project, "concurrency = 8", "concurrency = 3")
    assert rbg(command, "rubric.rbg", "items.jsonl").exit_code == 0
    assert rbg(command, "rubric.rbg", "items.jsonl", "--concurrency", "5").exit_code == 0
    assert seen == [3, 5]


def test_two_runs_in_one_second_get_two_files(project, monkeypatch):
    import time

    monkeypatch.setattr(time, "gmtime", lambda *a: time.struct_time((2026, 1, 2, 3, 4, 5, 0, 2, 0)))
    assert rbg("run", "rubric.rbg", "items.jsonl").exit_code == 0
    assert rbg("run", "rubric.rbg", "items.jsonl").exit_code == 0
    assert [p.name for p in _runs(project)] == [
        "20260102T030405Z-rubric-2.traces.jsonl",
        "20260102T030405Z-rubric.traces.jsonl",
    ]


def test_the_project_is_found_from_the_graphs_folder_before_the_current_one(project, tmp_path_factory, monkeypatch):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    monkeypatch.chdir(elsewhere)
    result = rbg("run", project / "rubric.rbg", project / "items.jsonl")
    assert result.exit_code == 0, result.output
    assert len(_runs(project)) == 1 and not list(elsewhere.iterdir())


def test_outside_a_project_run_needs_out_and_view_needs_paths(tmp_path, monkeypatch):
    assert rbg("init", tmp_path / "p").exit_code == 0
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.chdir(outside)
    (outside / "r.rbg").write_text((tmp_path / "p" / "rubric.rbg").read_text())
    run = rbg("run", "r.rbg", tmp_path / "p" / "items.jsonl")
    assert run.exit_code == 2 and "needs --out" in run.stderr and "rbg init" in run.stderr
    view = rbg("view")
    assert view.exit_code == 2 and "rubriclang.toml" in view.stderr and "rbg init" in view.stderr
    assert list(outside.iterdir()) == [outside / "r.rbg"]


# -- rbg check: [check] select / ignore ----------------------------------------------------


@pytest.fixture()
def warned(project) -> Path:
    """A rubric with one RB504 warning (a parameter set to its default)."""
    path = project / "warned.rbg"
    path.write_text((project / "rubric.rbg").read_text().replace("{ over = 60 }", "{ over = 60, unit = words }"))
    return path


def test_check_honours_the_projects_ignore_in_every_format(project, warned):
    assert "RB504" in rbg("check", warned.name).output
    _setting(project, '# ignore = ["RB504"]', 'ignore = ["RB504"]')
    assert "All checks passed" in rbg("check", "--strict", warned.name).output
    assert json.loads(rbg("check", "--format", "json", warned.name).output) == []
    sarif = json.loads(rbg("check", "--format", "sarif", warned.name).output)
    assert sarif["runs"][0]["results"] == []


def test_check_options_win_over_the_projects(project, warned):
    _setting(project, '# ignore = ["RB504"]', 'ignore = ["RB504"]')
    assert "RB504" in rbg("check", "--ignore", "RB3", warned.name).output
    _setting(project, 'ignore = ["RB504"]', 'select = ["RB3"]')
    assert "RB504" not in rbg("check", warned.name).output
    assert "RB504" in rbg("check", "--select", "RB5", warned.name).output


def test_an_unknown_code_in_check_settings_is_an_error_at_its_line(project, warned):
    _setting(project, '# ignore = ["RB504"]', 'ignore = ["RB999"]')
    result = rbg("check", warned.name)
    assert result.exit_code == 2 and "rubriclang.toml:14" in result.stderr and "RB999" in result.stderr


# -- the landing page ----------------------------------------------------------------------


def test_landing_page_says_running_interrupted_and_unreadable_and_escapes_names(project):
    assert rbg("run", "rubric.rbg", "items.jsonl").exit_code == 0
    [trace] = _runs(project)
    partial = project / "runs" / "partial.traces.jsonl"
    partial.write_text("".join(trace.read_text().splitlines(keepends=True)[:2]))
    (project / "runs" / "partial.run.json").write_text(
        json.dumps({"graph": "rubric.rbg", "items": "items.jsonl", "started": "2026-01-01T00:00:00Z"})
    )
    (project / "runs" / "live.jsonl").write_text(trace.read_text())
    (project / "runs" / "live.jsonl.lock").write_text(f"{os.getpid()}\n")
    (project / "runs" / "<b>bold.jsonl").write_text("not json\n")
    (project / "audits" / "halfway").mkdir(parents=True)

    assert rbg("view", "--export", "out").exit_code == 0
    index = (project / "out" / "index.html").read_text()
    rows = {
        m[1]: m[0] for m in re.findall(r'<tr class="(\w+)">\s*<td>[^<]*</td>\s*<td>\w+: (?:<a [^>]*>)?([^<]+)', index)
    }
    assert rows == {
        trace.name: "finished",
        "partial.traces.jsonl": "interrupted",
        "live.jsonl": "running",
        "&lt;b&gt;bold.jsonl": "unreadable",
        "halfway": "interrupted",
    }
    assert "<b>bold" not in index and "2 of 5 items judged" in index
    assert index.index("partial.traces.jsonl") > index.index(trace.name)  # started earlier: listed after


def test_an_empty_project_lands_on_what_to_run(project):
    assert rbg("view", "--export", "out").exit_code == 0
    assert "Nothing here yet" in (project / "out" / "index.html").read_text()


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ('[tool.rubriclang.project]\nruns = "r"\n', True),
        ('[tool]\nrubriclang = { project = { runs = "r" } }\n', True),
        ('tool = { rubriclang = { check = { ignore = ["RB504"] } } }\n', True),
        ('[project]\nname = "rubriclang"\n[tool.ruff]\nline-length = 100\n', False),
    ],
)
def test_a_pyproject_is_the_config_only_with_a_rubriclang_tool_table(tmp_path, monkeypatch, text, found):
    from rubriclang.config import find_config

    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(text)
    assert (find_config(str(tmp_path / "rubric.rbg")) == str(tmp_path / "pyproject.toml")) is found
