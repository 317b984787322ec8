"""Deterministic perturbations of structured item fields (documents and
conversations with tool calls), each with the check its variants must pass.

Every function takes a field's value as the item reader kept it (valid for
its declared kind, see `rubriclang.items.validate`) and returns a new value
plus the element it touched, never changing its argument. The element is
what a flip is localised to: a document id, a turn index, a tool call id.
As in `deterministic.py`, a check inspects the original and the variant
only, so a bug in a perturbation is caught rather than confirmed.
"""

from __future__ import annotations

import copy
import json
import re
from random import Random
from typing import Any

_WORDS = re.compile(r"\w+")
# A citation as `rule.citations_valid` reads one by default: `[3]`, `[doc2, doc5]`.
_CITATION = re.compile(r"\[([\w.:-]+(?:\s*,\s*[\w.:-]+)*)\]")


def element(field: str, kind: str, key: Any, **more: Any) -> dict[str, Any]:
    """The element a variant changed: its field, its kind (`document`,
    `documents` for their order, `turn`, `tool_result`, `tool_call`) and its key."""
    return {"field": field, "kind": kind, "key": None if key is None else str(key), **more}


# --- documents ------------------------------------------------------------------


def shuffle_documents(docs: list[dict], rng: Random) -> list[dict] | None:
    """The documents in another order (None when there are fewer than two)."""
    if len(docs) < 2:
        return None
    order = list(range(len(docs)))
    while order == sorted(order):  # ids are unique, so another order exists
        rng.shuffle(order)
    return [docs[i] for i in order]


def check_shuffle(original: list[dict], variant: list[dict]) -> str | None:
    if [_key(d) for d in variant] == [_key(d) for d in original]:
        return "the documents are in their original order"
    if sorted(map(_canonical, variant)) != sorted(map(_canonical, original)):
        return "the documents changed, not only their order"
    return None


def insert_document(docs: list[dict], donor: dict, rng: Random) -> tuple[list[dict], str]:
    """`docs` with `donor` (another item's document) inserted at a seeded
    place, its id made unique (`ID~2`, ...); the id it got."""
    ids = {str(d["id"]) for d in docs}
    new_id, n = str(donor["id"]), 1
    while new_id in ids:
        n += 1
        new_id = f"{donor['id']}~{n}"
    donor = {**donor, "id": new_id if n > 1 else donor["id"]}
    at = rng.randint(0, len(docs))
    return [*docs[:at], donor, *docs[at:]], new_id


def check_insert(original: list[dict], variant: list[dict], new_id: str) -> str | None:
    added = [d for d in variant if str(d["id"]) == new_id]
    rest = [d for d in variant if str(d["id"]) != new_id]
    if len(added) != 1 or len(variant) != len(original) + 1:
        return "the variant is not the original with exactly one document added"
    if [_canonical(d) for d in rest] != [_canonical(d) for d in original]:
        return "the original documents changed or moved"
    if any(added[0]["text"] == d["text"] for d in original):
        return "the inserted document repeats one of the item's own"
    return None


def supporting_document(docs: list[dict], response: str, gold: Any = None) -> tuple[int, str] | None:
    """(index, how it was chosen) of the document that supports `response`:
    the one named by the item's gold `supporting` id; else the first one the
    response cites (`[ID]`); else the one sharing the largest share of the
    response's distinct words (the first of equals). None without documents."""
    if not docs:
        return None
    ids = [str(d["id"]) for d in docs]
    if gold is not None and str(gold) in ids:
        return ids.index(str(gold)), "supporting"
    for m in _CITATION.finditer(response):
        for cited in (c.strip() for c in m.group(1).split(",")):
            if cited in ids:
                return ids.index(cited), "cited"
    words = set(_WORDS.findall(response.lower()))
    overlap = [len(words & set(_WORDS.findall(d["text"].lower()))) for d in docs]
    return overlap.index(max(overlap)), "overlap"


def remove_document(docs: list[dict], index: int) -> list[dict]:
    return docs[:index] + docs[index + 1 :]


def check_removed(original: list[dict], variant: list[dict], removed_id: str) -> str | None:
    kept = [d for d in original if str(d["id"]) != removed_id]
    if len(kept) != len(original) - 1 or [_canonical(d) for d in variant] != [_canonical(d) for d in kept]:
        return f"the variant is not the original without document `{removed_id}`"
    return None


def _key(d: dict) -> str:
    return str(d["id"])


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


# --- conversations ------------------------------------------------------------


def earlier_turns(conversation: list[dict]) -> list[int]:
    """Indices of the user and assistant turns with text that come before the last message."""
    return [
        i for i, m in enumerate(conversation[:-1]) if m["role"] in ("user", "assistant") and content_text(m).strip()
    ]


def tool_results(conversation: list[dict]) -> list[int]:
    """Indices of the tool messages with text."""
    return [i for i, m in enumerate(conversation) if m["role"] == "tool" and content_text(m).strip()]


def content_text(message: dict) -> str:
    from rubriclang.items.render import content_text as text

    return text(message)


def with_content(conversation: list[dict], index: int, text: str) -> list[dict]:
    """The conversation with message `index`'s content replaced by `text`
    (a list of text parts stays a list: one part)."""
    out = list(conversation)
    message = dict(out[index])
    message["content"] = [{"type": "text", "text": text}] if isinstance(message.get("content"), list) else text
    out[index] = message
    return out


def check_one_content(original: list[dict], variant: list[dict], index: int) -> str | None:
    """None when only message `index`'s content changed (and did)."""
    if len(original) != len(variant):
        return "the number of messages changed"
    for i, (a, b) in enumerate(zip(original, variant, strict=False)):  # the variant has one call fewer
        same_rest = {k: v for k, v in a.items() if k != "content"} == {k: v for k, v in b.items() if k != "content"}
        if not same_rest:
            return f"message {i}'s role, name or tool calls changed"
        if i != index and a.get("content") != b.get("content"):
            return f"message {i} changed, not only message {index}"
    if content_text(original[index]).strip() == content_text(variant[index]).strip():
        return f"message {index} is unchanged"
    return None


def check_same_values(original: str, rewrite: str) -> str | None:
    """For a tool result that is a JSON object or array: None when the
    rewrite is the same JSON (other key order or spacing), else why not.
    Other results are left to the validator."""
    before = _arguments(original)
    if not isinstance(before, (dict, list)):
        return None
    after = _arguments(rewrite)
    if after is None:
        return "the tool result was JSON and the rewrite is not"
    if _canonical(after) != _canonical(before):
        return "the tool result's JSON values changed"
    return None


# --- tool calls -------------------------------------------------------------------


def call_sites(kind: str, value: Any) -> list[tuple[Any, ...]]:
    """Where a field's tool calls are: (message index, call index) in a
    conversation; (index,) in a JSON array of calls; () for a JSON value that
    is one call. Only calls whose arguments are a JSON object are listed."""
    if kind == "conversation":
        return [
            (i, j)
            for i, m in enumerate(value)
            for j, c in enumerate(m.get("tool_calls") or ())
            if isinstance(_arguments(c["function"]["arguments"]), dict)
        ]
    if isinstance(value, list):
        return [(i,) for i, c in enumerate(value) if _json_call(c) is not None]
    return [()] if _json_call(value) is not None else []


def _json_call(call: Any) -> dict | None:
    """The `{"name", "arguments"}` object of a JSON call (OpenAI's `function` unwrapped), or None."""
    if isinstance(call, dict) and isinstance(call.get("function"), dict):
        call = call["function"]
    if isinstance(call, dict) and isinstance(call.get("name"), str) and isinstance(call.get("arguments"), dict):
        return call
    return None


def _arguments(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def call_id(kind: str, value: Any, site: tuple) -> str:
    """A call's key: its id in a conversation, its index in a JSON array (`0` for one call)."""
    if kind == "conversation":
        return value[site[0]]["tool_calls"][site[1]]["id"]
    return str(site[0]) if site else "0"


def drop_call(conversation: list[dict], site: tuple[int, int]) -> list[dict]:
    """The conversation without the call at `site` and the tool messages
    answering it; an assistant message left with neither text nor calls goes too."""
    i, j = site
    dropped = conversation[i]["tool_calls"][j]["id"]
    out = []
    for k, m in enumerate(conversation):
        if m["role"] == "tool" and m.get("tool_call_id") == dropped:
            continue
        if k == i:
            m = dict(m)
            calls = [c for n, c in enumerate(m["tool_calls"]) if n != j]
            if calls:
                m["tool_calls"] = calls
            else:
                del m["tool_calls"]
                if m.get("content") is None:
                    continue
        out.append(m)
    return out


def check_dropped(original: list[dict], variant: list[dict], dropped: str) -> str | None:
    """None when `variant` is `original` without call `dropped` and its
    results, and nothing else changed."""
    if any(c["id"] == dropped for m in variant for c in m.get("tool_calls") or ()):
        return f"the call `{dropped}` is still made"
    if any(m.get("tool_call_id") == dropped for m in variant):
        return f"a tool result for `{dropped}` is still there"
    kept = []
    for m in original:
        if m.get("tool_call_id") == dropped and m["role"] == "tool":
            continue
        calls = [c for c in m.get("tool_calls") or () if c["id"] != dropped]
        if len(calls) != len(m.get("tool_calls") or ()):
            m = {k: v for k, v in m.items() if k != "tool_calls"} | ({"tool_calls": calls} if calls else {})
            if not calls and m.get("content") is None:
                continue
        kept.append(m)
    if [_canonical(m) for m in kept] != [_canonical(m) for m in variant]:
        return "the variant changed more than the dropped call and its results"
    return None


def drop_json_call(calls: list[Any], site: tuple[int]) -> list[Any]:
    """A JSON array of calls without the one at `site`."""
    return calls[: site[0]] + calls[site[0] + 1 :]


def check_dropped_json(original: list[Any], variant: list[Any], index: int) -> str | None:
    """None when `variant` is `original` with only its element `index` gone."""
    if len(variant) != len(original) - 1:
        return "the variant does not have exactly one call fewer"
    first = next(
        (i for i, (a, b) in enumerate(zip(original, variant, strict=False)) if _canonical(a) != _canonical(b)),
        len(variant),
    )  # the variant has one call fewer
    if first != index or [_canonical(c) for c in original[first + 1 :]] != [_canonical(c) for c in variant[first:]]:
        return f"the variant is not the original without call {index}"
    return None


def corrupt_argument(kind: str, value: Any, site: tuple, rng: Random) -> tuple[Any, str] | None:
    """(the field with one argument of the call at `site` given a wrong
    value of the same JSON type, that argument's name), or None when no
    argument has a value that can be changed so (all null, empty arrays or objects)."""
    args = _call_arguments(kind, value, site)
    names = [k for k, v in args.items() if _corruptible(v)]
    if not names:
        return None
    name = rng.choice(names)
    new_args = {**args, name: _wrong(args[name], rng)}
    return _with_arguments(kind, value, site, new_args), name


def check_corrupted(kind: str, original: Any, variant: Any, site: tuple, name: str) -> str | None:
    """None when exactly argument `name` of the call at `site` changed, to a
    value of the same JSON type, and nothing else did."""
    try:
        before, after = _call_arguments(kind, original, site), _call_arguments(kind, variant, site)
    except (KeyError, IndexError, TypeError, ValueError):
        return "the call is no longer there, or its arguments are not a JSON object"
    if not isinstance(after, dict) or set(before) != set(after):
        return "the call's arguments are not a JSON object with the same names"
    changed = [k for k in before if _canonical(before[k]) != _canonical(after[k])]
    if changed != [name]:
        return f"the changed arguments are {changed}, not `{name}` alone"
    if _json_kind(before[name]) != _json_kind(after[name]):
        return f"`{name}` changed its JSON type"
    if _canonical(_with_arguments(kind, original, site, after)) != _canonical(variant):
        return "something besides the argument changed"
    return None


def _call_arguments(kind: str, value: Any, site: tuple) -> dict:
    if kind == "conversation":
        return json.loads(value[site[0]]["tool_calls"][site[1]]["function"]["arguments"])
    call = _json_call(value[site[0]] if site else value)
    if call is None:
        raise ValueError("not a call")
    return call["arguments"]


def _with_arguments(kind: str, value: Any, site: tuple, args: dict) -> Any:
    out = copy.deepcopy(value)
    if kind == "conversation":
        # Compact and key order kept: the arguments stay one JSON object, as written.
        out[site[0]]["tool_calls"][site[1]]["function"]["arguments"] = json.dumps(args, ensure_ascii=False)
        return out
    target = out[site[0]] if site else out
    if isinstance(target.get("function"), dict):
        target = target["function"]
    target["arguments"] = args
    return out


def _json_kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    return type(v).__name__


def _corruptible(v: Any) -> bool:
    if isinstance(v, (list, dict)):
        return any(_corruptible(x) for x in (v.values() if isinstance(v, dict) else v))
    return v is not None


def _wrong(v: Any, rng: Random) -> Any:
    """A different value of `v`'s JSON type: a boolean negated, a number
    moved by 1 to 9 (a float keeps a fraction), a string with its characters
    reversed (or extended), one element of an array or object made wrong."""
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + rng.randint(1, 9)
    if isinstance(v, float):
        return v + rng.randint(1, 9) + 0.5
    if isinstance(v, str):
        flipped = v[::-1]
        return flipped if flipped.lower() != v.lower() else v + "x"
    if isinstance(v, list):
        i = rng.choice([n for n, x in enumerate(v) if _corruptible(x)])
        return [*v[:i], _wrong(v[i], rng), *v[i + 1 :]]
    key = rng.choice([k for k, x in v.items() if _corruptible(x)])
    return {**v, key: _wrong(v[key], rng)}
