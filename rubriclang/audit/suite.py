"""Audit suites: a TOML file naming the judge, the items, the operators
(`Perturbation`s in the code) and the models. Every mistake is a SuiteError
naming the file and line (found by scanning the text, since tomllib keeps no
positions), with a hint.
"""

from __future__ import annotations

import os
import re
from typing import Any

import attrs

from rubriclang.audit.perturb.llm import REASONING_STYLES
from rubriclang.audit.perturbations import (
    CUSTOM_SURFACES,
    RELATIONS,
    Perturbation,
    custom_perturbation,
    load_perturbations,
)
from rubriclang.config import MAX_SEED, MAX_TOKENS
from rubriclang.errors import LocatedError
from rubriclang.nearest import difflib_match
from rubriclang.safetext import capped
from rubriclang.tomlfile import Lines, read_toml
from rubriclang.tomlschema import Field, Place, check, check_keys, shown, toml_type
from rubriclang.urls import URLError, parse_base_url, shown_url

TYPO_FIELDS = ("input", "response")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NAME = re.compile(r"[a-z][a-z0-9_]*")
# Bounds of the numbers a suite may give (beyond them a server, the cache or
# a timer would fail later, far from the line at fault); the sampling ones
# are the config's (rubriclang.config).
MAX_TIMEOUT = 86_400.0
MAX_LIMIT = 10**12


class SuiteError(LocatedError):
    """A mistake in a suite; `where` is `path:line` (or just the path). What
    it quotes of the suite (a key, an operator's name, a path) is cut to an
    excerpt's width: a name may be megabytes."""

    def __init__(self, where: str, message: str, hint: str = ""):
        super().__init__(where, capped(message), capped(hint))


@attrs.frozen
class ModelConfig:
    """The model a suite table names: an OpenAI-compatible server, or the
    embedded model when there is no `base_url`."""

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
        # A URL's query may hold a token: shown as `?***`, as everywhere a server is named.
        return (
            shown_url(self.base_url)
            if self.base_url
            else f"the embedded model{f' ({self.model_file})' if self.model_file else ''}"
        )


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
    operators: tuple[str, ...] | None = None  # None: every applicable built-in operator
    options: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    judge_model: ModelConfig = ModelConfig()
    generator: ModelConfig = ModelConfig(temperature=0.7, max_tokens=1024)
    validator: ModelConfig = ModelConfig()
    summarizer: ModelConfig | None = None  # None: rules, or the generator's model with --summary
    custom: dict[str, Perturbation] = attrs.field(factory=dict)

    def perturbation(self, name: str) -> Perturbation:
        """A built-in or custom perturbation, with the suite's options applied."""
        op = self.custom.get(name) or load_perturbations()[name]
        return op.with_options(self.options[name]) if name in self.options else op

    def requested(self) -> tuple[str, ...]:
        """The operators to run: those named (or every built-in one), then the custom ones."""
        names = list(self.operators if self.operators is not None else load_perturbations())
        names += [n for n in self.custom if n not in names]
        return tuple(names)


def _suggest(word: str, choices) -> str:
    close = difflib_match(word, choices)
    return f"did you mean `{close[0]}`?" if close else ""


def _path(
    base: str, value: str | None, key: str, place: Place, must_exist: bool = True, folder: bool = False
) -> str | None:
    """`value` relative to the suite's folder; with `must_exist` it names a
    file (or, with `folder`, a file or a folder)."""
    if value is None:
        return None
    resolved = os.path.normpath(os.path.join(base, os.path.expanduser(value)))
    if must_exist and not (os.path.isfile(resolved) or (folder and os.path.isdir(resolved))):
        raise place.fail(
            key, f"`{key}`: no such file `{value}` (looked for `{resolved}`)", "paths are relative to the suite file"
        )
    return resolved


MODEL_FIELDS = {
    "base_url": Field(str),
    "model": Field(str),
    "api_key_env": Field(str),
    "temperature": Field(float, lo=0.0, hi=2.0),
    "seed": Field(int, lo=0, hi=MAX_SEED),
    "max_tokens": Field(int, lo=1, hi=MAX_TOKENS),
    "timeout": Field(float, lo=0.001, hi=MAX_TIMEOUT),
    "max_retries": Field(int, lo=0, hi=100),
    "model_file": Field(str),
}
_MODEL_KEYS = tuple(MODEL_FIELDS)


def _model_config(
    d: Any, table: str, default: ModelConfig, base: str, lines: Lines, extra: dict | None = None
) -> ModelConfig:
    if d is None:
        return default
    place = Place(lines, SuiteError, f"[{table}]", table)
    if not isinstance(d, dict):
        raise place.fail(None, f"`{table}` must be a table")
    values = check(d, {**MODEL_FIELDS, **(extra or {})}, place)
    url = values.get("base_url")
    if url is not None:
        try:
            parse_base_url(url)
        except URLError as exc:
            raise place.fail("base_url", f"`base_url`: {exc.message}", exc.hint) from None
    env = values.get("api_key_env")
    if env is not None and not _ENV_NAME.fullmatch(env):
        raise place.fail(
            "api_key_env", "`api_key_env` is the NAME of an environment variable holding the key, not the key"
        )
    values["model_file"] = _path(base, values.get("model_file"), "model_file", place, must_exist=False)
    if url is not None and values["model_file"] is not None:
        raise place.fail(
            "model_file",
            f"[{table}] gives both `base_url` and `model_file`",
            "`model_file` is the embedded model, which `base_url` replaces",
        )
    return attrs.evolve(default, **{k: v for k, v in values.items() if k in MODEL_FIELDS and v is not None})


def _options(d: Any, lines: Lines) -> dict[str, dict[str, Any]]:
    if d is None:
        return {}
    perturbations = load_perturbations()
    out = {}
    for name, opts in d.items():
        place = Place(lines, SuiteError, f"[options.{name}]", f"options.{name}")
        op = perturbations.get(name)
        if op is None or not op.options:
            have = [n for n, o in perturbations.items() if o.options]
            raise place.fail(
                None,
                f"operator `{name}` takes no options",
                _suggest(name, have) or f"operators with options: {', '.join(have)}",
            )
        if not isinstance(opts, dict):
            raise place.fail(None, f"`options.{name}` must be a table")
        check_keys(opts, op.options, place)
        out[name] = {key: _option(name, key, value, op.options[key], place.at(key)) for key, value in opts.items()}
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


CUSTOM_FIELDS = {
    "name": Field(str, required=True),
    "surface": Field(str, required=True, choices=tuple(CUSTOM_SURFACES)),
    "relation": Field(str, required=True, choices=RELATIONS),
    "instruction": Field(str, required=True),
    "preserve": Field(str),
}


def _custom(entries: Any, lines: Lines) -> dict[str, Perturbation]:
    if entries is None:
        return {}
    out: dict[str, Perturbation] = {}
    for i, d in enumerate(entries):
        place = Place(lines, SuiteError, "a [[custom]] operator", "custom", i)
        if not isinstance(d, dict):
            raise place.fail(
                None,
                f"a custom operator is a table, not {toml_type(d)} {shown(d)}",
                "write each as a [[custom]] table with `name`, `surface`, `relation` and `instruction`",
            )
        v = check(d, CUSTOM_FIELDS, place)
        name = v["name"]
        if not NAME.fullmatch(name):
            raise place.fail(
                "name",
                f"`{name}` is not a valid operator name",
                "lower case letters, digits and _, starting with a letter",
            )
        if name in load_perturbations() or name in out:
            raise place.fail("name", f"operator `{name}` is already defined", "give the custom operator another name")
        if not v["instruction"].strip():
            raise place.fail("instruction", "`instruction` is empty")
        out[name] = custom_perturbation(name, v["surface"], v["relation"], v["instruction"], v.get("preserve", ""))
    return out


def _operators(value: Any, custom: dict, lines: Lines) -> tuple[str, ...] | None:
    if value is None:
        return None
    known = {**load_perturbations(), **custom}
    seen = []
    for name in value:
        if name not in known:
            raise SuiteError(
                lines.at("operators"),
                f"unknown operator `{name}`",
                _suggest(name, known) or "see `rbg audit catalog`, or declare it in a [[custom]] table",
            )
        if name in seen:
            raise SuiteError(lines.at("operators"), f"operator `{name}` is listed twice")
        seen.append(name)
    return tuple(seen)


SUITE_FIELDS = {
    "judge": Field(
        (str, dict),
        required=True,
        what="a path or a [judge] table",
        hint='add `judge = "path/to/judge.rbg"` (or a [judge] table with `graph`)',
    ),
    "items": Field(str, required=True, hint='add `items = "path/to/items.jsonl"`'),
    "annotations": Field(str),
    "recorded": Field(str),
    "repeats": Field(int, lo=1, hi=100),
    "tolerance": Field(float, lo=0.0),
    "seed": Field(int, lo=0, hi=MAX_SEED),
    "positive": Field(bool),
    "gold": Field(bool),
    "limit": Field(int, lo=1, hi=MAX_LIMIT),
    "concurrency": Field(int, lo=1, hi=256),
    "operators": Field(list, items=str, what="a list of operator names"),
    "options": Field(dict, what="a table of [options.OPERATOR] tables"),
    "generator": Field(dict),
    "validator": Field(dict),
    "summarizer": Field(dict),
    "custom": Field(
        list, items=dict, what="[[custom]] tables", hint="write each custom operator as a [[custom]] table"
    ),
}
JUDGE_FIELDS = {"graph": Field(str, required=True, hint="the path of the .rbg judge")}


def load_suite(path: str) -> Suite:
    """Read and check a suite file; raises SuiteError."""
    data, text = read_toml(path, SuiteError, "suite")
    return suite_from_data(data, path, text)


def suite_from_data(data: dict, path: str, text: str = "") -> Suite:
    """Check decoded suite data (`text` locates the lines of mistakes)."""
    lines = Lines(path, text)
    base = os.path.dirname(os.path.abspath(path))
    top = Place(lines, SuiteError, "the suite")
    v = check(data, SUITE_FIELDS, top)
    judge_table: dict | None = None
    if isinstance(v["judge"], dict):
        judge_table = v["judge"]
        judge_place = Place(lines, SuiteError, "[judge]", "judge")
        graph = _path(
            base,
            check(judge_table, {**MODEL_FIELDS, **JUDGE_FIELDS}, judge_place)["graph"],
            "graph",
            judge_place,
            folder=True,
        )
    else:
        graph = _path(base, v["judge"], "judge", top, folder=True)
    custom = _custom(v.get("custom"), lines)
    items = _path(base, v["items"], "items", top)
    assert graph is not None and items is not None  # both required, checked above
    return Suite(
        path=path,
        judge=graph,
        items=items,
        annotations=_path(base, v.get("annotations"), "annotations", top),
        recorded=_path(base, v.get("recorded"), "recorded", top),
        repeats=v.get("repeats", 5),
        tolerance=v.get("tolerance", 0.0),
        seed=v.get("seed", 0),
        positive=v.get("positive", True),
        gold=v.get("gold", True),
        limit=v.get("limit"),
        concurrency=v.get("concurrency", 4),
        operators=_operators(v.get("operators"), custom, lines),
        options=_options(v.get("options"), lines),
        judge_model=_model_config(judge_table, "judge", ModelConfig(), base, lines, extra=JUDGE_FIELDS),
        generator=_model_config(
            v.get("generator"), "generator", ModelConfig(temperature=0.7, max_tokens=1024), base, lines
        ),
        validator=_model_config(v.get("validator"), "validator", ModelConfig(), base, lines),
        summarizer=None
        if v.get("summarizer") is None
        else _model_config(v["summarizer"], "summarizer", ModelConfig(), base, lines),
        custom=custom,
    )
