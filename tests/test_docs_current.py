"""The committed generated docs equal a fresh generation."""

from __future__ import annotations

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
