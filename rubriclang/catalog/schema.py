"""The fields of catalog files (`operators.toml`, `procedures.toml`,
`blocks.toml`, the standard ones and plugins'), checked by the one TOML
validator (`rubriclang.tomlschema`) when a file is read, so that a plugin's
mistake is an error at its line rather than a KeyError later."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rubriclang.tomlfile import Lines
from rubriclang.tomlschema import Field, Place, check

OPERATOR_KINDS = ("transform", "reduce", "gate")

PARAM = {
    "name": Field(str, required=True),
    "type": Field(str, required=True),
    "required": Field(bool),
    "default": Field((str, int, float, bool, list, dict)),
    "min": Field(float),
    "max": Field(float),
    "choices": Field(list, items=str),
    "length_of": Field(str),
    "fit": Field(str, choices=("weights", "range", "interval")),
    "doc": Field(str),
    "explicit_ok": Field(bool),
}
PORT = {
    "name": Field(str, required=True),
    "accepts": Field(list, required=True, items=str),
    "variadic": Field(bool),
    "min": Field(int, lo=0),
    "max": Field(int, lo=1),
    "absent": Field(bool),
    "lists": Field(bool),
}
_COMMON = {
    "summary": Field(str, required=True),
    "doc": Field(str),
    "params": Field(list, items=dict, what="a list of parameter tables"),
    "example": Field(str),
    "aliases": Field(list, items=str, what="a list of other names, for 'did you mean'"),
}
OPERATOR = {
    "kind": Field(str, required=True, choices=OPERATOR_KINDS),
    "ports": Field(list, required=True, items=dict, what="a list of port tables"),
    "output_type": Field(str, required=True, what="the output type, in words"),
    "problems": Field(str, what="the problems its output rule reports, in words"),
    **_COMMON,
}
PROCEDURE = {
    "produces": Field(list, required=True, items=str, what="a list of type kinds"),
    "placeholders": Field(dict),
    "shows": Field(list, items=str),
    **_COMMON,
}
BLOCK = {"summary": Field(str, required=True), "params": Field(list, required=True, items=dict)}
_FILE = {
    "operators": Field(dict, what="a table of [operators.NAME] tables"),
    "procedures": Field(dict, what='a table of [procedures."NAME"] tables'),
    "common": Field(dict),
    "blocks": Field(dict),
}
_ENTRIES = {"operators": ("operator", OPERATOR), "procedures": ("procedure", PROCEDURE), "blocks": ("block", BLOCK)}


def check_catalog(data: dict[str, Any], path: str, text: str, error: Callable[[str], Exception]) -> None:
    """Check a decoded catalog file; `error(message)` is the exception to
    raise, its message starting with `path:line`."""
    lines = Lines(path, text)

    def located(where: str, message: str, hint: str = "") -> Exception:
        return error(f"{where}: {message}" + (f" ({hint})" if hint else ""))

    check(data, _FILE, Place(lines, located, f"the catalog file `{path}`"))
    if "common" in data:
        check(data["common"], {"params": BLOCK["params"]}, Place(lines, located, "[common]", "common"))
        _params(data["common"], "common", "[common]", lines, located)
    for section, (what, fields) in _ENTRIES.items():
        for name, entry in data.get(section, {}).items():
            table = f"{section}.{name}"
            place = Place(lines, located, f"{what} `{name}`", table)
            if not isinstance(entry, dict):
                raise place.fail(None, f"{what} `{name}` must be a table (`[{section}.{name}]`)")
            check(entry, fields, place)
            _params(entry, table, f"{what} `{name}`", lines, located)
            for i, port in enumerate(entry.get("ports", ())):
                check(port, PORT, Place(lines, located, f"port {i + 1} of {what} `{name}`", table, anchor="ports"))


def _params(entry: dict[str, Any], table: str, owner: str, lines: Lines, located: Callable[..., Exception]) -> None:
    for i, param in enumerate(entry.get("params", ())):
        label = f"`{param['name']}`" if isinstance(param.get("name"), str) else str(i + 1)
        check(param, PARAM, Place(lines, located, f"parameter {label} of {owner}", table, anchor="params"))
