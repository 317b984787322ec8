"""Hypothesis strategies shared by the property tests: source text (random and
mutated from the corpus) and random well-typed graphs built from the catalog."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import attrs
from hypothesis import strategies as st

from rubriclang.catalog import JType, load_catalog
from rubriclang.catalog.rules import RuleInput
from rubriclang.catalog.types import fmt_num
from rubriclang.syntax.strings import quote

CORPUS = Path(__file__).parent / "corpus"

# Every corpus file, valid or not, is a seed worth mutating.
SEED_FILES = tuple(sorted([*CORPUS.glob("valid/*.rbg"), *CORPUS.glob("invalid/*/*.rbg")]))
SEEDS = tuple(p.read_text("utf-8") for p in SEED_FILES)

# Tokens of the language and near misses, for insertions.
_TOKENS = (
    "rubric",
    "contract",
    "criterion",
    "node",
    "sink",
    "readout",
    "bool",
    "ordinal",
    "score",
    "label",
    "true",
    "false",
    "pointwise",
    "pairwise",
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    ":",
    "=",
    ",",
    ".",
    "?",
    "#",
    '"',
    '"""',
    "\\",
    "\n",
    " ",
    "0",
    "-1",
    "1e999",
    "2.5",
    "x",
    "reduce.mean",
    "gate.cap",
    "llm.rate",
    "inputs:",
    "value:",
    "when:",
    "@",
    "\t",
    "\r\n",
    "\ufeff",
    "é",
    "\u2028",
)

# A rough lexer, good enough to cut programs into token-sized pieces.
_PIECES = re.compile(r'"""(?:[^"\\]|\\.|"(?!""))*"""|"(?:[^"\\\n]|\\.)*"|#[^\n]*|\w+|\s+|.', re.S)


def _pieces(text: str) -> list[str]:
    return _PIECES.findall(text)


@st.composite
def mutated_programs(draw) -> str:
    """A corpus program with a few characters or tokens deleted, inserted,
    duplicated or swapped."""
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(("del_char", "ins_char", "swap_char", "del_tok", "ins_tok", "dup_tok", "swap_tok")))
        if op.endswith("char"):
            i = draw(st.integers(0, max(len(text) - 1, 0)))
            if op == "del_char":
                text = text[:i] + text[i + 1 :]
            elif op == "ins_char":
                text = text[:i] + draw(st.characters(codec="utf-8")) + text[i:]
            elif len(text) > 1:
                j = draw(st.integers(0, len(text) - 1))
                chars = list(text)
                chars[i], chars[j] = chars[j], chars[i]
                text = "".join(chars)
            continue
        toks = _pieces(text)
        if not toks:
            text = draw(st.sampled_from(_TOKENS))
            continue
        i = draw(st.integers(0, len(toks) - 1))
        if op == "del_tok":
            del toks[i]
        elif op == "ins_tok":
            toks.insert(i, draw(st.sampled_from(_TOKENS)))
        elif op == "dup_tok":
            toks.insert(i, toks[i])
        else:
            j = draw(st.integers(0, len(toks) - 1))
            toks[i], toks[j] = toks[j], toks[i]
        text = "".join(toks)
    return text


# Text built from the language's own tokens reaches deeper into the grammar than
# arbitrary characters do.
token_soup = st.lists(st.sampled_from(_TOKENS), max_size=40).map(" ".join)


# -- random well-typed graphs ------------------------------------------------------
#
# A graph is drawn declaration by declaration: criteria from procedures that can
# produce their type, then operators whose ports are filled from earlier nodes
# the ports accept, with parameters valid for those inputs. Each node's type is
# computed with the catalog's own output rules, so the sink's expected type and
# a contract it fits are known before the checker sees the text.

CATALOG = load_catalog()
_REGEXES = ("^[A-Z]", "\\d+", "(?i)sorry", "[a-z]{3,}$", "foo|bar", "\\[\\d+\\]")
_STRINGS = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=12)


@attrs.frozen
class Graph:
    """A generated program, the name of its sink and the sink's expected type."""

    text: str
    sink: str
    sink_type: JType
    names: tuple[str, ...]


def _points(t: JType) -> list[Any]:
    points = t.point_values()
    assert points is not None, t  # a type with a finite set of values
    return list(points)


def _key(p) -> str:
    if isinstance(p, bool):
        return "true" if p else "false"
    return fmt_num(p) if not isinstance(p, str) else p


@st.composite
def judgment_types(draw, kinds=("bool", "ordinal", "score", "label")) -> JType:
    """A declarable judgment type (lo < hi, two labels or more) of one of `kinds`."""
    kind = draw(st.sampled_from(kinds))
    if kind == "bool":
        return JType("bool")
    if kind == "label":
        n = draw(st.integers(2, 4))
        return JType("label", labels=tuple(draw(st.permutations([f"l{i}" for i in range(n)]))))
    lo = draw(st.integers(-5, 5))
    hi = lo + draw(st.integers(1, 6))
    if kind == "score" and draw(st.booleans()):
        return JType("score", lo + 0.5, hi + 0.25)
    return JType(kind, lo, hi)


def _generic_value(draw, spec) -> str:
    """Text of a valid value for a parameter the criterion's type does not constrain."""
    t = spec.type
    if t == "string":
        return quote(draw(_STRINGS))
    if t in ("integer", "number"):
        lo = int(spec.min) if spec.min is not None else -100
        x = draw(st.integers(lo, lo + 500))
        return fmt_num(x if t == "integer" or draw(st.booleans()) else x + 0.5)
    if t == "boolean":
        return draw(st.sampled_from(("true", "false")))
    if t == "choice":
        return draw(st.sampled_from(spec.choices))
    if t == "list<string>":
        return "[" + ", ".join(quote(x) for x in draw(st.lists(_STRINGS, min_size=1, max_size=3))) + "]"
    if t == "json":
        return draw(
            st.sampled_from(('{ "type": "object" }', '{ "type": "array", "items": [1, 2.5, true, "x"] }', "[]"))
        )
    raise AssertionError(f"no generator for parameter type {t} ({spec.name})")


def _criterion_params(draw, proc: str, t: JType) -> list[str]:
    spec_by_name = {p.name: p for p in CATALOG.procedure_params(CATALOG.procedures[proc])}
    params = []
    for name, spec in spec_by_name.items():
        if name == "on_error":
            if t.optional:
                params.append("on_error = abstain")
            continue
        if name == "anchors":
            if draw(st.booleans()):
                keys = (
                    sorted({t.lo, t.hi, *draw(st.lists(st.sampled_from(_points(t)), max_size=2))})
                    if t.kind == "ordinal"
                    else [t.lo, t.hi]
                )
                params.append("anchors = { " + ", ".join(f"{fmt_num(k)}: {quote(draw(_STRINGS))}" for k in keys) + " }")
            continue
        if name == "descriptions":
            labels = draw(st.lists(st.sampled_from(t.labels), unique=True))
            params.append("descriptions = { " + ", ".join(f"{lab}: {quote(draw(_STRINGS))}" for lab in labels) + " }")
            continue
        if name == "pattern":
            params.append(f"pattern = {quote(draw(st.sampled_from(_REGEXES)))}")
            continue
        if name in ("over", "under"):
            continue  # below: a bool `rule.length` takes exactly one of them
        if name == "question":
            params.append(f"question = {quote(draw(_STRINGS))}")  # needed unless a `prompt` is given
            continue
        if name in ("prompt", "model"):
            continue  # a template file or a model profile lives outside the graph
        if name == "answer":
            if t.numeric and draw(st.booleans()):
                params.append('answer = pattern("\\\\[\\\\[(\\\\d+)\\\\]\\\\]")')
            elif t.kind == "bool" and draw(st.booleans()):
                params.append('answer = pattern("verdict: (\\\\w+)", { yes: true, no: false })')
            continue
        if name == "template":
            if t.as_optional(False) == JType("ordinal", 1, 5) and draw(st.booleans()):
                params.append(f"template = {draw(st.sampled_from(spec.choices))}")
            continue  # `template = prometheus` rates on `ordinal[1, 5]` only
        if spec.required or draw(st.booleans()):
            params.append(f"{name} = {_generic_value(draw, spec)}")
    if proc == "rule.length" and t.kind == "bool":
        params.append(f"{draw(st.sampled_from(('over', 'under')))} = {draw(st.integers(0, 1000))}")
    return params


_STRUCTURE_RULES = ("rule.json_schema", "rule.tool_calls_match", "rule.citations_valid", "rule.count")


@st.composite
def _criterion(draw, name: str) -> tuple[str, JType]:
    # `llm.compare` judges pairs only, and these graphs have a pointwise readout;
    # the rules over structure read fields an `item { ... }` declares, and these
    # graphs declare none (tests/test_structure_procedures.py checks them).
    proc = draw(st.sampled_from(sorted(set(CATALOG.procedures) - {"llm.compare", *_STRUCTURE_RULES})))
    kind = draw(st.sampled_from(CATALOG.procedures[proc].produces))
    t = draw(judgment_types(kinds=(kind,)))
    if draw(st.integers(0, 4)) == 0:
        t = t.as_optional()
    params = _criterion_params(draw, proc, t)
    block = " { " + ", ".join(params) + " }" if params or draw(st.booleans()) else ""
    return f"criterion {name}: {t} = {proc}{block}", t


def _operator_params(draw, op: str, ins: dict[str, tuple[JType, ...]]) -> dict[str, tuple[str, object]]:
    """Parameter name -> (its text, its Python value), valid for the inputs."""
    v: Any = ins.get("value", (None,))[0]  # the value port's type, for the operators that have one
    if op == "transform.rescale":
        to = draw(judgment_types(kinds=("ordinal", "score")))
        return {"to": (str(to), to)}
    if op == "transform.threshold":
        at = draw(st.sampled_from((v.lo, v.hi, (v.lo + v.hi) / 2)))
        out = {"at": (fmt_num(at), at)}
        if draw(st.booleans()):
            inclusive = draw(st.booleans())
            out["inclusive"] = ("true" if inclusive else "false", inclusive)
        return out
    if op == "transform.map":
        table = {p: draw(st.sampled_from((0, 1, 2.5, -3, 10))) for p in _points(v)}
        text = "{ " + ", ".join(f"{_key(k)}: {fmt_num(x)}" for k, x in table.items()) + " }"
        return {"values": (text, table)}
    if op == "transform.clamp":
        lo = draw(st.sampled_from((v.lo - 1, v.lo, math.floor(v.lo))))
        hi = max(draw(st.sampled_from((v.hi, v.hi + 2, math.ceil(v.hi)))), lo + 1)
        return {"lo": (fmt_num(lo), lo), "hi": (fmt_num(hi), hi)}
    if op == "reduce.weighted_mean":
        n = len(ins["inputs"])
        weights = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n).filter(any))
        return {"weights": ("[" + ", ".join(map(str, weights)) + "]", weights)}
    if op in ("gate.cap", "gate.floor"):
        x = draw(st.integers(-10, 10))
        return {"max" if op == "gate.cap" else "min": (str(x), x)}
    if op == "gate.veto":
        to = draw(st.sampled_from((v.lo, v.hi)))
        return {"to": (fmt_num(to), to)}
    if op == "transform.default":
        d = draw(st.sampled_from(tuple(_points(v)) if v.kind != "score" else (v.lo, v.hi)))
        text = ("true" if d else "false") if isinstance(d, bool) else f'"{d}"' if isinstance(d, str) else fmt_num(d)
        return {"value": (text, d)}
    return {}


@attrs.frozen
class Application:
    """An operator applied to named nodes: what the checker sees and the type
    the catalog's rule gives it."""

    text: str
    operator: str
    slots: dict[str, list[str]]
    params: dict[str, object]
    type: JType


def _usable(op: str, port, t: JType) -> bool:
    if not t.accepts_kind(port.accepts) or (t.optional and not port.absent):
        return False
    # Rescaling a constant would divide by zero, which the checker rejects;
    # a default for a value never absent is rejected too.
    return not (op == "transform.rescale" and t.lo == t.hi) and not (op == "transform.default" and not t.optional)


@st.composite
def _operator(draw, name: str, nodes: dict[str, JType]):
    """An operator node over earlier nodes, or None when no operator fits them."""
    fitting = []
    for op in CATALOG.operators.values():
        choices = {port.name: [n for n, t in nodes.items() if _usable(op.name, port, t)] for port in op.ports}
        if all(choices.values()):
            fitting.append((op, choices))
    if not fitting:
        return None
    op, choices = draw(st.sampled_from(fitting))
    slots = {}
    for port in op.ports:
        if port.variadic:
            slots[port.name] = draw(
                st.lists(st.sampled_from(choices[port.name]), min_size=port.min, max_size=port.max or 4)
            )
        else:
            slots[port.name] = [draw(st.sampled_from(choices[port.name]))]
    if op.name == "reduce.majority":  # its inputs are of one kind
        slots["inputs"] = [n for n in slots["inputs"] if nodes[n].kind == nodes[slots["inputs"][0]].kind]
    ins = {p: tuple(nodes[n] for n in refs) for p, refs in slots.items()}
    params = _operator_params(draw, op.name, ins)
    out, problems = op.rule(RuleInput(ins, {k: v for k, (_, v) in params.items()}))
    assert not problems, (op.name, ins, params, problems)
    ports = ", ".join(
        f"{p}: [{', '.join(refs)}]" if op.port(p).variadic else f"{p}: {refs[0]}" for p, refs in slots.items()
    )
    block = " { " + ", ".join(f"{k} = {text}" for k, (text, _) in params.items()) + " }" if params else ""
    values = {k: v for k, (_, v) in params.items()}
    return Application(f"node {name} = {op.name}({ports}){block}", op.name, slots, values, out)


def _scale_for(draw, t: JType) -> JType:
    """A contract scale the sink's type fits."""
    t = t.as_optional(False)
    if t.kind == "bool":
        return t
    if t.kind == "label":
        extra = draw(st.lists(st.sampled_from(("x1", "x2")), unique=True))
        return JType("label", labels=tuple(draw(st.permutations([*t.labels, *extra]))))
    lo = math.floor(t.lo) - draw(st.integers(0, 2))
    hi = max(math.ceil(t.hi) + draw(st.integers(0, 2)), lo + 1)  # a constant sink still needs a scale
    kind = "ordinal" if t.kind == "ordinal" and draw(st.booleans()) else "score"
    return JType(kind, lo, hi)


def _readouts(draw, scale: JType) -> list[str]:
    out = []
    if scale.numeric:
        if draw(st.booleans()):
            kind = draw(st.sampled_from(("ordinal", "score")))
            output = (
                f"{kind}[{fmt_num(scale.lo - draw(st.integers(0, 1)))}, {fmt_num(scale.hi + draw(st.integers(0, 1)))}]"
            )
            out.append(
                f"readout pointwise {{ output = {output}, quantize = {draw(st.sampled_from(('floor', 'ceil')))} }}"
            )
        if not out or draw(st.booleans()):
            epsilon = (scale.hi - scale.lo) * draw(st.sampled_from((0.1, 0.25, 0.5)))
            out.append(
                f"readout pairwise {{ epsilon = {fmt_num(epsilon)}, resolve = "
                f"{draw(st.sampled_from(('tie', 'first', 'second')))} }}"
            )
    elif scale.kind == "bool":
        out.append("readout pointwise { output = bool }")
    else:
        out.append(f"readout pointwise {{ output = label{{{', '.join(draw(st.permutations(scale.labels)))}}} }}")
    return out


@st.composite
def well_typed_graphs(draw) -> Graph:
    """A random program that must check with no errors."""
    nodes: dict[str, JType] = {}
    decls = []
    for i in range(draw(st.integers(1, 5))):
        text, t = draw(_criterion(f"c{i}"))
        nodes[f"c{i}"] = t
        decls.append(text)
    for i in range(draw(st.integers(0, 8))):
        made = draw(_operator(f"op{i}", nodes))
        if made is None:
            break
        nodes[f"op{i}"] = made.type
        decls.append(made.text)
    sink = draw(st.sampled_from(sorted(nodes)[-3:]))
    scale = _scale_for(draw, nodes[sink])
    head = [f"rubric generated {{ version = {draw(st.integers(0, 9))} }}", f"contract {{ scale = {scale} }}"]
    tail = [f"sink {sink}", *_readouts(draw, scale)]
    return Graph("\n".join(head + decls + tail) + "\n", sink, nodes[sink], tuple(nodes))


@st.composite
def applications(draw) -> tuple[dict[str, JType], Application]:
    """Some typed nodes and an operator applied to them (there is always one that fits)."""
    pool = {}
    for i in range(draw(st.integers(1, 4))):
        t = draw(judgment_types())
        pool[f"p{i}"] = t.as_optional() if draw(st.integers(0, 3)) == 0 else t
    pool["flag"] = JType("bool")  # so that every gate and bool reducer can apply
    pool["num"] = JType("ordinal", 1, 5)
    return pool, draw(_operator("out", pool))


def values_of(t: JType) -> st.SearchStrategy:
    """Values a judgment of type `t` can take (None for an absent one)."""
    present: st.SearchStrategy[Any]
    if t.kind == "bool":
        present = st.booleans()
    elif t.kind == "label":
        present = st.sampled_from(t.labels)
    elif t.kind == "ordinal":
        present = st.integers(int(t.lo), int(t.hi))
    else:
        present = st.one_of(st.sampled_from((t.lo, t.hi)), st.floats(t.lo, t.hi))
    return st.one_of(st.none(), present) if t.optional else present


# -- random grammatical programs ---------------------------------------------------
#
# Programs that parse but are otherwise arbitrary: names, procedures, operators,
# ports, parameters and values drawn from the catalog's vocabulary and near misses,
# so the checker meets every kind of mistake, and combinations of them.

_NAMES = ("a", "b", "c", "q", "safe", "Bad_Name", "_x")
_PARAM_NAMES = tuple(
    sorted(
        {p.name for op in CATALOG.operators.values() for p in op.params}
        | {p.name for proc in CATALOG.procedures.values() for p in proc.params}
        | {p.name for b in CATALOG.blocks.values() for p in b.params}
        | {p.name for p in CATALOG.common_params}
        | {"bogus"}
    )
)
_IDENTS = tuple(
    sorted({c for b in CATALOG.blocks.values() for p in b.params for c in p.choices} | {"abstain", "fail", "l0", "zz"})
)
_NUMBERS = st.sampled_from(("0", "1", "-1", "2.5", "5", "1e999", "-1e999", "1" + "0" * 400, "0.1", "3.0", "+2", ".5"))


def _type_texts() -> st.SearchStrategy[str]:
    bound = st.one_of(_NUMBERS, st.integers(-3, 8).map(str))
    interval = st.tuples(st.sampled_from(("ordinal", "score")), bound, bound).map(lambda t: f"{t[0]}[{t[1]}, {t[2]}]")
    label = st.lists(st.sampled_from(("l0", "l1", "l2")), max_size=4).map(lambda ls: "label{" + ", ".join(ls) + "}")
    base = st.one_of(st.just("bool"), interval, label)
    return st.tuples(base, st.sampled_from(("", "?"))).map("".join)


def _values() -> st.SearchStrategy[str]:
    scalar = st.one_of(
        _STRINGS.map(quote), _NUMBERS, st.sampled_from(("true", "false")), st.sampled_from(_IDENTS), _type_texts()
    )
    key = st.one_of(_STRINGS.map(quote), _NUMBERS, st.sampled_from(("true", "false", "l0", "l1", "formal")))

    def containers(inner):
        lists = st.lists(inner, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]")
        maps = st.lists(st.tuples(key, inner), max_size=4).map(
            lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}"
        )
        return st.one_of(lists, maps)

    return st.recursive(scalar, containers, max_leaves=8)


_BLOCKS = st.lists(st.tuples(st.sampled_from(_PARAM_NAMES), _values()), max_size=4).map(
    lambda ps: "{ " + ", ".join(f"{k} = {v}" for k, v in ps) + " }"
)
_PORT = st.tuples(
    st.sampled_from(("inputs", "value", "when", "bogus")),
    st.one_of(
        st.sampled_from(_NAMES), st.lists(st.sampled_from(_NAMES), max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]")
    ),
).map(lambda p: f"{p[0]}: {p[1]}")
_DECLS = st.one_of(
    st.tuples(st.sampled_from(_NAMES), _BLOCKS).map(lambda t: f"rubric {t[0]} {t[1]}"),
    _BLOCKS.map(lambda b: f"contract {b}"),
    st.tuples(
        st.sampled_from(_NAMES),
        _type_texts(),
        st.sampled_from((*sorted(CATALOG.procedures), "llm.ask")),
        st.one_of(st.just(""), _BLOCKS),
    ).map(lambda t: f"criterion {t[0]}: {t[1]} = {t[2]} {t[3]}"),
    st.tuples(
        st.sampled_from(_NAMES),
        st.sampled_from((*sorted(CATALOG.operators), "mean")),
        st.lists(_PORT, max_size=3),
        st.one_of(st.just(""), _BLOCKS),
    ).map(lambda t: f"node {t[0]} = {t[1]}({', '.join(t[2])}) {t[3]}"),
    st.sampled_from(_NAMES).map(lambda n: f"sink {n}"),
    st.tuples(st.sampled_from(("pointwise", "pairwise", "listwise")), _BLOCKS).map(lambda t: f"readout {t[0]} {t[1]}"),
    st.lists(
        st.tuples(
            st.sampled_from((*_NAMES, "input", "documents")),
            st.sampled_from(("text", "conversation", "documents", "json", "list[text]", "bool", "nope[text]")),
            st.one_of(st.just(""), _BLOCKS.map(lambda b: "(" + b[2:-2] + ")")),
            st.sampled_from(("", "?")),
        ).map(lambda f: f"{f[0]}: {f[1]}{f[2]}{f[3]}"),
        max_size=4,
    ).map(lambda fields: "item { " + ", ".join(fields) + " }"),
)

grammatical_programs = st.lists(_DECLS, max_size=10).map("\n".join)
