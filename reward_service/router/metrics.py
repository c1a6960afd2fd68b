"""Prometheus metrics for the reward server (one registry per server instance).

Series (all on the server's private registry; ``task`` labels are registered task names or
:data:`UNKNOWN_TASK_LABEL`):

==========================================  =====================================================
``reward_requests_total{method,code}``      calls answered, by gRPC code (rejections included)
``reward_request_seconds{method}``          wall time per answered call (histogram)
``reward_rollouts_total{task,status}``      rollouts answered, by rollout status
``reward_verify_seconds{task}``             worker time per verified item (histogram)
``reward_score{task}``                      scores of scored rollouts (histogram, no ``_sum``)
``reward_score_total_sum{task}``            sum of those scores (a gauge: it can go down)
``reward_groups_total{task}``               groups answered
``reward_zero_variance_groups_total{task}`` groups whose scored rewards are all equal
``reward_open_streams``                     ScoreStream calls in progress
``reward_pool_queue_depth``                 pool items queued or running (read at scrape time)
``reward_pool_workers{state}``              ready workers: ``alive`` and ``busy``
``reward_worker_restarts_total{reason}``    workers replaced: ``timeout``, ``crash``, ``start_failure``
``reward_pool_item_timeouts_total``         pool items killed past their time limit
``reward_cache_lookups_total{result}``      reward cache lookups: ``hit`` or ``miss`` (hit rate:
                                            hits / all); a hit is a rollout not verified again
``reward_cache_stores_total``               outcomes stored in the reward cache
``reward_cache_evictions_total``            entries dropped from memory (entry or byte bound)
``reward_cache_entries``                    entries in memory now
``reward_cache_bytes``                      their estimated size
==========================================  =====================================================

The pool series exist once :meth:`RewardMetrics.attach_pool` is called, the cache series once
:meth:`RewardMetrics.attach_reward_cache` is (a server whose ``--reward-cache-entries`` is not 0).
The LLM judges' series (``reward_judge_*``: calls by outcome, verdict cache, latency, in flight,
rate limits, bias) are this process's (``reward_service/judges/judge_metrics.py``), included in
every server's /metrics.
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from reward_core.contract import ScoreBatchResult
from reward_core.metrics_http import MetricsEndpoint
from reward_service.judges.judge_metrics import judge_metrics
from reward_service.pool.types import PoolStats

#: The ``task`` label of every rollout whose task is not registered: task names come from
#: clients, and one series per name sent would grow without bound.
UNKNOWN_TASK_LABEL = "_unknown"

#: Upper bounds of the score histogram: fine steps over [-1, 1] (binary, [0, 1] and
#: [-1, 1] rewards), a few beyond for composite rewards whose weights add up past 1.
SCORE_BUCKETS = (-2.0, -1.0, -0.75, -0.5, -0.25, 0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 1.5, 2.0, 5.0)


class PoolStatsSource(Protocol):
    """What :meth:`RewardMetrics.attach_pool` reads (a :class:`~reward_service.pool.worker_pool.WorkerPool`)."""

    def stats(self) -> PoolStats: ...

    def worker_losses(self) -> dict[str, int]: ...


class _PoolCollector:
    """Reads the pool's counters when /metrics is scraped (never between scrapes)."""

    def __init__(self, pool: PoolStatsSource) -> None:
        self._pool = pool

    def collect(self) -> Iterator[Metric]:
        stats = self._pool.stats()
        yield GaugeMetricFamily("reward_pool_queue_depth", "Pool items queued or running",
                                value=stats.pending + stats.busy_workers)
        workers = GaugeMetricFamily("reward_pool_workers", "Ready worker processes", labels=["state"])
        workers.add_metric(["alive"], stats.alive_workers)
        workers.add_metric(["busy"], stats.busy_workers)
        yield workers
        restarts = CounterMetricFamily("reward_worker_restarts", "Workers replaced, by why the old one went",
                                       labels=["reason"])
        for reason, count in sorted(self._pool.worker_losses().items()):
            restarts.add_metric([reason], count)
        yield restarts
        yield CounterMetricFamily("reward_pool_item_timeouts", "Pool items killed past their time limit",
                                  value=stats.timeouts)

    def describe(self) -> Iterator[Metric]:
        """The families, without reading the pool (the registry checks names for clashes)."""
        yield GaugeMetricFamily("reward_pool_queue_depth", "")
        yield GaugeMetricFamily("reward_pool_workers", "", labels=["state"])
        yield CounterMetricFamily("reward_worker_restarts", "", labels=["reason"])
        yield CounterMetricFamily("reward_pool_item_timeouts", "")


class RewardCacheSource(Protocol):
    """What :meth:`RewardMetrics.attach_reward_cache` reads (``router.reward_cache.RewardCache``)."""

    def stats(self) -> Any: ...


class _RewardCacheCollector:
    """Reads the reward cache's counters when /metrics is scraped."""

    def __init__(self, cache: RewardCacheSource) -> None:
        self._cache = cache

    def collect(self) -> Iterator[Metric]:
        stats = self._cache.stats()
        lookups = CounterMetricFamily("reward_cache_lookups", "Reward cache lookups, by result", labels=["result"])
        lookups.add_metric(["hit"], stats.hits)
        lookups.add_metric(["miss"], stats.misses)
        yield lookups
        yield CounterMetricFamily("reward_cache_stores", "Outcomes stored in the reward cache", value=stats.stores)
        yield CounterMetricFamily("reward_cache_evictions", "Reward cache entries dropped from memory",
                                  value=stats.evictions)
        yield GaugeMetricFamily("reward_cache_entries", "Reward cache entries in memory", value=stats.entries)
        yield GaugeMetricFamily("reward_cache_bytes", "Estimated bytes of the reward cache's entries",
                                value=stats.bytes)

    def describe(self) -> Iterator[Metric]:
        yield CounterMetricFamily("reward_cache_lookups", "", labels=["result"])
        yield CounterMetricFamily("reward_cache_stores", "")
        yield CounterMetricFamily("reward_cache_evictions", "")
        yield GaugeMetricFamily("reward_cache_entries", "")
        yield GaugeMetricFamily("reward_cache_bytes", "")


def _observe_all(histogram: Histogram, values: list[float]) -> None:
    for value in values:
        histogram.observe(value)


class _ForwardCollector:
    """Yields another registry's series at each scrape (the process-wide judge metrics)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterator[Metric]:
        yield from self._registry.collect()


class RewardMetrics:
    """Counters and histograms a reward server exports on ``--metrics-port``.

    Series are labelled with ``known_tasks`` (the registered ones) only; rollouts of any
    other task name count under :data:`UNKNOWN_TASK_LABEL`. Thread-safe; the servicer calls
    :meth:`observe_batch` / :meth:`observe_error` per call and :meth:`stream_opened` /
    :meth:`stream_closed` (or :meth:`track_stream`) around each ScoreStream.
    """

    def __init__(self, registry: CollectorRegistry | None = None, known_tasks: Iterable[str] = ()) -> None:
        self.registry = registry or CollectorRegistry()
        self._known_tasks = frozenset(known_tasks)
        self._endpoint = MetricsEndpoint(self.registry)
        self._pool_collector: _PoolCollector | None = None
        self._cache_collector: _RewardCacheCollector | None = None
        self.requests = Counter(
            "reward_requests", "Score requests by method and outcome", ["method", "code"], registry=self.registry
        )
        self.rollouts = Counter(
            "reward_rollouts", "Rollouts answered, by task and status", ["task", "status"], registry=self.registry
        )
        self.verify_seconds = Histogram(
            "reward_verify_seconds", "Worker time per verified item", ["task"], registry=self.registry,
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5, 30),
        )
        self.request_seconds = Histogram(
            "reward_request_seconds", "Wall time per request", ["method"], registry=self.registry
        )
        self.scores = Histogram(
            "reward_score", "Scores of scored rollouts", ["task"], registry=self.registry, buckets=SCORE_BUCKETS
        )
        # Prometheus drops a histogram's _sum when a bucket bound is below 0 (it must never
        # decrease); the mean score needs it, so it is a gauge of its own.
        self.score_sum = Gauge("reward_score_total_sum", "Sum of the scores of scored rollouts", ["task"],
                               registry=self.registry)
        self.groups = Counter("reward_groups", "Groups answered, by task", ["task"], registry=self.registry)
        self.zero_variance_groups = Counter(
            "reward_zero_variance_groups", "Groups whose scored rewards are all equal (GRPO advantages all 0)",
            ["task"], registry=self.registry,
        )
        self.open_streams = Gauge("reward_open_streams", "ScoreStream calls in progress", registry=self.registry)
        self.registry.register(_ForwardCollector(judge_metrics().registry))

    # ------------------------------------------------------------------ per call
    def observe_batch(self, method: str, batch: ScoreBatchResult) -> None:
        """Counts one answered call: its rollouts, their scores and verify times, its groups.

        Counts are summed per label first (one update per series, not per rollout): this runs
        on the server's request path.
        """
        self.requests.labels(method, "OK").inc()
        self.request_seconds.labels(method).observe(batch.elapsed_ms / 1000.0)
        statuses: collections.Counter[tuple[str, str]] = collections.Counter()
        verify: dict[str, list[float]] = collections.defaultdict(list)
        scores: dict[str, list[float]] = collections.defaultdict(list)
        group_task: dict[str, str] = {}
        for r in batch.results:
            task = self.task_label(r.task)
            statuses[task, r.status.name] += 1
            if r.elapsed_ms:
                verify[task].append(r.elapsed_ms / 1000.0)
            if r.scored:
                scores[task].append(r.score)
            if r.group_id:
                group_task.setdefault(r.group_id, task)
        for (task, status), n in statuses.items():
            self.rollouts.labels(task, status).inc(n)
        for task, seconds in verify.items():
            _observe_all(self.verify_seconds.labels(task), seconds)
        for task, values in scores.items():
            _observe_all(self.scores.labels(task), values)
            self.score_sum.labels(task).inc(sum(values))
        groups: collections.Counter[str] = collections.Counter()
        zero_variance: collections.Counter[str] = collections.Counter()
        for group in batch.groups:
            task = group_task.get(group.group_id, UNKNOWN_TASK_LABEL)
            groups[task] += 1
            zero_variance[task] += group.zero_variance
        for task, n in groups.items():
            self.groups.labels(task).inc(n)
            if zero_variance[task]:
                self.zero_variance_groups.labels(task).inc(zero_variance[task])

    def observe_error(self, method: str, code: str) -> None:
        """Counts one call that ended with gRPC status ``code`` (e.g. ``"RESOURCE_EXHAUSTED"``)."""
        self.requests.labels(method, code).inc()

    def task_label(self, task: str) -> str:
        """``task`` when it is registered, else :data:`UNKNOWN_TASK_LABEL` (bounded cardinality)."""
        return task if task in self._known_tasks else UNKNOWN_TASK_LABEL

    def stream_opened(self) -> None:
        """A ScoreStream call began; pair with :meth:`stream_closed` (in a ``finally``)."""
        self.open_streams.inc()

    def stream_closed(self) -> None:
        """A ScoreStream call ended, however it ended."""
        self.open_streams.dec()

    @contextlib.contextmanager
    def track_stream(self) -> Iterator[None]:
        """``with metrics.track_stream():`` around a ScoreStream handler's body."""
        self.stream_opened()
        try:
            yield
        finally:
            self.stream_closed()

    # ------------------------------------------------------------------ the pool
    def attach_pool(self, pool: PoolStatsSource) -> None:
        """Exports ``pool``'s queue depth, workers, restarts and timeouts, read at each scrape.

        Attaching another pool replaces the first (one pool per server).
        """
        if self._pool_collector is not None:
            self.registry.unregister(self._pool_collector)
        self._pool_collector = _PoolCollector(pool)
        self.registry.register(self._pool_collector)

    def attach_reward_cache(self, cache: RewardCacheSource) -> None:
        """Exports the reward cache's lookups (hit/miss), stores, evictions and size, read at each scrape."""
        if self._cache_collector is not None:
            self.registry.unregister(self._cache_collector)
        self._cache_collector = _RewardCacheCollector(cache)
        self.registry.register(self._cache_collector)

    # ------------------------------------------------------------------ /metrics
    @property
    def port(self) -> int:
        """The bound /metrics port (useful with port 0); 0 when not serving."""
        return self._endpoint.port

    def serve_http(self, port: int, host: str = "127.0.0.1") -> None:
        """Exposes /metrics on ``host:port`` over HTTP until ``close()``.

        Loopback unless told otherwise: the reward server passes its ``--metrics-host``, which
        defaults to the gRPC bind host.
        """
        self._endpoint.serve(port, host)

    def close(self) -> None:
        """Stops the /metrics server, if one was started; idempotent."""
        self._endpoint.close()
