"""Every fenced block of README.md and docs/*.md that is a rubric, a command or
Python runs here, as a reader would paste it.

How a block is read (its fence's language, else its first line):

- ```rbg: a rubric, checked as a file in the doc's folder (below). A whole
  file (a `rubric` header, a sink and a readout) is checked as it is, and any
  diagnostic, warning included, fails the test. A fragment is completed into
  a whole file first (the header, contract, criteria it reads, sink and
  readout it lacks, over a few types and scales: the first completion that
  checks counts), and any error fails the test.
- ```sh / bash / shell / console, or a block without a language whose first
  line is a command (`rbg`, `$ rbg`, `make`, `python`, ...): each command runs,
  in order, in a temporary folder holding a copy of examples/ and of
  tests/fixtures/docs/ (files the docs name but do not show), one folder per
  doc file, so a later block sees what an earlier one wrote; each must exit 0. A block of `rbg`
  commands runs in-process; anything else runs in bash. In a block with `$`
  prompts, the lines after a command are its expected output.
- ```python: executed in that folder, the doc's Python blocks in one namespace.
- Anything else (json, toml, text, output, grammar) is data, and not run.

Markers, an HTML comment on the line just before the fence (blank lines between
are allowed), say more:

- `<!-- snippet: skip REASON -->`: not run; REASON is required and pytest
  reports it (`pytest -rs`). For blocks that need a server, an API key, data
  outside the repository, or minutes.
- `<!-- snippet: expect RB201 RB504 -->`: a rubric meant to show diagnostics;
  exactly these codes must be reported.
- `<!-- snippet: exit 1 -->`: the commands' expected exit status.
- `<!-- snippet: slow -->`: runs, but only where the slow tests do (over
  ~3 s); later blocks of its doc do not run it first, so they must not need it.
- `<!-- snippet: output -->`: this block is the output of the command block
  just before it; it is compared with what that command printed.
- `<!-- snippet: file NAME -->`: this block is the file NAME (e.g. a rubric a
  later command reads, a template a rubric names); it is written into the
  doc's folder before any block of that doc runs, and, if it is a rubric,
  checked too.
- `<!-- snippet: at DIR -->`: a rubric checked as if it were a file in DIR
  (e.g. `examples/judges`, for the templates it names there).

Output is compared as doctest compares it, with `...` matching anything;
timings (`41.20 s`, `4.85 items/s`) and the temporary folder's path are
normalized first. An unmarked block that fails is a failure.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import attrs
import pytest
from click.testing import CliRunner
from conftest import REPO_ROOT
from test_corpus import _criterion, _refs, _type_text

from rubriclang.checker import check_source
from rubriclang.cli.main import cli
from rubriclang.diagnostics.diagnostic import Diagnostic
from rubriclang.syntax import ast, parse

DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
# Files the docs' blocks name but do not show (a JSON Schema, a template),
# copied into every doc's folder.
FIXTURES = Path(__file__).parent / "fixtures" / "docs"

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,})(?P<lang>[\w+-]*)\s*$")
_MARKER = re.compile(r"^\s*<!--\s*snippet:\s*(?P<kind>[\w-]+)\s*(?P<arg>.*?)\s*-->\s*$")
_KINDS = {"skip", "expect", "exit", "output", "file", "at", "slow"}
RUBRIC = {"rbg", "rubric"}
SHELL = {"sh", "bash", "shell", "console"}
# The first word of an unlabelled block that makes it a command.
_COMMAND_WORDS = ("rbg", "$", "make", "python", "pip", "cd", "head", "echo", "git", "vllm", "npm")


@attrs.frozen
class Block:
    """One fenced block: where it is, its language, text and marker."""

    path: Path
    line: int  # the opening fence's
    lang: str
    text: str
    kind: str = ""  # the marker's
    arg: str = ""

    @property
    def where(self) -> str:
        shown = self.path.relative_to(REPO_ROOT) if self.path.is_relative_to(REPO_ROOT) else self.path.name
        return f"{shown}:{self.line}"

    @property
    def role(self) -> str:
        """rubric, command, python or data (any other language: json, toml, text, ...)."""
        if self.lang in RUBRIC:
            return "rubric"
        if self.lang in SHELL:
            return "command"
        if self.lang == "python":
            return "python"
        if self.lang or self.kind == "output":
            return "data"
        first = next((ln.strip() for ln in self.text.splitlines() if ln.strip()), "")
        return "command" if first.split(" ", 1)[0] in _COMMAND_WORDS or first.startswith(".venv/") else "data"


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, with the marker before each."""
    lines = path.read_text("utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == m["fence"]), len(lines))
        indent = len(m["indent"])
        text = "\n".join(ln[indent:] for ln in lines[i + 1 : end]) + "\n"
        before = next((ln for ln in reversed(lines[:i]) if ln.strip()), "")
        marker = _MARKER.match(before)
        kind, arg = (marker["kind"], marker["arg"]) if marker else ("", "")
        found.append(Block(path, i + 1, m["lang"], text, kind, arg))
        i = end + 1
    return found


ALL = [b for path in DOCS for b in blocks(path)]
RUN = [b for b in ALL if b.role != "data" or b.kind == "file"]


# -- rubrics ------------------------------------------------------------------------


def diagnose_rubric(block: Block, folder: Path) -> list[Diagnostic]:
    """The diagnostics of a rubric block checked as the file `folder/snippet.rbg`
    (so the templates and schemas it names are read from there). A fragment
    is completed into a whole file first, the first completion that checks as
    the block means to counting; a fragment marked `expect` is completed with
    the names its right version (the next rubric block) reads, so that a name
    it misspells stays unknown."""
    path = str(folder / "snippet.rbg")
    expected = set(block.arg.split()) if block.kind == "expect" else set()
    module = parse(block.text, path).module
    if module is None or is_whole(module):
        return list(check_source(block.text, path).diagnostics)
    later = [b for b in ALL if b.path == block.path and b.line > block.line and b.role == "rubric"]
    right = parse(later[0].text, path).module if expected and later else None
    tried = []
    for text in completions(module, block.text, expected, _refs(right or module)):
        diags = check_source(text, path).diagnostics
        # A fragment shows one construct: warnings about what it leaves out
        # (anchors, a node the completion does not route to the sink) belong
        # to the file it sits in, and the contract is the completion's guess.
        shown = [d for d in diags if (d.is_error and d.code != _CONTRACT_FIT) or d.code in expected]
        if {d.code for d in shown} == expected:
            return shown
        tried.append(shown)
    return min(tried, key=len)


def is_whole(module: ast.Module) -> bool:
    kinds = {type(d) for d in module.decls}
    return {ast.RubricDecl, ast.SinkDecl, ast.ReadoutDecl} <= kinds


_CONTRACT_FIT = "RB403"  # the sink's type does not fit the contract's scale
_SCALES = ("score[1, 5]", "score[0, 1]", "bool", "score[1, 10]", "ordinal[1, 5]")


def completions(module: ast.Module, snippet: str, expected: set[str], declare: dict[str, str]) -> Iterator[str]:
    """Whole files made of a fragment: the header, contract, criteria it reads,
    sink and readout it lacks (except one whose absence is the expected
    code), over a few types for what it reads and scales for the contract."""
    kinds = {type(d) for d in module.decls}
    names = [d.name.value for d in module.decls if isinstance(d, (ast.CriterionDecl, ast.NodeDecl))]
    sinks = [d.target.value for d in module.decls if isinstance(d, ast.SinkDecl)]
    sink = sinks[0] if sinks else names[-1] if names else next(iter(declare), "overall")
    own = [_type_text(d.type) for d in module.decls if isinstance(d, ast.CriterionDecl) and d.name.value == sink]
    scales = dict.fromkeys([*own, *(t.replace("ordinal", "score") for t in own), *_SCALES])
    for ref_type in ("", "bool", "ordinal[1, 5]", "bool?", "ordinal[1, 5]?"):
        declared = {n: ref_type or t for n, t in declare.items()}
        if not names and sink not in declared:
            declared[sink] = ref_type or "ordinal[1, 5]"
        for scale in scales:
            for readout in (f"pointwise {{ output = {scale} }}", "pairwise {}"):
                parts = []
                if ast.RubricDecl not in kinds and "RB401" not in expected:
                    parts.append("rubric example { version = 1 }\n")
                if ast.ContractDecl not in kinds and "RB402" not in expected:
                    parts.append(f"contract {{ scale = {scale} }}\n")
                parts.extend(_criterion(n, t) for n, t in declared.items())
                parts.append(snippet.rstrip("\n") + "\n")
                if not sinks and "RB302" not in expected:
                    parts.append(f"sink {sink}\n")
                if ast.ReadoutDecl not in kinds and "RB405" not in expected:
                    parts.append(f"readout {readout}\n")
                yield "".join(parts)


# -- commands -----------------------------------------------------------------------


@attrs.frozen
class Command:
    line: str
    expected: str | None  # the output a `$` block shows, if any


def commands(block: Block) -> list[Command]:
    """A shell block's commands: continuation lines joined, comments and
    blank lines left out; with `$` prompts, the lines after each are its output."""
    raw = block.text.splitlines()
    prompted = any(ln.startswith("$ ") for ln in raw)
    found: list[Command] = []
    pending = ""
    output: list[str] = []
    for ln in raw:
        if prompted and not ln.startswith("$ ") and not pending:
            output.append(ln)
            continue
        if prompted and ln.startswith("$ "):
            if found and output:
                found[-1] = attrs.evolve(found[-1], expected="\n".join(output) + "\n")
            output = []
            ln = ln[2:]
        if not pending and (not ln.strip() or ln.lstrip().startswith("#")):
            continue
        if ln.rstrip().endswith("\\"):
            pending += ln.rstrip()[:-1] + " "
            continue
        found.append(Command(pending + ln, None))
        pending = ""
    if found and output and any(o.strip() for o in output):
        found[-1] = attrs.evolve(found[-1], expected="\n".join(output) + "\n")
    return found


_TIMING = re.compile(r"\b\d+(\.\d+)?( ?(s|ms|items/s|calls/s))\b")


def normalize(text: str, folder: Path) -> str:
    text = text.replace(str(folder) + os.sep, "").replace(str(folder), ".")
    text = _TIMING.sub(r"N\2", text)
    return "\n".join(ln.rstrip() for ln in text.splitlines()) + "\n"


def same_output(expected: str, actual: str, folder: Path) -> bool:
    return doctest.OutputChecker().check_output(
        normalize(expected, folder), normalize(actual, folder), doctest.ELLIPSIS
    )


@contextlib.contextmanager
def inside(folder: Path) -> Iterator[None]:
    """In `folder`, with the user's cache (the call cache, parsed grammars)
    there too: a doc's block never writes under the user's home."""
    before = Path.cwd()
    os.chdir(folder)
    try:
        with mock.patch.dict(os.environ, XDG_CACHE_HOME=str(folder / ".cache")):
            yield
    finally:
        os.chdir(before)


def run_command(line: str, folder: Path) -> tuple[int, str]:
    """Run one command line in `folder`: `rbg` in-process, the rest in bash."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:  # unbalanced quotes: bash says what is wrong
        words = []
    if words and words[0] == "rbg" and not any(c in line for c in "|;&><`$"):
        with inside(folder):
            result = CliRunner().invoke(cli, words[1:], catch_exceptions=True)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result.exit_code, result.output
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = dict(os.environ, PATH=path, XDG_CACHE_HOME=str(folder / ".cache"))
    done = subprocess.run(
        ["bash", "-c", line], cwd=folder, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    return done.returncode, done.stdout + done.stderr


# -- one folder per doc file ------------------------------------------------------------


class Workspace:
    """A doc's folder: a copy of examples/, its `file` blocks, and the blocks
    run so far (a block runs after the earlier ones of its doc)."""

    def __init__(self, folder: Path, blocks: list[Block]) -> None:
        self.folder = folder
        self.blocks = blocks
        self.outcome: dict[int, Exception | None] = {}  # by fence line: how each block that ran went
        self.namespace: dict[str, object] = {"__name__": "__snippet__"}  # the doc's Python blocks share one

    @classmethod
    def for_doc(cls, path: Path, root: Path) -> Workspace:
        folder = root / path.stem
        shutil.copytree(REPO_ROOT / "examples", folder / "examples")
        shutil.copytree(FIXTURES, folder, dirs_exist_ok=True)
        (folder / ".venv").symlink_to(Path(sys.executable).parent.parent)
        # A repository of its own, for the blocks that configure git.
        subprocess.run(["git", "init", "-q", str(folder)], check=True)
        space = cls(folder, [b for b in RUN if b.path == path])
        for b in space.blocks:
            if b.kind == "file":
                target = folder / b.arg
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(b.text, "utf-8")
        return space

    def run_through(self, block: Block) -> None:
        """Run `block`, after the earlier command blocks of its doc that have
        not run yet (as a reader would have); a block's failure is kept, and
        raised by its own test, whichever block ran it."""
        for b in self.blocks:
            ready = b is block or (b.role == "command" and b.kind not in {"skip", "slow"})
            if ready and b.line not in self.outcome:
                try:
                    self.run(b)
                    self.outcome[b.line] = None
                except Exception as exc:  # kept for the block's own test
                    self.outcome[b.line] = exc
            if b is block:
                break
        failure = self.outcome[block.line]
        if failure is not None:
            raise failure

    def run(self, block: Block) -> None:
        status = int(block.arg) if block.kind == "exit" else 0
        output_block = next((b for b in ALL if b.path == block.path and b.line > block.line), None)
        shown = output_block.text if output_block is not None and output_block.kind == "output" else None
        cmds = commands(block)
        assert cmds, f"{block.where}: a command block with no command"
        for i, cmd in enumerate(cmds):
            code, out = run_command(cmd.line, self.folder)
            last = i == len(cmds) - 1
            assert code == (status if last else 0), f"{block.where}: `{cmd.line}` exited {code}:\n{out[-3000:]}"
            expected = cmd.expected if cmd.expected is not None else shown if last else None
            if expected is not None:
                assert same_output(expected, out, self.folder), (
                    f"{block.where}: `{cmd.line}` printed\n{normalize(out, self.folder)}\nthe doc shows\n"
                    f"{normalize(expected, self.folder)}"
                )


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory) -> dict[Path, Workspace]:
    return {}


def _workspace(workspaces: dict[Path, Workspace], block: Block, tmp_path_factory) -> Workspace:
    if block.path not in workspaces:
        workspaces[block.path] = Workspace.for_doc(block.path, tmp_path_factory.mktemp("docs"))
    return workspaces[block.path]


@pytest.mark.parametrize(
    "block", [pytest.param(b, marks=[pytest.mark.slow] if b.kind == "slow" else []) for b in RUN], ids=lambda b: b.where
)
def test_snippet_runs_as_written(block: Block, workspaces, tmp_path_factory):
    if block.kind == "skip":
        pytest.skip(f"{block.where}: {block.arg}")
    if block.role == "rubric":
        space = _workspace(workspaces, block, tmp_path_factory)
        diags = diagnose_rubric(block, space.folder / block.arg if block.kind == "at" else space.folder)
        expected = sorted(set(block.arg.split())) if block.kind == "expect" else []
        assert sorted({d.code for d in diags}) == expected, (
            f"{block.where}: expected {expected or 'no diagnostics'}, got:\n"
            + "\n".join(f"{d.code} {d.span.line}:{d.span.column}: {d.message}" for d in diags)
        )
    elif block.role == "command":
        _workspace(workspaces, block, tmp_path_factory).run_through(block)
    elif block.role == "python":
        space = _workspace(workspaces, block, tmp_path_factory)
        with inside(space.folder), contextlib.redirect_stdout(io.StringIO()):
            exec(compile(block.text, block.where, "exec"), space.namespace)


# -- the markers themselves -----------------------------------------------------------------


def test_markers_are_known_and_skips_say_why():
    wrong = []
    for path in DOCS:
        for n, ln in enumerate(path.read_text("utf-8").splitlines(), 1):
            m = _MARKER.match(ln)
            if m is None:
                if ln.lstrip().startswith("<!--") and "snippet:" in ln:
                    wrong.append(f"{path.name}:{n}: not a marker: {ln.strip()}")
                continue
            if m["kind"] not in _KINDS:
                wrong.append(f"{path.name}:{n}: unknown marker `{m['kind']}` (known: {', '.join(sorted(_KINDS))})")
            elif m["kind"] not in {"output", "slow"} and not m["arg"]:
                wrong.append(f"{path.name}:{n}: `{m['kind']}` needs an argument")
    assert not wrong, "\n".join(wrong)


def test_every_rubric_block_is_labelled():
    """A block of rubric text without ```rbg would be read as data and never checked."""
    unlabelled = []
    for b in ALL:
        if b.lang or b.role != "data" or b.kind == "output":
            continue
        module = parse(b.text, "snippet.rbg").module
        if module is not None and module.decls and not parse(b.text, "snippet.rbg").diagnostics:
            unlabelled.append(b.where)
    assert not unlabelled, "label these blocks ```rbg: " + ", ".join(unlabelled)


def test_an_output_marker_follows_a_command():
    for i, b in enumerate(ALL):
        if b.kind == "output":
            before = ALL[i - 1] if i else None
            assert before is not None and before.path == b.path and before.role == "command", b.where


def test_a_console_block_splits_into_commands_and_their_output():
    block = Block(REPO_ROOT / "README.md", 1, "console", "$ rbg check a.rbg \\\n    --strict\nok\n$ rbg fmt a.rbg\n")
    assert commands(block) == [Command("rbg check a.rbg      --strict", "ok\n"), Command("rbg fmt a.rbg", None)]


def test_output_is_compared_up_to_timings_and_the_folder_but_not_figures(tmp_path):
    shown = "Judged 200 items in 41.20 s (4.85 items/s)\nwrote out/t.jsonl\n...\n"
    assert same_output(
        shown, f"Judged 200 items in 3.1 s (64.5 items/s)\nwrote {tmp_path}/out/t.jsonl\nmore\n", tmp_path
    )
    assert not same_output(shown, "Judged 201 items in 3.1 s (64.5 items/s)\nwrote out/t.jsonl\n", tmp_path)


def test_a_marker_is_read_across_blank_lines_and_indentation(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("Text.\n\n  <!-- snippet: expect RB504 -->\n\n  ```rbg\n  sink a\n  ```\n```\nrbg check x\n```\n")
    first, second = blocks(doc)
    assert (first.kind, first.arg, first.text, first.role) == ("expect", "RB504", "sink a\n", "rubric")
    assert (second.kind, second.role) == ("", "command")


def test_make_demo_ends_with_the_view_command_over_the_traces_it_wrote():
    text = (REPO_ROOT / "Makefile").read_text("utf-8")
    recipe = text.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    written = re.findall(r"--out (\$\(OUT\)/\S+\.traces\.jsonl)", recipe)
    last = recipe.rstrip().splitlines()[-1]
    assert written and last.startswith("\t@echo") and "rbg view" in last, last
    assert all(path in last for path in written), (written, last)


def test_the_readme_names_the_extras_make_installs():
    installed = re.search(r"pip install -q -e '\.\[([\w,]+)\]'", (REPO_ROOT / "Makefile").read_text("utf-8"))
    said = re.search(r"installs `rubriclang\[([\w,]+)\]`", (REPO_ROOT / "README.md").read_text("utf-8"))
    assert installed and said and installed[1] == said[1], (installed, said)


def test_a_block_that_failed_before_its_own_test_still_fails_it(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("```sh\nrbg explain RB999\n```\n\n```sh\nrbg explain RB504\n```\n", "utf-8")
    broken, fine = blocks(doc)
    space = Workspace(tmp_path, [broken, fine])
    space.run_through(fine)  # runs `broken` first, as a reader would have
    with pytest.raises(AssertionError, match="exited 2"):
        space.run_through(broken)
