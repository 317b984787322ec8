"""Loading the catalog: the standard operators and procedures, the language's
blocks, and third-party catalogs registered through entry points.

Every catalog package is loaded the same way, the standard one
(`stdlib_ops`) first: the package holds `operators.toml` and/or
`procedures.toml`, and its module defines `OPERATORS` (operator name ->
`rubriclang.catalog.entries.OperatorImpl`: its function, output-type rule and
plan template) for each operator it declares, and `PROCEDURES` (procedure
name -> `ProcedureImpl`) for procedures with hooks.
A plugin registers its package under the entry-point group
`rubriclang.catalogs`. A procedure whose entry holds a `judge` is run by the
local backend, like the standard rules; others by a criterion backend the
plugin provides. See docs/extending.md.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from rubriclang import packaged
from rubriclang.catalog.entries import OperatorImpl, ProcedureImpl
from rubriclang.catalog.model import (
    BlockSpec,
    OperatorSpec,
    ParamSpec,
    ProcedureSpec,
    param_from_dict,
    port_from_dict,
)
from rubriclang.records import frozen
from rubriclang.tomlcache import cached_parse

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

_Spec = TypeVar("_Spec", OperatorSpec, ProcedureSpec)

ENTRY_POINT_GROUP = "rubriclang.catalogs"
STANDARD = "stdlib_ops"
_NO_HOOKS = ProcedureImpl()


class CatalogError(Exception):
    """A catalog (usually a plugin's) is malformed or clashes with another."""


@frozen
class Catalog:
    """Everything the checker and its followers know about names in a graph."""

    # Each operator's and procedure's registry entry: its spec with its behaviour.
    operators: dict[str, OperatorSpec]
    procedures: dict[str, ProcedureSpec]
    blocks: dict[str, BlockSpec]
    common_params: tuple[ParamSpec, ...]

    def procedure_params(self, proc: ProcedureSpec) -> tuple[ParamSpec, ...]:
        return proc.params + self.common_params

    def hooks(self, procedure: str) -> ProcedureImpl:
        """The behaviour registered for a procedure (none for an unknown name)."""
        spec = self.procedures.get(procedure)
        return spec.hooks if spec is not None else _NO_HOOKS


def _read_text(package: ModuleType, name: str) -> str | None:
    """The file's text; None when the package has none (a plugin may hold
    only one of the two files)."""
    try:
        return packaged.read_text(package, name)
    except FileNotFoundError:
        return None


def _parse_toml(text: str | None, package: ModuleType, name: str) -> dict[str, Any]:
    import tomllib  # only when the catalog cache misses

    if text is None:
        return {}
    root = packaged.folder(package)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{name} in {root}: {exc}") from None
    from rubriclang.catalog.schema import check_catalog

    check_catalog(data, f"{root}/{name}", text, CatalogError)
    return data


def _read_toml(package: ModuleType, name: str) -> dict[str, Any]:
    return _parse_toml(_read_text(package, name), package, name)


def _standard_data() -> list[dict[str, Any]]:
    """The standard operators, procedures and blocks files, parsed (through
    the catalog cache)."""
    standard = importlib.import_module(STANDARD)
    files = (
        (standard, "operators.toml"),
        (standard, "procedures.toml"),
        (importlib.import_module("rubriclang.catalog"), "blocks.toml"),
    )
    texts = tuple(_read_text(package, name) for package, name in files)
    return cached_parse(texts, lambda: [_parse_toml(t, pkg, name) for t, (pkg, name) in zip(texts, files, strict=True)])


def _operators(data: dict[str, Any], source: str) -> dict[str, OperatorSpec]:
    out = {}
    for name, d in data.get("operators", {}).items():
        out[name] = OperatorSpec(
            name=name,
            kind=d["kind"],
            summary=d["summary"],
            doc=d.get("doc", "").strip(),
            ports=tuple(port_from_dict(p) for p in d["ports"]),
            params=tuple(param_from_dict(p) for p in d.get("params", ())),
            output_type=d["output_type"],
            problems=d.get("problems", ""),
            example=d.get("example", ""),
            aliases=tuple(d.get("aliases", ())),
            source=source,
        )
    return out


def _procedures(data: dict[str, Any], source: str) -> dict[str, ProcedureSpec]:
    out = {}
    for name, d in data.get("procedures", {}).items():
        out[name] = ProcedureSpec(
            name=name,
            summary=d["summary"],
            doc=d.get("doc", "").strip(),
            produces=tuple(d["produces"]),
            params=tuple(param_from_dict(p) for p in d.get("params", ())),
            example=d.get("example", ""),
            aliases=tuple(d.get("aliases", ())),
            source=source,
            placeholders=dict(d.get("placeholders", {})),
            shows=tuple(d.get("shows", ())),
        )
    return out


def _merge(into: dict[str, _Spec], new: Mapping[str, _Spec], what: str) -> None:
    for name, spec in new.items():
        if name in into:
            raise CatalogError(f"{what} `{name}` from `{spec.source}` clashes with the one from `{into[name].source}`")
        into[name] = spec


def _plugins() -> list[EntryPoint]:
    from importlib.metadata import entry_points  # only when plugins are loaded

    return sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)


def _entries(
    module: ModuleType, source: str, what: str, declared: Mapping[str, Any], attr: str, kind: type
) -> dict[str, Any]:
    """The package's entries for the names it declares, checked against them."""
    impls = getattr(module, attr, {})
    wrong = [n for n, i in impls.items() if not isinstance(i, kind)]
    if wrong:
        raise CatalogError(f"{source}: the {attr} entries for {', '.join(wrong)} must be `{kind.__name__}`s")
    if kind is OperatorImpl:
        missing = [n for n in declared if n not in impls]
        if missing:
            raise CatalogError(f"{source} declares {what}s without an entry in its {attr}: {', '.join(missing)}")
    stray = [n for n in impls if n not in declared]
    if stray:
        raise CatalogError(f"{source} has {attr} entries for {what}s its TOML does not declare: {', '.join(stray)}")
    return impls


def _check_local(source: str, procs: Mapping[str, ProcedureSpec], hooks: Mapping[str, ProcedureImpl]) -> None:
    """A procedure run by the local backend has a judging function, and only such a one."""
    for name in procs:
        impl = hooks.get(name, _NO_HOOKS)
        if impl.backend == "local" and impl.judge is None:
            raise CatalogError(f"{source}: procedure `{name}` is `local` but its PROCEDURES entry has no `judge`")
        if impl.judge is not None and impl.backend != "local":
            raise CatalogError(
                f"{source}: procedure `{name}` has a `judge` but its backend is `{impl.backend}`: "
                'a judging function is run by the local backend (`backend="local"`)'
            )


def _load_package(
    module: ModuleType,
    source: str,
    data: tuple[dict[str, Any], dict[str, Any]],
    operators: dict[str, OperatorSpec],
    procedures: dict[str, ProcedureSpec],
) -> None:
    """Add one catalog package (the standard one or a plugin's), with its
    parsed `operators.toml` and `procedures.toml`, to the catalog."""
    op_data, proc_data = data
    ops = _operators(op_data, source)
    impls = _entries(module, source, "operator", ops, "OPERATORS", OperatorImpl)
    for name, spec in ops.items():
        impl = impls[name]
        ops[name] = attrs.evolve(spec, rule=impl.rule, function=impl.function, plan=impl.plan, traits=impl.traits)
    procs = _procedures(proc_data, source)
    hooks = _entries(module, source, "procedure", procs, "PROCEDURES", ProcedureImpl)
    _check_local(source, procs, hooks)
    procs = {n: attrs.evolve(p, hooks=hooks[n]) if n in hooks else p for n, p in procs.items()}
    _merge(operators, ops, "operator")
    _merge(procedures, procs, "procedure")


@functools.cache
def load_catalog(plugins: bool = True) -> Catalog:
    """The catalog, loaded once per process.

    Raises CatalogError when a plugin's catalog is malformed or redefines a name.
    """
    operators: dict[str, OperatorSpec] = {}
    procedures: dict[str, ProcedureSpec] = {}
    op_data, proc_data, block_data = _standard_data()
    # The parameters every procedure takes are the standard catalog's.
    common = tuple(param_from_dict(p) for p in proc_data["common"]["params"])
    _load_package(importlib.import_module(STANDARD), "stdlib", (op_data, proc_data), operators, procedures)
    for ep in _plugins() if plugins else ():
        try:
            module = ep.load()
        except Exception as exc:  # a broken plugin must not look like a broken rubric
            raise CatalogError(f"cannot load catalog plugin `{ep.name}` ({ep.value}): {exc}") from None
        if not isinstance(module, ModuleType) or not hasattr(module, "__path__"):
            raise CatalogError(
                f"catalog plugin `{ep.name}` ({ep.value}) is not a package (its TOML files live in a package)"
            )
        data = (_read_toml(module, "operators.toml"), _read_toml(module, "procedures.toml"))
        _load_package(module, f"plugin {ep.name}", data, operators, procedures)
    blocks = {
        name: BlockSpec(name, d["summary"], tuple(param_from_dict(p) for p in d["params"]))
        for name, d in block_data["blocks"].items()
    }
    return Catalog(operators, procedures, blocks, common)
