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
from rubriclang.safeio import open_regular


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
        if arg.startswith("-"):
            # git would read it as an option (`--output=FILE:x` writes a file).
            raise SideError(f"`{arg}`: no such file, and a git revision cannot start with `-`")
        return Side(arg, _git_show(arg))
    try:
        with open_regular(arg) as fh:
            data = fh.read()
    except FileNotFoundError:
        raise SideError(f"`{arg}`: no such file (for a git revision, write `REV:PATH`)") from None
    except OSError as exc:
        raise SideError(f"cannot read `{arg}`: {exc.strerror or exc}") from None
    return Side(arg, _decode(data, arg))


def _git(command: str, *options: str, spec: str, paths: bool = True) -> subprocess.CompletedProcess[bytes]:
    """`git COMMAND OPTIONS... --end-of-options SPEC [--]`: whatever SPEC
    holds, git takes it for a revision, never for an option (`paths`: the
    command also takes `--` before paths; `cat-file` does not)."""
    argv = ["git", command, *options, "--end-of-options", spec, *(["--"] if paths else [])]
    try:
        return subprocess.run(argv, capture_output=True)
    except FileNotFoundError:
        raise SideError("`git` is not installed (or not on PATH), so revisions cannot be read") from None


def _git_show(spec: str) -> str:
    # `cat-file -t` first: its errors name what is wrong (the revision, or
    # the path at it) better than `show`'s.
    typed = _git("cat-file", "-t", spec=spec, paths=False)
    if typed.returncode != 0:
        message = typed.stderr.decode("utf-8", "replace").strip()
        if "not a git repository" in message:
            raise SideError(f"`{spec}` names a git revision, but `{os.getcwd()}` is not inside a git repository")
        reason = "; ".join(line.removeprefix("fatal: ").removeprefix("hint: ") for line in message.splitlines())
        raise SideError(f"git cannot show `{spec}`: {reason}")
    kind = typed.stdout.decode().strip()
    if kind != "blob":
        raise SideError(f"`{spec}` is a {kind or 'git object'}, not a file")
    done = _git("show", spec=spec)
    if done.returncode != 0:
        raise SideError(f"git cannot show `{spec}`: {done.stderr.decode('utf-8', 'replace').strip()}")
    return _decode(done.stdout, spec)


def _decode(data: bytes, label: str) -> str:
    try:
        return decode_utf8(data, label)
    except LocatedError as exc:
        raise SideError(f"{exc.where}: {exc.message}") from None
