"""Every file rubriclang reads is opened by `safeio.open_regular` (which
refuses a pipe, a device or a folder without blocking) unless it is one of
the readers named below, each with its reason: a stream that may be a pipe
(items, value tables, traces, convert sources), a file already checked to be
regular, or rubriclang's own data. This test reads the package's source and
fails on any other `open(...)` for reading, `read_text` or `read_bytes`, so
a new reader that could hang on a named pipe fails here, by name (issue 25,
item 10)."""

from __future__ import annotations

import ast

from faults.test_writers import _writes, calls

PACKAGE_DATA = "package data (importlib.resources or the installed package's own files)"
IN_AUDIT_FOLDER = "a file of the audit folder, which safeio.check_folder vetted (no pipe, no link out)"

ALLOWED = {
    ("audit/html/write.py", "read_text"): "the audit folder's JSON, after is_file",
    ("audit/perturbations.py", "read_text"): PACKAGE_DATA,
    ("audit/pipeline.py", "open"): IN_AUDIT_FOLDER,
    ("audit/preview.py", "open"): IN_AUDIT_FOLDER,
    ("audit/runner.py", "open"): IN_AUDIT_FOLDER,
    ("catalog/loader.py", "read_text"): PACKAGE_DATA,
    ("cli/diff.py", "open"): "the temporary files git hands the diff driver",
    ("cli/fit.py", "open"): "the graph load_graph has just read through open_regular",
    ("cli/run.py", "open"): "items, counted for the progress line; items may come from a pipe",
    ("cli/view.py", "open"): "a viewer input, after os.path.isfile",
    ("view/sources.py", "open"): "an item read back at its line's offset from a viewer input indexed before (a file)",
    ("config.py", "open"): "a pyproject.toml, after os.path.isfile",
    ("diagnostics/codes.py", "read_text"): PACKAGE_DATA,
    ("docs_gen.py", "read_text"): "the repository's own documentation sources",
    ("interp/sources.py", "open"): "an items convert source, streamed: a pipe works",
    ("interp/trace.py", "open"): "the trace being rewritten, after usable_out found it a regular file",
    ("jsonl.py", "open"): "JSON Lines, streamed (items, value tables, traces): a pipe works",
    ("llm/embedded.py", "open"): "the model file, after is_file",
    ("llm/models.py", "read_text"): "rubriclang's own digest memo in its cache folder",
    ("template.py", "read_text"): PACKAGE_DATA,
    ("audit/seal.py", "open"): "a suite's items file, hashed after the suite's loading has read it",
    ("packaged.py", "open"): PACKAGE_DATA,
    ("packaged.py", "read_text"): PACKAGE_DATA,
    ("syntax/larkparse.py", "read_text"): PACKAGE_DATA,
    ("tomlcache.py", "open"): "rubriclang's own parse cache in its cache folder",
    ("view/server.py", "read_bytes"): PACKAGE_DATA,
    ("view/table.py", "open"): "a trace or items file the viewer was given, after cli/view's os.path.isfile",
}


def _reads(call: ast.Call) -> str | None:
    """`open`, `read_text` or `read_bytes` when this call reads a file."""
    func = call.func
    if isinstance(func, ast.Name) and func.id == "open" and not _writes(call):
        return "open"
    if isinstance(func, ast.Attribute) and func.attr in ("read_text", "read_bytes"):
        return func.attr
    return None


def readers() -> list[tuple[str, int, str]]:
    """Every reading call outside safeio.py."""
    return calls(_reads)


def test_every_reader_refuses_special_files_or_is_a_named_exception():
    offenders = [f"rubriclang/{f}:{line}: {what}" for f, line, what in readers() if (f, what) not in ALLOWED]
    assert not offenders, "read through rubriclang.safeio.open_regular:\n" + "\n".join(offenders)
