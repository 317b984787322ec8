"""The TextMate grammar's operator and procedure names are the catalog's."""

from __future__ import annotations

import importlib.util
import json
import re

import pytest
from conftest import REPO_ROOT

from rubriclang.catalog import load_catalog

EXTENSION = REPO_ROOT / "editors" / "vscode"
GRAMMAR = EXTENSION / "syntaxes" / "rbg.tmLanguage.json"


@pytest.fixture(scope="module")
def gen_names():
    spec = importlib.util.spec_from_file_location("gen_names", EXTENSION / "scripts" / "gen_names.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_grammars_name_lists_are_current(gen_names):
    text = GRAMMAR.read_text("utf-8")
    assert gen_names.render(text) == text, "run `python editors/vscode/scripts/gen_names.py`"


@pytest.mark.parametrize("kind, entry", [("operators", "operators"), ("procedures", "procedures")])
def test_every_catalog_name_is_highlighted_as_a_whole_word(kind, entry):
    pattern = re.compile(json.loads(GRAMMAR.read_text("utf-8"))["repository"][entry]["match"])
    for name in getattr(load_catalog(plugins=False), kind):
        assert pattern.fullmatch(name), name
        assert not pattern.search(name + "x"), name
        found = pattern.search(f"= {name}(value: a)")
        assert found and found.group() == name


def test_the_names_pattern_groups_by_namespace(gen_names):
    pattern = gen_names.names_pattern(["reduce.mean", "gate.cap", "reduce.weighted_mean"])
    assert pattern == r"\b(?:gate\.(?:cap)|reduce\.(?:mean|weighted_mean))\b"
    assert not re.search(pattern, "reduce.median")
