"""A bounded host-side cache of compile *failures*: a GRPO group's identical broken programs compile once.

A group often holds several identical completions; when one does not compile, the others need
not start a compiler again. The key is what decides the compile: the language as sent to the
sandbox (name, source file, compile and run argv, environment, address-space backstop: the
wire's ``language`` object), the sha256 of the source and of every file written before the
compile step (``ExecutionRequest.files``). The value is the sandbox's raw compile report, so a
hit builds exactly the result the first failure built (sandbox/verdict.py): COMPILE_ERROR with
the compiler's exit status and stderr, every case NOT_RUN.

Only deterministic failures are stored: the compiler exited non-zero by itself (no limit, no
timeout, no signal, no outside kill), so a compile that failed because the machine was busy is
tried again next time. STDIO requests only (the style with a compile step; a Python syntax error
on the fast path counts), and not when the request fetches files (their contents after a failed
compile are not cached). Successful compiles have a cache of their own, on disk, with their
artifacts (compile_artifacts.py): read back right after the compile step, before the program runs.

Thread-safe; ``hits`` and ``misses`` count lookups of cacheable requests.
"""

from __future__ import annotations

import collections
import copy
import hashlib
import json
import threading
from typing import Any

from reward_core.sandbox_contract import ExecutionRequest, TestStyle

DEFAULT_ENTRIES = 256          # x at most 64 KB of compiler output each (the supervisor's cap)


def cache_key(request: ExecutionRequest, wire_language: dict) -> str | None:
    """The key of ``request``'s compile, or None when its compile result is not cacheable."""
    if TestStyle(request.style) is not TestStyle.STDIO or request.fetch_files:
        return None
    if not wire_language.get("compile") and not wire_language.get("fast_path"):
        return None                          # no compile step (an interpreter): nothing to cache
    h = hashlib.sha256()
    h.update(json.dumps(wire_language, sort_keys=True, default=str).encode())
    h.update(b"\0source\0" + hashlib.sha256(request.code.encode("utf-8", "surrogatepass")).digest())
    for name in sorted(request.files):
        h.update(b"\0file\0" + name.encode("utf-8", "surrogatepass") + b"\0"
                 + hashlib.sha256(bytes(request.files[name])).digest())
    return h.hexdigest()


def deterministic_failure(report: Any) -> dict | None:
    """The report's compile step when it is a failure worth caching (see the module docstring), else None."""
    if type(report) is not dict or report.get("status") != "ok":
        return None
    comp = report.get("compile")
    if type(comp) is not dict or comp.get("ok") is not False:
        return None
    code = comp.get("exit_code")
    if type(code) is not int or code == 0 or comp.get("signal") is not None or comp.get("timed_out") \
            or comp.get("limit") or comp.get("killed_outside"):
        return None
    return comp


class CompileFailureCache:
    """LRU of ``key -> raw compile report`` for compile failures; at most ``max_entries``."""

    def __init__(self, max_entries: int = DEFAULT_ENTRIES) -> None:
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0
        self._entries: collections.OrderedDict[str, dict] = collections.OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, key: str | None, n_cases: int) -> dict | None:
        """A report answering the request from the cache, or None (a miss: run it)."""
        if key is None or self.max_entries <= 0:
            return None
        with self._lock:
            comp = self._entries.get(key)
            if comp is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
        return {"v": 1, "status": "ok", "compile": copy.deepcopy(comp),
                "cases": [{"status": "not_run"} for _ in range(n_cases)], "process": None, "stdout": "", "stderr": ""}

    def store(self, key: str | None, report: Any) -> None:
        """Keeps the report's compile step if it is a deterministic failure."""
        comp = deterministic_failure(report) if key is not None and self.max_entries > 0 else None
        if comp is None:
            return
        with self._lock:
            self._entries[key] = copy.deepcopy(comp)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "entries": len(self._entries)}
