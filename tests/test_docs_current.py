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
