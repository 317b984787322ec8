"""Properties of the formatter over random valid `.rbg` sources: random
declarations and values, comments in random places, random whitespace between
tokens. Formatting keeps the AST and every comment, and is idempotent."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rubriclang.fmt import format_source
from rubriclang.syntax import parse

# Names and numbers come from small pools (drawing them from regexes is slow);
# long names are there to push declarations past the line width.
names = st.sampled_from(
    [
        "a",
        "b",
        "q",
        "x1",
        "_hidden",
        "Mixed_Case",
        "accuracy",
        "completeness_of_answer",
        "a_rather_long_name_that_forces_lines_to_wrap",
        "nearest",
        "abstain",
    ]
)
numbers = st.sampled_from(["0", "1", "5", "-1", "+2", "0.50", ".5", "5.", "1e-6", "2.5E+3", "400"])
# Two tokens may touch only when one of them is punctuation.
PUNCTUATION = set("{}[]():,=?.")

_ESCAPES = ['\\"', "\\\\", "\\n", "\\t", "\\r", "\\0", "\\u00e9", "\\u2603"]
_TEXT = ["a", "Z", " ", "é", "日本", "🎯", "#", "'", "{", "}", "—", "\u00a0", "\x7f"]
one_line_strings = st.lists(st.sampled_from(_ESCAPES + _TEXT), max_size=8).map(lambda parts: '"' + "".join(parts) + '"')
# Triple-quoted bodies: odd indentation, blank lines, tabs, escapes, unicode.
triple_strings = st.lists(
    st.sampled_from(_ESCAPES + _TEXT + ["\n", "\n    ", "\n  ", "\n\t", "\n\n", "   ", "\t", "Prompt"]),
    max_size=10,
).map(lambda parts: '"""' + "".join(parts) + '"""')
strings = st.one_of(one_line_strings, triple_strings)

COMMENTS = [
    "#",
    "# a comment",
    "#no space",
    "# rbg: ignore[RB304]",
    "# rbg: ignore[RB203, RB304]",
    "# ünïcödé 日本語 🎯",
    '# "quotes" and { braces } = [brackets]',
    "#   indented text",
]
WHITESPACE = [" "] * 8 + ["", "\n", "\n\n\n", "\t", "  \n    ", "\r\n", "\f"]


def _commas(items: list[list[str]], trailing: bool) -> list[str]:
    out: list[str] = []
    for i, item in enumerate(items):
        if i:
            out.append(",")
        out += item
    if items and trailing:
        out.append(",")
    return out


@st.composite
def types(draw) -> list[str]:
    kind = draw(st.sampled_from(["bool", "ordinal", "score", "label"]))
    if kind == "bool":
        tokens = ["bool"]
    elif kind == "label":
        labels = draw(st.lists(names, max_size=4))
        tokens = ["label", "{", *_commas([[n] for n in labels], draw(st.booleans())), "}"]
    else:
        tokens = [kind, "[", draw(numbers), ",", draw(numbers), "]"]
    return tokens + (["?"] if draw(st.booleans()) else [])


keys = st.one_of(strings, numbers, st.sampled_from(["true", "false"]), names).map(lambda k: [k])
scalars = st.one_of(
    strings.map(lambda s: [s]),
    numbers.map(lambda n: [n]),
    st.sampled_from([["true"], ["false"]]),
    names.map(lambda n: [n]),
    types(),
)


@st.composite
def _lists(draw, children) -> list[str]:
    items = draw(st.lists(children, max_size=4))
    return ["[", *_commas(items, draw(st.booleans())), "]"]


@st.composite
def _maps(draw, children) -> list[str]:
    entries = draw(st.lists(st.tuples(keys, children), max_size=4))
    flat = [[*k, ":", *v] for k, v in entries]
    return ["{", *_commas(flat, draw(st.booleans())), "}"]


values = st.recursive(scalars, lambda c: st.one_of(_lists(c), _maps(c)), max_leaves=6)


@st.composite
def blocks(draw) -> list[str]:
    tokens = ["{"]
    for name, value in draw(st.lists(st.tuples(names, values), max_size=4)):
        tokens += [name, "=", *value]
        if draw(st.booleans()):
            tokens.append(",")
    return [*tokens, "}"]


@st.composite
def dotted(draw) -> list[str]:
    parts = draw(st.lists(names, min_size=2, max_size=3))
    return [tok for i, p in enumerate(parts) for tok in ([p] if i == 0 else [".", p])]


@st.composite
def ports(draw) -> list[str]:
    out = []
    for name in draw(st.lists(names, max_size=3)):
        if draw(st.booleans()):
            refs = draw(st.lists(names, max_size=5))
            out.append([name, ":", "[", *_commas([[r] for r in refs], draw(st.booleans())), "]"])
        else:
            out.append([name, ":", draw(names)])
    return ["(", *_commas(out, draw(st.booleans())), ")"]


@st.composite
def field_types(draw) -> list[str]:
    """A declared item field's type: a kind, an element, parameters, `?`
    (any names: the formatter keeps what the checker would refuse)."""
    tokens = [draw(st.one_of(names, st.just("bool")))]
    if draw(st.booleans()):
        tokens += ["[", draw(st.one_of(names, st.just("bool"))), "]"]
    if draw(st.booleans()):
        params = draw(st.lists(st.tuples(names, values), max_size=2))
        tokens += ["(", *_commas([[n, "=", *v] for n, v in params], draw(st.booleans())), ")"]
    return tokens + (["?"] if draw(st.booleans()) else [])


@st.composite
def item_declarations(draw) -> list[str]:
    tokens = ["item", "{"]
    for name in draw(st.lists(names, max_size=4)):
        tokens += [name, ":", *draw(field_types())]
        if draw(st.booleans()):
            tokens.append(",")
    return [*tokens, "}"]


@st.composite
def declarations(draw) -> list[str]:
    kind = draw(st.sampled_from(["rubric", "contract", "criterion", "node", "sink", "readout", "item"]))
    if kind == "item":
        return draw(item_declarations())
    optional_block = draw(st.one_of(st.just([]), blocks()))
    if kind == "rubric":
        return ["rubric", draw(names), *draw(blocks())]
    if kind == "contract":
        return ["contract", *draw(blocks())]
    if kind == "criterion":
        return [
            "criterion",
            draw(names),
            ":",
            *draw(types()),
            "=",
            *draw(dotted()),
            *optional_block,
        ]
    if kind == "node":
        return ["node", draw(names), "=", *draw(dotted()), *draw(ports()), *optional_block]
    if kind == "sink":
        return ["sink", draw(names)]
    return ["readout", draw(names), *draw(blocks())]


def _separator(rng: random.Random) -> str:
    if rng.random() < 0.15:
        before = rng.choice(["", " ", "\n", "\n\n"])
        return before + rng.choice(COMMENTS) + "\n" + rng.choice(["", "  ", "\n", "\t"])
    return rng.choice(WHITESPACE)


@st.composite
def sources(draw) -> str:
    """A valid file: random declarations, joined by random whitespace and comments.

    The separators come from one drawn seed: drawing each one separately
    makes generation many times slower.
    """
    tokens = [tok for decl in draw(st.lists(declarations(), max_size=5)) for tok in decl]
    rng = random.Random(draw(st.integers(0, 2**32)))
    out = [_separator(rng)]
    # Each token with the next (None after the last); no tokens, no pairs.
    for left, right in zip(tokens, [*tokens[1:], None], strict=False):
        out.append(left)
        sep = _separator(rng)
        if not sep and right is not None and left not in PUNCTUATION and right not in PUNCTUATION:
            sep = " "
        out.append(sep)
    return "".join(out)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sources())
def test_formatting_keeps_ast_and_comments_and_is_idempotent(source):
    # One test with every assertion: generating the sources is the slow part.
    parsed = parse(source)
    assert parsed.module is not None, parsed.diagnostics  # the generator makes valid files
    output = format_source(source).output
    assert output is not None

    reparsed = parse(output)
    assert reparsed.module == parsed.module
    assert Counter(c.text for c in reparsed.module.comments) == Counter(c.text for c in parsed.module.comments)
    assert format_source(output).output == output

    if output:
        assert output.endswith("\n") and not output.endswith("\n\n")
    assert all(line == line.rstrip() for line in output.split("\n"))
