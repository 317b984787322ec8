"""Regenerate the operator and procedure names in the TextMate grammar from
the catalog, and the item shape's field kinds and element names from
rubriclang.items, so that highlighting knows every standard name.

Run from the repository root, with rubriclang installed:

    python editors/vscode/scripts/gen_names.py

`tests/lsp/test_grammar_names.py` fails when the grammar is out of date.
Plugins' names are left out: the grammar ships one list for everyone.
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

from rubriclang.catalog import load_catalog
from rubriclang.items.elements import ELEMENTS
from rubriclang.items.shape import KINDS

GRAMMAR = Path(__file__).resolve().parent.parent / "syntaxes" / "rbg.tmLanguage.json"


def names_pattern(names) -> str:
    """One regex that matches exactly these dotted names, as whole words:
    grouped by namespace, `\\b(?:gate\\.(?:cap|veto)|reduce\\.(?:mean))\\b`."""
    by_namespace = defaultdict(list)
    for name in names:
        namespace, _, rest = name.partition(".")
        by_namespace[namespace].append(rest)
    groups = [
        f"{re.escape(ns)}\\.(?:{'|'.join(re.escape(r) for r in sorted(rests))})"
        for ns, rests in sorted(by_namespace.items())
    ]
    return "\\b(?:" + "|".join(groups) + ")\\b"


def words_pattern(words) -> str:
    """One regex that matches exactly these plain words, as whole words."""
    return "\\b(?:" + "|".join(re.escape(w) for w in sorted(set(words))) + ")\\b"


def render(grammar_text: str) -> str:
    """The grammar file's text with the name lists made current."""
    grammar = json.loads(grammar_text)
    catalog = load_catalog(plugins=False)
    grammar["repository"]["operators"]["match"] = names_pattern(catalog.operators)
    grammar["repository"]["procedures"]["match"] = names_pattern(catalog.procedures)
    grammar["repository"]["field-kinds"]["match"] = words_pattern(KINDS)
    grammar["repository"]["elements"]["match"] = words_pattern(e for names in ELEMENTS.values() for e in names)
    return json.dumps(grammar, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    old = GRAMMAR.read_text("utf-8")
    new = render(old)
    if new != old:
        GRAMMAR.write_text(new, "utf-8")
        print(f"updated {GRAMMAR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
