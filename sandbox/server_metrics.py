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
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import grpc
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from reward_core.sandbox_contract import ExecutionRequest, ExecutionResult, LimitHit, Verdict

OTHER = "other"
METHODS = ("Execute", "ExecuteBatch")
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
