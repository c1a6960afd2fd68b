"""The verdict cache: a judgement already made is never paid for again.

Content-addressed: the key is a hash of everything that decides the verdict (the judge's model,
URL and API, the sampling parameters, the template version, the messages, the allowed choices).
Entries live in memory (least recently used dropped first) and, optionally, in a SQLite file
that several server processes (replicas on one host or a shared volume) read and write at once:
WAL journal, one connection per thread, writes that never block a reader for long.
"""

from __future__ import annotations

import collections
import hashlib
import json
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from reward_service.judges.calls import JudgeCall, JudgeEndpoint, JudgeReply

#: Bumped when the key's recipe changes, so old entries of a shared file are never misread.
KEY_VERSION = 1
_SQLITE_TIMEOUT_S = 5.0


def verdict_key(endpoint: JudgeEndpoint, call: JudgeCall) -> str:
    """The cache key of ``call`` to ``endpoint``: a SHA-256 over what decides the verdict.

    Limits, retries, names and the API key are left out: they change how the call is made,
    not what the judge answers.
    """
    material = {
        "v": KEY_VERSION,
        "model": endpoint.model,
        "base_url": endpoint.base_url.rstrip("/"),
        "api": endpoint.api,
        "temperature": call.temperature,
        "max_tokens": call.max_tokens,
        "seed": call.seed,
        "choices": list(call.choices),
        "template_version": call.template_version,
        "messages": [[m["role"], m["content"]] for m in call.messages],
    }
    return hashlib.sha256(json.dumps(material, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()


@dataclass(frozen=True)
class CacheStats:
    """Counters since the cache was made (what /metrics reads)."""

    hits: int
    misses: int
    stores: int
    entries: int


class VerdictCache:
    """Verdicts by key: an LRU in memory, backed by a SQLite file when ``path`` is given.

    Thread-safe. A hit in memory costs a dict lookup under a lock; a hit only on disk is
    copied into memory.
    """

    def __init__(self, max_entries: int = 100_000, path: str | Path | None = None) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, not {max_entries}")
        self.max_entries = max_entries
        self.path = Path(path) if path is not None else None
        self._memory: collections.OrderedDict[str, JudgeReply] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._local = threading.local()
        self._hits = self._misses = self._stores = 0
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db()  # create the table now: a bad path fails at start-up, not on the first verdict

    @classmethod
    def from_spec(cls, spec: str, max_entries: int = 100_000) -> VerdictCache | None:
        """``"memory"``, ``"sqlite:PATH"`` or ``"off"`` (None) -- a judge's ``cache`` setting."""
        if spec == "off":
            return None
        if spec == "memory":
            return cls(max_entries)
        if spec.startswith("sqlite:") and len(spec) > len("sqlite:"):
            return cls(max_entries, spec.removeprefix("sqlite:"))
        raise ValueError(f"cache must be 'memory', 'off' or 'sqlite:PATH', not {spec!r}")

    def get(self, key: str) -> JudgeReply | None:
        """The cached reply (``cached=True``), or None."""
        with self._lock:
            reply = self._memory.get(key)
            if reply is not None:
                self._memory.move_to_end(key)
                self._hits += 1
                return reply
        if self.path is not None:
            row = self._db().execute("SELECT text, prompt_tokens, completion_tokens FROM verdicts WHERE key = ?",
                                     (key,)).fetchone()
            if row is not None:
                reply = JudgeReply(row[0], True, row[1], row[2])
                with self._lock:
                    self._remember(key, reply)
                    self._hits += 1
                return reply
        with self._lock:
            self._misses += 1
        return None

    def put(self, key: str, reply: JudgeReply) -> None:
        """Stores ``reply`` (as a cached one) under ``key``, in memory and in the file."""
        stored = JudgeReply(reply.text, True, reply.prompt_tokens, reply.completion_tokens)
        with self._lock:
            self._remember(key, stored)
            self._stores += 1
        if self.path is not None:
            db = self._db()
            with db:
                db.execute("INSERT OR REPLACE INTO verdicts (key, text, prompt_tokens, completion_tokens) "
                           "VALUES (?, ?, ?, ?)", (key, stored.text, stored.prompt_tokens, stored.completion_tokens))

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(self._hits, self._misses, self._stores, len(self._memory))

    def close(self) -> None:
        """Closes this thread's file connection (others close when their thread ends)."""
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None

    def _remember(self, key: str, reply: JudgeReply) -> None:
        self._memory[key] = reply
        self._memory.move_to_end(key)
        while len(self._memory) > self.max_entries:
            self._memory.popitem(last=False)

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(str(self.path), timeout=_SQLITE_TIMEOUT_S, isolation_level=None,
                                 check_same_thread=True)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("CREATE TABLE IF NOT EXISTS verdicts (key TEXT PRIMARY KEY, text TEXT NOT NULL, "
                       "prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0)")
            db.isolation_level = ""  # back to implicit transactions: `with db:` commits a write
            self._local.db = db
        return db
