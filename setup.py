"""The package list, discovered: every package under rubriclang/ (the data folders
without an __init__.py, such as llm/prompts/ and view/templates/, ship as namespace
packages) and the standard catalog, stdlib_ops, a top-level package of its own.
The grammar (grammar/rubric.lark) stays at the top of the tree, where a checkout
reads it, and an install ships it inside the package as rubriclang/grammar/rubric.lark
(`rubriclang.packaged.grammar` finds it in either). Everything else is configured
in pyproject.toml."""

import os

from setuptools import find_namespace_packages, setup
from setuptools.command.build_py import build_py

GRAMMAR = os.path.join("grammar", "rubric.lark")


class BuildWithGrammar(build_py):
    """setuptools' build_py, also copying the grammar into the built package (and,
    through `get_source_files`, into a source distribution)."""

    def run(self) -> None:
        super().run()
        if not self.editable_mode:  # an editable install reads the checkout's own file
            target = os.path.join(self.build_lib, "rubriclang", "grammar")
            self.mkpath(target)
            self.copy_file(GRAMMAR, target)

    def get_source_files(self) -> list[str]:
        return [*super().get_source_files(), GRAMMAR]


setup(
    packages=[*find_namespace_packages(include=["rubriclang", "rubriclang.*"]), "stdlib_ops"],
    cmdclass={"build_py": BuildWithGrammar},
)
