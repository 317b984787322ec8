"""Every hash of JSON is taken of `rubriclang.canonical.canonical_json`
(issue 27, item 7): one text per value, so two sites never disagree on what
"the same" is. The package's source is scanned for a `json.dumps(...,
sort_keys=True)` in a function that hashes, outside canonical.py; the one
kept is named below with its reason. The sites switched to canonical_json
hash persisted things (batch custom ids, spec hashes in compiled graphs,
prompt digests), so each is held, for the values it sees, to the bytes of
the expression it used before."""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import rubriclang
from rubriclang.llm.batch import body_hash
from rubriclang.llm.compiler.batch import spec_hash

ROOT = Path(rubriclang.__file__).parent.parent
SOURCES = ("rubriclang", "stdlib_ops")

ALLOWED = {
    ("rubriclang/llm/calls.py", "fingerprint"): (
        "escapes non-ASCII where canonical_json keeps it, and traces store the hash a resume compares"
    ),
}


def _sorted_dumps(node: ast.AST) -> bool:
    """`json.dumps(..., sort_keys=True)` (or `dumps` imported alone)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name == "dumps" and any(
        k.arg == "sort_keys" and isinstance(k.value, ast.Constant) and k.value.value is True for k in node.keywords
    )


def _hashlib_names(tree: ast.AST) -> set[str]:
    """The names hashlib goes by in a module: `hashlib` and what is imported from it."""
    names = {"hashlib"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.asname or a.name for a in node.names if a.name == "hashlib"}
        elif isinstance(node, ast.ImportFrom) and node.module == "hashlib":
            names |= {a.asname or a.name for a in node.names}
    return names


def hashing_dumps(tree: ast.AST) -> list[tuple[str, int]]:
    """(function, line) of each sorted `json.dumps` in a function that uses hashlib."""
    hashlib_names = _hashlib_names(tree)
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        inner = list(ast.walk(fn))
        if any(isinstance(n, ast.Name) and n.id in hashlib_names for n in inner):
            found += [(fn.name, n.lineno) for n in inner if isinstance(n, ast.Call) and _sorted_dumps(n)]
    return sorted(set(found), key=lambda x: x[1])


def sites() -> list[tuple[str, int, str]]:
    out = []
    for top in SOURCES:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel == "rubriclang/canonical.py":
                continue
            out += [(rel, line, fn) for fn, line in hashing_dumps(ast.parse(path.read_text("utf-8"), rel))]
    return out


def test_every_hash_of_json_is_of_canonical_json_or_a_named_exception():
    offenders = [f"{f}:{line}: {fn}" for f, line, fn in sites() if (f, fn) not in ALLOWED]
    assert not offenders, "hash rubriclang.canonical.canonical_json(value), not json.dumps:\n" + "\n".join(offenders)


def test_each_allowed_exception_still_exists():
    assert set(ALLOWED) <= {(f, fn) for f, _, fn in sites()}


def test_the_scan_finds_a_sorted_dumps_that_is_hashed_and_not_one_that_is_shown():
    source = (
        "import hashlib, json\n"
        "def key(v):\n"
        "    text = json.dumps(v, sort_keys=True)\n"
        "    return hashlib.sha256(text.encode()).hexdigest()\n"
        "def show(v):\n"
        "    return json.dumps(v, sort_keys=True, indent=2)\n"
        "def unsorted(v):\n"
        "    return hashlib.sha256(json.dumps(v).encode())\n"
        "def remember(v, sha256):\n"
        "    return json.dumps({'v': v, 'sha256': sha256}, sort_keys=True)\n"
        "from hashlib import sha256 as h\n"
        "def imported(v):\n"
        "    return h(json.dumps(v, sort_keys=True).encode())\n"
    )
    assert hashing_dumps(ast.parse(source)) == [("key", 3), ("imported", 13)]


# What the spec and batch hashes see: JSON read by rubriclang.jsonl (finite
# numbers, no lone surrogate) and request bodies of validated sampling.
_text = st.text(st.characters(blacklist_categories=["Cs"]))
_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=20,
)


def _former(value: object) -> bytes:
    """The text spec_hash, body_hash and fill_digest hashed before canonical_json."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_text, _values, max_size=5))
def test_spec_and_batch_hashes_are_those_of_the_former_text(fields):
    assert spec_hash(fields) == "sha256:" + hashlib.sha256(_former(fields)).hexdigest()
    assert body_hash(fields) == hashlib.sha256(_former(fields)).hexdigest()[:16]


def test_pinned_spec_hash_is_unchanged():
    fields = {"rubric": {"name": "naïve", "text": "Score 1–5"}, "contract": {"scale": "ordinal[1, 5]", "w": 0.5}}
    assert spec_hash(fields) == "sha256:" + hashlib.sha256(_former(fields)).hexdigest()
    assert spec_hash(fields) == PINNED_SPEC_HASH


PINNED_SPEC_HASH = "sha256:30238cf54263c959f5ea33bb9857af0c88561249a9277203111d4049262da965"
