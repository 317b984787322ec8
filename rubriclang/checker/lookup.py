"""The catalog a check reads, with installed plugins loaded only when needed."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from rubriclang.catalog import Catalog, load_catalog
from rubriclang.catalog.model import OperatorSpec, ProcedureSpec
from rubriclang.checker.values import suggest_qualified
from rubriclang.diagnostics import Diagnostic
from rubriclang.diagnostics.codes import make
from rubriclang.syntax import ast

_Spec = TypeVar("_Spec", OperatorSpec, ProcedureSpec)


class Lookup:
    """The standard catalog first: installed plugins are only looked up (which
    costs a scan of every installed package's metadata) when the file names an
    operator or procedure the standard catalog lacks. A catalog given by the
    caller is used as it is."""

    def __init__(self, catalog: Catalog | None) -> None:
        self.catalog = catalog or load_catalog(plugins=False)
        self._with_plugins = catalog is not None

    def find(self, find: Callable[[Catalog], _Spec | None]) -> _Spec | None:
        spec = find(self.catalog)
        if spec is None and not self._with_plugins:
            self.catalog = load_catalog(plugins=True)
            self._with_plugins = True
            spec = find(self.catalog)
        return spec

    def operator(self, name: str) -> OperatorSpec | None:
        return self.find(lambda c: c.operators.get(name))

    def procedure(self, name: str) -> ProcedureSpec | None:
        return self.find(lambda c: c.procedures.get(name))


def unknown_spec(
    code: str, name: ast.Dotted, known: Mapping[str, OperatorSpec] | Mapping[str, ProcedureSpec], what: str
) -> Diagnostic:
    """An unknown operator or procedure (`what`), with the nearest known name
    (or alias, from the catalog)."""
    spellings = {n: spec.aliases for n, spec in known.items()}
    return make(
        code,
        name.span,
        f"unknown {what} `{name.text}`",
        (*suggest_qualified(name.text, spellings), f"see `docs/operators.md` for the {what}s"),
    )
