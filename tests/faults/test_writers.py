"""Every file rubriclang writes goes through one atomic writer
(`safeio.write_atomic` / `safeio.atomic_file`) or one of the append-only
writers named below: this test reads the package's source and lists every
other place that opens a file for writing, renames, copies or makes a
temporary file, so a new writer that bypasses them fails here, by name
(issue 25, item 3)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import rubriclang

PACKAGE = Path(rubriclang.__file__).parent

# (file, what) -> why it may write on its own. Keep it short: each is a writer
# that cannot be a whole-file rewrite.
ALLOWED = {
    ("interp/trace.py", "os.open"): "the append-only trace writer (TraceWriter): a record at a time, O_APPEND",
    ("interp/trace.py", "os.ftruncate"): "the trace writer cuts a torn last line (a kill's) before it appends",
    ("audit/runner.py", "open(a)"): "the audit's append-only judgment log, cut back to its last whole line on resume",
    ("llm/cache.py", "sqlite3.connect"): "the call cache: SQLite's own journal makes each write atomic",
    ("audit/seal.py", "os.replace"): "--reseal moves an earlier audit's files whole into a subfolder (a rename)",
}

_WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}
_ALWAYS = {
    "os.replace",
    "os.rename",
    "os.renames",
    "os.link",
    "os.symlink",
    "os.truncate",
    "os.ftruncate",
    "shutil.copy",
    "shutil.copy2",
    "shutil.copyfile",
    "shutil.copytree",
    "shutil.move",
    "tempfile.mkstemp",
    "tempfile.NamedTemporaryFile",
    "sqlite3.connect",
}


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_name(node.value)}.{node.attr}"
    return "?"


def _mode(call: ast.Call, position: int) -> str | None:
    """The mode string of an open-like call, when it is a literal."""
    arg = call.args[position] if len(call.args) > position else None
    for kw in call.keywords:
        if kw.arg == "mode":
            arg = kw.value
    if arg is None:
        return "r"
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


def _writes(call: ast.Call) -> str | None:
    """What this call is, when it may write a file; None otherwise."""
    name = _name(call.func)
    short = name.rsplit(".", 1)[-1]
    if name in _ALWAYS:
        return name
    if short in ("write_text", "write_bytes") and isinstance(call.func, ast.Attribute):
        return f".{short}"
    if name in ("open", "io.open", "os.fdopen") or (short == "open" and isinstance(call.func, ast.Attribute)):
        if name == "os.open":
            flags = (
                {n.attr for n in ast.walk(call.args[1]) if isinstance(n, ast.Attribute)}
                if len(call.args) > 1
                else set()
            )
            flags |= {n.id for n in ast.walk(call.args[1]) if isinstance(n, ast.Name)} if len(call.args) > 1 else set()
            return "os.open" if flags & _WRITE_FLAGS else None
        method = isinstance(call.func, ast.Attribute) and name not in ("io.open", "os.fdopen")
        mode = _mode(call, 0 if method else 1)
        if mode is None:
            # `x.open(name)` is a zip member or a URL (webbrowser), not a mode.
            return None if method else f"{short}(mode not a literal)"
        written = "".join(c for c in mode if c in "wax+")
        return f"{short}({written})" if written else None
    return None


def calls(kind: Callable[[ast.Call], str | None]) -> list[tuple[str, int, str]]:
    """(file relative to the package, line, what) of every call outside
    safeio.py that `kind` names (what it does), in file and line order."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "safeio.py":
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"), rel)):
            if isinstance(node, ast.Call) and (what := kind(node)):
                found.append((rel, node.lineno, what))
    return found


def writers() -> list[tuple[str, int, str]]:
    """Every writing call outside safeio.py (`calls`)."""
    return calls(_writes)


def test_every_writer_in_the_package_goes_through_safeio_or_is_a_named_append_only_writer():
    offenders = [f"rubriclang/{f}:{line}: {what}" for f, line, what in writers() if (f, what) not in ALLOWED]
    assert not offenders, "write through rubriclang.safeio (write_atomic, atomic_file):\n" + "\n".join(offenders)


def test_each_allowed_writer_still_exists():
    found = {(f, what) for f, _, what in writers()}
    assert set(ALLOWED) <= found, set(ALLOWED) - found


def test_the_scan_finds_each_kind_of_writer(tmp_path):
    # The scanner itself: each of these is a writer, and reads are not.
    source = """
import os, shutil, tempfile, sqlite3
open(p, "w"); open(p, mode="a"); open(p, "rb+"); p.open("w"); os.fdopen(fd, "wb")
os.open(p, os.O_WRONLY | os.O_CREAT); os.replace(a, b); os.rename(a, b); shutil.copy(a, b)
tempfile.mkstemp(); p.write_text("x"); p.write_bytes(b"x"); sqlite3.connect(p); open(p, m)
open(p); open(p, "rb"); p.open(); os.open(p, os.O_RDONLY); os.fdopen(fd, "rb")
"""
    calls = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)]
    kinds = [w for c in calls if (w := _writes(c))]
    assert kinds == [
        "open(w)",
        "open(a)",
        "open(+)",
        "open(w)",
        "fdopen(w)",
        "os.open",
        "os.replace",
        "os.rename",
        "shutil.copy",
        "tempfile.mkstemp",
        ".write_text",
        ".write_bytes",
        "sqlite3.connect",
        "open(mode not a literal)",
    ]


def test_every_command_module_that_writes_takes_the_output_check_and_lock():
    # A command writes what the user names only inside `cli.outputs.command_output`
    # (or `locked_output`, for fmt's in-place rewrite): tests/faults/test_output_locks.py
    # runs each of them against a held lock.
    unchecked = []
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        tree = ast.parse(path.read_text("utf-8"))
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        if names & {"write_atomic", "atomic_file"} and not names & {"command_output", "locked_output"}:
            unchecked.append(path.name)
    assert unchecked == []
