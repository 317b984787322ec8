"""The audit's perturbations, read from `perturbations.toml` (one place for
the CLI listing, the suite checks, the generators, the validator and the
report). Users call them "operators" (`rbg audit catalog`, a suite's
`operators`, the report); in the code a perturbation is a `Perturbation`, so
that "operator" means only a graph's operator and "catalog" only
`rubriclang.catalog`.
"""

from __future__ import annotations

import functools
import importlib.resources
import tomllib
from typing import Any

import attrs

SURFACES = ("judge_prompt", "rubric", "input", "output", "paired")
RELATIONS = ("invariant", "directional")
GENERATORS = ("rule", "llm")
# What a custom perturbation of each surface rewrites, and what the generator returns.
CUSTOM_SURFACES = {
    "input": (("input",), "input"),
    "output": (("response",), "response"),
    "paired": (("input", "response"), "input+response"),
}


@attrs.frozen
class Perturbation:
    """One perturbation (see perturbations.toml for the fields' meaning)."""

    name: str
    surface: str
    relation: str
    generator: str
    summary: str
    changes: tuple[str, ...]
    needs: tuple[str, ...]
    unless: tuple[str, ...]
    preserves: str
    breaks: str
    validation: str
    target: str | None = None  # llm: what the generator rewrites
    instruction: str | None = None  # llm: what the generator is told
    options: dict[str, Any] = attrs.field(factory=dict)
    custom: bool = False
    # The kinds of declared item field it perturbs (documents, conversation,
    # json); empty for the operators on text and on the judge.
    acts_on: tuple[str, ...] = ()

    @property
    def judge_side(self) -> bool:
        """Whether it perturbs the judge (a patched graph) rather than the items."""
        return self.surface in ("judge_prompt", "rubric")

    def with_options(self, options: dict[str, Any]) -> Perturbation:
        """The perturbation with a suite's options. A `fields` option moves its
        surface to what it then rewrites: the input, the output, or both."""
        op = attrs.evolve(self, options={**self.options, **options})
        fields = tuple(op.options.get("fields", ()))
        if fields:
            op = attrs.evolve(
                op, changes=fields, surface={("input",): "input", ("response",): "output"}.get(fields, "paired")
            )
        return op

    def to_json(self) -> dict:
        d = attrs.asdict(self)
        d["changes"], d["needs"], d["unless"] = list(self.changes), list(self.needs), list(self.unless)
        # Only where set, so that suites sealed before it existed keep their hash.
        d["acts_on"] = list(self.acts_on)
        if not self.acts_on:
            del d["acts_on"]
        return d

    @classmethod
    def from_json(cls, d: dict) -> Perturbation:
        lists = ("changes", "needs", "unless", "acts_on")
        return cls(**{**d, **{k: tuple(d[k]) for k in lists if k in d}})


def _clean(text: str | None) -> str | None:
    return " ".join(text.split()) if text else text


def _perturbation(name: str, d: dict) -> Perturbation:
    return Perturbation(
        name=name,
        surface=d["surface"],
        relation=d["relation"],
        generator=d["generator"],
        summary=d["summary"],
        changes=tuple(d.get("changes", ())),
        needs=tuple(d.get("needs", ())),
        unless=tuple(d.get("unless", ())),
        preserves=d.get("preserves", ""),
        breaks=d.get("breaks", ""),
        validation=d["validation"],
        target=d.get("target"),
        instruction=_clean(d.get("instruction")),
        options=dict(d.get("options", {})),
        acts_on=tuple(d.get("acts_on", ())),
    )


@functools.cache
def load_perturbations() -> dict[str, Perturbation]:
    """Every built-in perturbation by name, in file order."""
    text = importlib.resources.files("rubriclang.audit").joinpath("perturbations.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)["perturbations"]
    return {name: _perturbation(name, d) for name, d in data.items()}


def custom_perturbation(name: str, surface: str, relation: str, instruction: str, preserve: str = "") -> Perturbation:
    """A perturbation declared in a suite's `[[custom]]` table; its variants are
    written by the generator and checked by the validator."""
    changes, target = CUSTOM_SURFACES[surface]
    directional = relation == "directional"
    return Perturbation(
        name=name,
        surface=surface,
        relation=relation,
        generator="llm",
        summary=_clean(instruction) or "",
        changes=changes,
        needs=("pointwise", "ordered_output") if directional else (),
        unless=(),
        preserves=preserve or ("Everything the instruction does not ask to change." if not directional else ""),
        breaks="What the instruction asks to break." if directional else "",
        validation="LLM validator: the variant follows the instruction and keeps what it must.",
        target=target,
        instruction=_clean(instruction),
        custom=True,
    )
