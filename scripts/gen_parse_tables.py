"""Write rubriclang/syntax/lalr_tables.py: the LALR tables of grammar/rubric.lark, from Lark.

    .venv/bin/python scripts/gen_parse_tables.py          # rewrite the module
    .venv/bin/python scripts/gen_parse_tables.py --check  # exit 1 if it is stale

The tables are what Lark's LALR parser with its basic lexer works from, taken
from the very parser `rubriclang.syntax.larkparse` builds: the lexer's
terminals in the order Lark tries them, the keywords Lark retypes from a
name, the ignored terminals, the parse states with their actions, and each
rule with the child handling Lark's parse-tree builder gives it (`_rule`
children inlined, a `?rule`'s single child passed through, `->` aliases,
`None` for an absent `[x]`, every token kept). States are numbered
breadth-first from the start state, symbols in sorted order, so the module
is the same whatever order Lark's analysis happened to find them in.
tests/test_parse_tables.py checks the committed module equals this output.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from collections import deque
from functools import partial
from pathlib import Path
from typing import Any

from lark.lexer import BasicLexer, TerminalDef
from lark.parse_tree_builder import ChildFilterLALR, ChildFilterLALR_NoPlaceholders, ExpandSingleChild
from lark.parsers.lalr_analysis import Shift

from rubriclang.packaged import grammar
from rubriclang.syntax.larkparse import lark_parser

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "rubriclang" / "syntax" / "lalr_tables.py"
LINE_LENGTH = 120


def _lit(value: Any) -> str:
    """A Python literal on one line, as ruff formats it: double quotes where that needs no escapes."""
    if isinstance(value, str):
        text = repr(str(value))  # Lark's names are tokens: a plain str's repr
        if text.startswith("'") and '"' not in value:
            text = '"' + text[1:-1].replace("\\'", "'") + '"'
        return text
    if isinstance(value, tuple):
        inner = ", ".join(_lit(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_lit(k)}: {_lit(v)}" for k, v in value.items()) + "}"
    if isinstance(value, bool | int) or value is None:
        return repr(value)
    raise TypeError(value)


def _lines(value: Any, indent: str = "", prefix: str = "", suffix: str = "", split: bool = False) -> list[str]:
    """`value` as ruff lays it out: on one line where it fits (and `split` is
    off), else one item a line, each with a trailing comma."""
    one = f"{indent}{prefix}{_lit(value)}{suffix}"
    if not isinstance(value, tuple | dict) or (len(one) <= LINE_LENGTH and not split):
        return [one]
    inner = indent + "    "
    if isinstance(value, dict):
        opening, closing = "{", "}"
        items = [line for k, v in value.items() for line in _lines(v, inner, f"{_lit(k)}: ", ",")]
    else:
        opening, closing = "(", ")"
        items = [line for v in value for line in _lines(v, inner, "", ",")]
    return [f"{indent}{prefix}{opening}", *items, f"{indent}{closing}{suffix}"]


def _keywords(terminals: list[TerminalDef], flags: int) -> dict[str, dict[str, str]]:
    """As Lark's `_create_unless`: a string terminal that a regex terminal of the
    same priority matches whole (a keyword the name pattern matches) is lexed as
    that terminal and retyped by value, and leaves the lexer's regex."""
    keywords: dict[str, dict[str, str]] = {}
    strings = [t for t in terminals if t.pattern.type == "str"]
    for r in terminals:
        if r.pattern.type != "re":
            continue
        for k in strings:
            if k.priority != r.priority:
                continue
            value = k.pattern.value
            m = re.match(r.pattern.to_regexp(), value, flags)
            if m is not None and m.group(0) == value:
                if k.pattern.flags:  # a lookup by value would not do a flagged match
                    raise SystemExit(f"keyword {k.name} has flags {k.pattern.flags}: not supported")
                keywords.setdefault(r.name, {})[value] = k.name
    return keywords


def _child_handling(rule: Any, chain: list[Any]) -> tuple[bool, tuple[tuple[int, bool, int], ...] | None, int]:
    """(single child passed through, children kept as (index, inlined, Nones before), Nones after)
    from the wrappers Lark's parse-tree builder puts around the rule's callback."""
    single = False
    include: tuple[tuple[int, bool, int], ...] | None = None
    after = 0
    for wrapper in chain:
        if wrapper is ExpandSingleChild:
            single = True
        elif isinstance(wrapper, partial) and wrapper.func is ChildFilterLALR:
            kept, after = wrapper.args
            include = tuple((i, bool(x), n) for i, x, n in kept)
        elif isinstance(wrapper, partial) and wrapper.func is ChildFilterLALR_NoPlaceholders:
            (kept,) = wrapper.args
            include = tuple((i, bool(x), 0) for i, x in kept)
        else:
            raise SystemExit(f"rule {rule}: Lark wraps its callback in {wrapper!r}, which the tables cannot express")
    if single:
        # Lark passes a single child through and builds a tree of several; the
        # tables hold no trees, so the rule must always have exactly one.
        kept_children = include if include is not None else tuple((i, False, 0) for i in range(len(rule.expansion)))
        if len(kept_children) != 1 or kept_children[0][1] or kept_children[0][2] or after:
            raise SystemExit(f"`?` rule {rule} does not always have exactly one child")
    return single, include, after


def render() -> str:
    """The text of lalr_tables.py for the grammar as it is now."""
    lark = lark_parser("basic", None)
    lexer = lark.parser.lexer
    assert isinstance(lexer, BasicLexer)
    flags = lexer.g_regex_flags
    terminals = list(lexer.terminals)  # in the order Lark tries them
    keywords = _keywords(terminals, flags)
    retyped = {k for by_value in keywords.values() for k in by_value.values()}
    collected = set(lexer.user_callbacks)
    if not collected <= lexer.ignore_types:
        raise SystemExit(f"lexer callbacks on kept terminals {collected - lexer.ignore_types}: not supported")
    lexed = [t for t in terminals if t.name not in retyped]
    skipped = [t for t in lexed if t.name in lexer.ignore_types and t.name not in collected]

    table = lark.parser.parser.parser.parse_table
    states, start, end = table.states, table.start_states["start"], table.end_states["start"]
    builders = {rule: chain for rule, chain in lark._parse_tree_builder.rule_builders}
    rules = sorted(builders, key=lambda r: (r.origin.name, tuple(s.name for s in r.expansion)))
    rule_index = {r: i for i, r in enumerate(rules)}
    # States in breadth-first order from the start state.
    order, queue = {start: 0}, deque([start])
    while queue:
        acts = states[queue.popleft()]
        for symbol in sorted(acts):
            action, arg = acts[symbol]
            if action is Shift and arg not in order:
                order[arg] = len(order)
                queue.append(arg)
    if len(order) != len(states):
        raise SystemExit(f"{len(states) - len(order)} parse states are not reachable from the start state")

    terminal_table = tuple(
        (str(t.name), t.pattern.to_regexp()) for t in lexed if t.name not in lexer.ignore_types or t.name in collected
    )
    keyword_table = {str(n): {v: str(keywords[n][v]) for v in sorted(keywords[n])} for n in sorted(keywords)}
    rule_table = []
    for rule in rules:
        single, include, after = _child_handling(rule, builders[rule])
        callback = rule.alias or rule.options.template_source or rule.origin.name
        rule_table.append((str(rule.origin.name), len(rule.expansion), str(callback), single, include, after))
    action_table = []
    for state in sorted(order, key=order.__getitem__):
        actions = {}
        for symbol in sorted(states[state]):
            action, arg = states[state][symbol]
            if action is Shift and symbol == "$END":
                raise SystemExit("the tables shift `$END`: Lark's parser would fail there")
            actions[str(symbol)] = order[arg] if action is Shift else ~rule_index[arg]
        action_table.append(actions)

    def frozen(names: set[str]) -> str:
        return "frozenset({" + ", ".join(_lit(n) for n in sorted(names)) + "})"

    lines = [
        '"""The LALR tables of grammar/rubric.lark, for `lalr`. Generated by',
        "scripts/gen_parse_tables.py from Lark's parser of the grammar: do not edit (run the",
        'script; tests/test_parse_tables.py fails while this module is stale)."""',
        "",
        f"# grammar/rubric.lark sha256 {hashlib.sha256(grammar().encode('utf-8')).hexdigest()}",
        "",
        "# The lexer: the terminals it matches, as (name, regex) in the order Lark tries them;",
        "# the ignored ones skipped before each token; the ignored ones kept as comments;",
        "# those whose text may hold a newline; names Lark retypes by value (keywords).",
        f"REGEX_FLAGS = {flags}",
        *_lines(terminal_table, prefix="TERMINALS: tuple[tuple[str, str], ...] = ", split=True),
        *_lines(tuple(t.pattern.to_regexp() for t in skipped), prefix="SKIPPED: tuple[str, ...] = "),
        f"COLLECTED = {frozen(collected)}",
        f"NEWLINES = {frozen(set(lexer.newline_types))}",
        *_lines(keyword_table, prefix="KEYWORDS: dict[str, dict[str, str]] = ", split=True),
        "",
        "# The parser: each rule as (what it reduces to, how many symbols it pops, the",
        "# builder's method Lark calls (its alias or its name), its single child passed",
        "# through (a `?rule`), the children kept as (index, inlined `_rule`, Nones before",
        "# it) or None for all, Nones after them); each state's actions: a symbol's next",
        "# state (a shift or a goto), or ~rule (a reduction).",
        "START_STATE = 0",
        f"END_STATE = {order[end]}",
        *_lines(
            tuple(rule_table),
            prefix="RULES: tuple[tuple[str, int, str, bool, tuple[tuple[int, bool, int], ...] | None, int], ...] = ",
            split=True,
        ),
        *_lines(tuple(action_table), prefix="ACTIONS: tuple[dict[str, int], ...] = ", split=True),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the committed module is not what this writes")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        current = TARGET.read_text("utf-8") if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET.relative_to(ROOT)} is stale: run scripts/gen_parse_tables.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, "utf-8")
    print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
