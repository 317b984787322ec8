"""`canonical_json`: the one canonical JSON text of a value, which every hash
(graph, trace, call key, prompt, audit seal) is taken of and traces are
written in: sorted keys, no spaces, non-ASCII as is, NaN and infinities
refused."""

from __future__ import annotations

import json
import json.encoder
from typing import Any

from rubriclang.plainlibs import plain


def _unencodable(obj: Any) -> Any:
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


# `json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
# allow_nan=False)` makes a C encoder for every call (JSONEncoder.iterencode):
# one made once writes the same text, at about four fifths of the cost of a
# trace record. Without its circular-reference markers (what is hashed or
# written is a tree), a cycle is a RecursionError, not a ValueError.
_MAKE_ENCODER = (
    None if plain("json") else getattr(json.encoder, "c_make_encoder", None)
)  # None where the C accelerator is missing
_ENCODE = (
    None
    if _MAKE_ENCODER is None
    else _MAKE_ENCODER(None, _unencodable, json.encoder.encode_basestring, None, ":", ",", True, False, False)
)


def canonical_json(obj: Any) -> str:
    """Sorted keys, no spaces, non-ASCII as is, NaN and infinities refused
    (ValueError), as `json.dumps` with those options writes it."""
    if _ENCODE is None:
        return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return "".join(_ENCODE(obj, 0))
