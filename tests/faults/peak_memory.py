"""A command's peak resident memory, measured in a fresh parent process so
that no earlier child of the test run counts (`ru_maxrss` of children is
the largest of every child ever waited for), and the rule-only graph and
GSM8K-like items the memory tests measure it on."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import attrs

_MEASURE = """
import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
sys.stdout.buffer.write(b"%d %d %d\\n" % (r.returncode, peak, len(r.stdout)) + r.stdout[:8192])
"""


@attrs.frozen
class Peak:
    status: int
    mb: float  # peak resident memory
    size: int  # bytes of output, stdout and stderr together
    head: str  # the output's first 8 KB


def peak_rss(*argv: str) -> Peak:
    """Run `argv` to its end and measure its peak resident memory."""
    r = subprocess.run([sys.executable, "-c", _MEASURE, *argv], capture_output=True, timeout=660)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    first, _, head = r.stdout.partition(b"\n")
    status, kb, size = map(int, first.split())
    return Peak(status, kb / 1024, size, head.decode("utf-8", "replace"))  # Linux reports kilobytes


RBG = str(Path(sys.executable).with_name("rbg"))

# A rule-only graph (no model, no server) over GSM8K-like items.
GRAPH = """\
rubric memory { version = 1 }
contract { scale = bool }
criterion correct: bool = rule.matches_reference { mode = numeric }
criterion long: bool = rule.length { over = 12 }
node correct_n = transform.map(value: correct) { values = { true: 1, false: 0 } }
node long_n = transform.map(value: long) { values = { true: 1, false: 0 } }
node score = reduce.weighted_mean(inputs: [correct_n, long_n]) { weights = [0.8, 0.2] }
node verdict = transform.threshold(value: score) { at = 0.5 }
sink verdict
readout pointwise { output = bool }
"""


def write_items(path: Path, n: int) -> Path:
    """`n` items for GRAPH, with bool gold, the same for the same `n`."""
    rng = random.Random(n)
    with path.open("w") as fh:
        for i in range(n):
            a, b = rng.randint(2, 999), rng.randint(2, 999)
            said = a + b + rng.choice((0, 0, 0, 1))
            words = " ".join(["so we add them"] * rng.randint(1, 4))
            item = {
                "id": f"q{i:06d}",
                "input": f"What is {a} + {b}?",
                "response": f"{words}: {a} + {b} = {said}. The answer is {said}.",
                "reference": f"#### {a + b}",
                "gold": rng.random() < 0.7,
            }
            fh.write(json.dumps(item) + "\n")
    return path
