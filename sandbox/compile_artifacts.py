"""A bounded on-disk cache of successful compiles: the same program compiles once, not once per execution.

A GRPO group often holds identical completions, and a client may send the same program again (a
rescore, an evaluation of the same checkpoint). When a STDIO program of a compiled language compiled
before, its compile step is answered from here: the supervisor skips the compiler and every case's
untrusted process writes the cached artifacts into its scratch directory before it runs
(runtime/supervisor.py, runtime/untrusted.py).

**Key.** What decides the compile's output: the language as sent to the sandbox (the wire's
``language`` object: name, source file, compile and run argv, environment), the language's
``artifacts`` patterns, the toolchain's version (the first line of the language's version command, as
ListLanguages reports it: a compiler upgrade misses), the sha256 of the source and of every file
written before the compile (``ExecutionRequest.files``). Without a known version nothing is cached.

**Value.** The files the compile left that the language's ``artifacts`` name (``main``, ``*.class``),
and the compiler's stdout and stderr (a hit reports the first compile's warnings, with ``cached`` set
and no compile time). They are read by a fresh untrusted process right after the compile step and
before any case runs (role ``fetch``, runtime/scratch_files.py), so nothing the program does at run
time reaches them; the host writes them here (a directory the sandbox never mounts: the process backend
binds no host path for it, a container has no volume), and a later execution gets a copy over its
wire, never a path.

**Integrity.** Each entry is a directory written under a temporary name and renamed into place, with
a manifest holding each file's sha256 and size. A lookup re-reads and re-hashes everything: an entry
that is incomplete, unreadable or whose bytes do not match (a corrupted disk, a hand edit) is a miss
and is deleted, so a corrupted cache can cost a compile, never a wrong verdict.

**Bounds.** ``max_bytes`` (all artifacts together) and ``max_entries``; least recently used entries
are evicted first, and an entry larger than ``max_bytes`` is not kept. ``directory`` None: a private
temporary directory, removed by :meth:`ArtifactCache.close`; a given directory keeps its entries
across restarts (and is scanned at start). Thread-safe; ``hits``/``misses`` count lookups of
cacheable requests, ``stores`` the entries written.
"""

from __future__ import annotations

import binascii
import collections
import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass

from reward_core.sandbox_contract import ExecutionRequest, TestStyle
from sandbox.languages import Language
from sandbox.runtime import scratch_files

log = logging.getLogger(__name__)

DEFAULT_MAX_MB = 512
DEFAULT_ENTRIES = 1024
_MANIFEST = "manifest.json"
_TMP_PREFIX = ".tmp-"


@dataclass(frozen=True)
class CompiledArtifacts:
    """One successful compile: its artifacts (name -> bytes) and the compiler's output."""

    files: dict[str, bytes]
    stdout: str = ""
    stderr: str = ""

    @property
    def size(self) -> int:
        return sum(len(content) for content in self.files.values())


def artifact_key(request: ExecutionRequest, wire_language: dict, language: Language,
                 toolchain_version: str) -> str | None:
    """The cache key of ``request``'s compile, or None when a successful compile of it is not cached."""
    if TestStyle(request.style) is not TestStyle.STDIO or not language.compile or not language.artifacts:
        return None
    if not toolchain_version:
        return None
    h = hashlib.sha256()
    h.update(json.dumps({"v": 1, "language": wire_language, "artifacts": list(language.artifacts),
                         "toolchain": toolchain_version}, sort_keys=True, default=str).encode())
    h.update(b"\0source\0" + hashlib.sha256(request.code.encode("utf-8", "surrogatepass")).digest())
    for name in sorted(request.files):
        h.update(b"\0file\0" + name.encode("utf-8", "surrogatepass") + b"\0"
                 + hashlib.sha256(bytes(request.files[name])).digest())
    return h.hexdigest()


def collected(compile_report: object, patterns: tuple[str, ...]) -> CompiledArtifacts | None:
    """The artifacts a successful compile step reported (base64 from the supervisor), or None when the
    compile failed or they are incomplete: every plain name present, every glob matched at least once."""
    if type(compile_report) is not dict or compile_report.get("ok") is not True \
            or compile_report.get("exit_code") != 0 or compile_report.get("limit") or compile_report.get("cached"):
        return None
    raw = compile_report.get("artifacts")
    if type(raw) is not dict or not raw:
        return None
    files: dict[str, bytes] = {}
    for name, text in raw.items():
        if type(name) is not str or type(text) is not str or not scratch_files.matches(name, list(patterns)):
            return None
        try:
            files[name] = binascii.a2b_base64(text.encode("ascii"), strict_mode=True)
        except (binascii.Error, UnicodeEncodeError):
            return None
    for pattern in patterns:
        if scratch_files.is_glob(pattern):
            if not any(scratch_files.matches(name, [pattern]) for name in files):
                return None
        elif pattern not in files:
            return None
    out = compile_report.get("stdout")
    err = compile_report.get("stderr")
    return CompiledArtifacts(files, out if type(out) is str else "", err if type(err) is str else "")


class ArtifactCache:
    """LRU of ``key -> CompiledArtifacts`` on disk, bounded by ``max_bytes`` and ``max_entries``."""

    def __init__(self, directory: str | None = None, max_bytes: int = DEFAULT_MAX_MB << 20,
                 max_entries: int = DEFAULT_ENTRIES) -> None:
        if max_bytes < 0 or max_entries < 0:
            raise ValueError("ArtifactCache bounds must be >= 0 (0 disables the cache)")
        self.max_bytes, self.max_entries = int(max_bytes), int(max_entries)
        self._private = directory is None
        self.directory = tempfile.mkdtemp(prefix="reward-sandbox-compiled-") if directory is None else directory
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        self.hits = self.misses = self.stores = 0
        self._sizes: collections.OrderedDict[str, int] = collections.OrderedDict()   # key -> bytes, LRU first
        self._bytes = 0
        self._lock = threading.Lock()
        self._scan()

    @property
    def enabled(self) -> bool:
        return self.max_bytes > 0 and self.max_entries > 0

    def __len__(self) -> int:
        return len(self._sizes)

    @property
    def bytes(self) -> int:
        return self._bytes

    def _path(self, key: str) -> str:
        return os.path.join(self.directory, key)

    def _scan(self) -> None:
        """Entries a previous process left (a given directory), oldest use first; half-written ones go."""
        found = []
        for name in os.listdir(self.directory):
            path = self._path(name)
            if name.startswith(_TMP_PREFIX):
                shutil.rmtree(path, ignore_errors=True)
                continue
            try:
                with open(os.path.join(path, _MANIFEST), "rb") as f:
                    manifest = json.loads(f.read(1 << 20))
                size = sum(int(item["size"]) for item in manifest["files"])
                found.append((os.stat(path).st_mtime, name, size))
            except (OSError, ValueError, KeyError, TypeError):
                shutil.rmtree(path, ignore_errors=True)
        for _, name, size in sorted(found):
            self._sizes[name] = size
            self._bytes += size
        with self._lock:
            self._evict()

    def lookup(self, key: str | None) -> CompiledArtifacts | None:
        """The cached compile of ``key`` (verified byte for byte against its manifest), or None: a miss."""
        if key is None or not self.enabled:
            return None
        with self._lock:
            entry = self._read(key) if key in self._sizes else None
            if entry is None:
                self.misses += 1
                if key in self._sizes:            # unreadable or corrupted: a miss, and gone
                    log.warning("compile-artifact cache entry %s is corrupted; dropping it", key[:16])
                    self._drop(key)
                return None
            self.hits += 1
            self._sizes.move_to_end(key)
        try:
            os.utime(self._path(key))             # the use order survives a restart
        except OSError:
            pass
        return entry

    def _read(self, key: str) -> CompiledArtifacts | None:
        path = self._path(key)
        try:
            with open(os.path.join(path, _MANIFEST), "rb") as f:
                manifest = json.loads(f.read(1 << 20))
            if manifest.get("v") != 1 or manifest.get("key") != key:
                return None
            files: dict[str, bytes] = {}
            for i, item in enumerate(manifest["files"]):
                with open(os.path.join(path, f"{i}.bin"), "rb") as f:
                    content = f.read(int(item["size"]) + 1)
                if len(content) != int(item["size"]) or hashlib.sha256(content).hexdigest() != item["sha256"]:
                    return None
                name = item["name"]
                if type(name) is not str or not scratch_files.safe_name(name) or name in files:
                    return None
                files[name] = content
            if not files:
                return None
            return CompiledArtifacts(files, str(manifest.get("stdout", "")), str(manifest.get("stderr", "")))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def store(self, key: str | None, artifacts: CompiledArtifacts | None) -> bool:
        """Keep ``artifacts`` under ``key`` (evicting the least recently used); False when not kept."""
        if key is None or artifacts is None or not artifacts.files or not self.enabled \
                or artifacts.size > self.max_bytes:
            return False
        with self._lock:
            if key in self._sizes:
                self._sizes.move_to_end(key)
                return True
            try:
                self._write(key, artifacts)
            except OSError as exc:
                log.warning("cannot write a compile-artifact cache entry in %s: %s", self.directory, exc)
                return False
            self._sizes[key] = artifacts.size
            self._bytes += artifacts.size
            self.stores += 1
            self._evict()
            return key in self._sizes

    def _write(self, key: str, artifacts: CompiledArtifacts) -> None:
        tmp = tempfile.mkdtemp(prefix=_TMP_PREFIX, dir=self.directory)
        try:
            items = []
            for i, (name, content) in enumerate(sorted(artifacts.files.items())):
                with open(os.path.join(tmp, f"{i}.bin"), "wb") as f:
                    f.write(content)
                items.append({"name": name, "size": len(content), "sha256": hashlib.sha256(content).hexdigest()})
            manifest = {"v": 1, "key": key, "files": items, "stdout": artifacts.stdout, "stderr": artifacts.stderr}
            with open(os.path.join(tmp, _MANIFEST), "w", encoding="utf-8") as f:
                json.dump(manifest, f)
            os.rename(tmp, self._path(key))
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def _evict(self) -> None:
        while self._sizes and (self._bytes > self.max_bytes or len(self._sizes) > self.max_entries):
            self._drop(next(iter(self._sizes)))

    def _drop(self, key: str) -> None:
        self._bytes -= self._sizes.pop(key, 0)
        shutil.rmtree(self._path(key), ignore_errors=True)

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "stores": self.stores, "entries": len(self._sizes),
                    "bytes": self._bytes}

    def close(self) -> None:
        """Removes the directory if it is a private one (``directory`` None); a given one is kept."""
        if self._private:
            shutil.rmtree(self.directory, ignore_errors=True)
