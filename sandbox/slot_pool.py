"""N sandbox slots behind one thread-safe executor: dispatch, ordering, restarts.

A *slot* is one started sandbox (a bwrap process or a container) running a
zygote. A backend gives :class:`SlotPool` a ``start_slot(index) -> SlotHandle``
callback and nothing else; the pool owns the rest:

* dispatch -- ``execute`` takes a free slot (blocking while all are busy), so
  any number of threads may call it; ``execute_batch`` runs up to ``size``
  requests at once and returns results in input order;
* failure -- a dead, stuck (host deadline) or incoherent slot makes that
  execution SANDBOX_ERROR (never a pass, never an exception), the slot is
  killed, and a replacement is started in the background;
* cancellation -- ``execute(request, cancel)``: a cancelled request is not started, and
  cancelling a running one interrupts its slot (``SlotHandle.interrupt``: the whole sandbox
  is killed, so the program and everything it started die with it); the execution ends as
  SANDBOX_ERROR and the slot is restarted like any dead one;
* spawning -- every ``start_slot`` call runs on one long-lived thread, because
  ``bwrap --die-with-parent`` (PR_SET_PDEATHSIG) fires when the *thread* that
  forked it exits, not the process: a slot started from a short-lived worker
  thread would die with that thread.

* judging -- the raw report becomes the result on the host (verdict.py); a request judged by
  a checker program (OutputCompare mode ``checker``) runs the checker after its own execution,
  as further executions of this pool, once the program's slot is free again (checker.py);
* compile failures -- a STDIO program whose identical source (same language, same files) failed
  to compile before is answered from a bounded cache without starting a compiler
  (compile_cache.py; ``compile_cache`` counts hits and misses);
* compiled programs -- a STDIO program whose identical compile (language, toolchain version, source,
  files) succeeded before is not compiled again: its artifacts come from a bounded on-disk cache and
  are written into each case's scratch directory (compile_artifacts.py; ``artifact_cache``).

Both backends use it: ``ProcessExecutor`` (process_backend.py) and the docker
backend supply different ``start_slot`` callbacks.
"""

from __future__ import annotations

import base64
import concurrent.futures
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from reward_core.sandbox_contract import Cancellation, ExecutionRequest, ExecutionResult, SandboxUnavailable
from sandbox import call_harness
from sandbox.checker import run_checker, validate_checker
from sandbox.compile_artifacts import ArtifactCache, CompiledArtifacts, artifact_key, collected
from sandbox.compile_cache import CompileFailureCache, cache_key
from sandbox.languages import Language
from sandbox.runtime import scratch_files
from sandbox.verdict import build_result, sandbox_error
from sandbox.zygote_client import SlotHandle, WireRequest, ZygoteClient, ZygoteError, build_wire, validate_request

log = logging.getLogger(__name__)

CANCELLED = "cancelled: the caller no longer wants this result (its call was cancelled or its deadline passed)"

SlotStarter = Callable[[int], SlotHandle]
#: A language's toolchain version where programs run ("" when unknown: its compiles are not cached).
ToolchainVersion = Callable[[Language], str]


@dataclass
class PoolStats:
    executions: int = 0
    sandbox_errors: int = 0
    restarts: int = 0


@dataclass
class _Slot:
    index: int
    handle: SlotHandle | None = None
    client: ZygoteClient | None = None
    hello: dict = field(default_factory=dict)
    pending: concurrent.futures.Future | None = None


class SlotPool:
    """``size`` slots started by ``start_slot``; implements the Executor protocol's methods.

    ``artifact_cache`` and ``toolchain_version`` (both or neither): successful compiles are cached
    (compile_artifacts.py); the pool closes the cache with itself.
    """

    def __init__(self, size: int, start_slot: SlotStarter, *, backend: str,
                 languages: Mapping[str, Language] | None = None, start_timeout_s: float = 60.0,
                 artifact_cache: ArtifactCache | None = None, toolchain_version: ToolchainVersion | None = None,
                 ) -> None:
        if size < 1:
            raise ValueError(f"concurrency must be >= 1, got {size}")
        self.size = size
        self.backend = backend
        self.languages = languages
        self.start_timeout_s = start_timeout_s
        self.stats = PoolStats()
        self._start_slot = start_slot
        self._lock = threading.Lock()
        self._closed = False
        self._spawner = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"{backend}-spawner")
        self._restarter = concurrent.futures.ThreadPoolExecutor(size, thread_name_prefix=f"{backend}-restart")
        self._batch = concurrent.futures.ThreadPoolExecutor(size, thread_name_prefix=f"{backend}-batch")
        # checker executions (mode checker): their own threads, so a batch's threads waiting for their
        # checkers never hold the threads the checkers need (checker executions start no checker)
        self._checkers = concurrent.futures.ThreadPoolExecutor(size, thread_name_prefix=f"{backend}-checker")
        self.compile_cache = CompileFailureCache()
        self.artifact_cache = artifact_cache if toolchain_version is not None else None
        self._toolchain_version = toolchain_version
        self._versions: dict[str, str] = {}
        self._slots = [_Slot(i) for i in range(size)]
        self._free: queue.Queue[_Slot] = queue.Queue()
        starts = [self._restarter.submit(self._start, slot) for slot in self._slots]
        errors = [f.exception() for f in starts if f.exception() is not None]
        if errors:
            self.close()
            raise SandboxUnavailable(f"{backend} sandbox could not start: {errors[0]}") from errors[0]
        for slot in self._slots:
            self._free.put(slot)

    @property
    def hellos(self) -> list[dict]:
        """Each slot's start-up frame (isolation features, self-test), for logs and tests."""
        return [dict(s.hello) for s in self._slots]

    # -- slot life cycle -------------------------------------------------------------------------
    def _start(self, slot: _Slot) -> None:
        handle = self._spawner.submit(self._start_slot, slot.index).result()
        client = ZygoteClient(handle.transport)
        try:
            hello = client.hello(time.monotonic() + self.start_timeout_s)
        except ZygoteError as exc:
            handle.kill()
            raise SandboxUnavailable(f"slot {slot.index} ({handle.description}) did not start: {exc}") from None
        if hello.get("selftest") != "ok":
            handle.kill()
            raise SandboxUnavailable(f"slot {slot.index} failed its self-test: {hello.get('selftest')}")
        slot.handle, slot.client, slot.hello = handle, client, hello

    def _kill(self, slot: _Slot) -> None:
        handle, slot.handle, slot.client = slot.handle, None, None
        if handle is not None:
            try:
                handle.kill()
            except Exception:  # noqa: BLE001 - killing is best effort; the slot is replaced anyway
                log.exception("killing slot %d failed", slot.index)

    def _restart_later(self, slot: _Slot) -> None:
        self._kill(slot)
        with self._lock:
            self.stats.restarts += 1
            if not self._closed:
                slot.pending = self._restarter.submit(self._start, slot)

    def _ready(self, slot: _Slot) -> str:
        """Make sure the slot has a live zygote; "" or why it has none."""
        if slot.pending is not None:
            future, slot.pending = slot.pending, None
            try:
                future.result()
            except Exception as exc:  # noqa: BLE001 - reported as this execution's SANDBOX_ERROR
                return str(exc)
        if slot.handle is not None and slot.handle.alive is not None and not slot.handle.alive():
            # (hook for the docker backend, see SlotHandle.alive) ended while idle: replace it now
            log.warning("slot %d (%s) ended between executions; restarting it", slot.index, slot.handle.description)
            self._kill(slot)
            with self._lock:
                self.stats.restarts += 1
        if slot.client is None:
            try:
                self._start(slot)
            except Exception as exc:  # noqa: BLE001 - e.g. bwrap vanished; try again next time
                return str(exc)
        return ""

    # -- executing -------------------------------------------------------------------------------
    def execute(self, request: ExecutionRequest, cancel: Cancellation | None = None) -> ExecutionResult:
        """Run one request on a free slot. InvalidExecutionRequest before running; never raises after.

        ``cancel``: not started once cancelled; cancelled while running, the slot is interrupted
        (SANDBOX_ERROR, the slot restarted).
        """
        language = validate_request(request, self.languages)
        validate_checker(request, self.languages)
        call = call_harness.applies(request, language)    # a function call in another language than Python
        asked, request = request, call_harness.as_stdio(request, language) if call else request
        wire = build_wire(request, language)
        if self._closed:
            return sandbox_error(asked, "executor is closed", self.backend)
        key = cache_key(request, wire.public["language"])
        report = self.compile_cache.lookup(key, wire.n_cases)
        if report is None:
            art_key = self._artifact_key(request, language, wire)
            cached = self.artifact_cache.lookup(art_key) if self.artifact_cache is not None else None
            wire = _with_artifacts(wire, language, art_key, cached)
            slot = self._free.get()
            try:
                if cancel is not None and cancel.cancelled:
                    return sandbox_error(asked, CANCELLED, self.backend)
                report = self._run(slot, asked, wire, cancel)
            finally:
                self._free.put(slot)
            if isinstance(report, ExecutionResult):
                return report
            self._after_compile(report, language, art_key, cached)
            self.compile_cache.store(key, report)
        if call:
            request, report = asked, call_harness.as_function_report(report)
        # mode checker: the checker runs now, as executions of its own, with the program's slot free again
        checks = run_checker(self.execute, request, report, self._checkers, cancel, self.languages)
        result = build_result(request, report, wire.n_cases, self.backend, checks)
        self._count(error=not result.verdict.is_verdict_on_code)
        return result

    # -- the compile-artifact cache (compile_artifacts.py) ------------------------------------------
    def _artifact_key(self, request: ExecutionRequest, language: Language, wire: WireRequest) -> str | None:
        if self.artifact_cache is None or not self.artifact_cache.enabled or not language.artifacts:
            return None
        if language.name not in self._versions:     # once per language (two threads may both probe: harmless)
            try:
                version = self._toolchain_version(language)
            except Exception:  # noqa: BLE001 - an unknown version only means no caching for this language
                log.exception("the toolchain version of %s is unknown; its compiles are not cached", language.name)
                version = ""
            self._versions[language.name] = version
        return artifact_key(request, wire.public["language"], language, self._versions[language.name])

    def _after_compile(self, report: dict, language: Language, key: str | None,
                       cached: CompiledArtifacts | None) -> None:
        """A hit: the first compile's output goes back into the report. A miss: keep what it compiled."""
        comp = report.get("compile") if report.get("status") == "ok" else None
        if type(comp) is not dict:
            return
        artifacts = comp.pop("artifacts", None)
        if cached is not None and comp.get("cached") is True:
            comp.update(stdout=cached.stdout, stderr=cached.stderr)
        elif key is not None and cached is None and artifacts is not None:
            self.artifact_cache.store(key, collected({**comp, "artifacts": artifacts}, language.artifacts))

    def _run(self, slot: _Slot, request: ExecutionRequest, wire,
             cancel: Cancellation | None) -> ExecutionResult | dict:
        """The slot's raw report for ``request`` (a dict), or the SANDBOX_ERROR result when the slot failed."""
        t0 = time.monotonic()
        why = self._ready(slot)
        if why:
            self._count(error=True)
            return sandbox_error(request, f"sandbox unavailable: {why}", self.backend)
        guard = _InterruptGuard(slot.handle)
        unregister = cancel.on_cancel(guard.interrupt) if cancel is not None else (lambda: None)
        try:
            if slot.handle.prepare is not None:    # hook for the docker backend, see SlotHandle.prepare
                slot.handle.prepare(request)
            report = slot.client.execute(wire, time.monotonic() + wire.host_timeout_s)
        except ZygoteError as exc:
            interrupted = guard.close()
            unregister()
            if not interrupted:
                log.warning("slot %d failed (%s); restarting it", slot.index, exc)
            self._restart_later(slot)
            self._count(error=not interrupted)
            return sandbox_error(request, CANCELLED if interrupted else f"sandbox failed: {exc}", self.backend,
                                 wall_s=time.monotonic() - t0)
        if guard.close():                          # interrupted just after the report came: replace the slot
            unregister()
            self._restart_later(slot)
            return sandbox_error(request, CANCELLED, self.backend, wall_s=time.monotonic() - t0)
        unregister()
        if report.get("status") != "ok" or report.get("retire"):
            log.warning("slot %d is retiring (%s); restarting it", slot.index,
                        report.get("retire") or report.get("error"))
            self._restart_later(slot)
        return report

    def _count(self, error: bool) -> None:
        with self._lock:
            self.stats.executions += 1
            self.stats.sandbox_errors += int(error)

    def execute_batch(self, requests: Sequence[ExecutionRequest]) -> list[ExecutionResult]:
        """Up to ``size`` at once; results in input order. Every request is validated before any runs."""
        requests = list(requests)
        for request in requests:
            validate_request(request, self.languages)
            validate_checker(request, self.languages)
        if len(requests) <= 1:
            return [self.execute(r) for r in requests]
        return list(self._batch.map(self.execute, requests))

    def close(self) -> None:
        """Kill every slot. In-flight executions end as SANDBOX_ERROR. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for slot in self._slots:
            if slot.pending is not None:
                slot.pending.cancel()
                try:
                    slot.pending.result(timeout=self.start_timeout_s)
                except Exception:  # noqa: BLE001 - cancelled or failed: nothing to keep
                    pass
            self._kill(slot)
        for pool in (self._batch, self._checkers, self._restarter, self._spawner):
            pool.shutdown(wait=False, cancel_futures=True)
        if self.artifact_cache is not None:
            self.artifact_cache.close()


def _with_artifacts(wire: WireRequest, language: Language, key: str | None,
                    cached: CompiledArtifacts | None) -> WireRequest:
    """The wire request with the cached artifacts (a hit: no compile), or asking for them (a miss)."""
    if key is None:
        return wire
    if cached is not None:
        public = {**wire.public, "precompiled": {name: base64.b64encode(content).decode("ascii")
                                                 for name, content in cached.files.items()}}
        return replace(wire, public=public)
    public = {**wire.public, "collect_artifacts": list(language.artifacts)}
    return replace(wire, public=public, host_timeout_s=wire.host_timeout_s + scratch_files.FETCH_WALL_S)


class _InterruptGuard:
    """Interrupts one execution's slot at most once, and never after the execution ended.

    ``interrupt`` runs on the cancelling thread, ``close`` on the executing one; the lock makes
    sure an interrupt never reaches a slot that has moved on to another request.
    """

    def __init__(self, handle: SlotHandle) -> None:
        self._handle = handle
        self._lock = threading.Lock()
        self._done = False
        self.fired = False

    def interrupt(self) -> None:
        with self._lock:
            if self._done or self.fired:
                return
            self.fired = True
            log.info("interrupting %s: its call was cancelled", self._handle.description)
            (self._handle.interrupt or self._handle.kill)()

    def close(self) -> bool:
        """The execution is over: no interrupt from now on. True if one happened."""
        with self._lock:
            self._done = True
            return self.fired
