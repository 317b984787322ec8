"""`rbg check`/`fmt`/`explain` exit without the interpreter's teardown, but
nothing a normal exit does that anyone could observe is lost."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from conftest import GOOD

PROGRAM = """
import atexit, sys
atexit.register(lambda: open({marker!r}, "w").write("atexit ran"))
# Buffered (stdout is a pipe) and written after the command: lost without a flush.
atexit.register(lambda: sys.stdout.write("written at exit\\n"))
sys.argv = ["rbg", *{argv!r}]
from rubriclang.cli.main import main
main()
"""


def _run(tmp_path, *argv):
    marker = tmp_path / "marker"
    code = textwrap.dedent(PROGRAM.format(marker=str(marker), argv=list(argv)))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    return proc, marker


def test_quick_exit_of_check_runs_atexit_work_and_flushes_what_it_wrote(tmp_path):
    rubric = tmp_path / "ok.rbg"
    rubric.write_text(GOOD)
    proc, marker = _run(tmp_path, "check", str(rubric))
    assert marker.read_text() == "atexit ran"
    assert proc.stdout.endswith("written at exit\n"), proc.stdout
    assert "All checks passed" in proc.stdout


def test_quick_exit_keeps_the_commands_exit_status(tmp_path):
    proc, marker = _run(tmp_path, "explain", "RB999999")
    assert proc.returncode == 2, proc.stderr
    assert marker.read_text() == "atexit ran"
    assert proc.stdout.endswith("written at exit\n")


def test_quick_exit_reports_a_failed_flush_with_status_120(tmp_path, monkeypatch):
    import rubriclang.cli.main as main_module

    class Closed:
        def flush(self):
            raise BrokenPipeError

    statuses: list[int] = []
    monkeypatch.setattr(main_module.atexit, "_run_exitfuncs", lambda: None)  # pytest's own
    monkeypatch.setattr(main_module.os, "_exit", statuses.append)
    monkeypatch.setattr(main_module.sys, "stdout", Closed())
    main_module.quick_exit(0)
    main_module.quick_exit(1)
    assert statuses == [120, 1]


GC_PROGRAM = """
import atexit, gc, sys
atexit.register(lambda: sys.stderr.write("collector on: %s\\n" % gc.isenabled()))
sys.argv = ["rbg", *{argv!r}]
from rubriclang.cli.main import main
main()
"""


def _collector_at_exit(*argv) -> str:
    code = GC_PROGRAM.format(argv=list(argv))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    return proc.stderr.strip().splitlines()[-1]


def test_a_quick_exit_command_runs_without_the_cyclic_collector(tmp_path):
    rubric = tmp_path / "ok.rbg"
    rubric.write_text(GOOD)
    assert _collector_at_exit("check", str(rubric)) == "collector on: False"


def test_a_long_running_command_gets_the_cyclic_collector_back_once_imported():
    # `cache --help` imports its command as `run` or `lsp` would: from then on the collector is on.
    assert _collector_at_exit("cache", "--help") == "collector on: True"
