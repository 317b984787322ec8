"""`canonical_json`: the one canonical JSON text of a value, which every hash
(graph, trace, call key, prompt, audit seal) is taken of and traces are
written in: sorted keys, no spaces, non-ASCII as is, NaN and infinities
refused.

It is `json.dumps` with those options, through the public API:
a private encoder made once saved under 5% of a cached rerun's time
(benchmarks/README.md, "Home-made parts and what they earn"), and wrote the
same bytes (tests/test_canonical_json.py holds them to it)."""

from __future__ import annotations

import json
from typing import Any


def canonical_json(obj: Any) -> str:
    """Sorted keys, no spaces, non-ASCII as is, NaN and infinities refused
    (ValueError)."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
