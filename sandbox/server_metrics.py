"""Prometheus metrics of one sandbox server, on a registry of its own.

``python -m sandbox serve --metrics-port 9102`` serves them on ``/metrics``
(reward_core.metrics_http). Every label takes a bounded set of values: languages
from the server's configured table (anything else is ``other``), verdicts from
the Verdict enum, methods and gRPC status codes from their enums, limit kinds
from a fixed list. So a hostile or careless client cannot blow up the series count.

Series:
    sandbox_executions_total{language, verdict}   programs executed
    sandbox_calls_total{method, code}             calls answered, by gRPC status code
    sandbox_execution_wall_seconds                one program's run, host side (histogram)
    sandbox_limit_hits_total{kind}                time | memory | output | processes
    sandbox_queue_depth                           programs queued or running, over all calls
    sandbox_cancelled_programs_total{stage}       queued (dropped) | running (killed)
    sandbox_compile_cache_lookups_total{result}   hit | miss: compile failures answered from the cache
                                                  (sandbox/compile_cache.py), when the executor has one
    sandbox_compile_artifact_cache_lookups_total{result}  hit | miss: successful compiles answered from the
                                                  on-disk cache without a compiler (sandbox/compile_artifacts.py)
    sandbox_compile_artifact_cache_bytes          bytes of artifacts the cache holds
    sandbox_compile_artifact_cache_entries        compiles the cache holds
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import grpc
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from reward_core.sandbox_contract import ExecutionRequest, ExecutionResult, LimitHit, Verdict

OTHER = "other"
METHODS = ("Execute", "ExecuteBatch", "ListLanguages")
LIMIT_KINDS = {LimitHit.WALL_TIME: "time", LimitHit.CPU_TIME: "time", LimitHit.MEMORY: "memory",
               LimitHit.OUTPUT: "output", LimitHit.FILE_SIZE: "output", LimitHit.PROCESSES: "processes"}
WALL_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class SandboxMetrics:
    """The server's counters; ``registry`` is private to this instance."""

    def __init__(self, languages: Iterable[str], queue_depth: Callable[[], float]) -> None:
        self.languages = frozenset(languages)
        self.registry = CollectorRegistry()
        r = self.registry
        self.executions = Counter("sandbox_executions", "Programs executed, by language and verdict",
                                  ["language", "verdict"], registry=r)
        self.calls = Counter("sandbox_calls", "Calls answered, by method and gRPC status code",
                             ["method", "code"], registry=r)
        self.wall = Histogram("sandbox_execution_wall_seconds", "One program's execution, measured on the host "
                              "(from taking a slot to its result)", buckets=WALL_BUCKETS, registry=r)
        self.limit_hits = Counter("sandbox_limit_hits", "Executions stopped by a limit, by kind",
                                  ["kind"], registry=r)
        self.queue = Gauge("sandbox_queue_depth", "Programs queued or running, over all calls", registry=r)
        self.queue.set_function(queue_depth)
        self.cancelled = Counter("sandbox_cancelled_programs", "Programs of a cancelled or expired call: "
                                 "dropped before they started (queued) or killed (running)", ["stage"], registry=r)
        for kind in sorted(set(LIMIT_KINDS.values())):
            self.limit_hits.labels(kind)
        for stage in ("queued", "running"):
            self.cancelled.labels(stage)

    def watch_compile_cache(self, cache: object) -> None:
        """Export an executor's compile-failure cache counters (anything with ``hits`` and ``misses``)."""
        self.registry.register(_CompileCacheCollector(cache))

    def watch_artifact_cache(self, cache: object) -> None:
        """Export an executor's compile-artifact cache (``hits``, ``misses``, ``bytes``, ``len()``)."""
        self.registry.register(_ArtifactCacheCollector(cache))

    def language(self, name: str) -> str:
        return name if name in self.languages else OTHER

    def executed(self, request: ExecutionRequest, result: ExecutionResult, seconds: float) -> None:
        verdict = result.verdict.name if isinstance(result.verdict, Verdict) else OTHER
        self.executions.labels(self.language(request.language), verdict).inc()
        self.wall.observe(max(0.0, seconds))
        kind = LIMIT_KINDS.get(result.limit_hit)
        if kind is not None:
            self.limit_hits.labels(kind).inc()

    def call(self, method: str, code: grpc.StatusCode) -> None:
        self.calls.labels(method if method in METHODS else OTHER, code.name).inc()

    def cancelled_programs(self, queued: int, running: int) -> None:
        if queued:
            self.cancelled.labels("queued").inc(queued)
        if running:
            self.cancelled.labels("running").inc(running)


class _CompileCacheCollector:
    """Reads the cache's own counters at scrape time (they live on the executor, not here)."""

    def __init__(self, cache: object) -> None:
        self.cache = cache

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily("sandbox_compile_cache_lookups", "Compile-failure cache lookups of compiled "
                                     "programs: hit (answered without a compiler) or miss", labels=["result"])
        family.add_metric(["hit"], float(getattr(self.cache, "hits", 0)))
        family.add_metric(["miss"], float(getattr(self.cache, "misses", 0)))
        yield family


class _ArtifactCacheCollector:
    """The compile-artifact cache's counters and size, read at scrape time."""

    def __init__(self, cache: object) -> None:
        self.cache = cache

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        lookups = CounterMetricFamily("sandbox_compile_artifact_cache_lookups", "Compile-artifact cache lookups of "
                                      "compiled programs: hit (no compiler ran) or miss", labels=["result"])
        lookups.add_metric(["hit"], float(getattr(self.cache, "hits", 0)))
        lookups.add_metric(["miss"], float(getattr(self.cache, "misses", 0)))
        yield lookups
        yield GaugeMetricFamily("sandbox_compile_artifact_cache_bytes", "Bytes of compile artifacts cached on disk",
                                value=float(getattr(self.cache, "bytes", 0)))
        yield GaugeMetricFamily("sandbox_compile_artifact_cache_entries", "Successful compiles cached on disk",
                                value=float(len(self.cache)))  # type: ignore[arg-type]
