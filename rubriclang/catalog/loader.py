"""Loading the catalog: the standard operators and procedures, the language's
blocks, and third-party catalogs registered through entry points.

A plugin registers under the entry-point group `rubriclang.catalogs`; the
entry point names a package holding `operators.toml` and/or
`procedures.toml` in the standard format. Its module defines `OPERATORS`
(operator name -> function, with the signature of `rubriclang.interp.ops`)
for each operator it declares, and may define `OUTPUT_RULES` (rule name ->
function) for operators whose output rule is its own. Procedures are run by
criterion backends, which plugins provide separately.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from importlib import resources
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from rubriclang.catalog.model import (
    BlockSpec,
    OperatorSpec,
    ParamSpec,
    ProcedureSpec,
    param_from_dict,
    port_from_dict,
)
from rubriclang.catalog.rules import RULES, Rule
from rubriclang.tomlcache import cached_parse

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint
    from importlib.resources.abc import Traversable

_Spec = TypeVar("_Spec", OperatorSpec, ProcedureSpec)

ENTRY_POINT_GROUP = "rubriclang.catalogs"


class CatalogError(Exception):
    """A catalog (usually a plugin's) is malformed or clashes with another."""


@attrs.frozen
class Catalog:
    """Everything the checker and its followers know about names in a graph."""

    operators: dict[str, OperatorSpec]
    procedures: dict[str, ProcedureSpec]
    blocks: dict[str, BlockSpec]
    common_params: tuple[ParamSpec, ...]
    rules: dict[str, Rule]
    # Plugin operators' functions (the standard ones live in rubriclang.interp.ops).
    functions: dict[str, Callable[..., Any]] = attrs.field(factory=dict)

    def procedure_params(self, proc: ProcedureSpec) -> tuple[ParamSpec, ...]:
        return proc.params + self.common_params


def _read_text(root: Traversable, name: str) -> str | None:
    f = root.joinpath(name)
    return f.read_text("utf-8") if f.is_file() else None


def _parse_toml(text: str | None, root: Traversable, name: str) -> dict[str, Any]:
    import tomllib  # only when the catalog cache misses

    if text is None:
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{name} in {root}: {exc}") from None


def _read_toml(root: Traversable, name: str) -> dict[str, Any]:
    return _parse_toml(_read_text(root, name), root, name)


def _standard_data() -> list[dict[str, Any]]:
    """The standard operators, procedures and blocks files, parsed (through
    the catalog cache)."""
    files = (
        (resources.files("rubriclang.stdlib_ops"), "operators.toml"),
        (resources.files("rubriclang.stdlib_ops"), "procedures.toml"),
        (resources.files("rubriclang.catalog"), "blocks.toml"),
    )
    texts = tuple(_read_text(root, name) for root, name in files)
    return cached_parse(texts, lambda: [_parse_toml(t, root, name) for t, (root, name) in zip(texts, files)])


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
            output=d["output"],
            example=d.get("example", ""),
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
            source=source,
            placeholders=dict(d.get("placeholders", {})),
            shows=tuple(d.get("shows", ())),
        )
    return out


def _merge(into: dict[str, _Spec], new: Mapping[str, _Spec], what: str) -> None:
    for name, spec in new.items():
        if name in into:
            raise CatalogError(
                f"{what} `{name}` from `{spec.source}` clashes with the one from `{into[name].source}`"
            )
        into[name] = spec


def _merge_plain(into: dict[str, Rule], new: dict[str, Rule], what: str, source: str) -> None:
    for name, value in new.items():
        if name in into:
            raise CatalogError(f"{what} `{name}` from `{source}` clashes with an existing one")
        into[name] = value


def _plugins() -> list[EntryPoint]:
    from importlib.metadata import entry_points  # only when plugins are loaded

    return sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)


@functools.cache
def load_catalog(plugins: bool = True) -> Catalog:
    """The catalog, loaded once per process.

    Raises CatalogError when a plugin's catalog is malformed or redefines a name.
    """
    op_data, proc_data, block_data = _standard_data()
    operators = _operators(op_data, "stdlib")
    procedures = _procedures(proc_data, "stdlib")
    common = tuple(param_from_dict(p) for p in proc_data["common"]["params"])
    rules = dict(RULES)
    functions: dict[str, Callable[..., Any]] = {}
    if plugins:
        for ep in _plugins():
            try:
                module = ep.load()
                root = resources.files(module)
            except Exception as exc:  # a broken plugin must not look like a broken rubric
                raise CatalogError(f"cannot load catalog plugin `{ep.name}` ({ep.value}): {exc}") from None
            source = f"plugin {ep.name}"
            _merge(operators, _operators(_read_toml(root, "operators.toml"), source), "operator")
            _merge(procedures, _procedures(_read_toml(root, "procedures.toml"), source), "procedure")
            _merge_plain(rules, getattr(module, "OUTPUT_RULES", {}), "output rule", source)
            new_ops = [n for n, spec in operators.items() if spec.source == source]
            impls = getattr(module, "OPERATORS", {})
            missing = [n for n in new_ops if n not in impls]
            if missing:
                raise CatalogError(f"{source} declares operators without a function in its OPERATORS: {', '.join(missing)}")
            functions.update({n: impls[n] for n in new_ops})
    for op in operators.values():
        if op.output not in rules:
            raise CatalogError(f"operator `{op.name}` names an unknown output rule `{op.output}`")
    blocks = {
        name: BlockSpec(name, d["summary"], tuple(param_from_dict(p) for p in d["params"]))
        for name, d in block_data["blocks"].items()
    }
    return Catalog(operators, procedures, blocks, common, rules, functions)
