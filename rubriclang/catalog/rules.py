"""Output-type rules: what an operator's rule sees and returns.

Each operator's registry entry (`rubriclang.catalog.entries.OperatorImpl`)
holds its rule, a function from the input types and the parameters
(`RuleInput`) to the inferred output type (with its interval) and the
problems it found, as `(code, message, param)` where `param` names the
parameter at fault, if any. The standard operators' rules are in
`stdlib_ops/output_rules.py`; a plugin's are its own.
"""

from __future__ import annotations

from collections.abc import Callable

from rubriclang.catalog.types import JType
from rubriclang.records import frozen


@frozen
class RuleInput:
    """What a rule sees: the input types by port (in slot order) and the params."""

    ports: dict[str, tuple[JType, ...]]
    params: dict[str, object]

    def one(self, port: str) -> JType:
        return self.ports[port][0]

    def many(self, port: str) -> tuple[JType, ...]:
        return self.ports[port]

    # Typed views of the params, which the checker has already converted and
    # checked against the operator's ParamSpecs (so a mismatch is a catalog bug).
    def number(self, name: str) -> Number:
        x = self.params[name]
        assert isinstance(x, (int, float)), (name, x)
        return x

    def numbers(self, name: str) -> list[Number]:
        xs = self.params[name]
        assert isinstance(xs, list), (name, xs)
        return xs

    def jtype(self, name: str) -> JType:
        t = self.params[name]
        assert isinstance(t, JType), (name, t)
        return t

    def table(self, name: str) -> dict[object, object]:
        d = self.params[name]
        assert isinstance(d, dict), (name, d)
        return d


Number = float | int
Problem = tuple[str, str, "str | None"]
RuleResult = tuple[JType, list[Problem]]
Rule = Callable[[RuleInput], RuleResult]
