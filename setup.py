"""The package list, discovered: every package under rubriclang/ (the data folders
without an __init__.py, such as llm/prompts/ and view/templates/, ship as namespace
packages), plus the grammar and the standard operators, which live at the top level
and are mapped into rubriclang by pyproject.toml's package-dir. Everything else is
configured in pyproject.toml."""

from setuptools import find_namespace_packages, setup

setup(
    packages=[
        *find_namespace_packages(include=["rubriclang", "rubriclang.*"]),
        "rubriclang.grammar",
        "rubriclang.stdlib_ops",
    ]
)
