"""Build examples/bfcl/items.jsonl from BFCL v4 simple_python.

    .venv/bin/python scripts/build_bfcl.py [--data ../shared/data/bfcl_simple] [--out examples/bfcl]

BFCL releases requests and accepted answers, no model answers. For each of
the first 60 requests (joined with possible_answer/ by id), plain code
writes the call its accepted answer describes (each argument's first
accepted value, an object's keys theirs in turn; an argument whose only
option is `""`, left out, is left out) and, from it, corrupted calls, each of one kind:

- `wrong_function`: the next request's function name (a real function, not
  this one);
- `wrong_value`: the first argument whose value can change (a number + 1,
  a string with `_x` appended, a boolean negated) changed to a value not
  accepted;
- `missing_argument`: the first required argument that may not be left out
  dropped (when the function has one);
- `extra_argument`: an argument the function does not define added.

Each call becomes a pointwise item by `rbg items convert`: the request's
turns flattened into one conversation (`input`, from `question[*][*]`),
the function schema (`functions`, JSON, as BFCL writes it: `"type": "dict"`),
the accepted answer (`possible_answer`, JSON, BFCL's `ground_truth` as it
is), the call (`response`, JSON: an array of one call `{"name", "arguments"}`,
as a model's answer lists its calls), gold `true` for the
accepted call and `false` for a corrupted one, and `corruption` (the kind, or
null). LICENSE is copied beside it. Deterministic: the same data gives
byte-identical files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from example_slices import convert, copy_licences, main, write_jsonl

REQUESTS = 60
NAME = "BFCL_v4_simple_python.json"


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def first(options: dict[str, list]) -> dict[str, Any]:
    """Each key's first accepted value, made concrete; keys whose only
    option is `""` (may be left out) left out."""
    out = {}
    for key, values in options.items():
        given = [v for v in values if v != ""]
        if given:
            out[key] = concrete(given[0])
    return out


def concrete(value: Any) -> Any:
    """An accepted value as a call writes it: an object's keys hold lists of
    accepted values in BFCL, and take their first."""
    if isinstance(value, dict):
        return first(value)
    if isinstance(value, list):
        return [concrete(v) for v in value]
    return value


def accepted_call(answer: dict[str, Any]) -> dict[str, Any]:
    ((name, args),) = answer.items()
    return {"name": name, "arguments": first(args)}


def changed(value: Any, options: list[Any]) -> Any:
    """A value of the same type that is not among `options`, or None."""
    if isinstance(value, bool):
        out: Any = not value
    elif isinstance(value, (int, float)):
        out = value + 1
        while out in options:
            out += 1
    elif isinstance(value, str):
        out = value + "_x"
        while out in options:
            out += "_x"
    else:
        return None
    return None if out in options else out


def corruptions(call: dict, answer: dict, function: dict, other_name: str) -> list[tuple[str, dict]]:
    ((_, args),) = answer.items()
    out = []
    if other_name != call["name"]:
        out.append(("wrong_function", {**call, "name": other_name}))
    for arg, value in call["arguments"].items():
        new = changed(value, args[arg])
        if new is not None:
            out.append(("wrong_value", {**call, "arguments": {**call["arguments"], arg: new}}))
            break
    for arg in function["parameters"].get("required", []):
        if arg in call["arguments"] and "" not in args.get(arg, []):
            rest = {k: v for k, v in call["arguments"].items() if k != arg}
            out.append(("missing_argument", {**call, "arguments": rest}))
            break
    extra = "unexpected_argument"
    if extra not in function["parameters"].get("properties", {}):
        out.append(("extra_argument", {**call, "arguments": {**call["arguments"], extra: True}}))
    return out


def build(data: Path, out: Path, scratch: Path) -> str:
    requests = read_lines(data / NAME)[:REQUESTS]
    answers = {a["id"]: a for a in read_lines(data / "possible_answer" / NAME)}
    rows = []
    for n, req in enumerate(requests):
        if req["id"] not in answers:
            raise SystemExit(f"{req['id']}: no accepted answer in possible_answer/{NAME}")
        if len(req["function"]) != 1 or len(answers[req["id"]]["ground_truth"]) != 1:
            raise SystemExit(f"{req['id']}: expected one function and one accepted call (simple_python)")
        answer = answers[req["id"]]["ground_truth"][0]
        call = accepted_call(answer)
        other = requests[(n + 1) % len(requests)]["function"][0]["name"]
        base = {"question": req["question"], "function": req["function"], "ground_truth": [answer]}
        rows.append({"id": f"{req['id']}-accepted", **base, "calls": [call], "corruption": None, "gold": True})
        for kind, bad in corruptions(call, answer, req["function"][0], other):
            rows.append({"id": f"{req['id']}-{kind}", **base, "calls": [bad], "corruption": kind, "gold": False})
    convert(
        write_jsonl(scratch / "bfcl.jsonl", rows),
        out / "items.jsonl",
        *("--field", "input=question[*][*]", "--conversation", "input", "--field", "functions=function"),
        *("--field", "possible_answer=ground_truth", "--field", "response=calls", "--keep-unmapped"),
    )
    copy_licences(data, out, ("LICENSE",))
    kinds: dict[str, int] = {}
    for row in rows:
        kinds[row["corruption"] or "accepted"] = kinds.get(row["corruption"] or "accepted", 0) + 1
    return f"bfcl: {len(rows)} items ({', '.join(f'{k} {v}' for k, v in kinds.items())})"


if __name__ == "__main__":
    main(__doc__, "bfcl_simple", "bfcl", build)
