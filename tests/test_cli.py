"""`rbg check`, `rbg fmt`, `rbg explain` end to end: through click's runner,
and through the installed `rbg` script for exit codes and import hygiene."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ERROR, GOOD, SYNTAX_ERROR, WARNING

from rubriclang.catalog import loader
from rubriclang.cli.main import COMMANDS, cli
from rubriclang.diagnostics.codes import registry

RBG = Path(sys.executable).with_name("rbg")


def rbg(*args, input=None, env=None):
    return CliRunner().invoke(cli, [str(a) for a in args], input=input, env=env)


def run_script(*args, python_flags=()):
    return subprocess.run(
        [sys.executable, *python_flags, str(RBG), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
    )


# -- check: exit codes and summary --------------------------------------------


def test_check_clean_file_exits_0_and_says_so(write):
    result = rbg("check", write("good.rbg", GOOD))
    assert result.exit_code == 0
    assert result.stdout == "All checks passed (1 file).\n"


def test_check_error_exits_1_and_points_at_it(write):
    path = write("bad.rbg", ERROR)
    result = rbg("check", path)
    assert result.exit_code == 1
    assert result.stdout.startswith(f"{path}:10:6: RB101 error: ")
    assert "10 | sink corect\n" in result.stdout
    assert result.stdout.endswith("Found 1 error in 1 of 1 file.\n")


def test_check_folder_checks_every_rbg_below_it_in_order_skipping_hidden(write, tmp_path):
    write("d/b.rbg", ERROR)
    write("d/a.rbg", GOOD)
    write("d/sub/c.rbg", WARNING)
    write("d/.cache/x.rbg", ERROR)
    write("d/notes.txt", "not a rubric")
    folder = tmp_path / "d"
    result = rbg("check", folder)
    assert result.exit_code == 1
    assert result.stdout.endswith("Found 1 error and 1 warning in 2 of 3 files.\n")
    files = [d["file"] for d in json.loads(rbg("check", "--format", "json", folder).stdout)]
    assert files == [str(folder / "b.rbg"), str(folder / "sub" / "c.rbg")]


def test_check_warnings_pass_unless_strict(write):
    path = write("warn.rbg", WARNING)
    assert rbg("check", path).exit_code == 0
    strict = rbg("check", "--strict", path)
    assert strict.exit_code == 1
    assert "Found 1 warning in 1 of 1 file." in strict.stdout


@pytest.mark.parametrize(
    "options, shown",
    [
        ((), True),
        (("--ignore", "RB504"), False),
        (("--ignore", "rb5"), False),
        (("--ignore", "RB3,RB504"), False),
        (("--ignore", "RB3", "--ignore", "RB504"), False),
        (("--select", "RB3"), False),
        (("--select", "RB504"), True),
    ],
)
def test_check_select_and_ignore_choose_warnings(write, options, shown):
    result = rbg("check", "--strict", *options, write("warn.rbg", WARNING))
    assert ("RB504" in result.stdout) is shown
    assert result.exit_code == (1 if shown else 0)


def test_check_errors_cannot_be_ignored(write):
    result = rbg("check", "--ignore", "RB1", write("bad.rbg", ERROR))
    assert result.exit_code == 1
    assert "RB101" in result.stdout


def test_check_unknown_code_in_select_is_a_usage_error(write):
    result = rbg("check", "--select", "RB999", write("good.rbg", GOOD))
    assert result.exit_code == 2
    assert "RB999" in result.stderr


def test_check_inline_ignore_comment_silences_that_line(write):
    source = WARNING.replace("quantize = nearest }", "quantize = nearest }  # rbg: ignore[RB504]")
    result = rbg("check", "--strict", write("warn.rbg", source))
    assert result.exit_code == 0, result.stdout


# -- check: inputs that cannot be checked ---------------------------------------


def test_check_missing_path_exits_2_with_a_message(tmp_path):
    result = rbg("check", tmp_path / "nope.rbg")
    assert result.exit_code == 2
    assert "nope.rbg`: no such file or folder" in result.stderr
    assert result.stdout == ""


def test_check_folder_without_rbg_files_exits_2(tmp_path):
    result = rbg("check", tmp_path)
    assert result.exit_code == 2
    assert "no .rbg files found" in result.stderr


def test_check_file_that_is_not_utf8_exits_2(write, tmp_path):
    path = tmp_path / "latin1.rbg"
    path.write_bytes(GOOD.replace("How", "H\xf6w").encode("latin-1"))
    result = rbg("check", path)
    assert result.exit_code == 2
    assert f"{path}:6: not UTF-8 text (byte 0xf6 at column 16)" in result.stderr


def test_check_unreadable_file_exits_2(write, monkeypatch):
    path = write("secret.rbg", GOOD)

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("rubriclang.cli.inputs.open_regular", refuse)
    result = rbg("check", path)
    assert result.exit_code == 2
    assert f"cannot read `{path}`: Permission denied" in result.stderr


def test_check_broken_catalog_plugin_exits_2_when_a_plugin_name_is_needed(write, monkeypatch):
    class BrokenEntryPoint:
        name, value = "broken", "broken_pkg:catalog"

        def load(self):
            raise ImportError("No module named 'broken_pkg'")

    monkeypatch.setattr(loader, "_plugins", lambda: [BrokenEntryPoint()])
    loader.load_catalog.cache_clear()
    try:
        # Plugins are only loaded for a name the standard catalog lacks.
        clean = rbg("check", write("good.rbg", GOOD))
        result = rbg("check", write("plugin.rbg", GOOD.replace("llm.rate", "acme.rate")))
    finally:
        loader.load_catalog.cache_clear()
    assert clean.exit_code == 0
    assert result.exit_code == 2
    assert "cannot load catalog plugin `broken`" in result.stderr
    assert "Traceback" not in result.output


# -- check: stdin, formats, colour ------------------------------------------------


def test_check_reads_stdin_under_the_given_name():
    result = rbg("check", "-", "--stdin-filename", "mine.rbg", input=ERROR)
    assert result.exit_code == 1
    assert result.stdout.startswith("mine.rbg:10:6: RB101 error:")


def test_check_json_output_parses(write):
    path = write("bad.rbg", ERROR)
    result = rbg("check", "--format", "json", path)
    assert result.exit_code == 1
    (item,) = json.loads(result.stdout)
    assert (item["code"], item["file"], item["line"], item["column"]) == ("RB101", str(path), 10, 6)


def test_check_sarif_output_names_the_rule(write):
    result = rbg("check", "--format", "sarif", write("bad.rbg", ERROR))
    run = json.loads(result.stdout)["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["RB101"]
    assert run["results"][0]["ruleId"] == "RB101"


def test_check_github_output_is_one_command_per_diagnostic(write):
    path = write("bad.rbg", ERROR)
    result = rbg("check", "--format", "github", path)
    assert result.stdout.startswith(f"::error file={path},line=10,col=6,endLine=10,endColumn=12,title=RB101::")
    assert result.stdout.count("\n") == 1


def test_check_colour_only_when_asked(write):
    path = write("bad.rbg", ERROR)
    assert "\x1b[" in rbg("check", "--color", path).stdout
    assert "\x1b[" not in rbg("check", "--no-color", path).stdout
    assert "\x1b[" not in rbg("check", path).stdout  # not a terminal


# -- fmt ----------------------------------------------------------------------------


@pytest.fixture
def formatting():
    """(canonical text, the same graph laid out badly)."""
    from rubriclang.fmt import format_source

    canonical = format_source(GOOD, "good.rbg").output
    assert canonical is not None
    ugly = canonical.replace("contract { ", "contract   {").replace("\n\n", "\n\n\n")
    assert format_source(canonical, "good.rbg").changed is False
    assert format_source(ugly, "ugly.rbg").changed is True
    return canonical, ugly


def test_fmt_rewrites_a_file_in_canonical_layout(write, formatting):
    canonical, ugly = formatting
    path = write("ugly.rbg", ugly)
    result = rbg("fmt", path)
    assert result.exit_code == 0
    assert path.read_text("utf-8") == canonical
    assert "1 file reformatted." in result.stderr


def test_fmt_leaves_a_canonical_file_untouched(write, formatting):
    path = write("good.rbg", formatting[0])
    before = os.stat(path)
    result = rbg("fmt", path)
    assert result.exit_code == 0
    after = os.stat(path)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_fmt_keeps_file_permissions(write, formatting):
    path = write("ugly.rbg", formatting[1])
    path.chmod(0o640)
    rbg("fmt", path)
    assert path.stat().st_mode & 0o777 == 0o640


def test_fmt_check_lists_files_that_would_change_and_writes_nothing(write, formatting):
    canonical, ugly = formatting
    ugly_path, good_path = write("ugly.rbg", ugly), write("good.rbg", canonical)
    result = rbg("fmt", "--check", ugly_path, good_path)
    assert result.exit_code == 1
    assert f"would reformat {ugly_path}" in result.stderr
    assert str(good_path) not in result.stderr
    assert ugly_path.read_text("utf-8") == ugly
    assert rbg("fmt", "--check", good_path).exit_code == 0


def test_fmt_diff_prints_a_unified_diff_and_writes_nothing(write, formatting):
    _canonical, ugly = formatting
    path = write("ugly.rbg", ugly)
    result = rbg("fmt", "--diff", path)
    assert result.exit_code == 1  # a change to make, as with --check
    assert result.stdout.startswith(f"--- {path}\t(original)\n+++ {path}\t(formatted)\n")
    assert "\n-contract   {" in result.stdout
    assert path.read_text("utf-8") == ugly


def test_fmt_refuses_a_file_with_syntax_errors(write):
    path = write("broken.rbg", SYNTAX_ERROR)
    result = rbg("fmt", path)
    assert result.exit_code == 1
    assert f"{path}:1:" in result.stderr and "RB001" in result.stderr
    assert path.read_text("utf-8") == SYNTAX_ERROR


def test_fmt_stdin_goes_to_stdout(formatting):
    canonical, ugly = formatting
    result = rbg("fmt", "-", input=ugly)
    assert result.exit_code == 0
    assert result.stdout == canonical


def test_fmt_missing_file_exits_2(tmp_path):
    result = rbg("fmt", tmp_path / "nope.rbg")
    assert result.exit_code == 2
    assert "no such file or folder" in result.stderr


# -- explain ----------------------------------------------------------------------


def test_explain_prints_the_registry_entry_with_examples():
    info = registry()["RB203"]
    result = rbg("explain", "rb203")
    assert result.exit_code == 0
    out = result.stdout
    assert out.startswith(f"RB203 {info.name} (error)\n")
    assert info.summary in out and info.explanation in out
    assert out.index("Wrong:") < out.index(info.wrong.splitlines()[0]) < out.index("Right:")


def test_explain_accepts_a_code_name():
    assert rbg("explain", registry()["RB304"].name).stdout.startswith("RB304 ")


def test_explain_unknown_code_exits_2_with_a_suggestion():
    result = rbg("explain", "RB2033")
    assert result.exit_code == 2
    assert "Did you mean RB203" in result.stderr


def test_explain_without_a_code_is_a_usage_error():
    assert rbg("explain").exit_code == 2


def test_explain_list_shows_every_code():
    out = rbg("explain", "--list").stdout
    assert all(f"  {code}  " in out for code in registry())


# -- the command group and the installed script -------------------------------------


def test_version():
    result = rbg("--version")
    assert result.exit_code == 0
    assert result.stdout.startswith("rbg ")


def test_every_registered_command_loads():
    ctx = cli.make_context("rbg", [], resilient_parsing=True)
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
    assert command is not None and command.name == name


def test_script_exit_codes_and_no_traceback(write, tmp_path):
    assert run_script("check", write("good.rbg", GOOD)).returncode == 0
    assert run_script("check", write("bad.rbg", ERROR)).returncode == 1
    missing = run_script("check", tmp_path / "nope.rbg")
    assert missing.returncode == 2
    assert "no such file or folder" in missing.stderr and "Traceback" not in missing.stderr


def _imported(*args) -> set[str]:
    result = run_script(*args, python_flags=("-X", "importtime"))
    return {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}


@pytest.mark.parametrize("command", ["check", "fmt --check"])
def test_check_and_fmt_do_not_import_network_or_audit_code(write, command):
    modules = _imported(*command.split(), write("good.rbg", GOOD))
    assert "rubriclang.syntax" in modules  # the measurement itself works
    assert not {m for m in modules if m.split(".")[0] == "httpx" or m.startswith("rubriclang.audit")}
    assert not _viewer_modules(modules)


def test_a_clean_check_imports_nothing_it_does_not_need(write):
    # Each of these cost a cold `rbg check` milliseconds: Lark (the generated
    # tables parse a valid file), TOML (cached), hashing and resource readers
    # (the caches and data files are read without them), JSON and the
    # renderers (a clean text check prints the summary alone), entry points
    # (plugins only for a name the standard catalog lacks).
    path = write("good.rbg", GOOD)
    run_script("check", path)  # fills the TOML cache when it is cold
    modules = _imported("check", path)
    assert "rubriclang.checker" in modules  # the measurement itself works
    unneeded = {m for m in modules if m.split(".")[0] in ("lark", "tomllib", "hashlib", "json")}
    unneeded |= modules & {"importlib.resources", "importlib.metadata", "rubriclang.diagnostics.render"}
    assert unneeded == set()


def test_fmt_check_of_a_formatted_file_imports_no_diff_or_random_machinery(write):
    # difflib serves --diff alone, and temporary names come from os.urandom
    # (secrets would import hashlib and random): none of it for --check.
    path = write("good.rbg", GOOD)
    modules = _imported("fmt", "--check", path)
    assert "rubriclang.fmt" in modules  # the measurement itself works
    assert modules & {"difflib", "secrets", "hashlib", "random", "lark", "tomllib", "json"} == set()


_VIEWER = ("starlette", "uvicorn", "jinja2")


def _viewer_modules(modules: set[str]) -> set[str]:
    return {
        m
        for m in modules
        if m.split(".")[0] in _VIEWER or m.startswith("rubriclang.view") or m == "rubriclang.cli.view"
    }


def test_run_does_not_import_the_viewer(write, tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text('{"id": "1", "input": "q", "response": "a b c"}\n', encoding="utf-8")
    graph = write(
        "len.rbg",
        "rubric l { version = 1 }\ncontract { scale = bool }\ncriterion long: bool = rule.length { over = 2 }\n"
        "sink long\nreadout pointwise { output = bool }\n",
    )
    modules = _imported("run", graph, items, "--out", tmp_path / "t.jsonl")
    assert "rubriclang.interp.engine" in modules  # the run happened
    assert not _viewer_modules(modules)


def test_check_parses_no_toml_once_the_data_cache_is_written(write):
    """The catalog and the diagnostic codes come from the on-disk cache after the first run."""
    bad = write("bad.rbg", ERROR)
    assert run_script("check", bad).returncode == 1  # writes the caches, if missing
    modules = _imported("check", bad)
    assert "rubriclang.catalog.loader" in modules and "rubriclang.diagnostics.codes" in modules
    assert "tomllib" not in modules


def test_help_lists_commands_without_importing_them():
    modules = _imported("--help")
    assert not {m for m in modules if m.startswith("rubriclang.cli.") and m != "rubriclang.cli.main"}
    assert "rubriclang.checker" not in modules
