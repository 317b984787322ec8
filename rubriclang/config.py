"""Project settings: `rubriclang.toml`, or `[tool.rubriclang]` in
`pyproject.toml`, found upward from the graph's folder (the nearest folder
that has either wins, as ruff finds its configuration), else upward from
the current folder. The folder that holds it is the project's root.

```toml
[models.strong]                  # a model profile: `model = "strong"` on a criterion
base_url = "http://gpu:8000/v1"  # or a list, to spread the load
model = "Qwen2.5-72B-Instruct"
api_key_env = "VLLM_KEY"         # the variable that holds the key (never the key)
temperature = 0.0                # sampling defaults for this profile's criteria
max_tokens = 1024
```

A profile named `default` serves the criteria that name none, unless the
command line gives `--base-url`. `[prices."MODEL"]` (optional; `prompt` and
`completion`, USD per million tokens) turns `--estimate` token counts into
money; no prices are shipped.

```toml
[project]                        # defaults of the daily commands (docs/project.md)
runs = "runs"                    # `rbg run` without --out writes here
audits = "audits"                # `rbg audit` without --out writes here
evals = "evals"                  # where `rbg view` looks for `rbg eval --format json` outputs
cache = true                     # the call cache: true (the user's), false (none), or a path
concurrency = 8                  # criterion calls in flight at once

[check]                          # `rbg check`'s warnings, as its --select/--ignore
select = ["RB"]
ignore = ["RB504"]
```

Folders and the cache path are relative to the project's root. The
command line wins over every setting. Settings are data: nothing here
runs code.
"""

from __future__ import annotations

import os
import re
from typing import Any

import attrs

from rubriclang.safeio import open_regular
from rubriclang.tomlfile import Lines, deepest_line
from rubriclang.tomlschema import Field, Place, check
from rubriclang.urls import URLError, parse_base_url

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
# The other ways to write `tool.rubriclang`: a `[tool]` table, or `tool = {...}`.
_TOOL_TABLE = re.compile(rb"^[ \t]*(\[[ \t]*\"?tool\"?[ \t]*\]|\"?tool\"?[ \t]*=)", re.MULTILINE)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SAMPLING = ("temperature", "top_p", "max_tokens", "seed")
# The sampling numbers a config, a suite or the command line may give (one
# set of bounds everywhere): beyond them a server refuses every request, far
# from the line at fault. Seeds are 32-bit and not negative: the most every
# server accepts (llama.cpp's is unsigned 32-bit), and -1 is "random" to some.
MAX_SEED = 2**32 - 1
MAX_TOKENS = 10_000_000
# Checked by the one TOML validator (rubriclang.tomlschema); what a field
# cannot say (URLs, variable names) is checked after.
PROFILE_FIELDS = {
    "base_url": Field(
        (str, list),
        required=True,
        items=str,
        what="an http(s) URL, or a list of them",
        hint='e.g. `base_url = "http://localhost:8000/v1"`',
    ),
    "model": Field(str, what="a model's name"),
    "api_key_env": Field(str, what="the name of an environment variable", hint="the key itself never goes in a file"),
    "temperature": Field(float, lo=0.0),
    "top_p": Field(float, lo=0.0, hi=1.0),
    "max_tokens": Field(int, lo=1, hi=MAX_TOKENS),
    "seed": Field(int, lo=0, hi=MAX_SEED),
}
_PRICE = Field(float, required=True, lo=0.0, what="a number of at least 0 (USD per million tokens)")
PRICE_FIELDS = {"prompt": _PRICE, "completion": _PRICE}
MODELS = Field(dict, what="a table of profiles", hint="write `[models.NAME]` tables")
PRICES = Field(dict, what="a table of models", hint='write `[prices."MODEL"]` tables')
_FOLDER = Field(str, what="a folder, relative to the project's root", hint='e.g. `runs = "runs"`')
PROJECT_FIELDS = {
    "runs": _FOLDER,
    "audits": _FOLDER,
    "evals": _FOLDER,
    "cache": Field(
        (bool, str),
        what="true (the user's call cache), false (no cache) or a file path",
        hint='e.g. `cache = ".rbg-cache.sqlite"`',
    ),
    "concurrency": Field(int, lo=1, hi=4096),
}
_CODES = Field(list, items=str, what="a list of diagnostic codes or prefixes", hint='e.g. `ignore = ["RB504"]`')
CHECK_FIELDS = {"select": _CODES, "ignore": _CODES}
TABLES = {
    "models": MODELS,
    "prices": PRICES,
    "project": Field(dict, what="a table", hint="write a `[project]` table"),
    "check": Field(dict, what="a table", hint="write a `[check]` table"),
}
# Where the daily commands write when no output is named, under the root.
DEFAULT_FOLDERS = {"runs": "runs", "audits": "audits", "evals": "evals"}


class ConfigError(ValueError):
    """A bad project config: `where` is `file:line`."""

    def __init__(self, where: str, message: str, hint: str = ""):
        self.where, self.message, self.hint = where, message, hint
        super().__init__(f"{where}: {message}")


@attrs.frozen
class ModelProfile:
    name: str
    base_urls: tuple[str, ...]
    model: str | None
    api_key_env: str | None
    sampling: dict[str, Any]  # only the settings the profile gives
    where: str  # file:line of its table


@attrs.frozen
class ProjectConfig:
    path: str | None  # None: no config file was found
    models: dict[str, ModelProfile] = attrs.field(factory=dict)
    prices: dict[str, dict[str, float]] = attrs.field(factory=dict)  # model -> prompt/completion USD per 1M tokens
    raw: dict[str, Any] = attrs.field(factory=dict)  # the whole table, for other settings
    project: dict[str, Any] = attrs.field(factory=dict)  # `[project]` as given (PROJECT_FIELDS)
    check: dict[str, Any] = attrs.field(factory=dict)  # `[check]` as given (CHECK_FIELDS)
    lines: Lines | None = None  # where each setting is, for errors found after loading

    @property
    def root(self) -> str | None:
        """The project's folder: the one that holds the config file."""
        return os.path.dirname(self.path) if self.path is not None else None

    def folder(self, kind: str) -> str:
        """The output folder `kind` (`runs`, `audits`, `evals`), under the
        root; only for a config that was found."""
        assert self.root is not None
        return os.path.join(self.root, self.project.get(kind, DEFAULT_FOLDERS[kind]))

    def cache(self) -> str | bool | None:
        """The call cache the project sets: a path (under the root), False
        for none, None when it sets nothing (the user's cache)."""
        value = self.project.get("cache", True)
        if value is True:
            return None
        if value is False:
            return False
        assert self.root is not None
        return os.path.join(self.root, os.path.expanduser(value))

    def where(self, table: str, key: str) -> str:
        """`file:line` of a setting, for a message about its value."""
        prefix = "tool.rubriclang." if self.path is not None and os.path.basename(self.path) == "pyproject.toml" else ""
        return self.lines.at(key, prefix + table) if self.lines is not None else str(self.path)


def find_config(start: str) -> str | None:
    """The config file governing `start` (a file or a folder): the nearest
    upward from it, else the nearest upward from the current folder; None
    when there is neither."""
    folder = os.path.abspath(start if os.path.isdir(start) else os.path.dirname(os.path.abspath(start)))
    return _upward(folder) or _upward(os.getcwd())


def _upward(folder: str) -> str | None:
    """The config file in `folder` or the nearest folder above it."""
    while True:
        candidate = os.path.join(folder, "rubriclang.toml")
        # One that is not a regular file (a pipe, a folder) is found too, for
        # load_config to refuse: skipping it would run with no config at all.
        if os.path.exists(candidate):
            return candidate
        pyproject = os.path.join(folder, "pyproject.toml")
        if os.path.exists(pyproject) and (not os.path.isfile(pyproject) or _has_tool_table(pyproject)):
            return pyproject
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _has_tool_table(path: str) -> bool:
    """Whether the pyproject.toml at `path` has a `[tool.rubriclang]` table;
    one that cannot be parsed has it when it names the table, so that its
    fault is reported rather than the settings silently skipped."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return False
    # Most pyproject.toml files name no such table: they are not parsed (nor
    # tomllib imported) for every command run in a Python project.
    if b"tool.rubriclang" not in data and not _TOOL_TABLE.search(data):
        return False
    import tomllib

    try:
        return "rubriclang" in tomllib.loads(data.decode("utf-8-sig")).get("tool", {})
    except UnicodeDecodeError:
        return False
    except (tomllib.TOMLDecodeError, RecursionError):
        return True


def load_config(start: str) -> ProjectConfig:
    """The project config for a graph at `start`; an empty one when there is
    none. Raises ConfigError (with file:line) for a malformed one."""
    path = find_config(start)
    if path is None:
        return ProjectConfig(None)
    shown = os.path.relpath(path) if not os.path.isabs(start) else path
    import tomllib  # only once a config is found: a command in no project never imports it

    try:
        with open_regular(path, "r", encoding="utf-8-sig") as fh:
            text = fh.read()
        data = tomllib.loads(text)
    except UnicodeDecodeError:
        raise ConfigError(f"{shown}:1", "the file is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None) or _line_from_message(str(exc), text)
        raise ConfigError(f"{shown}:{line}", f"not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per level of nested arrays and tables
        raise ConfigError(
            f"{shown}:{deepest_line(text)}",
            "the config nests arrays or inline tables too deeply to read",
            "a setting needs a few levels at most",
        ) from None
    except OSError as exc:
        raise ConfigError(f"{shown}:1", f"cannot read it: {exc.strerror}") from None
    table = data.get("tool", {}).get("rubriclang", {}) if os.path.basename(path) == "pyproject.toml" else data
    prefix = "tool.rubriclang." if table is not data else ""
    lines = Lines(shown, text)
    top = Place(lines, ConfigError, "the config", prefix.rstrip("."))
    tables = check(table, TABLES, top)
    models, prices = tables.get("models", {}), tables.get("prices", {})
    project = check(
        tables.get("project", {}),
        PROJECT_FIELDS,
        Place(lines, ConfigError, "[project]", f"{prefix}project", prefix="project."),
    )
    settings = check(
        tables.get("check", {}), CHECK_FIELDS, Place(lines, ConfigError, "[check]", f"{prefix}check", prefix="check.")
    )
    profiles = {name: _profile(name, spec, lines, prefix) for name, spec in models.items()}
    return ProjectConfig(path, profiles, _prices(prices, lines, prefix), table, project, settings, lines)


def _prices(table: dict, lines: Lines, prefix: str) -> dict[str, dict[str, float]]:
    """`[prices."MODEL"]` tables: `prompt` and `completion`, USD per million tokens."""
    out = {}
    for model, spec in table.items():
        place = Place(lines, ConfigError, f'`prices."{model}"`', f"{prefix}prices.{model}", prefix=f'prices."{model}".')
        if not isinstance(spec, dict):
            raise place.fail(
                None,
                f'`prices."{model}"` must be a table',
                "USD per million tokens, e.g. `prompt = 0.5`, `completion = 1.5`",
            )
        out[model] = check(spec, PRICE_FIELDS, place)
    return out


def _profile(name: str, spec: Any, lines: Lines, prefix: str) -> ModelProfile:
    place = Place(lines, ConfigError, f"profile `{name}`", f"{prefix}models.{name}", prefix=f"models.{name}.")
    where = place.at()
    if not isinstance(spec, dict):
        raise ConfigError(
            where, f"`models.{name}` must be a table", f"write `[{prefix}models.{name}]` with `base_url` and `model`"
        )
    values = check(spec, PROFILE_FIELDS, place)
    urls = [values["base_url"]] if isinstance(values["base_url"], str) else values["base_url"]
    if not urls:
        raise place.fail(
            "base_url",
            f"profile `{name}` needs `base_url`: an http(s) URL, or a list of them",
            PROFILE_FIELDS["base_url"].hint,
        )
    for url in urls:
        try:
            parse_base_url(url)
        except URLError as exc:
            raise place.fail("base_url", f"`base_url` of profile `{name}`: {exc.message}", exc.hint) from None
    model = values.get("model")
    if model is not None and not model.strip():
        raise place.fail("model", f"`model` of profile `{name}` must be a model's name")
    key_env = values.get("api_key_env")
    if key_env is not None and not _ENV_NAME.fullmatch(key_env):
        raise place.fail(
            "api_key_env",
            f"`api_key_env` of profile `{name}` must name an environment variable",
            "the key itself never goes in a file",
        )
    # As written (an integer temperature stays one), so requests do not change.
    sampling = {key: spec[key] for key in _SAMPLING if key in spec}
    return ModelProfile(name, tuple(urls), model, key_env, sampling, where)


def _line_from_message(message: str, text: str) -> int:
    m = re.search(r"line (\d+)", message)
    if m:
        return int(m.group(1))
    # tomllib names no line for a text that stops short (an unclosed list): its last line.
    return max(1, len(text.splitlines())) if "end of document" in message else 1
