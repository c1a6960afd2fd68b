"""The reward cache: a repeated rollout is answered from what its verifier said before, never verified twice.

Content-addressed: the key is a SHA-256 over (task name, the task's verifier version hash, the
reference as canonical JSON, the completion, the prompt and the metadata -- the last two left out
only for a task that declares it never reads them, ``Task.cache_ignores``). A changed verifier
(code, options, data files: ``reward_service.router.versioning``) has another version, so it never gets an
older answer. The value is the task's outcome before the group stage (score, status, components,
extracted, detail, steps, explanation): a groupwise task's group stage runs again on it.

Only scored outcomes (OK, NO_ANSWER) of tasks with ``Task.cacheable`` (deterministic verifiers, not
a remote model) are stored: a TIMEOUT, ERROR or UNAVAILABLE is retried next time.

Bounded: in memory, least recently used entries go past ``max_entries`` or ``max_bytes`` (the
serialized outcome's size plus a fixed overhead per entry). With ``path``, also an SQLite file
(stdlib ``sqlite3``, WAL mode) that several replicas on one machine or volume can share: a memory
miss reads it (``get_many``: hundreds of keys a query), and stored outcomes are written to it in
batches by a background thread (``flush()`` waits for them). The file keeps at most
``max_disk_entries`` rows, the oldest written deleted first.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import hashlib
import json
import logging
import math
import queue
import sqlite3
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson

from reward_core.contract import Rollout, RolloutStatus, StepScore, canonical_json_bytes
from reward_service.router.cache_answers import cached_result_fields
from reward_service.task_api import TaskOutcome
from reward_service.tasks.explanation import cap

logger = logging.getLogger(__name__)

#: Part of every key: a change in what is stored (the outcome's fields) changes every key.
KEY_FORMAT = "reward-cache/2"  # 2: references and metadata as canonical_json
#: Bytes counted per entry beyond its serialized value (key, LRU links, object headers).
ENTRY_OVERHEAD_BYTES = 200
#: Most rows one background write puts into the SQLite file in one transaction.
WRITE_BATCH = 512
#: Most keys one query reads from the SQLite file (``get_many``; SQLite allows 32,766 parameters).
READ_BATCH = 500

_FIELDS = tuple(f.name for f in dataclasses.fields(TaskOutcome))
_FIELD_SET = frozenset(_FIELDS)
_STATUS_BY_VALUE = {int(status): status for status in RolloutStatus}


def cache_key(rollout: Rollout, version: str, ignores: frozenset[str] = frozenset(),
              dedup_key: tuple[str, ...] | None = None) -> bytes:
    """The content address of ``rollout`` scored by the verifier at ``version`` (32 bytes).

    Built on ``Rollout.dedup_key()`` (task, completion, reference and metadata as ``canonical_json``, prompt),
    which the caller may pass when it has it already.
    """
    if dedup_key is None:  # the parts straight from the rollout, the JSON ones in UTF-8 already
        ref = canonical_json_bytes(rollout.reference)
        meta = canonical_json_bytes(rollout.metadata) if rollout.metadata and "metadata" not in ignores else b""
        prompt = rollout.prompt if "prompt" not in ignores else ""
        return _digest(_key_prefix(rollout.task, version), ref, rollout.completion, prompt, meta)
    task, completion, reference, prompt, metadata = dedup_key
    if ignores:
        prompt = "" if "prompt" in ignores else prompt
        metadata = "" if "metadata" in ignores else metadata
    return _digest(_key_prefix(task, version), reference.encode("utf-8", "surrogatepass"), completion, prompt,
                   metadata.encode("utf-8", "surrogatepass"))


def _digest(prefix: bytes, reference: bytes, completion: str, prompt: str, metadata: bytes) -> bytes:
    """SHA-256 over the key's parts, each as its length (8 bytes) and UTF-8, in one call (a rescore hashes
    100,000s of keys: the same digest as fed part by part)."""
    text = completion.encode("utf-8", "surrogatepass")
    prompt_bytes = prompt.encode("utf-8", "surrogatepass") if prompt else b""
    return hashlib.sha256(b"".join((prefix, len(reference).to_bytes(8, "big"), reference,
                                    len(text).to_bytes(8, "big"), text, len(prompt_bytes).to_bytes(8, "big"),
                                    prompt_bytes, len(metadata).to_bytes(8, "big"), metadata))).digest()


def key_function(task: str, version: str, ignores: frozenset[str] = frozenset()) -> Callable[[Rollout], bytes]:
    """``cache_key(rollout, version, ignores)`` for rollouts of ``task``, with what all of them share made once
    (a rescore asks for 100,000s of keys)."""
    use_prompt, use_metadata = "prompt" not in ignores, "metadata" not in ignores
    row_key = row_key_function(task, version)

    def key(rollout: Rollout) -> bytes:
        if (use_prompt and rollout.prompt) or (use_metadata and rollout.metadata):
            return cache_key(rollout, version, ignores)
        return row_key(rollout.completion, rollout.reference)

    return key


def row_key_function(task: str, version: str) -> Callable[[str, Mapping[str, Any]], bytes]:
    """``key(completion, reference)``: the ``cache_key`` of a rollout of ``task`` with that completion and
    reference and no prompt or metadata (the same digest whatever the task's ``cache_ignores``), from the
    fields alone: a rescore of a stored file keys 100,000s of lines without a Rollout for each."""
    prefix = _key_prefix(task, version)
    sha256, canonical, join = hashlib.sha256, canonical_json_bytes, b"".join
    no_prompt_no_metadata = bytes(16)  # both lengths 0

    def key(completion: str, reference: Mapping[str, Any]) -> bytes:
        ref = canonical(reference)
        text = completion.encode("utf-8", "surrogatepass")
        return sha256(join((prefix, len(ref).to_bytes(8, "big"), ref, len(text).to_bytes(8, "big"), text,
                            no_prompt_no_metadata))).digest()

    return key


@functools.lru_cache(maxsize=1024)
def _key_prefix(task: str, version: str) -> bytes:
    """The first parts of every key of one task at one version, each as its length (8 bytes) and UTF-8."""
    chunks = []
    for part in (KEY_FORMAT, task, version):
        data = part.encode("utf-8", "surrogatepass")
        chunks += (len(data).to_bytes(8, "big"), data)
    return b"".join(chunks)


def encode_outcome(outcome: TaskOutcome) -> str:
    """The outcome as compact JSON (every field of TaskOutcome)."""
    data: dict[str, Any] = {}
    for name in _FIELDS:
        value = getattr(outcome, name)
        if name == "status":
            value = int(value)
        elif name == "steps":
            value = [step.to_dict() for step in value]
        elif isinstance(value, Mapping):
            value = dict(value)
        data[name] = value
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def decode_outcome(text: str) -> TaskOutcome | None:
    """The outcome ``encode_outcome`` wrote; None when it does not fit this version's TaskOutcome."""
    try:
        data = _loads(text)
        if type(data) is not dict or data.keys() != _FIELD_SET:
            return None
        status = _STATUS_BY_VALUE.get(data["status"])  # (RolloutStatus(value), without the enum's call)
        if status is None:
            return None
        data["status"] = status
        data["steps"] = tuple(StepScore(**step) for step in data["steps"]) if data["steps"] else ()
        return TaskOutcome(**data)
    except (ValueError, TypeError, KeyError):
        return None


def stored_result_fields(text: str, task: str, version: str) -> tuple[dict[str, Any], RolloutStatus] | None:
    """``cached_result_fields(decode_outcome(text), task, version)`` and the outcome's status (None where either
    gives None), without the TaskOutcome for an outcome of the common shape (no steps, the task's own
    explanation, components a JSON object): ``rescore``'s workers answer 100,000s of lines from the file."""
    try:
        data = _loads(text)
    except (ValueError, TypeError):
        data = None
    if type(data) is dict and data.keys() == _FIELD_SET:
        status, score, components, explanation = data["status"], data["score"], data["components"], \
            data["explanation"]
        status = _STATUS_BY_VALUE.get(status) if type(status) is int else None
        if (status is not None and not data["steps"] and type(components) is dict and type(explanation) is str
                and explanation and type(score) is float):
            if not status.scored or not math.isfinite(score):
                return None
            fields = {"score": score, "status": status.name, "scored": True, "components": components or {task: score},
                      "extracted": data["extracted"],
                      "error": data["detail"] if status == RolloutStatus.NO_ANSWER else "",
                      "explanation": cap(explanation), "elapsed_ms": 0.0}
            if version:
                fields["verifier_version"] = version
            return fields, status
    outcome = decode_outcome(text)
    fields = cached_result_fields(outcome, task, version) if outcome is not None else None
    return (fields, outcome.status) if fields is not None else None  # type: ignore[union-attr]


def _loads(text: str) -> Any:
    """``json.loads(text)`` for what ``encode_outcome`` wrote, with orjson where the two agree: not on NaN or
    infinities (orjson reads none) nor on integers past 64 bits (orjson reads a float) in the score or components."""
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)
    if type(data) is dict:
        score, components = data.get("score"), data.get("components")
        if type(score) is float and not -_BIG < score < _BIG:
            return json.loads(text)
        if components and type(components) is dict:  # (a plain loop: a new engine reads 100,000s of outcomes)
            for n in components.values():
                if type(n) is float and not -_BIG < n < _BIG:
                    return json.loads(text)
    return data


#: orjson reads an integer past 64 bits as a float at least this large.
_BIG = 2.0**63


@dataclasses.dataclass(frozen=True)
class CacheStats:
    """Counters since the cache was made (read by ``/metrics``)."""

    hits: int
    misses: int
    stores: int
    evictions: int
    entries: int
    bytes: int


class _Store:
    """The optional SQLite file: reads on the caller's thread, writes batched on a background thread."""

    def __init__(self, path: str | Path, max_rows: int) -> None:
        self.path = str(path)
        self.max_rows = max_rows
        self._db = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS rewards (key BLOB PRIMARY KEY, value TEXT NOT NULL)")
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(rewards)")}
            if "answer" not in columns:  # (a file of an earlier build: its rows have none)
                try:
                    self._db.execute("ALTER TABLE rewards ADD COLUMN answer BLOB")
                except sqlite3.OperationalError as exc:  # another replica added it first
                    if "duplicate column" not in str(exc):
                        raise
        self._writes: queue.SimpleQueue[tuple[bytes, str, bytes | None] | threading.Event | None] = \
            queue.SimpleQueue()
        self._writer = threading.Thread(target=self._write_loop, name="reward-cache-writer", daemon=True)
        self._writer.start()

    def get(self, key: bytes) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM rewards WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def empty(self) -> bool:
        """Whether the file holds no row (those still queued for writing not counted)."""
        with self._lock:
            return self._db.execute("SELECT NOT EXISTS (SELECT 1 FROM rewards)").fetchone()[0] == 1

    def get_many(self, keys: list[bytes]) -> dict[bytes, str]:
        """The stored values of those of ``keys`` the file holds, read ``READ_BATCH`` keys a query."""
        found: dict[bytes, str] = {}
        for start in range(0, len(keys), READ_BATCH):
            batch = keys[start:start + READ_BATCH]
            query = f"SELECT key, value FROM rewards WHERE key IN ({','.join('?' * len(batch))})"
            with self._lock:
                found.update(self._db.execute(query, batch).fetchall())
        return found

    def put(self, key: bytes, value: str, answer: bytes | None = None) -> None:
        self._writes.put((key, value, answer))

    def flush(self) -> None:
        """Returns once every earlier ``put`` is in the file."""
        done = threading.Event()
        self._writes.put(done)
        done.wait()

    def _write_loop(self) -> None:
        while True:
            first = self._writes.get()
            batch: list[tuple[bytes, str, bytes | None]] = []
            events: list[threading.Event] = []
            stop = False
            item: Any = first
            while True:
                if item is None:
                    stop = True
                elif isinstance(item, threading.Event):
                    events.append(item)
                else:
                    batch.append(item)
                if stop or len(batch) >= WRITE_BATCH or self._writes.empty():
                    break
                item = self._writes.get()
            if batch:
                self._write(batch)
            for event in events:
                event.set()
            if stop:
                return

    def _write(self, batch: list[tuple[bytes, str, bytes | None]]) -> None:
        try:
            with self._lock:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany("INSERT OR REPLACE INTO rewards (key, value, answer) VALUES (?, ?, ?)", batch)
                # a (re)written row gets the next rowid: the oldest rows have the smallest ones
                self._db.execute("DELETE FROM rewards WHERE rowid <= (SELECT max(rowid) FROM rewards) - ?",
                                 (self.max_rows,))
                self._db.execute("COMMIT")
        except sqlite3.Error as exc:  # a full disk or a locked file costs cache hits, never a result
            logger.warning("reward cache %s: could not store %d outcomes: %s", self.path, len(batch), exc)
            with self._lock:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")

    def close(self) -> None:
        self._writes.put(None)
        self._writer.join()
        with self._lock:
            self._db.close()


class RewardCache:
    """Scored outcomes by content address: an LRU in memory, optionally backed by a shared SQLite file."""

    def __init__(self, max_entries: int = 500_000, max_bytes: int = 512 * 2**20, path: str | Path | None = None,
                 max_disk_entries: int = 10_000_000) -> None:
        if max_entries < 1 or max_bytes < 1 or max_disk_entries < 1:
            raise ValueError(f"reward cache bounds must be >= 1: entries {max_entries}, bytes {max_bytes}, "
                             f"disk entries {max_disk_entries}")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._memory: collections.OrderedDict[bytes, tuple[TaskOutcome, int]] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._bytes = 0
        self._hits = self._misses = self._stores = self._evictions = 0
        self._store = _Store(path, max_disk_entries) if path else None

    @property
    def path(self) -> str:
        return self._store.path if self._store else ""

    def get(self, key: bytes) -> TaskOutcome | None:
        """The outcome stored under ``key`` (memory, then the file), counted as a hit or a miss."""
        with self._lock:
            entry = self._memory.get(key)
            if entry is not None:
                self._memory.move_to_end(key)
                self._hits += 1
                return entry[0]
        outcome = None
        if self._store is not None:
            text = self._store.get(key)
            outcome = decode_outcome(text) if text is not None else None
            if outcome is not None:
                self._remember(key, outcome, len(text))  # type: ignore[arg-type]
        with self._lock:
            if outcome is None:
                self._misses += 1
            else:
                self._hits += 1
        return outcome

    @property
    def empty(self) -> bool:
        """Whether no lookup can hit now: nothing in memory, and no file behind it (or an empty one)."""
        return not self._memory and (self._store is None or self._store.empty())

    def get_many(self, keys: list[bytes]) -> list[TaskOutcome | None]:
        """``get`` of each key, in order (each counted as a hit or a miss), the file read in a few queries."""
        memory = self._memory
        with self._lock:
            found = [memory.get(key) for key in keys]
            hits = [key for key, entry in zip(keys, found) if entry is not None]
            for key in hits:
                memory.move_to_end(key)
        outcomes: list[TaskOutcome | None] = [entry[0] if entry is not None else None for entry in found]
        missing = [i for i, outcome in enumerate(outcomes) if outcome is None]
        if missing and self._store is not None:
            stored = self._store.get_many([keys[i] for i in missing])
            read: list[tuple[bytes, TaskOutcome, int]] = []
            for i in missing:
                text = stored.get(keys[i])
                outcome = decode_outcome(text) if text is not None else None
                if outcome is not None:
                    read.append((keys[i], outcome, len(text)))  # type: ignore[arg-type]
                    outcomes[i] = outcome
            self._remember_many(read)
        with self._lock:
            found_now = sum(outcome is not None for outcome in outcomes)
            self._hits += found_now
            self._misses += len(keys) - found_now
        return outcomes

    def count_hits(self, hits: int) -> None:
        """Counts ``hits`` lookups answered from the SQLite file by other processes (``rescore``'s workers)."""
        with self._lock:
            self._hits += hits

    def put(self, key: bytes, outcome: TaskOutcome, answer: bytes | None = None) -> bool:
        """Stores a scored outcome; an unscored one (or a non-finite score) is not stored. Returns whether stored.

        ``answer``: the outcome's result line fields as ``cache_answers.stored_answer`` makes them, kept beside it
        in the file (``rescore``'s workers write them as they are)."""
        if not outcome.status.scored or outcome.score != outcome.score or abs(outcome.score) == float("inf"):
            return False
        text = encode_outcome(outcome)
        self._remember(key, outcome, len(text))
        with self._lock:
            self._stores += 1
        if self._store is not None:
            self._store.put(key, text, answer)
        return True

    def _remember(self, key: bytes, outcome: TaskOutcome, size: int) -> None:
        self._remember_many([(key, outcome, size)])

    def _remember_many(self, entries: list[tuple[bytes, TaskOutcome, int]]) -> None:
        """Puts (key, outcome, serialized size) entries in memory, in order, then evicts the least recently used
        past the bounds (what evicting after each entry leaves: the newest entries that fit)."""
        memory = self._memory
        with self._lock:
            for key, outcome, size in entries:
                cost = size + ENTRY_OVERHEAD_BYTES
                old = memory.pop(key, None)
                if old is not None:
                    self._bytes -= old[1]
                memory[key] = (outcome, cost)
                self._bytes += cost
            while memory and (len(memory) > self.max_entries or self._bytes > self.max_bytes):
                _, (_, freed) = memory.popitem(last=False)
                self._bytes -= freed
                self._evictions += 1

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(self._hits, self._misses, self._stores, self._evictions, len(self._memory), self._bytes)

    def flush(self) -> None:
        """Waits until every stored outcome is in the SQLite file (no-op without one)."""
        if self._store is not None:
            self._store.flush()

    def close(self) -> None:
        """Writes what is pending to the file and closes it; idempotent."""
        store, self._store = self._store, None
        if store is not None:
            store.close()
