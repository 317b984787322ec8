"""A command's peak resident memory, measured in a fresh parent process so
that no earlier child of the test run counts (`ru_maxrss` of children is
the largest of every child ever waited for)."""

from __future__ import annotations

import subprocess
import sys

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
