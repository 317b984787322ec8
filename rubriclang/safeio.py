"""Writing files the user cannot cheaply recreate, so that no kill, crash
or full disk loses a byte of them, and so that two processes never write
the same output at once.

- `write_atomic`: a whole-file rewrite as a temporary file in the same
  folder, fsynced, renamed over the target, then the folder fsynced. The
  file is either all old or all new, whatever moment a kill comes, and a
  full disk leaves the old file whole. Every file a command writes goes
  through it, or through the append-only trace writer
  (`rubriclang.interp.trace.TraceWriter`); tests/faults/test_writers.py
  lists every writer in the package to prove it.
- Symbolic links: an output the user names directly (`-o current.rbg`) is
  written through its link, as any editor would: the user chose the name.
  A file a command writes inside a folder it was given (`rbg view --export
  DIR`, `rbg compile --out-dir DIR`), `within` that folder, never leaves it:
  a link planted there is replaced by the file, not followed, and a
  subfolder that resolves outside the folder is refused (`LinkOut`). A
  folder whose files are appended to by name (an audit's) is refused
  whole when a link in it leads out, or a pipe or device is in it
  (`check_folder`).
- `open_regular`: opens an input for reading only when it is a regular
  file; a named pipe (which would block the open forever), a device or a
  folder is refused (`NotRegularFile`) without blocking.
- `cut_torn_line`: an append-only file whose last line a kill tore is cut
  back, in place, to its last complete line (nothing before it is touched).
- `output_lock`: an exclusive, non-blocking advisory lock on an output,
  held while a command writes it; a second command is refused, told the
  first one's pid. Taking it removes the temporary file a killed rewrite
  of the output left. Commands take it through `cli.outputs.command_output`,
  which first checks that the output is none of the command's inputs.

Only the standard library, so `rbg fmt` can use it without slowing down.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from types import ModuleType
from typing import IO, Any, BinaryIO, Literal, TextIO, overload

_TAIL_CHUNK = 1 << 16


class NotRegularFile(OSError):
    """An input that is not a regular file (a pipe, a device, a folder)."""


class LinkOut(OSError):
    """A write inside a folder that a symbolic link would take out of it."""


class OutputBusy(Exception):
    """Another process holds the lock of an output; `pid` is its pid, or
    None when it could not be read."""

    def __init__(self, message: str, pid: int | None):
        super().__init__(message)
        self.message = message
        self.pid = pid


def describe_os_error(exc: OSError) -> str:
    """An OSError as one short phrase, with the fix for the usual ones."""
    reason = exc.strerror or str(exc)
    folder = os.path.dirname(os.path.abspath(exc.filename)) if isinstance(exc.filename, str) else ""
    if exc.errno == errno.ENOENT and folder and not os.path.isdir(folder):
        return f"{reason} (the folder `{folder}` does not exist; create it first)"
    if exc.errno == errno.ENOSPC:
        return f"{reason} (free some space and run the same command again: it resumes)"
    if exc.errno == errno.EDQUOT:
        return f"{reason} (raise the quota or free space, then run the same command again)"
    return reason


def write_atomic(path: str, data: str | bytes, sync: bool = True, within: str | None = None) -> None:
    """Replace the contents of `path` in one step; text is written as UTF-8
    with no newline translation. See `atomic_file` for the rest."""
    with atomic_file(path, sync, within) as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)


@contextlib.contextmanager
def atomic_file(path: str, sync: bool = True, within: str | None = None) -> Iterator[BinaryIO]:
    """A binary file to write the new contents of `path` into; once the
    block ends, they replace the old ones in one step (an exception in the
    block leaves the old file as it was). An existing file keeps its
    permissions, a new one follows the umask. Without `within`, a
    symlink's target is what gets replaced (an output the user named); with
    `within` (a folder the command was given), `path` must lie inside it
    once links are resolved, else LinkOut, and a link at `path` itself is
    replaced, not followed. OSError (a missing folder, a full disk)
    propagates, naming `path`, the file unchanged. `sync=False` skips the
    fsyncs, for many files that can be made again (a static export), where
    they cost more than the writing."""
    target = os.path.realpath(path) if within is None else inside(path, within)
    folder = os.path.dirname(target)
    try:
        st = os.stat(target) if within is None else os.lstat(target)
        mode: int | None = stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None
    except FileNotFoundError:
        mode = None
    try:
        fd, tmp = _temporary(folder, os.path.basename(target))
    except OSError as exc:
        if exc.errno is None:
            raise
        raise type(exc)(exc.errno, exc.strerror, path) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            if sync:
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if exc.errno is None or exc.filename not in (None, tmp):
            raise  # not the writing's (the block reading a file of its own)
        # A failed write names the temporary file, or nothing: name the output.
        raise type(exc)(exc.errno, exc.strerror, path) from None
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if sync:
        fsync_folder(folder)


def inside(path: str, folder: str) -> str:
    """`path` with its folder's links resolved (its own name kept, a link or
    not), when that folder lies inside `folder`; LinkOut otherwise."""
    root = os.path.realpath(folder)
    parent = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    if os.path.commonpath([root, parent]) != root:
        raise LinkOut(
            errno.EXDEV,
            f"a symbolic link leads out of `{folder}` (to `{parent}`); remove it, or give another folder",
            path,
        )
    return os.path.join(parent, os.path.basename(path))


def check_folder(folder: str) -> None:
    """For a command that writes or appends to a folder's files by name (the
    audit's): LinkOut when an entry, at any depth, is a symbolic link that
    resolves outside the folder (it would be written through), and
    NotRegularFile when one is a pipe, a device or a socket (reading it back
    would wait for ever)."""
    root = os.path.realpath(folder)
    for here, folders, files in os.walk(folder):  # links to folders are listed, not entered
        for name in folders + files:
            path = os.path.join(here, name)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                real = os.path.realpath(path)
                if os.path.commonpath([root, real]) != root:
                    raise LinkOut(
                        errno.EXDEV,
                        f"a symbolic link leads out of `{folder}` (to `{real}`); remove it, or give another folder",
                        path,
                    )
            elif not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
                raise NotRegularFile(
                    errno.EINVAL, f"{file_kind(st.st_mode)} in `{folder}`; remove it, or give another folder", path
                )


@overload
def open_regular(path: str, mode: Literal["rb"] = ..., encoding: None = ..., newline: None = ...) -> BinaryIO: ...
@overload
def open_regular(path: str, mode: Literal["r"], encoding: str | None = ..., newline: str | None = ...) -> TextIO: ...
def open_regular(path: str, mode: str = "rb", encoding: str | None = None, newline: str | None = None) -> IO[Any]:
    """`open(path, mode, ...)` for reading, refusing with NotRegularFile
    anything but a regular file (links are followed). The file is opened
    non-blocking and checked before a byte is read, so a named pipe with no
    writer is refused instead of waiting forever."""
    nonblocking = getattr(os, "O_NONBLOCK", 0)  # not on Windows, which has no named pipes in paths
    fd = os.open(path, os.O_RDONLY | nonblocking | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(errno.EINVAL, f"not a regular file but {file_kind(st.st_mode)}; give a file", path)
        if nonblocking:
            os.set_blocking(fd, True)
        return os.fdopen(fd, mode, encoding=encoding, newline=newline)
    except BaseException:
        os.close(fd)
        raise


def file_kind(mode: int) -> str:
    """What a stat mode that is not a regular file's is, in words."""
    for test, kind in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a pipe"),
        (stat.S_ISCHR, "a terminal or device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return "a special file"


def _temporary(folder: str, name: str) -> tuple[int, str]:
    """A new file next to `name`, created with mode 0666 so that the kernel
    applies the umask (tempfile.mkstemp would make it 0600)."""
    while True:
        tmp = os.path.join(folder, f".{name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue


def fsync_folder(folder: str) -> None:
    """Make a rename or a new file in `folder` durable (a no-op where
    folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def cut_torn_line(path: str) -> int:
    """Cut `path` back, in place, to the end of its last complete line (a
    file that is empty or ends in a newline is left alone); the number of
    bytes cut. Only the tail is read, so a large file costs nothing."""
    with open(path, "r+b") as fh:
        size = fh.seek(0, os.SEEK_END)
        end = size
        while end > 0:
            start = max(0, end - _TAIL_CHUNK)
            fh.seek(start)
            chunk = fh.read(end - start)
            if end == size and chunk.endswith(b"\n"):
                return 0
            at = chunk.rfind(b"\n")
            if at >= 0:
                keep = start + at + 1
                break
            end = start
        else:
            keep = 0
        fh.truncate(keep)
        fh.flush()
        os.fsync(fh.fileno())
        return size - keep


def _lock_path(target: str) -> str:
    """The lock file of an output: a sidecar, so that an atomic rewrite of
    the output (a new inode) does not drop the lock."""
    return os.path.join(target, ".rbg.lock") if os.path.isdir(target) else target + ".lock"


@contextlib.contextmanager
def output_lock(target: str, what: str = "") -> Iterator[None]:
    """Hold the exclusive lock of `target` (a file, or a folder) while the
    block runs. Raises OutputBusy when another process holds it, OSError
    when the lock file cannot be made. The lock file holds the pid and is
    removed on release; one left by a killed process holds no lock (the
    kernel drops it) and is simply taken over."""
    try:
        import fcntl
    except ImportError:  # no advisory locks on this platform: write unlocked
        yield
        return
    if os.path.exists(target) and not (os.path.isfile(target) or os.path.isdir(target)):
        yield  # a device or a pipe: nothing to protect, and no folder to lock in
        return
    path = _lock_path(target)
    try:
        fd = _acquire(fcntl, path, what or f"`{target}`")
    except OSError as exc:
        # Named after the output: the lock file is an implementation detail.
        raise OSError(exc.errno, exc.strerror, target) from None
    try:
        if not os.path.isdir(target):
            _remove_stale_temporaries(target)
        yield
    finally:
        # Removed while still locked, so that no process can lock the old
        # inode after this one lets go (they check the inode, see _acquire).
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)


def _remove_stale_temporaries(target: str) -> None:
    """Remove what `atomic_file` left of `target` when a kill stopped it
    before its rename: under the lock, no living writer owns such a file."""
    real = os.path.realpath(target)
    folder, name = os.path.split(real)
    prefix = f".{name}."
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for entry in names:
        middle = entry[len(prefix) : -len(".tmp")]
        if entry.startswith(prefix) and entry.endswith(".tmp") and len(middle) == 12 and _is_hex(middle):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, entry))


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def _acquire(fcntl: ModuleType, path: str, what: str) -> int:
    while True:
        # O_NOFOLLOW: a link planted as the lock file is refused (ELOOP), never
        # followed to truncate the file it names.
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            who = f"another rbg process (pid {pid})" if pid else "another rbg process"
            raise OutputBusy(f"{what} is being written by {who}", pid) from None
        except BaseException:
            os.close(fd)
            raise
        # The holder before us may have removed the file between our open and
        # our lock: then we hold a lock on a file nobody else can see. Retry.
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            # The pid only names the holder to a refused command: on a full
            # disk the lock holds without it, and the writing says why it fails.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
            return fd
        os.close(fd)


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
