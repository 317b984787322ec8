"""The groups pass: `group NAME = [a, b, ...]`, LLM criteria that one call
per candidate answers together.

A group's members must be criteria that read one JSON answer from the
built-in pointwise prompt (`llm.rate`, `llm.check`, `llm.choose`), judged on
the whole item, and must see the same material through the same judge: the
same model profile, the same `with_reference` and the same declared item
fields. Each member still yields its own declared type. A criterion is in at
most one group, and a group has at least two members. A member that failed
its own check is left out silently (no cascades).
"""

from __future__ import annotations

from typing import Any

import attrs

from rubriclang.catalog import Catalog
from rubriclang.checker.declarations import Declarations
from rubriclang.checker.graph import Criterion, GroupRef
from rubriclang.diagnostics import Diagnostic
from rubriclang.diagnostics.codes import make
from rubriclang.diagnostics.span import Span
from rubriclang.syntax import ast

# What every member of a group must share with the group's first member, in words.
_MATERIAL: tuple[tuple[str, str], ...] = (
    ("model", "model profile"),
    ("with_reference", "`with_reference`"),
)


def check_groups(
    decls: Declarations,
    criteria: dict[str, Criterion],
    broken: set[str],
    catalog: Catalog,
    diags: list[Diagnostic],
) -> dict[str, Criterion]:
    """`criteria` with each grouped member's `group` set; every problem is reported."""
    seen_groups: dict[str, ast.GroupDecl] = {}
    placed: dict[str, ast.GroupDecl] = {}  # criterion -> the group it is in
    out = dict(criteria)
    for g in decls.groups:
        name = g.name.value
        clash = seen_groups.get(name)
        if clash is None and name in decls.decls:
            clash_span = decls.decls[name].name.span
            diags.append(_duplicate(g, f"`{name}` is already declared", clash_span))
        elif clash is not None:
            diags.append(_duplicate(g, f"a group `{name}` is already declared", clash.name.span))
        seen_groups.setdefault(name, g)
        members_ok = _members_ok(g, decls, criteria, broken, placed, catalog, diags)
        distinct = len({m.value for m in g.members})
        if distinct < 2:
            diags.append(
                make(
                    "RB703",
                    g.span,
                    f"the group `{name}` has {distinct} member{'' if distinct == 1 else 's'}; "
                    "a group answers two or more criteria in one call",
                    ("list at least two LLM criteria, or remove the group (a criterion alone makes its own call)",),
                )
            )
            continue
        if not members_ok:
            continue
        ref = GroupRef(name, tuple(m.value for m in g.members))
        for m in g.members:
            out[m.value] = attrs.evolve(criteria[m.value], group=ref)
    return out


def _duplicate(g: ast.GroupDecl, message: str, first: Span) -> Diagnostic:
    return make("RB102", g.name.span, message, (f"first declared at {first}", "give the group a name of its own"))


def _members_ok(
    g: ast.GroupDecl,
    decls: Declarations,
    criteria: dict[str, Criterion],
    broken: set[str],
    placed: dict[str, ast.GroupDecl],
    catalog: Catalog,
    diags: list[Diagnostic],
) -> bool:
    """Whether every member of the group can be grouped, each checked: not
    when one cannot (reported), or failed its own check (already reported)."""
    ok = True
    first: tuple[ast.Name, Criterion] | None = None
    listed: set[str] = set()
    for m in g.members:
        name = m.value
        d = decls.decls.get(name)
        if d is None:
            diags.append(
                make("RB101", m.span, f"unknown criterion `{name}` in group `{g.name.value}`", decls.name_hint(name))
            )
            ok = False
            continue
        other = placed.setdefault(name, g)
        if other is not g or name in listed:
            where = "listed twice in this group" if other is g else f"already in group `{other.name.value}`"
            diags.append(
                make(
                    "RB704",
                    m.span,
                    f"`{name}` is {where}" + ("" if other is g else f" (at {other.name.span})"),
                    ("a criterion is answered in one group at most: list it once",),
                )
            )
            ok = False
            continue
        listed.add(name)
        if isinstance(d, ast.NodeDecl):
            diags.append(_ungroupable(m, f"`{name}` is a node, not a criterion", "list only LLM criteria"))
            ok = False
            continue
        if name in broken or name not in criteria:
            ok = False
            continue
        c = criteria[name]
        reason = _why_not(c, catalog)
        if reason is not None:
            diags.append(_ungroupable(m, f"`{name}` cannot be answered in a group: {reason[0]}", reason[1]))
            ok = False
            continue
        if first is None:
            first = (m, c)
            continue
        differs = _material(first[1], c)
        if differs is not None:
            diags.append(
                make(
                    "RB702",
                    m.span,
                    f"`{name}` and `{first[1].name}` (the group's first member) differ in {differs}",
                    (
                        "one call shows every member the same material through the same judge: "
                        "make them equal, or judge them in separate groups",
                    ),
                )
            )
            ok = False
    return ok


def _ungroupable(m: ast.Name, message: str, fix: str) -> Diagnostic:
    return make("RB701", m.span, message, (fix,))


def _why_not(c: Criterion, catalog: Catalog) -> tuple[str, str] | None:
    """Why criterion `c` cannot be a group's member, and what would fix it; None when it can."""
    hooks = catalog.hooks(c.procedure)
    if hooks.backend != "llm":
        return f"`{c.procedure}` asks no language model", "group only `llm.rate`, `llm.check` and `llm.choose` criteria"
    if "side_by_side" in hooks.traits or hooks.prompt is None:
        return (
            f"`{c.procedure}` has a prompt of its own",
            "group only `llm.rate`, `llm.check` and `llm.choose` criteria",
        )
    if c.each is not None:
        return "it is judged per element (`each`)", "judge it on its own, outside the group"
    if c.prompt is not None:
        return "it has its own `prompt` template", "drop `prompt` to use the group's prompt, or judge it on its own"
    if c.params.get("answer", "json") != "json":
        return "it reads its answer with a pattern", "drop `answer` (the group reads one JSON reply)"
    if (c.params.get("template") or "default") != "default":
        return f"it uses the `{c.params['template']}` prompt", "drop `template`, or judge it on its own"
    return None


def _material(first: Criterion, c: Criterion) -> str | None:
    """What `c` shows or is judged by differently from `first`, in words; None when nothing."""
    for key, words in _MATERIAL:
        if first.params.get(key) != c.params.get(key):
            return f"{words} ({_show(c.params.get(key))} here, {_show(first.params.get(key))} there)"
    if first.item_fields != c.item_fields:
        return "the declared item fields they show"
    return None


def _show(v: Any) -> str:
    if v is None:
        return "the run's default"
    if isinstance(v, bool):
        return "true" if v else "false"
    return f"`{v}`"
