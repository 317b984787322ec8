"""Rewrite the figures measured on real data that the tests pin
(tests/real_figures.json) from what the code computes now.

    python scripts/pin_real_figures.py

It reruns the tests that measure them with RBG_UPDATE_FIGURES=1 (tests/pinned.py)
and prints which pins moved. Review the diff, and docs/results.md, which
reports the same figures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "tests" / "real_figures.json"
# The tests that measure the pinned figures.
MEASURING = ["tests/test_real_examples.py", "tests/evaluation/test_fit_real.py", "tests/test_structured_judges.py"]


def main(argv: list[str] | None = None) -> int:
    before = json.loads(FIGURES.read_text("utf-8"))
    env = {**os.environ, "RBG_UPDATE_FIGURES": "1"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *MEASURING], cwd=ROOT, env=env)
    after = json.loads(FIGURES.read_text("utf-8"))
    for name in sorted(set(before) | set(after)):
        if before.get(name) != after.get(name):
            print(f"{name}: {before.get(name)} -> {after.get(name)}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
