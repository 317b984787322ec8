"""Every JSON Lines file rubriclang reads goes through `rubriclang.jsonl`
(issue 27, item 7), which names each bad line `path:line` and reads a torn
last line by the policy its caller chose (the module's docstring): three
readers written by hand beside it had three policies of their own (one
raised a traceback, one silently stopped at a damaged line). This test reads
the package's source and fails on a `json.loads` (or a decoder's `decode`) of
the variable a loop or comprehension takes line by line."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

import rubriclang
from rubriclang.audit.runner import RunsError, RunStore
from rubriclang.interp.compiled import read_log
from rubriclang.jsonl import readable_prefix

ROOT = Path(rubriclang.__file__).parent.parent
SOURCES = ("rubriclang", "stdlib_ops")


def _decodes(node: ast.AST) -> ast.expr | None:
    """The argument of `json.loads(x)`, `loads(x)` or `DECODER.decode(x)`."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    decoder = name == "decode" and isinstance(func, ast.Attribute) and "decoder" in ast.unparse(func.value).lower()
    return node.args[0] if name == "loads" or decoder else None


# What a loop over a file's lines iterates over, or calls its variable.
_LINES = re.compile(r"\bfh\b|file|lines|split|open\(|stdin|\bline|\braw")


def _targets(node: ast.AST) -> set[str]:
    """The names a `for` loop or a comprehension binds, when it goes over lines."""
    if not isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        return set()
    names = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    over_lines = _LINES.search(ast.unparse(node.iter)) or any(_LINES.search(n) for n in names)
    return names if over_lines else set()


def line_decoders(tree: ast.AST) -> list[int]:
    """Lines of each JSON decode of a loop's line (a hand-written JSON Lines reader)."""
    found = set()
    for loop in ast.walk(tree):
        names = set().union(*(_targets(g) for g in getattr(loop, "generators", ()))) | _targets(loop)
        if not names:
            continue
        for node in ast.walk(loop):
            if not isinstance(node, ast.Call):
                continue
            arg = _decodes(node)
            if arg is not None and any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(arg)):
                found.add(node.lineno)
    return sorted(found)


def test_no_json_lines_reader_is_written_beside_rubriclang_jsonl():
    offenders = []
    for top in SOURCES:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            offenders += [f"{rel}:{n}" for n in line_decoders(ast.parse(path.read_text("utf-8"), rel))]
    assert not offenders, "read JSON Lines through rubriclang.jsonl:\n" + "\n".join(offenders)


def test_the_scan_finds_each_shape_of_hand_written_reader():
    source = (
        "import json\n"
        "def a(fh):\n"
        "    return [json.loads(line) for line in fh if line.strip()]\n"
        "def b(data):\n"
        "    for n, raw in enumerate(data.split(b'\\n')):\n"
        "        rec = json.loads(raw.decode('utf-8'))\n"
        "def c(fh):\n"
        "    for line in fh:\n"
        "        yield _DECODER.decode(line)\n"
        "def not_lines(texts, raw, counts):\n"
        "    for t in texts:\n"
        "        print(t)\n"
        "    return json.loads(raw), [json.loads(k) for k, n in sorted(counts.items())]\n"
    )
    assert line_decoders(ast.parse(source)) == [3, 6, 9]


# The policies, one per kind of file.


def test_a_compile_log_reads_up_to_its_first_torn_or_damaged_line(tmp_path):
    path = tmp_path / "a.compile.jsonl"
    first, second = {"event": "spec", "spec_hash": "sha256:1"}, {"event": "call"}
    whole = (json.dumps(first) + "\n" + json.dumps(second) + "\n").encode()
    for tail, expected in [
        (b"", [first, second]),
        (b'{"event": "en', [first, second]),  # torn by a kill
        (b'{"event": "end"\n{"event": "end"}\n', [first, second]),  # damaged: the rest is not trusted
        (b"[1]\n", [first, second]),  # not a record
    ]:
        path.write_bytes(whole + tail)
        assert read_log(str(path)) == expected
    assert read_log(str(tmp_path / "missing.compile.jsonl")) == []
    assert readable_prefix(str(tmp_path)) == []  # a folder cannot be read


def test_a_damaged_complete_line_of_runs_jsonl_is_an_error_naming_it_and_the_file_is_kept(tmp_path):
    path = tmp_path / "runs.jsonl"
    data = b'{"schema": "nope"}\n{"oops\n'
    path.write_bytes(data)
    with pytest.raises(RunsError, match=r"runs\.jsonl:1: not a "):
        RunStore(str(path)).load()
    path.write_bytes(b"\n" + data[19:])
    with pytest.raises(RunsError, match=r"runs\.jsonl:2: malformed run record"):
        RunStore(str(path)).load()
    assert path.read_bytes() == b"\n" + data[19:]
