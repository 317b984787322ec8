"""Validating an item's field values against their declared types.

One validator for every command: the item reader (`interp.items`) calls
`check_value` for each declared field, before any criterion runs. Values
are read as they are; nothing is converted. The OpenAI chat-completions
message format is a `conversation` as written: `role` (system, user,
assistant, tool), `content` a string or a list of `{"type": "text",
"text": ...}` parts (null for an assistant turn that only calls tools), an
assistant's `tool_calls` (`{"id", "type": "function", "function": {"name",
"arguments"}}`, the arguments a JSON string holding an object) and a tool
message's `tool_call_id`, which must name an earlier call. Other keys of a
message are kept and ignored.

Every problem is a `ShapeError` naming the value's path in the item
(`responses.agent[3].tool_calls[0].function.arguments`); nothing else is
raised, whatever the JSON.
"""

from __future__ import annotations

import json
import math
from typing import Any, TypeVar

from rubriclang.items.shape import ROLES, FieldSpec

_T = TypeVar("_T")


class ShapeError(ValueError):
    """A value that does not fit its declared type: where, what, and a fix."""

    def __init__(self, path: str, message: str, hint: str = ""):
        super().__init__(f"`{path}` {message}")
        self.path = path
        self.message = message
        self.hint = hint


def json_type(value: object) -> str:
    """The JSON name of a decoded value's type, with the value for scalars."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "an object"
    return "an array" if isinstance(value, list) else type(value).__name__


def check_value(spec: FieldSpec, value: Any, path: str) -> None:
    """Raise ShapeError unless `value` fits `spec` (None: the field is absent)."""
    if value is None:
        if not spec.optional:
            raise ShapeError(path, f"is missing: the rubric declares it `{spec.type_text}`", _hint(spec))
        return
    kind = spec.kind
    if kind == "text":
        _want(value, str, path, "a string")
    elif kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ShapeError(path, f"must be a finite number, got {json_type(value)}")
    elif kind == "bool":
        _want(value, bool, path, "`true` or `false`")
    elif kind == "json":
        if spec.schema is not None:
            _schema(spec, value, path)
    elif kind == "list":
        for i, element in enumerate(_want(value, list, path, "an array of strings")):
            _want(element, str, f"{path}[{i}]", "a string")
    elif kind == "documents":
        _documents(value, path)
    else:
        _conversation(value, path)


def _hint(spec: FieldSpec) -> str:
    if spec.name == "response":
        return "give every candidate a value of the declared type"
    return f"give every item `{spec.name}`, or declare it optional: `{spec.name}: {spec.type_text}?`"


def _want(value: Any, kind: type[_T], path: str, what: str) -> _T:
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ShapeError(path, f"must be {what}, got {json_type(value)}")
    return value


def _documents(value: Any, path: str) -> None:
    seen: dict[str, int] = {}
    for i, doc in enumerate(_want(value, list, path, 'an array of documents `{"id", "title"?, "text"}`')):
        at = f"{path}[{i}]"
        _want(doc, dict, at, 'a document `{"id", "title"?, "text"}`')
        if "id" not in doc:
            raise ShapeError(at, "has no `id`", "give every document an id that is unique within the item")
        doc_id = doc["id"]
        if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
            raise ShapeError(f"{at}.id", f"must be a string or an integer, got {json_type(doc_id)}")
        if str(doc_id) in seen:
            raise ShapeError(
                f"{at}.id", f"`{doc_id}` is also the id of `{path}[{seen[str(doc_id)]}]`", "document ids are unique"
            )
        seen[str(doc_id)] = i
        if doc.get("title") is not None:
            _want(doc["title"], str, f"{at}.title", "a string")
        if "text" not in doc:
            raise ShapeError(at, "has no `text`", "a document's text is its `text` field")
        _want(doc["text"], str, f"{at}.text", "a string")


def _conversation(value: Any, path: str) -> None:
    calls: set[str] = set()
    for i, message in enumerate(_want(value, list, path, "an array of chat messages")):
        at = f"{path}[{i}]"
        _want(message, dict, at, 'a chat message `{"role", "content"}`')
        role = message.get("role")
        if role not in ROLES:
            got = "no `role`" if "role" not in message else f"role {json.dumps(role, ensure_ascii=False)[:40]}"
            raise ShapeError(at, f"has {got}", "a message's `role` is one of: " + ", ".join(ROLES))
        tool_calls = message.get("tool_calls")
        if tool_calls is not None:
            if role != "assistant":
                raise ShapeError(f"{at}.tool_calls", f"is on a `{role}` message", "only assistant messages call tools")
            for j, call in enumerate(_want(tool_calls, list, f"{at}.tool_calls", "an array of tool calls")):
                calls.add(_tool_call(call, f"{at}.tool_calls[{j}]", calls))
        content = message.get("content")
        if content is None:
            if not tool_calls:
                raise ShapeError(
                    f"{at}.content", "is missing", "only an assistant message that calls tools may have no content"
                )
        elif isinstance(content, list):
            for j, part in enumerate(content):
                _text_part(part, f"{at}.content[{j}]")
        else:
            _want(content, str, f"{at}.content", "a string or an array of text parts")
        if message.get("name") is not None:
            _want(message["name"], str, f"{at}.name", "a string")
        if role == "tool":
            call_id = message.get("tool_call_id")
            _want(call_id, str, f"{at}.tool_call_id", "the id of the tool call this message answers")
            if call_id not in calls:
                raise ShapeError(
                    f"{at}.tool_call_id",
                    f"names `{call_id[:80]}`, which no earlier assistant message calls",
                    "a tool message answers a tool call made before it",
                )


def _tool_call(call: Any, at: str, earlier: set[str]) -> str:
    _want(call, dict, at, 'a tool call `{"id", "type": "function", "function": {"name", "arguments"}}`')
    call_id = _want(call.get("id"), str, f"{at}.id", "a string")
    if call_id in earlier:
        raise ShapeError(f"{at}.id", f"`{call_id[:80]}` is the id of an earlier tool call", "tool call ids are unique")
    if call.get("type", "function") != "function":
        raise ShapeError(f"{at}.type", f"is {json_type(call['type'])}, not `function`")
    function = _want(call.get("function"), dict, f"{at}.function", 'an object `{"name", "arguments"}`')
    name = _want(function.get("name"), str, f"{at}.function.name", "a string")
    if not name:
        raise ShapeError(f"{at}.function.name", "is empty", "name the function called")
    arguments = _want(function.get("arguments"), str, f"{at}.function.arguments", "a JSON object written as a string")
    try:
        decoded = json.loads(arguments)
    except (ValueError, RecursionError) as exc:
        raise ShapeError(
            f"{at}.function.arguments", f"is not valid JSON ({exc})", "the arguments are a JSON object, as a string"
        ) from None
    if not isinstance(decoded, dict):
        raise ShapeError(f"{at}.function.arguments", f"holds {json_type(decoded)}, not a JSON object")
    return call_id


def _text_part(part: Any, at: str) -> None:
    _want(part, dict, at, 'a content part `{"type": "text", "text": ...}`')
    if part.get("type") != "text":
        kind = json.dumps(part.get("type"), ensure_ascii=False)[:40]
        raise ShapeError(f"{at}.type", f"is {kind}: only text parts are read", 'write `{"type": "text", "text": ...}`')
    _want(part.get("text"), str, f"{at}.text", "a string")


# Each schema's validator, built once (keyed by the schema's identity in its spec).
_VALIDATORS: dict[int, tuple[Any, Any]] = {}


def compiled_schema(schema: Any) -> Any:
    """The validator of a (valid) JSON Schema, built once per schema object
    (the declared fields' and the `rule.json_schema` criteria's)."""
    import jsonschema  # only where a schema is used

    cached = _VALIDATORS.get(id(schema))
    if cached is None or cached[0] is not schema:
        cls = jsonschema.validators.validator_for(schema)
        cached = _VALIDATORS[id(schema)] = (schema, cls(schema))
    return cached[1]


def _schema(spec: FieldSpec, value: Any, path: str) -> None:
    import jsonschema  # only where a declared field has a schema

    try:
        error = jsonschema.exceptions.best_match(compiled_schema(spec.schema).iter_errors(value))
    except RecursionError:
        raise ShapeError(path, "is nested too deeply to validate against its schema") from None
    if error is not None:
        where = path + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        raise ShapeError(where, f"does not fit the declared JSON Schema: {error.message[:200]}")


def schema_problem(schema: Any) -> str | None:
    """Why `schema` is not a valid JSON Schema, or None (for the checker)."""
    import jsonschema

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        message: str = exc.message  # jsonschema ships no types
        return message[:200]
    except RecursionError:
        return "it is nested too deeply"
    return None
