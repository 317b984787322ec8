"""A persistent call cache in SQLite, safe under concurrent writers.

A call is keyed by the server identity, the model, the rendered messages,
every sampling parameter as sent (an unsent temperature differs from a sent
one), the seed and the response schema. Only successful completions are
stored: errors are never cached. No API key reaches the key or the table.

Beside the calls, the cache remembers what a server cannot do (`notes`), so a
rerun does not rediscover it with a failing call, and (a note of no server)
that it was created with prompt keys: then it holds no call under a key of
version 1, and a miss needs no second look.

A cache that cannot be written (a full disk, a read-only file system) never
costs an answer: the failure is reported once (on standard error, and in
`write_error` for the run's summary), writing stops for the rest of the run,
and the caller keeps the completion it paid for. A cache on a read-only
file system is opened for reading alone, so what it holds still answers.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any

import attrs

from rubriclang.canonical import canonical_json
from rubriclang.llm.client import ChatRequest, Completion, messages_json
from rubriclang.memo import IdentityMemo
from rubriclang.paths import user_cache_dir
from rubriclang.safeio import describe_os_error


def default_path() -> str:
    """`$XDG_CACHE_HOME/rubriclang/calls.sqlite`, else under `~/.cache`."""
    return os.path.join(user_cache_dir(), "calls.sqlite")


def call_key(identity: str, model: str | None, request: ChatRequest, profile: str | None = None) -> str:
    """The cache key of a call: the server, the request body and, for a
    criterion on a named model profile, the profile's name. It is the SHA-256
    of `{"body": BODY, "profile": ..., "server": ...}` as canonical JSON;
    that text is assembled from the messages' JSON and the JSON of
    everything else (the same for every call of a criterion, so kept), which
    gives exactly the bytes `json.dumps(..., sort_keys=True)` of the whole
    would.

    A judge's request has a `prompt_digest` (of the template and the values
    its messages are rendered from, `prompting.Prompt.digest`), which then
    stands for the messages: the key of version 2, with `"messages":
    "prompt/2:DIGEST"` in the body, so a cache hit renders nothing and the
    messages are not read. Other calls, and caches written before version
    2, have keys of version 1: of the messages themselves (`call_keys`)."""
    digest = request.prompt_digest
    if digest is not None:
        return prompt_key(identity, model, request.sampling, request.response_format, digest, profile)
    before, after = _frame(identity, model, request.sampling, request.response_format, profile)
    return hashlib.sha256((before + messages_json(request.messages) + after).encode()).hexdigest()


def prompt_key(
    identity: str, model: str | None, sampling, response_format: dict | None, digest: str, profile: str | None = None
) -> str:
    """`call_key` of a judge's request with this sampling, response format
    and prompt digest (the key of version 2), without the request."""
    return hashlib.sha256(
        "".join(prompt_key_text(identity, model, sampling, response_format, digest, profile)).encode()
    ).hexdigest()


def prompt_key_text(
    identity: str, model: str | None, sampling, response_format: dict | None, digest: str, profile: str | None = None
) -> tuple[str, str, str]:
    """What `prompt_key` hashes, in three parts and unhashed (two of them
    kept from call to call): equal for two calls exactly when their keys are."""
    before, after = _frame(identity, model, sampling, response_format, profile)
    return before, '"prompt/2:' + digest + '"', after


def call_keys(identity: str, model: str | None, request: ChatRequest, profile: str | None = None) -> list[str]:
    """Every key a cached answer to `request` may be under, the current one
    first: for a judge's request, also the key of its messages (version 1),
    under which caches written before version 2 hold it."""
    key = call_key(identity, model, request, profile)
    if request.prompt_digest is None:
        return [key]
    return [key, call_key(identity, model, attrs.evolve(request, prompt_digest=None), profile)]


def _stored(response: str) -> Completion | None:
    """A cached completion; None for one whose text is not a string (stored
    by a version that kept a reply's list of content parts as it came), so
    that the call is made again, and read as text."""
    data = json.loads(response)
    return Completion.from_json(data, cached=True) if type(data.get("text")) is str else None


# The note (of no server) saying the cache was created with keys of version 2.
_PROMPT_KEYS = ("", "keys")


def _tables(db: sqlite3.Connection) -> set[str]:
    """Which of the cache's tables the file has."""
    found = db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('calls', 'notes')")
    return {name for (name,) in found}


# (identity, model, sampling, id(response_format), profile) -> (before, after)
_FRAMES: IdentityMemo[tuple[str, str]] = IdentityMemo(256)


def _frame(
    identity: str, model: str | None, sampling, response_format: dict | None, profile: str | None
) -> tuple[str, str]:
    """The key's canonical JSON before and after the messages' JSON. The
    response format is remembered by identity and kept alive beside its
    frame, so an id is never mistaken for another dict's; a criterion's
    format is one dict for the whole run (`prompting.response_format`)."""
    memo = (identity, model, sampling, id(response_format), profile)
    hit = _FRAMES.get(memo, response_format)
    if hit is not None:
        return hit
    body = ChatRequest((), sampling, response_format).body(model)
    marker = "\x00messages\x00"  # a placeholder the JSON of other fields cannot contain unescaped
    body["messages"] = marker
    key = {"server": identity, "body": body}
    if profile is not None:
        key["profile"] = profile
    text = canonical_json(key)
    quoted = canonical_json(marker)
    at = text.index(quoted)  # the first: "body" sorts first, and "messages" before every later key in it
    return _FRAMES.put(memo, response_format, (text[:at], text[at + len(quoted) :]))


# What a cache that stops being usable can raise: SQLite's errors (full,
# read-only, I/O, locked past the busy timeout) and the operating system's.
_FAULTS = (sqlite3.DatabaseError, OSError)


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


def _read_only_fs(path: str) -> bool:
    """Whether the folder of `path` is on a file system mounted read-only."""
    try:
        return bool(os.statvfs(os.path.dirname(os.path.abspath(path))).f_flag & os.ST_RDONLY)
    except OSError:
        return False


class CallCache:
    """(key) -> completion. Writers from several processes are serialised by
    SQLite (WAL journal, busy timeout); each thread has its own connection.

    A write that fails switches writing off, reported once through `warn`
    (standard error by default) and kept in `write_error`; a read that fails
    switches the cache off altogether (every lookup then misses). Neither
    raises: a call already paid for is never lost to its cache."""

    def __init__(self, path: str | None = None, warn: Callable[[str], None] = _warn):
        path = path or default_path()
        self.path = path
        self._warn = warn
        self.write_error: str | None = None  # why writing stopped, once it has
        self._readable = True
        self._local = threading.local()
        self.hits = 0
        self.misses = 0
        self._read_only = os.path.isfile(path) and _read_only_fs(path)
        if self._read_only:
            # SQLite cannot open a WAL database for writing here, nor make its
            # shared-memory file: read it as a file nothing else changes.
            self._conn()
            self.version_1_keys = self.note(*_PROMPT_KEYS) is None
            self._stop("its file system is mounted read-only")
            return
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        db = self._conn()
        if len(_tables(db)) < 2:
            # Created here (BEGIN IMMEDIATE: by one process, if several start
            # at once); `with db` commits, or rolls back on an error.
            with db:
                db.execute("BEGIN IMMEDIATE")
                had = _tables(db)
                db.execute(
                    "CREATE TABLE IF NOT EXISTS calls ("
                    " key TEXT PRIMARY KEY, server TEXT NOT NULL, model TEXT NOT NULL,"
                    " response TEXT NOT NULL, prompt_tokens INTEGER, completion_tokens INTEGER)"
                )
                db.execute(
                    "CREATE TABLE IF NOT EXISTS notes ("
                    " server TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (server, name))"
                )
                if "calls" not in had:  # no call in it yet, so none under a key of version 1
                    self._mark_prompt_keys(db)
        # A cache written before this note may hold judges' calls under the
        # key of their messages (version 1): `calls.Caller` looks there too.
        self.version_1_keys = self.note(*_PROMPT_KEYS) is None

    def _conn(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            if self._read_only:
                uri = "file:" + urllib.parse.quote(os.path.abspath(self.path)) + "?immutable=1"
                db = sqlite3.connect(uri, uri=True, isolation_level=None)
            else:
                db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute("PRAGMA busy_timeout=30000")
            self._local.db = db
        return db

    def _stop(self, reason: str, reading: bool = False) -> None:
        """No more writes in this run (nor reads, when `reading` failed); said once."""
        if reading:
            self._readable = False
        if self.write_error is None:
            self.write_error = reason
            self._warn(
                f"the call cache `{self.path}` cannot be {'read' if reading else 'written'} ({reason}): this run "
                "keeps every answer but caches no more of them (make room, or give another --cache)"
            )

    def _fault(self, exc: BaseException, reading: bool = False) -> None:
        self._stop(describe_os_error(exc) if isinstance(exc, OSError) else str(exc), reading)

    def _write(self, sql: str, params: tuple) -> None:
        if self.write_error is not None:
            return
        try:
            self._conn().execute(sql, params)
        except _FAULTS as exc:
            self._fault(exc)

    def get(self, key: str) -> Completion | None:
        rows = self._read("SELECT response FROM calls WHERE key = ?", (key,))
        found = _stored(rows[0][0]) if rows else None
        if found is None:
            self.misses += 1
            return None
        self.hits += 1
        return found

    def get_many(self, keys: list[str]) -> dict[str, Completion]:
        """The cached completions of those of `keys` that are cached, in one
        query (an item's criteria). Unlike `get`, it adds nothing to `hits`
        and `misses`: the caller (`calls.Caller.cached`) counts the hits it
        uses in its `usage`."""
        where = "key = ?" if len(keys) == 1 else f"key IN ({','.join('?' * len(keys))})"
        rows = self._read(f"SELECT key, response FROM calls WHERE {where}", tuple(keys))
        found = {key: _stored(response) for key, response in rows}
        return {key: completion for key, completion in found.items() if completion is not None}

    def _read(self, sql: str, params: tuple) -> list:
        """The rows of a query; none once the cache could not be read."""
        if not self._readable:
            return []
        try:
            return self._conn().execute(sql, params).fetchall()
        except _FAULTS as exc:
            self._fault(exc, reading=True)
            return []

    def put(self, key: str, server: str, completion: Completion) -> None:
        """Store a completion; a cache that cannot be written keeps nothing, and says so once."""
        self._write(
            "INSERT OR REPLACE INTO calls (key, server, model, response, prompt_tokens, completion_tokens)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (
                key,
                server,
                completion.model,
                json.dumps(completion.to_json(), sort_keys=True, ensure_ascii=False),
                completion.prompt_tokens,
                completion.completion_tokens,
            ),
        )

    def note(self, server: str, name: str) -> str | None:
        """What was remembered about a server (e.g. that it refuses structured output)."""
        rows = self._read("SELECT value FROM notes WHERE server = ? AND name = ?", (server, name))
        return rows[0][0] if rows else None

    def set_note(self, server: str, name: str, value: str) -> None:
        self._write("INSERT OR REPLACE INTO notes (server, name, value) VALUES (?, ?, ?)", (server, name, value))

    def stats(self) -> dict[str, Any]:
        db = self._conn()
        n, p, c = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0) FROM calls"
        ).fetchone()
        models = db.execute("SELECT model, COUNT(*) FROM calls GROUP BY model ORDER BY model").fetchall()
        size = os.path.getsize(self.path) if os.path.exists(self.path) else 0
        return {
            "path": self.path,
            "entries": n,
            "prompt_tokens": p,
            "completion_tokens": c,
            "bytes": size,
            "models": dict(models),
        }

    def clear(self) -> int:
        db = self._conn()
        n = db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
        with db:
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM calls")
            db.execute("DELETE FROM notes")
            self._mark_prompt_keys(db)  # an empty cache holds no key of version 1
        db.execute("VACUUM")
        self.version_1_keys = False
        return n

    @staticmethod
    def _mark_prompt_keys(db: sqlite3.Connection) -> None:
        db.execute("INSERT OR REPLACE INTO notes (server, name, value) VALUES (?, ?, ?)", (*_PROMPT_KEYS, "2"))

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None
