"""Records of a public data set, read from JSON, JSON Lines, CSV or TSV,
each with the `path:line` where it starts, for `rbg items convert`.

JSON is a top-level array of objects, or an object whose members are the
records keyed by their ids (BiGGen's `sample_responses.json`; each record's
line is found by decoding one element at a time); JSON Lines is one object a line;
CSV and TSV have a header row, and every cell is a string.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable, Iterator
from typing import Any

from rubriclang.interp.items import ItemError

FORMATS = ("json", "jsonl", "csv", "tsv")
_EXTENSIONS = {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv"}


def source_format(path: str, given: str | None) -> str:
    """The format `given`, else the one the file's extension names."""
    if given:
        return given
    ext = os.path.splitext(path)[1].lower()
    if ext not in _EXTENSIONS:
        raise ItemError(
            path,
            f"cannot tell the format from the extension `{ext or '(none)'}`",
            f"name it with --format ({', '.join(FORMATS)})",
        )
    return _EXTENSIONS[ext]


Record = tuple[str, dict[str, Any], str | None]  # (`path:line`, record, its key in a keyed JSON object)


def read_records(path: str, fmt: str) -> Iterator[Record]:
    """(`path:line`, record, key) for each record of the file, in order; the
    key is the member name of a JSON object keyed by id, else None."""
    if fmt == "jsonl":
        from rubriclang.jsonl import read_jsonl

        for where, obj in read_jsonl(path, ItemError):
            yield where, _object(obj, where), None
        return
    with open(path, encoding="utf-8-sig", newline="") as fh:
        if fmt == "json":
            yield from _json_records(path, fh.read())
        else:
            for where, row in _table(path, fh, "\t" if fmt == "tsv" else ","):
                yield where, row, None


def _object(obj: Any, where: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise ItemError(where, f"a record must be an object, got {type(obj).__name__}")
    return obj


def _json_records(path: str, text: str) -> Iterator[Record]:
    """The elements of a top-level array, or the members of a top-level
    object keyed by id, one at a time (so each one's line is known)."""
    from rubriclang.jsonl import DuplicateKey, duplicate_message, unique_object

    decoder = json.JSONDecoder(object_pairs_hook=unique_object)

    def line_of(i: int) -> str:
        return f"{path}:{text.count(chr(10), 0, i) + 1}"

    def skip(i: int) -> int:
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
        return i

    def decode(i: int) -> tuple[Any, int]:
        try:
            return decoder.raw_decode(text, i)
        except json.JSONDecodeError as exc:
            raise ItemError(f"{path}:{exc.lineno}", f"malformed JSON: {exc.msg} (column {exc.colno})") from None
        except DuplicateKey as exc:
            raise ItemError(line_of(i), *duplicate_message("record", exc)) from None

    i = skip(0)
    if i >= len(text) or text[i] not in "[{":
        raise ItemError(
            line_of(i),
            "a JSON source must be an array of objects, or an object of objects keyed by id",
            "for one object a line, use a .jsonl file or --format jsonl",
        )
    keyed, close = text[i] == "{", "}" if text[i] == "{" else "]"
    i = skip(i + 1)
    if i < len(text) and text[i] == close:
        return
    keys: dict[str, str] = {}
    while True:
        key = None
        if keyed:
            at = line_of(i)
            key, i = decode(i)
            if not isinstance(key, str):
                raise ItemError(at, "malformed JSON: expected a member name in double quotes")
            if key in keys:
                raise ItemError(at, f"the key `{key}` is given twice (first at {keys[key]})", "keys name one record")
            keys[key] = at
            i = skip(i)
            if i >= len(text) or text[i] != ":":
                raise ItemError(line_of(i), "malformed JSON: expected `:` after a member name")
            i = skip(i + 1)
        obj, end = decode(i)
        yield line_of(i), _object(obj, line_of(i)), key
        i = skip(end)
        if i < len(text) and text[i] == ",":
            i = skip(i + 1)
        elif i < len(text) and text[i] == close:
            return
        else:
            what = "a member" if keyed else "an array element"
            raise ItemError(line_of(i), f"malformed JSON: expected `,` or `{close}` after {what}")


# A cell may hold a whole conversation; csv's default limit is 128 KiB.
_CELL_LIMIT = 1 << 30


def _table(path: str, fh: Iterable[str], delimiter: str) -> Iterator[tuple[str, dict[str, Any]]]:
    csv.field_size_limit(max(csv.field_size_limit(), _CELL_LIMIT))
    reader = csv.reader(fh, delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as exc:
        raise ItemError(f"{path}:1", f"malformed header: {exc}") from None
    dup = sorted({h for h in header if header.count(h) > 1})
    if dup:
        raise ItemError(f"{path}:1", f"the header names column(s) {', '.join(f'`{d}`' for d in dup)} more than once")
    start = reader.line_num + 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise ItemError(f"{path}:{start}", f"malformed row: {exc}") from None
        where = f"{path}:{start}"
        start = reader.line_num + 1
        if not row or row == [""]:
            continue
        if len(row) != len(header):
            raise ItemError(where, f"the row has {len(row)} cells, the header {len(header)}")
        yield where, dict(zip(header, row, strict=True))
