"""Sides of a diff: a file, or `REV:PATH`, a file as git has it at a revision.

`REV:PATH` is read with `git show REV:PATH` from the current directory's
repository, so PATH is relative to the repository's root (or `REV:./PATH`
relative to the current directory), exactly as git itself reads it.
"""

from __future__ import annotations

import os
import subprocess

import attrs

from rubriclang.errors import LocatedError, decode_utf8


class SideError(Exception):
    """A side that cannot be read; the message says why, for a user."""


@attrs.frozen
class Side:
    """A version of a rubric: the label diagnostics and output show, its text."""

    label: str
    text: str


def is_revision(arg: str) -> bool:
    """Whether `arg` names a file at a git revision rather than a file on disk."""
    return ":" in arg and not os.path.exists(arg)


def read_side(arg: str) -> Side:
    """The text of a file, or of `REV:PATH` from git. Raises SideError."""
    if is_revision(arg):
        return Side(arg, _git_show(arg))
    try:
        with open(arg, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise SideError(f"`{arg}`: no such file (for a git revision, write `REV:PATH`)") from None
    except OSError as exc:
        raise SideError(f"cannot read `{arg}`: {exc.strerror or exc}") from None
    return Side(arg, _decode(data, arg))


def _git(*args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", *args], capture_output=True)
    except FileNotFoundError:
        raise SideError("`git` is not installed (or not on PATH), so revisions cannot be read") from None


def _git_show(spec: str) -> str:
    done = _git("show", spec)
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip()
        if "not a git repository" in message:
            raise SideError(f"`{spec}` names a git revision, but `{os.getcwd()}` is not inside a git repository")
        reason = "; ".join(line.removeprefix("fatal: ").removeprefix("hint: ") for line in message.splitlines())
        raise SideError(f"git cannot show `{spec}`: {reason}")
    kind = _git("cat-file", "-t", spec).stdout.decode().strip()
    if kind != "blob":
        raise SideError(f"`{spec}` is a {kind or 'git object'}, not a file")
    return _decode(done.stdout, spec)


def _decode(data: bytes, label: str) -> str:
    try:
        return decode_utf8(data, label)
    except LocatedError as exc:
        raise SideError(f"{exc.where}: {exc.message}") from None
