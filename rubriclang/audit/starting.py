"""The suites of `rbg audit init` and `rbg audit plan`, as functions that
the commands and `rbg view`'s workbench both call, so the two write the same
bytes for the same choices (and, for plan, the same model answer)."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from rubriclang.audit.judge import JudgeInfo
from rubriclang.audit.perturbations import Perturbation
from rubriclang.audit.planner import candidates
from rubriclang.audit.suite_writer import describe, render_suite

EMBEDDED_WHY = (
    "written by a generator model: the embedded 135M model writes poor variants; give `--base-url` for the full set"
)
SWITCHED_OFF = "switched off when the suite was configured (it applies: list it in `operators` to run it)"
MADE_BY = "rbg audit init"


@attrs.frozen
class Start:
    """A starting suite's text and what it chose."""

    text: str
    chosen: tuple[Perturbation, ...]
    skipped: tuple[tuple[str, str], ...]  # (operator, why it is not in the suite)
    embedded: bool  # sized for the embedded model


def starting_suite(
    suite_path: str,
    graph_path: str,
    items_path: str,
    judge: JudgeInfo,
    base_url: str | None,
    profiled: bool,
    off: frozenset[str] = frozenset(),
    repeats: int | None = None,
    tolerance: float | None = None,
    roles: Mapping[str, str | None] | None = None,
) -> Start:
    """Every operator that applies to `judge`, less those switched `off`;
    sized for the embedded model (rule operators only, 2 repeats of an LLM
    judge) unless a `base_url` is given or the project has a `default`
    profile (`profiled`). `repeats`/`tolerance` replace the sized defaults
    when given; `roles` (judge, generator, validator -> URL or None) give a
    role a server of its own, the generator's deciding the operators and the
    judge's the repeats. Raises `suite_writer.SuiteTextError` for a path
    TOML cannot hold."""
    ok, skipped = candidates(judge)
    url = {role: (roles or {}).get(role, base_url) for role in ("judge", "generator")}
    embedded = not url["judge"] and not profiled
    if not url["generator"] and not profiled:
        skipped = [*skipped, *((name, EMBEDDED_WHY) for name, op in ok.items() if op.generator == "llm")]
        ok = {name: op for name, op in ok.items() if op.generator != "llm"}
    skipped += [(name, SWITCHED_OFF) for name in ok if name in off]
    chosen = [op for name, op in ok.items() if name not in off]
    text = render_suite(
        suite_path,
        graph_path,
        items_path,
        judge,
        [(op, describe(op)) for op in chosen],
        skipped,
        MADE_BY,
        base_url,
        embedded,
        repeats=repeats,
        tolerance=tolerance,
        roles=roles,
    )
    return Start(text, tuple(chosen), tuple(skipped), embedded)


def planned_suite(
    suite_path: str,
    graph_path: str,
    items_path: str,
    judge: JudgeInfo,
    chosen: list[tuple[Perturbation, str]],
    skipped: list[tuple[str, str]],
) -> str:
    """`rbg audit plan`'s suite: the operators the planner `chosen`, each
    under its rationale, and the inapplicable ones (`skipped`) with why."""
    return render_suite(suite_path, graph_path, items_path, judge, chosen, skipped, "rbg audit plan")
