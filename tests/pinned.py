"""Figures measured on real data, pinned in tests/real_figures.json.

A test states the figure it measured with `assert_pinned(name, value)`; the
pinned value is the one docs/results.md reports. `python scripts/pin_real_figures.py`
reruns those tests with RBG_UPDATE_FIGURES=1, which rewrites the pins from what
the code computes now (review the diff, and docs/results.md with it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

FILE = Path(__file__).resolve().with_name("real_figures.json")
UPDATE = os.environ.get("RBG_UPDATE_FIGURES") == "1"


def assert_pinned(name: str, value: float | int, digits: int | None = None) -> None:
    """`value`, rounded to `digits` (None: as it is), equals the pinned figure `name`."""
    measured = value if digits is None or isinstance(value, int) else round(float(value), digits)
    figures = json.loads(FILE.read_text("utf-8"))
    if UPDATE:
        figures[name] = measured
        FILE.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n", "utf-8")
        return
    assert name in figures, f"{name} is not pinned: run scripts/pin_real_figures.py"
    assert measured == figures[name], (
        f"{name}: measured {measured}, pinned {figures[name]} (scripts/pin_real_figures.py rewrites the pins)"
    )
