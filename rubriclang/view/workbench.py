"""The audit workbench of `rbg view` (no path: a project): configure a
starting suite in the browser and save it.

Pick a judge (a .rbg file or a folder of compiled graphs) and an items file
under the project, a server (as `rbg audit init --base-url`) and, if need
be, one per role from the profiles, switch operators of the catalog off,
set repeats and tolerance; "Plan" shows, per
operator, whether it goes into the suite and why (the same rules as `rbg
audit init`), and the TOML text; "Save" writes that text, byte for byte
what `rbg audit init` writes for the same choices (`audit.starting`),
through the command line's own writer (`save`, given by `cli/view.py`:
atomic, under the output lock, never over an input), then loads it with
`rbg audit`'s own checks and shows any error at its line. "Estimate" shows
what `rbg audit SUITE --estimate` prints for the saved file (`estimate`):
calls, tokens and money per phase, no model called. With a profile, "Ask
the planner" shows `rbg audit plan`'s proposal and reasons, and saves its
suite as that command does (`ask`).

Every path a request names is confined to the project folder
(`guard.confine`); the page's texts are escaped by the templates.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from rubriclang.audit.applicability import conditions
from rubriclang.audit.perturbations import load_perturbations
from rubriclang.audit.starting import planned_suite, starting_suite
from rubriclang.config import ConfigError, ModelProfile, ProjectConfig, load_config
from rubriclang.urls import shown_url
from rubriclang.view.guard import CSRF_FIELD, OutsideProject, confine
from rubriclang.view.pages import Site

_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
ROLES = ("judge", "generator", "validator")
SAME = "="  # a role's choice: the server above
_ACTIONS = ("plan", "save", "estimate", "preview", "ask", "save-plan")
_PREVIEWED = 50  # variants shown on the page; preview.html in the folder has them all
_LISTED = 500  # files offered per kind: a project folder may hold a data lake
_WALKED = 20_000  # names looked at, at most, to find them
DEFAULT_SUITE = "audit.toml"


class CommandRefused(Exception):
    """The command line's code refused: the writer (the suite exists, it
    would replace an input, another process holds its lock, the disk
    refused it) or the estimate (the saved suite or its judge is wrong)."""


# save(path, text, graph, items, overwrite): write the suite as `rbg audit init` does.
Save = Callable[[str, str, str, str, bool], None]
# estimate(path): `rbg audit PATH --estimate`'s text.
Estimate = Callable[[str], str]
# preview(path): `rbg audit preview`'s (folder, document) for the suite at `path`, in a new audit folder.
Preview = Callable[[str], tuple[str, dict]]
# ask(judge, items, profile): `rbg audit plan`'s proposal (chosen, dropped, skipped) from the model of `profile`.
Ask = Callable[[Any, list, ModelProfile], tuple[list, list, list]]


@attrs.frozen
class Choices:
    """What the form asks for; paths are relative to the project folder."""

    judge: str = ""
    items: str = ""
    server: str = ""  # "": as init without --base-url; else a profile's name
    roles: tuple[tuple[str, str], ...] = ()  # (role, server) for a role with a server of its own
    suite: str = DEFAULT_SUITE
    off: frozenset[str] = frozenset()
    repeats: str = ""
    tolerance: str = ""
    overwrite: bool = False
    proposal: tuple[tuple[str, str], ...] = ()  # the planner's (operator, rationale), carried by the page


def choices_from(form: Mapping[str, list[str]]) -> Choices:
    """The form's fields (each a list, as `parse_qs` gives them); a posted
    form lists the operators left on, so every other one is off."""
    one = {k: (v[0] if v else "") for k, v in form.items()}
    on = set(form.get("op", []))
    return Choices(
        judge=one.get("judge", ""),
        items=one.get("items", ""),
        server=one.get("server", ""),
        roles=tuple((role, one[f"role_{role}"]) for role in ROLES if one.get(f"role_{role}", SAME) != SAME),
        suite=one.get("suite", "") or DEFAULT_SUITE,
        off=frozenset(name for name in load_perturbations() if name not in on),
        repeats=one.get("repeats", "").strip(),
        tolerance=one.get("tolerance", "").strip(),
        overwrite=one.get("overwrite") == "1",
        proposal=tuple(zip(form.get("proposed", []), form.get("rationale", []), strict=False)),
    )


@attrs.frozen
class Row:
    """One operator of the catalog as the page shows it."""

    name: str
    surface: str
    relation: str
    generator: str
    validation: str
    applies_when: str
    summary: str
    on: bool
    status: str  # "", "in the suite", "left out"
    why: str


class Workbench:
    """The workbench over the project at `config.root`."""

    def __init__(self, config: ProjectConfig, save: Save, estimate: Estimate, ask: Ask, preview: Preview):
        assert config.root is not None
        self.root = os.path.realpath(config.root)
        self.config = config
        self.save = save
        self.estimate = estimate
        self.ask = ask
        self.preview = preview

    # Listing ---------------------------------------------------------------

    def files(self) -> tuple[list[str], list[str]]:
        """(judges: .rbg files and folders holding them, items files), as
        paths relative to the project folder, sorted; links out are left
        out, and so are the output folders (their .jsonl files are traces)."""
        judges: set[str] = set()
        items: list[str] = []
        outputs = {os.path.realpath(self.config.folder(kind)) for kind in ("runs", "evals", "audits")}
        seen = 0
        for folder, dirs, names in os.walk(self.root):
            dirs[:] = sorted(
                d
                for d in dirs
                if d not in _SKIP_DIRS and not d.startswith(".") and os.path.join(folder, d) not in outputs
            )
            seen += len(names) + len(dirs)
            if seen > _WALKED:
                break
            rel = os.path.relpath(folder, self.root)
            for name in sorted(names):
                path = name if rel == "." else f"{rel}/{name}"
                if not self._inside(path):
                    continue
                if name.endswith(".rbg"):
                    judges.add(path)
                    if rel != ".":
                        judges.add(rel + "/")
                elif name.endswith(".jsonl") and len(items) < _LISTED:
                    items.append(path)
        return sorted(judges)[:_LISTED], items

    def _inside(self, path: str) -> bool:
        try:
            confine(self.root, path)
        except OutsideProject:
            return False
        return True

    def servers(self) -> list[tuple[str, str]]:
        """(value, label) of the server choices: as init without
        --base-url, then each one-server profile as `--base-url` its URL."""
        plain = (
            "the project's `default` profile (init without --base-url)"
            if "default" in self.config.models
            else "the embedded local model (init without --base-url)"
        )
        out = [("", plain)]
        for name, p in sorted(self.config.models.items()):
            if len(p.base_urls) == 1:
                out.append((name, f"profile `{name}`: --base-url {shown_url(p.base_urls[0])}"))
        return out

    # Pages -----------------------------------------------------------------

    def page(self, site: Site, csrf: str, form: Mapping[str, list[str]] | None = None) -> str:
        """The workbench page; with a posted `form`, its `action` (plan or
        save) done first."""
        chosen = choices_from(form) if form is not None else Choices()
        action = form.get("action", [""])[0] if form is not None else ""
        result = self._act(chosen, action) if action in _ACTIONS else Result()
        judges, items = self.files()
        return site.env.get_template("workbench.html").render(
            title="rbg view: new audit",
            c=chosen,
            judges=judges,
            items_files=items,
            servers=self.servers(),
            roles=ROLES,
            rows=result.rows or self._catalog(chosen),
            r=result,
            csrf=csrf,
            csrf_field=CSRF_FIELD,
            root=self.root,
        )

    def _catalog(self, c: Choices, status: Mapping[str, tuple[str, str]] | None = None) -> list[Row]:
        return [
            Row(
                name,
                op.surface,
                op.relation,
                op.generator,
                op.validation,
                "; ".join(conditions(op)) or "always",
                op.summary,
                name not in c.off,
                *(status or {}).get(name, ("", "")),
            )
            for name, op in load_perturbations().items()
        ]

    def _act(self, c: Choices, action: str) -> Result:
        try:
            setup = self._setup(c)
            if action in ("ask", "save-plan"):
                text, status, proposal = self._proposed(c, setup, ask=action == "ask")
            else:
                text, status, proposal = self._started(c, setup)
        except _Problem as p:
            return Result(errors=p.lines)
        lines = self._masked(text).splitlines()
        planned = Result(rows=self._catalog(c, status), text=lines, planned=True, proposal=proposal)
        if action in ("plan", "ask"):
            return planned
        if action == "estimate":
            return self._estimate(setup.suite, c.suite, planned)
        if action == "preview":
            return self._preview(setup.suite, c.suite, planned)
        if os.path.exists(setup.suite) and not c.overwrite:
            why = f"`{c.suite}` exists: tick “replace the existing” and save again, or name another file"
            return attrs.evolve(planned, errors=[why], exists=True)
        try:
            self.save(setup.suite, text, setup.graph_path, setup.items_path, c.overwrite)
        except CommandRefused as exc:
            return attrs.evolve(planned, errors=[str(exc)], exists=os.path.exists(setup.suite))
        return attrs.evolve(planned, saved=os.path.relpath(setup.suite, self.root), **_checked(setup.suite))

    def _preview(self, suite: str, named: str, planned: Result) -> Result:
        """The variants of the suite file as saved, made and validated into a
        new audit folder (what `rbg audit preview` does), judged by nothing."""
        if not os.path.isfile(suite):
            return attrs.evolve(planned, errors=[f"`{named}` is not saved yet: Save it, then Preview"])
        try:
            out, doc = self.preview(suite)
        except CommandRefused as exc:
            return attrs.evolve(planned, errors=[str(exc)])
        variants = [
            (v["operator"], v["item"], [(k, t, v["perturbed"].get(k, "")) for k, t in v["original"].items()])
            for v in doc["variants"][:_PREVIEWED]
        ]
        folder = os.path.relpath(os.path.realpath(out), self.root)
        return attrs.evolve(
            planned,
            saved=os.path.relpath(suite, self.root),
            previewed=folder,
            variants=variants,
            variant_count=len(doc["variants"]),
        )

    def _started(self, c: Choices, setup: _Setup) -> tuple[str, dict[str, tuple[str, str]], tuple]:
        """`rbg audit init`'s suite for the choices, and each operator's status."""
        from rubriclang.audit.suite_writer import SuiteTextError

        try:
            start = starting_suite(
                setup.suite,
                setup.graph_path,
                setup.items_path,
                setup.judge,
                setup.base_url,
                setup.profiled,
                c.off,
                setup.repeats,
                setup.tolerance,
                setup.roles,
            )
        except SuiteTextError as exc:
            raise _Problem([str(exc)]) from None
        status = {op.name: ("in the suite", op.summary) for op in start.chosen}
        status.update({name: ("left out", why) for name, why in start.skipped})
        return start.text, status, ()

    def _proposed(self, c: Choices, setup: _Setup, ask: bool) -> tuple[str, dict[str, tuple[str, str]], tuple]:
        """`rbg audit plan`'s suite: the planner model of the chosen profile
        asked (`ask`), or its proposal as the page carried it back (to save
        what was shown, not a new answer); each operator's status."""
        from rubriclang.audit.planner import candidates
        from rubriclang.audit.suite_writer import SuiteTextError

        ok, skipped = candidates(setup.judge)
        dropped: list[tuple[str, str]] = []
        if ask:
            profile = self.config.models.get(c.server) if c.server else None
            if profile is None:
                raise _Problem(["the planner is a model: pick one of the project's profiles as the server"])
            try:
                chosen, dropped, skipped = self.ask(setup.judge, setup.items, profile)
            except CommandRefused as exc:
                raise _Problem([str(exc)]) from None
        else:
            chosen = [(ok[name], why) for name, why in c.proposal if name in ok]
            if not chosen:
                raise _Problem(["no proposal to save: ask the planner first"])
        try:
            text = planned_suite(setup.suite, setup.graph_path, setup.items_path, setup.judge, chosen, skipped)
        except SuiteTextError as exc:
            raise _Problem([str(exc)]) from None
        status = {name: ("not proposed", "") for name in ok}
        status.update({op.name: ("proposed", why) for op, why in chosen})
        status.update({name: ("left out", why) for name, why in skipped})
        status.update({name: ("dropped", why) for name, why in dropped if name in status})
        return text, status, tuple((op.name, why) for op, why in chosen)

    def _estimate(self, suite: str, named: str, planned: Result) -> Result:
        """The estimate of the suite file as saved (what `rbg audit` would run)."""
        if not os.path.isfile(suite):
            return attrs.evolve(planned, errors=[f"`{named}` is not saved yet: Save it, then Estimate"])
        try:
            return attrs.evolve(planned, estimate=self.estimate(suite), saved=os.path.relpath(suite, self.root))
        except CommandRefused as exc:
            return attrs.evolve(planned, errors=[str(exc)])

    def _setup(self, c: Choices) -> _Setup:
        """The choices checked, and the judge and items loaded; a _Problem
        lists what is wrong."""
        from rubriclang.audit.judge import JudgeError, judge_info
        from rubriclang.interp.items import ItemError, read_items
        from rubriclang.items.shape import shape_of

        problems = []
        paths = {}
        for key, given, what in (("judge", c.judge, "a judge"), ("items", c.items, "an items file")):
            if not given:
                problems.append(f"pick {what}")
                continue
            try:
                paths[key] = confine(self.root, given.rstrip("/") or given)
            except OutsideProject as exc:
                problems.append(f"{key}: {exc}")
        try:
            suite = confine(self.root, c.suite)
            if not suite.endswith(".toml"):
                problems.append(f"suite: `{c.suite}` should end in .toml")
            elif self.config.path is not None and suite == os.path.realpath(self.config.path):
                problems.append(f"suite: `{c.suite}` is the project's config; name another file")
        except OutsideProject as exc:
            problems.append(f"suite: {exc}")
        repeats, tolerance = _number(c.repeats, int, problems, "repeats"), _number(c.tolerance, float, problems)
        if repeats is not None and not 1 <= repeats <= 100:
            problems.append("repeats: give a whole number from 1 to 100")
        if problems:
            raise _Problem(problems)
        graph = _load_judge(paths["judge"])
        try:
            items = list(read_items(paths["items"], shape_of(graph)))
            judge = judge_info(graph, items)
        except ItemError as exc:
            raise _Problem([f"{self._shown(exc.where)}: {exc.message}"]) from None
        except JudgeError as exc:
            raise _Problem([str(exc)]) from None
        try:
            profiled = "default" in load_config(paths["judge"]).models
        except ConfigError as exc:
            raise _Problem([f"{exc.where}: {exc.message}"]) from None
        base_url = self._url(c.server, "server")
        roles = {role: self._url(value, role) for role, value in c.roles} or None
        return _Setup(
            suite, paths["judge"], paths["items"], judge, items, base_url, roles, profiled, repeats, tolerance
        )

    def _masked(self, text: str) -> str:
        """`text` as the page shows it: a profile's URL without its
        credentials (the file keeps them, as `rbg audit init` writes them)."""
        for profile in self.config.models.values():
            for url in profile.base_urls:
                text = text.replace(url, shown_url(url))
        return text

    def _url(self, server: str, what: str) -> str | None:
        """The URL of the one-server profile `server` ("": None, as init without --base-url)."""
        if not server:
            return None
        profile = self.config.models.get(server)
        if profile is None or len(profile.base_urls) != 1:
            raise _Problem([f"{what}: no one-server profile `{server}` in the project config"])
        return profile.base_urls[0]

    def _shown(self, where: str) -> str:
        return where.replace(self.root + os.sep, "")


@attrs.frozen
class _Setup:
    """The checked choices: real paths, the loaded judge and items."""

    suite: str
    graph_path: str
    items_path: str
    judge: Any  # audit.judge.JudgeInfo
    items: list
    base_url: str | None
    roles: dict[str, str | None] | None  # a role's own server, where it has one
    profiled: bool
    repeats: int | None
    tolerance: float | None


@attrs.frozen
class Result:
    """What an action gives the page."""

    rows: list[Row] = attrs.field(factory=list)
    text: list[str] = attrs.field(factory=list)  # the suite's lines
    planned: bool = False
    errors: list[str] = attrs.field(factory=list)
    exists: bool = False  # the suite file exists: saving needs the overwrite box
    saved: str = ""
    check: str = ""  # `rbg audit`'s verdict on the saved suite
    check_line: int = 0  # the line it names, 0: none
    estimate: str = ""  # `rbg audit --estimate`'s text for the saved suite
    proposal: tuple[tuple[str, str], ...] = ()  # the planner's, carried to "save the planner's suite"
    previewed: str = ""  # the audit folder the preview made
    variants: list = attrs.field(factory=list)  # (operator, item, [(field, original, perturbed)])
    variant_count: int = 0


class _Problem(Exception):
    def __init__(self, lines: list[str]):
        super().__init__("; ".join(lines))
        self.lines = lines


def _number(text: str, kind, problems: list[str], name: str = "tolerance"):
    """`text` as `kind`, None when blank (the sized default); a bad one is a problem."""
    if not text:
        return None
    try:
        value = kind(text)
    except ValueError:
        problems.append(f"{name}: `{text[:40]}` is not a {'whole ' if kind is int else ''}number")
        return None
    if kind is float and (not math.isfinite(value) or value < 0):
        problems.append(f"{name}: give a number of at least 0")
        return None
    return value


def _load_judge(path: str):
    """The checked judge at `path` (a graph, or a folder of compiled
    graphs); a graph with errors is a _Problem listing its diagnostics."""
    from rubriclang.checker import check_source
    from rubriclang.diagnostics.render import render_text
    from rubriclang.errors import LocatedError, decode_utf8
    from rubriclang.interp.graphset import GraphSetError, load_graph_set
    from rubriclang.safeio import open_regular

    def load(p: str):
        try:
            with open_regular(p) as fh:
                text = decode_utf8(fh.read(), p)
        except OSError as exc:
            raise _Problem([f"cannot read `{p}`: {exc.strerror or exc}"]) from None
        except LocatedError as exc:
            raise _Problem([f"{exc.where}: {exc.message}"]) from None
        result = check_source(text, p)
        if result.graph is None:
            errors = [d for d in result.diagnostics if d.is_error]
            raise _Problem(render_text(errors, {**result.sources, p: text}).splitlines())
        return result.graph

    if not os.path.isdir(path):
        return load(path)
    try:
        return load_graph_set(path, None, load)
    except GraphSetError as exc:
        raise _Problem([str(exc)]) from None


def _checked(path: str) -> dict:
    """`rbg audit`'s own check of the saved suite (`audit.suite.load_suite`)."""
    from rubriclang.audit.suite import SuiteError, load_suite

    try:
        load_suite(path)
    except SuiteError as exc:
        line = exc.where.rpartition(":")[2]
        hint = f" (hint: {exc.hint})" if exc.hint else ""
        return {"check": f"{exc.where}: {exc.message}{hint}", "check_line": int(line) if line.isdigit() else 0}
    return {"check": "`rbg audit` loads it: no error"}
