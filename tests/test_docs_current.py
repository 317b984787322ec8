"""The committed generated docs equal a fresh generation."""

from __future__ import annotations

import json
import re

import pytest
from conftest import REPO_ROOT

from rubriclang.docs_gen import REGENERATE, generate

GENERATED = generate(REPO_ROOT / "docs")


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_doc_is_current(name):
    path = REPO_ROOT / "docs" / name
    committed = path.read_text("utf-8") if path.exists() else None
    assert committed == GENERATED[name], f"docs/{name} is out of date: run `{REGENERATE}` from the repository root"


def test_operator_docs_cover_every_operator_procedure_and_block():
    from rubriclang.catalog import load_catalog

    catalog = load_catalog(plugins=False)
    text = GENERATED["operators.md"]
    for name in [*catalog.operators, *catalog.procedures]:
        assert f"### `{name}`" in text
    blocks = text.split("## Language blocks", 1)[1]
    for block in catalog.blocks.values():
        assert f"{block.name} " in blocks and block.summary in blocks
        assert all(f"| `{p.name}` |" in blocks for p in block.params)


def test_diagnostic_docs_cover_every_code_with_both_examples():
    from rubriclang.diagnostics.codes import registry

    text = GENERATED["diagnostics.md"]
    for info in registry().values():
        section = text.split(f"### {info.code} ", 1)[1].split("\n### ", 1)[0]
        assert info.summary in section
        assert info.wrong in section and info.right in section


def test_readme_layout_names_every_package_and_top_level_module():
    """The README's Layout tables name each folder and module of the package, so
    a new one cannot land without a line saying what it is for."""
    readme = (REPO_ROOT / "README.md").read_text("utf-8")
    layout = readme.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    rows = "\n".join(line for line in layout.splitlines() if line.startswith("| `"))
    package = REPO_ROOT / "rubriclang"
    folders = [f"`rubriclang/{p.name}/`" for p in package.iterdir() if (p / "__init__.py").is_file()]
    modules = [f"`{p.name}`" for p in package.glob("*.py") if p.name != "__init__.py"]
    missing = [name for name in folders + modules if name not in rows]
    assert folders and modules and not missing, f"add to the README's Layout: {', '.join(missing)}"


_PINNED = re.compile(r"^<!-- pinned: (?P<names>.+?) -->$")


def _pinned_markers(text: str) -> list[tuple[int, str, str]]:
    """(line, the paragraph or table just above, one `NAME[:DIGITS]`) for each
    figure a `<!-- pinned: ... -->` comment of docs/results.md names."""
    lines = text.splitlines()
    found: list[tuple[int, str, str]] = []
    for i, line in enumerate(lines):
        m = _PINNED.match(line)
        if m is None:
            continue
        start = i
        while start > 0 and lines[start - 1].strip():
            start -= 1
        block = "\n".join(lines[start:i])
        found.extend((i + 1, block, spec.strip()) for spec in m["names"].split(","))
    return found


def _shows(block: str, value: float | int, digits: int) -> bool:
    """Whether `block` shows `value` (rounded to `digits`) as a number of its
    own: 0.095 is not the end of 10.095 nor of +0.095."""
    text = str(value) if isinstance(value, int) else f"{value:.{digits}f}"
    return re.search(rf"(?<![\d.+-]){re.escape(text)}(?![\d])", block) is not None


def test_results_page_shows_every_pinned_figure_as_pinned():
    """docs/results.md and tests/real_figures.json say the same: every figure the
    page marks shows its pinned value, rounded as the page rounds it, in the
    table or paragraph above its mark; and every pinned figure is marked."""
    figures = json.loads((REPO_ROOT / "tests" / "real_figures.json").read_text("utf-8"))
    marked: set[str] = set()
    wrong: list[str] = []
    for line, block, spec in _pinned_markers((REPO_ROOT / "docs" / "results.md").read_text("utf-8")):
        name, digits = (spec.rsplit(":", 1)[0], int(spec.rsplit(":", 1)[1])) if re.search(r":\d+$", spec) else (spec, 3)
        marked.add(name)
        if name not in figures:
            wrong.append(f"results.md:{line}: `{name}` is not pinned in tests/real_figures.json")
            continue
        if not _shows(block, figures[name], digits):
            wrong.append(
                f"results.md:{line}: `{name}` is pinned at {figures[name]}, which the text above does not show"
            )
    unmarked = sorted(set(figures) - marked)
    assert not wrong and not unmarked, "\n".join(wrong + [f"pinned but not marked on the page: {n}" for n in unmarked])


def test_a_pinned_figure_that_drifts_from_the_page_is_found():
    page = "Intro.\n\n| Spearman | 0.934 [0.915, 0.948] | +0.095 | 110.5 | 1.62 |\n<!-- pinned: a, b:2, c -->\n"
    marks = _pinned_markers(page)
    assert [(line, spec) for line, _, spec in marks] == [(4, "a"), (4, "b:2"), (4, "c")]
    block = marks[0][1]
    assert "Intro" not in block
    assert _shows(block, 0.9341, 3) and _shows(block, 1.6201, 2) and not _shows(block, 0.936, 3)
    assert not _shows(block, 0.91499, 2)  # only as the start of 0.915
    assert not _shows(block, 0.095, 3)  # shown only as a difference, +0.095
    assert not _shows(block, 10.5, 1)  # only inside 110.5
