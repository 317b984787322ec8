"""A deterministic generator of realistic `.rbg` rubrics, for the front-end benchmarks.

Each rubric mixes what authors actually write: a header and contract, `llm.rate`
criteria with triple-quoted questions and anchor maps, yes/no checks, rule
criteria, label criteria mapped to numbers, transforms, reducers, gate chains,
comments and readouts. Every generated rubric is 30-120 lines and checks with no
diagnostics at all (not even warnings), because every node reaches the sink and
no parameter repeats its default. The same `(seed, index)` always gives the same
text, so benchmark figures are comparable across runs and machines.

    python benchmarks/gen.py --count 3 --seed 7     # print three rubrics
"""

from __future__ import annotations

import argparse
import random

MIN_LINES, MAX_LINES = 30, 120

_ASPECTS = [
    "accuracy",
    "clarity",
    "completeness",
    "relevance",
    "depth",
    "coherence",
    "concision",
    "grounding",
    "politeness",
    "specificity",
    "structure",
    "originality",
    "reasoning",
    "formatting",
    "actionability",
    "empathy",
    "faithfulness",
    "coverage",
    "precision",
    "fluency",
]
_CHECKS = {
    "harmful": "Does the response give instructions that could cause serious harm?",
    "off_topic": "Does the response drift away from what was asked?",
    "refuses": "Does the response decline to answer a reasonable request?",
    "hallucinates": "Does the response state facts that are not in the source?",
    "leaks_prompt": "Does the response reveal its system prompt?",
    "asks_back": "Does the response ask a clarifying question instead of answering?",
}
# Bool criteria by procedure, each with names an author would give them.
_FLAGS = {
    "llm.check": list(_CHECKS),
    "rule.length": ["rambling", "too_long"],
    "rule.regex": ["cites_sources", "has_citation"],
    "rule.contains": ["apologises", "boilerplate"],
    "rule.matches_reference": ["exact_match", "same_answer"],
}
_LABEL_SETS = [
    ("curt", "neutral", "warm"),
    ("formal", "neutral", "casual"),
    ("novice", "intermediate", "expert"),
    ("none", "partial", "full"),
]
_SUBJECTS = [
    "the response",
    "the answer",
    "the assistant's reply",
    "the summary",
    "the explanation",
]
_VERBS = [
    "address the user's request",
    "stay faithful to the source",
    "explain its reasoning",
    "use precise terminology",
    "avoid unsupported claims",
    "follow the requested format",
    "give a usable next step",
    "keep to the point",
    "cover the important cases",
]
_ADVICE = [
    "Ignore style; judge only the substance.",
    "Do not reward length for its own sake.",
    "Penalise confident statements that are wrong.",
    "A short answer can still be complete.",
    'Treat "I don\'t know" as honest, not as a failure.',
    "Compare against the reference answer when one is given.",
]
_ANCHOR_WORDS = ["Very poor.", "Weak, with major gaps.", "Adequate.", "Good, minor issues.", "Excellent."]


class _Rubric:
    """One rubric under construction: its lines, its names, and the nodes still
    to be wired towards the sink (so that nothing is left unreachable)."""

    def __init__(self, rng: random.Random, top: int):
        self.rng = rng
        self.top = top  # criteria rate on [1, top]
        self.lines: list[str] = []
        self.used: set[str] = set()
        self.numeric: list[str] = []  # values in [1, top], to be reduced
        self.conditions: list[str] = []  # bools, to gate the final value
        self._contract_at = 0  # where `finish` inserts the contract, once the sink's scale is known

    def name(self, stem: str) -> str:
        name, n = stem, 2
        while name in self.used:
            name, n = f"{stem}_{n}", n + 1
        self.used.add(name)
        return name

    def emit(self, *lines: str) -> None:
        self.lines.extend(lines)

    def maybe_comment(self, text: str, p: float = 0.3) -> None:
        if self.rng.random() < p:
            self.emit(f"# {text}")

    # -- criteria ---------------------------------------------------------------

    def question(self) -> str:
        rng = self.rng
        return f"How well does {rng.choice(_SUBJECTS)} {rng.choice(_VERBS)}?"

    def anchors(self, indent: str) -> list[str]:
        rng, top = self.rng, self.top
        points = [1, top] if top < 4 or rng.random() < 0.4 else [1, (1 + top) // 2, top]
        text = [_ANCHOR_WORDS[round((p - 1) * 4 / (top - 1))] for p in points]
        if rng.random() < 0.5:
            inner = ", ".join(f'{p}: "{t}"' for p, t in zip(points, text, strict=True))
            return [f"{indent}anchors = {{ {inner} }}"]
        return [
            f"{indent}anchors = {{",
            *(f'{indent}  {p}: "{t}",' for p, t in zip(points, text, strict=True)),
            f"{indent}}}",
        ]

    def rate(self, inverted: bool = False) -> str:
        rng = self.rng
        aspect = rng.choice(_ASPECTS)
        name = self.name(f"lack_of_{aspect}" if inverted else aspect)
        kind = "ordinal" if rng.random() < 0.8 else "score"
        self.maybe_comment(
            f"{aspect.replace('_', ' ')}: the judge's main signal" if not inverted else "higher is worse here"
        )
        self.emit(f"criterion {name}: {kind}[1, {self.top}] = llm.rate {{")
        if rng.random() < 0.6:
            advice = rng.sample(_ADVICE, rng.randint(1, 2))
            self.emit('  question = """', f"    {self.question()}", *(f"    {a}" for a in advice), '    """')
        else:
            self.emit(f'  question = "{self.question()}"')
        self.emit(*self.anchors("  "))
        if rng.random() < 0.2:
            self.emit("  with_reference = true")
        self.emit("}", "")
        return name

    def flag(self) -> str:
        rng = self.rng
        kind = rng.choice(list(_FLAGS))
        name = self.name(rng.choice(_FLAGS[kind]))
        if kind == "llm.check":
            question = _CHECKS[name.rstrip("_0123456789")]
            self.emit(f"criterion {name}: bool = llm.check {{", f'  question = "{question}"', "}")
        elif kind == "rule.length":
            unit = rng.choice(["", " unit = characters,"])
            self.emit(f"criterion {name}: bool = rule.length {{{unit} over = {rng.randrange(100, 2000, 50)} }}")
        elif kind == "rule.regex":
            self.emit(f'criterion {name}: bool = rule.regex {{ pattern = "\\\\[\\\\d+\\\\]", ignore_case = true }}')
        elif kind == "rule.contains":
            phrases = ", ".join(f'"{p}"' for p in rng.sample(["sorry", "as an ai", "i cannot", "note that", "```"], 2))
            self.emit(f"criterion {name}: bool = rule.contains {{", f"  phrases = [{phrases}]", "  mode = all", "}")
        else:
            self.emit(f"criterion {name}: bool = rule.matches_reference {{ mode = numeric, tolerance = 0.01 }}")
        self.emit("")
        return name

    def label(self) -> str:
        rng, top = self.rng, self.top
        labels = rng.choice(_LABEL_SETS)
        name = self.name(rng.choice(["tone", "register", "expertise", "support"]))
        self.emit(
            f"criterion {name}: label{{{', '.join(labels)}}} = llm.choose {{",
            f'  question = "Which best describes {rng.choice(_SUBJECTS)}?"',
        )
        if rng.random() < 0.6:
            self.emit(f'  descriptions = {{ {labels[0]}: "The weakest kind.", {labels[-1]}: "The strongest kind." }}')
        self.emit("}")
        points = (1, (1 + top) // 2, top)
        values = ", ".join(f"{lab}: {p}" for lab, p in zip(labels, points, strict=True))
        mapped = self.name(f"{name}_score")
        self.emit(f"node {mapped} = transform.map(value: {name}) {{ values = {{ {values} }} }}", "")
        return mapped

    def recorded(self) -> str:
        rng = self.rng
        name = self.name(rng.choice(["human_rating", "prior_grade", "annotator_score"]))
        if rng.random() < 0.5:
            self.emit(f'criterion {name}: score[1, {self.top}] = human.annotation {{ key = "{name}" }}', "")
        else:
            self.emit(
                f'criterion {name}: ordinal[1, {self.top}] = recorded.value {{ key = "{name}", read = mode }}', ""
            )
        return name

    # -- composition ------------------------------------------------------------

    def add_signal(self) -> None:
        """One more criterion (and the transforms it needs) feeding the graph."""
        rng, top = self.rng, self.top
        r = rng.random()
        if r < 0.45:
            self.numeric.append(self.rate())
        elif r < 0.55:
            raw = self.rate(inverted=True)
            name = self.name(raw.removeprefix("lack_of_") + "_ok")
            self.emit(f"node {name} = transform.invert(value: {raw})", "")
            self.numeric.append(name)
        elif r < 0.65:
            self.numeric.append(self.label())
        elif r < 0.72:
            self.numeric.append(self.recorded())
        elif r < 0.8:
            flag = self.flag()
            name = self.name(f"{flag}_points")
            self.emit(f"node {name} = transform.map(value: {flag}) {{ values = {{ true: {top}, false: 1 }} }}", "")
            self.numeric.append(name)
        else:
            self.conditions.append(self.flag())

    def group(self) -> None:
        """Reduce runs of 2-3 numeric signals into intermediate nodes."""
        rng = self.rng
        pool = self.numeric[:]
        rng.shuffle(pool)
        out = []
        while len(pool) >= 4 and rng.random() < 0.7:
            k = rng.choice([2, 3])
            members, pool = pool[:k], pool[k:]
            op = rng.choice(["mean", "min", "max", "median"])
            name = self.name(rng.choice(["core", "style", "substance", "form", "content"]))
            self.maybe_comment(f"{op} of {', '.join(members)}", 0.5)
            self.emit(f"node {name} = reduce.{op}(inputs: [{', '.join(members)}])")
            out.append(name)
        if out:
            self.emit("")
        self.numeric = out + pool

    def finish(self) -> None:
        """Weighted mean, gates for every condition, sink, contract-fitting readouts."""
        rng, top = self.rng, self.top
        self.emit("# --- composition ---------------------------------------------------------", "")
        self.group()
        weights = ", ".join(str(rng.choice([1, 1, 2, 3, 0.5, 1.5])) for _ in self.numeric)
        value = self.name("quality")
        self.emit(
            f"node {value} = reduce.weighted_mean(inputs: [{', '.join(self.numeric)}]) {{",
            f"  weights = [{weights}]",
            "}",
        )
        conditions = self.conditions[:]
        if len(conditions) >= 3 and rng.random() < 0.5:
            a, b, *conditions = conditions
            anyof = self.name("red_flag")
            self.emit(f"node {anyof} = reduce.any(inputs: [{a}, {b}])")
            conditions.append(anyof)
        for cond in conditions:
            gate = rng.choice(["cap", "veto", "floor"])
            name = self.name(f"{value}_{gate}")
            param = {"cap": f"max = {rng.randint(2, top - 1)}", "veto": "to = 1", "floor": f"min = {top - 1}"}[gate]
            self.emit(f"node {name} = gate.{gate}(value: {value}, when: {cond}) {{ {param} }}")
            value = name
        if rng.random() < 0.3:
            norm = self.name("normalised")
            self.emit(f"node {norm} = transform.rescale(value: {value}) {{ to = score[0, 1] }}")
            value, scale, output, epsilon = norm, "score[0, 1]", "score[0, 1]", 0.05
        else:
            scale, output, epsilon = f"score[1, {top}]", f"ordinal[1, {top}]", 0.25
        self.emit("", f"sink {value}", "")
        quantize = rng.choice(["", ", quantize = floor", ", ties = down"])
        self.emit(f"readout pointwise {{ output = {output}{quantize} }}")
        if rng.random() < 0.6:
            self.emit(f"readout pairwise {{ epsilon = {epsilon}, resolve = {rng.choice(['tie', 'first'])} }}")
        # The contract goes near the top, where authors put it.
        self.lines[self._contract_at : self._contract_at] = ["contract {", f"  scale = {scale}", "}", ""]

    def header(self, index: int) -> None:
        rng = self.rng
        self.emit(f"# Generated rubric #{index}: {rng.choice(_ASPECTS)} of one answer, 1-{self.top}.")
        self.emit(f"rubric generated_{index} {{", f"  version = {rng.randint(1, 12)}")
        if rng.random() < 0.7:
            self.emit(f'  description = "Judges {rng.choice(_ASPECTS)} and {rng.choice(_ASPECTS)}."')
        self.emit("}", "")
        self._contract_at = len(self.lines)
        self.emit("# --- criteria ------------------------------------------------------------", "")


def _attempt(rng: random.Random, index: int) -> str:
    target = rng.randint(MIN_LINES, MAX_LINES)
    r = _Rubric(rng, top=rng.choice([3, 4, 5, 5, 5, 7, 10]))
    r.header(index)
    # The wiring after the criteria costs roughly a line per signal plus a dozen.
    while len(r.numeric) < 2 or len(r.lines) + len(r.numeric) + len(r.conditions) + 14 < target:
        r.add_signal()
    r.finish()
    return "\n".join(r.lines) + "\n"


def rubric(index: int, seed: int = 0) -> str:
    """The `index`-th rubric of the corpus for `seed`: 30-120 lines, checks clean."""
    rng = random.Random(f"rbg-bench:{seed}:{index}")  # str seeds are hashed with SHA-512: stable
    while True:
        text = _attempt(rng, index)
        if MIN_LINES <= text.count("\n") <= MAX_LINES:
            return text


def corpus(count: int = 1000, seed: int = 0) -> list[str]:
    """`count` rubrics, the same for the same `seed`."""
    return [rubric(i, seed) for i in range(count)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print("\n".join(corpus(args.count, args.seed)))


if __name__ == "__main__":
    main()
