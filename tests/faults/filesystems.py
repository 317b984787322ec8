"""Real small and read-only file systems for fault tests: a tmpfs mounted
for the test (the machine must let the test mount one: root, or a user
namespace that allows it; else the test is skipped, saying why)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def _mount(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30)


@contextlib.contextmanager
def tmpfs(folder: Path, size: str = "1m") -> Iterator[Path]:
    """A fresh tmpfs of `size` mounted on `folder` (made), unmounted after."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        done = _mount("-t", "tmpfs", "-o", f"size={size},mode=0777", "tmpfs", str(folder))
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"cannot mount a tmpfs here: {exc}")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, timeout=30)


def read_only(folder: Path) -> None:
    """Remount the tmpfs on `folder` read-only (no file in it may be open for writing)."""
    done = _mount("-o", "remount,ro", str(folder))
    assert done.returncode == 0, done.stderr


def fill(folder: Path, leave: int = 0) -> None:
    """Fill the file system of `folder` (a file `filler`) to the last byte,
    then give back `leave` bytes of it."""
    with open(folder / "filler", "wb", buffering=0) as fh:
        for block in (4096, 1):
            with contextlib.suppress(OSError):
                while fh.write(b"\0" * block):
                    pass
    assert os.statvfs(folder).f_bavail == 0
    if leave:
        size = os.path.getsize(folder / "filler")
        os.truncate(folder / "filler", max(0, size - leave))
