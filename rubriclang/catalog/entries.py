"""The behaviour a catalog package registers beside its TOML data.

A catalog package (the standard one, `stdlib_ops`, or a plugin's)
holds `operators.toml` and/or `procedures.toml` and, in its module, one entry
per name it declares: `OPERATORS` (operator name -> `OperatorImpl`: its
function, output-type rule and plan template) and `PROCEDURES` (procedure
name -> `ProcedureImpl`). The loader joins each
entry to its TOML spec, so everything about one operator or procedure is
found in one place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rubriclang.catalog.rules import Rule
from rubriclang.catalog.types import JType
from rubriclang.records import frozen

Ports = dict[str, Any]
# An operator's reference semantics: the node's inputs by port (`value` ports
# hold one value, variadic ports a list, in slot order), its parameters, and the
# types of its single-node ports; returns the output value (`None`: absent).
OpFn = Callable[[Ports, dict[str, Any], dict[str, JType]], Any]


@frozen
class PlanSite:
    """One application of an operator, as the plan compiler sees it."""

    x: tuple[str, ...]  # the inputs' variable names, in slot order
    types: tuple[JType, ...]  # their types, in the same order
    params: dict[str, Any]
    k: str  # the prefix every constant of this application must carry


# A plan template: the Python expression computing the operator from `site.x`,
# and the constants it names (each `site.k + ...`), or None to call the
# operator's function instead. It must compute exactly what the function does.
PlanTemplate = Callable[[PlanSite], "tuple[str, dict[str, Any]] | None"]


@frozen
class OperatorImpl:
    """An operator's behaviour: its function, its output-type rule and,
    optionally, a plan template.

    `traits`: facts other tools read: `selects` (the result is the value of
    one of its inputs, as `reduce.min` and `reduce.max` are: the viewer's
    decided path follows the inputs equal to it), `cuts` (a verdict from a
    score: its `value` port compared with its `at` parameter, at or above when
    `inclusive`, as `transform.threshold` does: the audit's report follows the
    score under such a sink), `leaves_scale` (the output leaves the inputs'
    scale as inputs are added, as `reduce.sum` does: the checker suggests a
    mean when such a sink does not fit the contract).
    """

    function: OpFn
    rule: Rule
    plan: PlanTemplate | None = None
    traits: frozenset[str] = frozenset()


@frozen
class ProcedureImpl:
    """A procedure's behaviour beyond its parameter specs; every hook is optional.

    `backend`: the standard backend that runs it (`llm` or `local`; None for a
    plugin's run by the plugin's own backend). `judge(request, backend)`: a
    `local` procedure's judging function (every local one has one, and only
    they): the `JudgmentRequest` and the `LocalBackend` running it (its
    `annotations` and `recorded` value tables) in, a `Judgment` out;
    deterministic, a failure a `Judgment.failed`. `check(c)`: extra checks on a
    criterion, given the checker's `CriterionCheck` context. `prompt`: a prompt
    procedure's built-in template stem and the key of the answer in its JSON
    reply. `answer_keyword`: a regular expression for the words that introduce
    the final answer in a free-text reply. `traits`: facts other tools read:
    `rates` (grades on a numeric scale its anchors define), `side_by_side`
    (sees both candidates in one prompt, so it judges pairs only),
    `reads_field` (reads the text its `field` parameter names),
    `reads_reference` (compares the response with the reference),
    `measures_length`, `checks_format`. `field_params`: the parameters whose
    value names an item field the criterion reads (a structure rule's
    `field`, `documents`, `expected`): the item pass counts each read
    (RB602, RB604) and leaves the field's kind to the procedure's `check`,
    which sees the declared shape as `c.prompts.shape`; empty for a text
    rule, whose `field` must be `text` or `json`.
    """

    backend: str | None = None
    judge: Callable[[Any, Any], Any] | None = None
    check: Callable[[Any], None] | None = None
    prompt: tuple[str, str] | None = None
    answer_keyword: str | None = None
    traits: frozenset[str] = frozenset()
    field_params: tuple[str, ...] = ()

    def fields_named(self, params: dict[str, Any]) -> tuple[str, ...]:
        """The item fields a criterion's parameters name: the values of its
        `field_params`, or a text rule's `field` (none for other procedures)."""
        return tuple(params[p] for p in self.field_params or ("field",) if params.get(p) is not None)
