"""Audit suites: a TOML file naming the judge, the items, the operators and
the backends. Every mistake is a SuiteError naming the file and line (found
by scanning the text, since tomllib keeps no positions), with a hint.
"""

from __future__ import annotations

import difflib
import math
import os
import re
from typing import Any

import attrs

from rubriclang.audit.catalog import (
    CUSTOM_SURFACES,
    RELATIONS,
    Operator,
    custom_operator,
    load_catalog,
)
from rubriclang.audit.perturb.llm import REASONING_STYLES
from rubriclang.errors import LocatedError
from rubriclang.tomlfile import Lines, read_toml

TYPO_FIELDS = ("input", "response")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NAME = re.compile(r"[a-z][a-z0-9_]*")
# Bounds of the numbers a suite may give (beyond them a server, the cache or
# a timer would fail later, far from the line at fault). Seeds are 32-bit:
# the most servers accept, and -1 is "random" to some.
MAX_SEED = 2**32 - 1
MAX_TOKENS = 10_000_000
MAX_TIMEOUT = 86_400.0
MAX_LIMIT = 10**12


class SuiteError(LocatedError):
    """A mistake in a suite; `where` is `path:line` (or just the path)."""


@attrs.frozen
class BackendConfig:
    """An OpenAI-compatible backend; no `base_url` means the embedded model."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.0
    seed: int = 0
    max_tokens: int = 512
    timeout: float = 120.0
    max_retries: int = 5
    model_file: str | None = None

    def describe(self) -> str:
        return self.base_url or f"the embedded model{f' ({self.model_file})' if self.model_file else ''}"


@attrs.frozen
class Suite:
    """A loaded, checked suite; paths are resolved against the suite's folder."""

    path: str
    judge: str
    items: str
    annotations: str | None = None
    recorded: str | None = None
    repeats: int = 5
    tolerance: float = 0.0
    seed: int = 0
    positive: bool = True
    gold: bool = True  # compare verdicts with the items' gold (false: ignore it)
    limit: int | None = None
    concurrency: int = 4
    operators: tuple[str, ...] | None = None  # None: every applicable catalog operator
    options: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    judge_backend: BackendConfig = BackendConfig()
    generator: BackendConfig = BackendConfig(temperature=0.7, max_tokens=1024)
    validator: BackendConfig = BackendConfig()
    summarizer: BackendConfig | None = None  # None: rules, or the generator's model with --summary
    custom: dict[str, Operator] = attrs.field(factory=dict)

    def operator(self, name: str) -> Operator:
        """A catalog or custom operator, with the suite's options applied."""
        op = self.custom.get(name) or load_catalog()[name]
        return op.with_options(self.options[name]) if name in self.options else op

    def requested(self) -> tuple[str, ...]:
        """The operators to run: those named (or all of the catalog), then the custom ones."""
        names = list(self.operators if self.operators is not None else load_catalog())
        names += [n for n in self.custom if n not in names]
        return tuple(names)


def _suggest(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f"did you mean `{close[0]}`?" if close else ""


def _check_keys(d: dict, allowed, lines: Lines, table: str = "", index: int = 0) -> None:
    for key in d:
        if key not in allowed:
            where = f"[{table}]" if table else "the suite"
            raise SuiteError(lines.at(key, table, index), f"unknown key `{key}` in {where}", _suggest(key, allowed) or f"known keys: {', '.join(sorted(allowed))}")


def _typed(d: dict, key: str, kind, lines: Lines, table: str = "", index: int = 0, *, lo=None, hi=None):
    """d[key] checked against `kind` (and bounds), or None when absent."""
    if key not in d:
        return None
    value = d[key]
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false", list: "a list"}
    ok = isinstance(value, kind) and not (kind in (int, float) and isinstance(value, bool))
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        ok, value = True, float(value)
    if not ok:
        raise SuiteError(lines.at(key, table, index), f"`{key}` must be {names[kind]}, not {_toml_type(value)} {_shown(value)}")
    if kind is float and not math.isfinite(value):
        raise SuiteError(lines.at(key, table, index), f"`{key}` must be a finite number, not {_shown(value)}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        bounds = f"at least {lo}" if hi is None else f"between {lo} and {hi}"
        raise SuiteError(lines.at(key, table, index), f"`{key}` must be {bounds}, not {value}")
    return value


def _toml_type(value) -> str:
    kinds = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "array"), (dict, "table"))
    return next((name for t, name in kinds if isinstance(value, t)), type(value).__name__)


def _shown(value) -> str:
    """A value as the suite writes it (TOML `nan`, `inf`, `true`), kept short."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else "inf" if value > 0 else "-inf"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _path(base: str, value: str | None, key: str, lines: Lines, table: str = "", must_exist: bool = True) -> str | None:
    if value is None:
        return None
    resolved = os.path.normpath(os.path.join(base, os.path.expanduser(value)))
    if must_exist and not os.path.isfile(resolved):
        raise SuiteError(lines.at(key, table), f"`{key}`: no such file `{value}` (looked for {resolved})", "paths are relative to the suite file")
    return resolved


_BACKEND_KEYS = ("base_url", "model", "api_key_env", "temperature", "seed", "max_tokens", "timeout", "max_retries", "model_file")


def _backend(d: Any, table: str, default: BackendConfig, base: str, lines: Lines, extra=()) -> BackendConfig:
    if d is None:
        return default
    if not isinstance(d, dict):
        raise SuiteError(lines.at(table), f"`{table}` must be a table")
    _check_keys(d, (*_BACKEND_KEYS, *extra), lines, table)
    url = _typed(d, "base_url", str, lines, table)
    if url is not None and not re.match(r"https?://[^/\s]+", url):
        raise SuiteError(lines.at("base_url", table), f"`base_url` must be an http(s) URL, not {url!r}", "e.g. http://localhost:8000/v1")
    env = _typed(d, "api_key_env", str, lines, table)
    if env is not None and not _ENV_NAME.fullmatch(env):
        raise SuiteError(lines.at("api_key_env", table), "`api_key_env` is the NAME of an environment variable holding the key, not the key")
    model_file = _path(base, _typed(d, "model_file", str, lines, table), "model_file", lines, table, must_exist=False)
    if url is not None and model_file is not None:
        raise SuiteError(lines.at("model_file", table), f"[{table}] gives both `base_url` and `model_file`", "`model_file` is the embedded model, which `base_url` replaces")
    values = {
        "base_url": url,
        "model": _typed(d, "model", str, lines, table),
        "api_key_env": env,
        "temperature": _typed(d, "temperature", float, lines, table, lo=0.0, hi=2.0),
        "seed": _typed(d, "seed", int, lines, table, lo=0, hi=MAX_SEED),
        "max_tokens": _typed(d, "max_tokens", int, lines, table, lo=1, hi=MAX_TOKENS),
        "timeout": _typed(d, "timeout", float, lines, table, lo=0.001, hi=MAX_TIMEOUT),
        "max_retries": _typed(d, "max_retries", int, lines, table, lo=0, hi=100),
        "model_file": model_file,
    }
    return attrs.evolve(default, **{k: v for k, v in values.items() if v is not None})


def _options(d: Any, lines: Lines) -> dict[str, dict[str, Any]]:
    if d is None:
        return {}
    if not isinstance(d, dict):
        raise SuiteError(lines.at("options"), "`options` must be a table of [options.OPERATOR] tables")
    catalog = load_catalog()
    out = {}
    for name, opts in d.items():
        table = f"options.{name}"
        op = catalog.get(name)
        if op is None or not op.options:
            have = [n for n, o in catalog.items() if o.options]
            raise SuiteError(lines.at(None, table), f"operator `{name}` takes no options", _suggest(name, have) or f"operators with options: {', '.join(have)}")
        if not isinstance(opts, dict):
            raise SuiteError(lines.at(None, table), f"`{table}` must be a table")
        _check_keys(opts, op.options, lines, table)
        out[name] = {key: _option(name, key, value, op.options[key], lines.at(key, table)) for key, value in opts.items()}
    return out


def _option(op: str, key: str, value: Any, default: Any, where: str) -> Any:
    if isinstance(default, list):
        allowed = {"typo_noise": TYPO_FIELDS, "reasoning_style": REASONING_STYLES}[op]
        if not isinstance(value, list) or not value or not all(isinstance(v, str) and v in allowed for v in value):
            raise SuiteError(where, f"`{key}` must be a non-empty list of: {', '.join(allowed)}")
        return sorted(set(value), key=allowed.index)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 0.5:
        raise SuiteError(where, f"`{key}` must be a number above 0 and at most 0.5")
    return float(value)


def _custom(entries: Any, lines: Lines) -> dict[str, Operator]:
    if entries is None:
        return {}
    if not isinstance(entries, list):
        raise SuiteError(lines.at("custom"), "custom operators are written as [[custom]] tables")
    out: dict[str, Operator] = {}
    for i, d in enumerate(entries):
        if not isinstance(d, dict):
            raise SuiteError(lines.at(None, "custom", i), f"a custom operator is a table, not {_toml_type(d)} {_shown(d)}", "write each as a [[custom]] table with `name`, `surface`, `relation` and `instruction`")
        _check_keys(d, ("name", "surface", "relation", "instruction", "preserve"), lines, "custom", i)
        for key in ("name", "surface", "relation", "instruction"):
            if key not in d:
                raise SuiteError(lines.at(None, "custom", i), f"a [[custom]] operator needs `{key}`")
        name = _typed(d, "name", str, lines, "custom", i)
        if not NAME.fullmatch(name):
            raise SuiteError(lines.at("name", "custom", i), f"`{name}` is not a valid operator name", "lower case letters, digits and _, starting with a letter")
        if name in load_catalog() or name in out:
            raise SuiteError(lines.at("name", "custom", i), f"operator `{name}` is already defined", "give the custom operator another name")
        surface = _typed(d, "surface", str, lines, "custom", i)
        if surface not in CUSTOM_SURFACES:
            raise SuiteError(lines.at("surface", "custom", i), f"a custom operator's surface is one of {', '.join(CUSTOM_SURFACES)}, not `{surface}`")
        relation = _typed(d, "relation", str, lines, "custom", i)
        if relation not in RELATIONS:
            raise SuiteError(lines.at("relation", "custom", i), f"`relation` is `invariant` or `directional`, not `{relation}`")
        instruction = _typed(d, "instruction", str, lines, "custom", i)
        if not instruction.strip():
            raise SuiteError(lines.at("instruction", "custom", i), "`instruction` is empty")
        preserve = _typed(d, "preserve", str, lines, "custom", i) or ""
        out[name] = custom_operator(name, surface, relation, instruction, preserve)
    return out


def _operators(value: Any, custom: dict, lines: Lines) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SuiteError(lines.at("operators"), "`operators` must be a list of operator names")
    known = {**load_catalog(), **custom}
    seen = []
    for name in value:
        if name not in known:
            raise SuiteError(lines.at("operators"), f"unknown operator `{name}`", _suggest(name, known) or "see `rbg audit catalog`, or declare it in a [[custom]] table")
        if name in seen:
            raise SuiteError(lines.at("operators"), f"operator `{name}` is listed twice")
        seen.append(name)
    return tuple(seen)


TOP_KEYS = (
    "judge", "items", "annotations", "recorded", "repeats", "tolerance", "seed", "positive", "gold", "limit",
    "concurrency", "operators", "options", "generator", "validator", "summarizer", "custom",
)  # fmt: skip


def load_suite(path: str) -> Suite:
    """Read and check a suite file; raises SuiteError."""
    data, text = read_toml(path, SuiteError, "suite")
    return suite_from_data(data, path, text)


def suite_from_data(data: dict, path: str, text: str = "") -> Suite:
    """Check decoded suite data (`text` locates the lines of mistakes)."""
    lines = Lines(path, text)
    base = os.path.dirname(os.path.abspath(path))
    _check_keys(data, TOP_KEYS, lines)
    judge = data.get("judge")
    judge_table: dict | None = None
    if isinstance(judge, dict):
        judge_table = dict(judge)
        if "graph" not in judge_table:
            raise SuiteError(lines.at(None, "judge"), "the [judge] table needs `graph`, the path of the .rbg judge")
        graph = _typed(judge_table, "graph", str, lines, "judge")
        graph_where = ("graph", "judge")
    elif judge is None:
        raise SuiteError(path, "the suite names no `judge`", 'add `judge = "path/to/judge.rbg"` (or a [judge] table with `graph`)')
    else:
        graph = _typed(data, "judge", str, lines)
        graph_where = ("judge", "")
    if "items" not in data:
        raise SuiteError(path, "the suite names no `items`", 'add `items = "path/to/items.jsonl"`')
    custom = _custom(data.get("custom"), lines)
    judge_path = _path(base, graph, graph_where[0], lines, graph_where[1])
    items_path = _path(base, _typed(data, "items", str, lines), "items", lines)
    assert judge_path is not None and items_path is not None  # both required, checked above
    return Suite(
        path=path,
        judge=judge_path,
        items=items_path,
        annotations=_path(base, _typed(data, "annotations", str, lines), "annotations", lines),
        recorded=_path(base, _typed(data, "recorded", str, lines), "recorded", lines),
        repeats=_typed(data, "repeats", int, lines, lo=1, hi=100) or 5,
        tolerance=_typed(data, "tolerance", float, lines, lo=0.0) or 0.0,
        seed=_typed(data, "seed", int, lines, lo=0, hi=MAX_SEED) or 0,
        positive=True if data.get("positive") is None else _typed(data, "positive", bool, lines),
        gold=True if data.get("gold") is None else _typed(data, "gold", bool, lines),
        limit=_typed(data, "limit", int, lines, lo=1, hi=MAX_LIMIT),
        concurrency=_typed(data, "concurrency", int, lines, lo=1, hi=256) or 4,
        operators=_operators(data.get("operators"), custom, lines),
        options=_options(data.get("options"), lines),
        judge_backend=_backend(judge_table, "judge", BackendConfig(), base, lines, extra=("graph",)),
        generator=_backend(data.get("generator"), "generator", BackendConfig(temperature=0.7, max_tokens=1024), base, lines),
        validator=_backend(data.get("validator"), "validator", BackendConfig(), base, lines),
        summarizer=None if data.get("summarizer") is None else _backend(data["summarizer"], "summarizer", BackendConfig(), base, lines),
        custom=custom,
    )
