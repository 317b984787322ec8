"""The structure rules: JSON and JSON Schema validity of a field or of its
tool calls' arguments, tool calls against a reference, citations of the
item's documents, and counts of turns and tool calls.

Each rule names the item fields it reads in parameters (`field`, and
`documents` or `expected`); its `check` holds those fields to the kinds it
reads (`check_fields`) against the declared item shape, and its judge reads
them as the item reader kept them. Judges are deterministic and never raise
for an item's content: malformed input is a `Judgment.failed` in words that
name where it is. JSON and the JSON Schema library are imported by the
judges, so `rbg check` pays for neither.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rubriclang.interp.backend import Judgment, JudgmentRequest
from stdlib_ops import judges

if TYPE_CHECKING:
    from rubriclang.interp.local import LocalBackend

# What the item reader gives a rubric without a declared shape: text.
_UNDECLARED = ("input", "response", "reference")


class Malformed(ValueError):
    """Input a structure rule cannot read: where it is, and what is wrong."""


class NotJSON(Malformed):
    """The judged value is not JSON (or its arguments not a JSON object):
    for a JSON rule, the answer `false`, not a failure."""


# -- the checks ---------------------------------------------------------------


def check_fields(c: Any, kinds: dict[str, tuple[str, ...]]) -> None:
    """Hold each field-naming parameter's field to the kinds the rule reads
    (RB603). With a declared shape a field it does not declare is the item
    pass's RB602; without one the item has only its text `input`,
    `response` and `reference`, and reading anything else is RB602 here."""
    shape = c.prompts.shape
    procedure = c.decl.procedure.text
    for param, accepted in kinds.items():
        name = c.values.get(param)
        if param in c.failed or name is None or (shape is not None and name in c.prompts.broken_fields):
            continue
        wanted = " or ".join(f"`{k}`" for k in accepted)
        if shape is None:
            if name not in _UNDECLARED:
                c.err(
                    "RB602",
                    c.param_span(param),
                    f"`{procedure}` reads the item's `{name}`, but the rubric declares no item shape",
                    (f"declare it: `item {{ {name}: {accepted[0]} }}`",),
                )
                continue
            if "text" not in accepted:
                c.err(
                    "RB603",
                    c.param_span(param),
                    f"`{procedure}` reads `{name}` as {wanted}, but without an `item` declaration it is text",
                    (f"declare it: `item {{ {name}: {accepted[0]} }}`",),
                )
            continue
        spec = shape.get(name)
        if spec is not None and spec.kind not in accepted:
            c.err(
                "RB603",
                c.param_span(param),
                f"`{procedure}` reads `{name}` as {wanted}, but it is declared `{spec.type_text}`",
                (f"here `{param}` names a field of type {wanted}",),
            )


def inline_schema(c: Any) -> None:
    """A `schema` given as a path: the file's JSON replaces the path in the
    criterion's parameters, so its content is in the criterion's hash and
    the judge reads no file. Whether it is a valid JSON Schema is the
    judge's to say: the schema library stays off the check path."""
    given = next((p.value for p in c.decl.block.params if p.name.value == "schema"), None)
    if "schema" in c.failed or given is None:
        return
    from rubriclang.syntax import ast

    if isinstance(given, ast.String):
        resolved = c.prompts.resolve(given, "schema", "RB203")
        if resolved is None:
            return
        import json

        try:
            c.values["schema"] = json.loads(resolved[1])
        except ValueError as exc:
            c.err("RB203", given.span, f"the schema `{given.value}` is not JSON: {exc}", ("a schema file holds JSON",))
            return
    if not isinstance(c.values["schema"], (dict, bool)):
        c.err(
            "RB203",
            given.span,
            "a JSON Schema is an object (or `true`/`false`)",
            ('write a map, e.g. `{ "type": "object" }`, or a file\'s path',),
        )


# -- reading fields -----------------------------------------------------------


def field_value(request: JudgmentRequest, name: str) -> tuple[str, Any]:
    """(kind, value) of the item field `name` for the judged candidate: a
    declared structured field as read, else the text (None: absent)."""
    spec = next((f for f in request.criterion.item_fields if f.name == name), None)
    item = request.item
    kind = spec.kind if spec is not None else "text"
    if spec is not None and spec.structured:
        # An item read without the rubric's shape has none of its structured
        # fields: say so rather than judge values nobody validated.
        if name not in item.fields and (name == "response" or not spec.optional):
            raise Malformed(f"the item's `{name}` was not read as the rubric declares it (`{spec.type_text}`)")
        if name == "response":
            return kind, item.fields["response"].get(request.candidate)
        return kind, item.fields.get(name)
    if name == "response":
        return kind, request.response
    if name == "input":
        return kind, item.input
    if name == "reference":
        return kind, item.reference
    if name == "rubric":
        return kind, item.rubric
    return kind, item.fields.get(name)


def _loads(text: str, where: str) -> Any:
    import json

    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotJSON(f"`{where}` is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    except RecursionError:
        raise NotJSON(f"`{where}` is JSON nested too deeply to read") from None


def _type_name(value: Any) -> str:
    from rubriclang.items.validate import json_type  # it imports json: not on the check path

    return json_type(value)


class Call:
    """One tool call as a rule reads it: the function's name, its arguments
    as given (an object, or JSON text), where the call is in the item and
    where its arguments are."""

    __slots__ = ("arguments", "arguments_at", "name", "where")

    def __init__(self, name: str, arguments: Any, where: str, arguments_at: str):
        self.name, self.arguments, self.where, self.arguments_at = name, arguments, where, arguments_at


def tool_calls(kind: str, value: Any, where: str) -> list[Call]:
    """The tool calls of a field, in order: a conversation's assistant
    calls; JSON (or text holding JSON) that is an array of calls
    (`{"name", "arguments"}`, OpenAI's `{"function": {"name", "arguments"}}`,
    tau-bench's `{"name", "kwargs"}`) or an assistant message with
    `tool_calls`. Arguments are kept as given (a JSON string or an object)."""
    if kind == "text":
        value = _loads(value, where)
    if kind == "conversation":
        calls = []
        for i, message in enumerate(value):
            for j, call in enumerate(message.get("tool_calls") or ()):
                fn = call["function"]  # the item reader checked the message's form
                at = f"{where}[{i}].tool_calls[{j}]"
                calls.append(Call(fn["name"], fn["arguments"], at, f"{at}.function.arguments"))
        return calls
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        value, where = value["tool_calls"], f"{where}.tool_calls"
    if not isinstance(value, list):
        raise Malformed(f"`{where}` is {_type_name(value)}, not an array of tool calls")
    return [read_call(call, f"{where}[{i}]") for i, call in enumerate(value)]


def read_call(call: Any, where: str) -> Call:
    inner = where
    if isinstance(call, dict) and isinstance(call.get("function"), dict):
        call, inner = call["function"], f"{where}.function"
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise Malformed(f'`{inner}` is not a tool call `{{"name", "arguments"}}`')
    key = "arguments" if "arguments" in call else "kwargs" if "kwargs" in call else None
    if key is None:
        raise Malformed(f"`{inner}` has no `arguments`")
    return Call(call["name"], call[key], where, f"{inner}.{key}")


def decoded_arguments(call: Call) -> dict[str, Any]:
    """A call's arguments as an object (a JSON string decoded)."""
    args = _loads(call.arguments, call.arguments_at) if isinstance(call.arguments, str) else call.arguments
    if not isinstance(args, dict):
        raise NotJSON(f"`{call.arguments_at}` holds {_type_name(args)}, not a JSON object")
    return args


# -- JSON Schema --------------------------------------------------------------

# Whether each criterion's schema is a valid JSON Schema (None) or why not,
# found once per schema object; `compiled_schema` keeps its validator.
_SCHEMA_PROBLEMS: dict[int, tuple[Any, str | None]] = {}


def schema_violation(schema: Any, value: Any, where: str) -> str | None:
    """Why `value` does not satisfy `schema`, naming the JSON path of the
    first violation (in path order), or None. An invalid schema is `Malformed`."""
    from rubriclang.items.validate import compiled_schema, schema_problem  # jsonschema, only when judging

    checked = _SCHEMA_PROBLEMS.get(id(schema))
    if checked is None or checked[0] is not schema:
        checked = _SCHEMA_PROBLEMS[id(schema)] = (schema, schema_problem(schema))
    if checked[1] is not None:
        raise Malformed(f"the criterion's `schema` is not a valid JSON Schema: {checked[1]}")
    try:
        errors = sorted(compiled_schema(schema).iter_errors(value), key=_in_path_order)
    except RecursionError:
        raise Malformed(f"`{where}` is nested too deeply to validate") from None
    if not errors:
        return None
    first = errors[0]
    path = where + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first.absolute_path)
    return f"`{path}`: {first.message[:200]}"


def _in_path_order(error: Any) -> tuple[list[tuple[int, int, str]], str]:
    # Array indices in numeric order (10 after 2), before object keys; the message breaks ties.
    return [(0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in error.absolute_path], error.message


def _validated(values: list[tuple[Any, str]], schema: Any) -> Judgment:
    for value, where in values:
        problem = schema_violation(schema, value, where)
        if problem is not None:
            return Judgment(False, raw=problem)
    return Judgment(True)


# -- the judges ---------------------------------------------------------------


def _judging(fn: Callable[[JudgmentRequest], Judgment]) -> Callable[[JudgmentRequest, LocalBackend], Judgment]:
    """A judge whose `Malformed` input is a failed judgment, in its words."""

    def judge(request: JudgmentRequest, backend: LocalBackend) -> Judgment:
        try:
            return fn(request)
        except Malformed as exc:
            return Judgment.failed(str(exc))
        except RecursionError:  # comparing or walking values nested deeper than Python recurses
            return Judgment.failed(f"the item's values are nested too deeply for `{request.criterion.procedure}`")

    judge.__name__, judge.__doc__ = fn.__name__, fn.__doc__
    return judge


def _present(request: JudgmentRequest, param: str) -> tuple[str, Any, str]:
    name = request.criterion.params[param]
    kind, value = field_value(request, name)
    if value is None:
        raise Malformed(f"the item has no `{name}`")
    return kind, value, name


def _parsed(kind: str, value: Any, name: str) -> tuple[str, Any]:
    """A text field's JSON (a `Malformed` when it is none), other kinds as read."""
    return ("json", _loads(value, name)) if kind == "text" else (kind, value)


@_judging
def json_arguments(request: JudgmentRequest) -> Judgment:
    """`rule.json_valid { arguments = true }`: every tool call's arguments
    are a JSON object (valid against `schema` when given)."""
    kind, value, name = _present(request, "field")
    decoded = []
    try:  # JSON that does not parse is the answer `false`, not a failure
        kind, value = _parsed(kind, value, name)
        for call in tool_calls(kind, value, name):
            decoded.append((decoded_arguments(call), call.arguments_at))
    except NotJSON as exc:
        return Judgment(False, raw=str(exc))
    schema = request.criterion.params.get("schema")
    return Judgment(True) if schema is None else _validated(decoded, schema)


def json_valid(request: JudgmentRequest, backend: LocalBackend) -> Judgment:
    """`rule.json_valid`: the field parses as JSON (`judges.rule_json_valid`),
    or with `arguments = true` each of its tool calls' arguments do."""
    if request.criterion.params.get("arguments"):
        return json_arguments(request, backend)
    return judges.rule_json_valid(request, backend)


@_judging
def json_schema(request: JudgmentRequest) -> Judgment:
    """`rule.json_schema`: the field (or each of its tool calls' arguments)
    is valid against the schema; `raw` names the first violation's path."""
    p = request.criterion.params
    kind, value, name = _present(request, "field")
    try:
        kind, value = _parsed(kind, value, name)
        if p["arguments"]:
            values = [(decoded_arguments(call), call.arguments_at) for call in tool_calls(kind, value, name)]
        else:
            values = [(value, name)]
    except NotJSON as exc:
        return Judgment(False, raw=str(exc))
    return _validated(values, p["schema"])


@_judging
def tool_calls_match(request: JudgmentRequest) -> Judgment:
    """`rule.tool_calls_match`: the candidate's tool calls against the expected ones."""
    from stdlib_ops.calls import expected_calls, match

    p = request.criterion.params
    kind, value, name = _present(request, "field")
    expected_kind, expected_value, expected_name = _present(request, "expected")
    expected = expected_calls(_parsed(expected_kind, expected_value, expected_name)[1], expected_name)
    try:
        calls = tool_calls(*_parsed(kind, value, name), name)
    except NotJSON as exc:  # a candidate that is not JSON calls nothing
        return Judgment(False, raw={"kind": "not_json", "mismatch": str(exc)})
    problem = match(calls, expected, ordered=p["ordered"], extra=p["extra"] == "allow", fold=p["strings"] == "bfcl")
    raw: dict[str, Any] = {"calls": len(calls), "expected": len(expected)}
    if problem is not None:
        raw.update(problem)
    return Judgment(problem is None, raw=raw)


@_judging
def citations_valid(request: JudgmentRequest) -> Judgment:
    """`rule.citations_valid`: every citation in the text names one of the item's documents."""
    from rubriclang.regex import compile_regex

    p = request.criterion.params
    _, text, _ = _present(request, "field")
    _, documents, _ = _present(request, "documents")
    try:
        rx = compile_regex(p["pattern"], False)
    except ValueError as exc:
        raise Malformed(f"invalid pattern: {exc}") from None
    ids = {str(doc["id"]) for doc in documents}  # the item reader checked each document's form
    cited: list[str] = []
    for m in rx.finditer(text):
        group = m.group(1) if rx.groups else m.group(0)
        for ref in (group or "").split(","):
            ref = ref.strip()
            if ref and ref not in cited:
                cited.append(ref)
    unknown = [ref for ref in cited if ref not in ids]
    return Judgment(not unknown and len(cited) >= p["at_least"], raw={"cited": cited, "unknown": unknown})


@_judging
def count(request: JudgmentRequest) -> Judgment:
    """`rule.count`: the number of turns or tool calls, or whether it lies within `min`..`max`."""
    p = request.criterion.params
    kind, value, name = _present(request, "field")
    if p["of"] == "turns":
        n = sum(1 for message in value if p.get("role") is None or message["role"] == p["role"])
    else:
        n = sum(1 for call in tool_calls(*_parsed(kind, value, name), name) if p.get("name") in (None, call.name))
    if request.criterion.type.kind != "bool":
        return Judgment(n, raw=n)
    low, high = p.get("min"), p.get("max")
    return Judgment((low is None or n >= low) and (high is None or n <= high), raw=n)
