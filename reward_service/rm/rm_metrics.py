"""Prometheus metrics of the reward-model server, on a registry of its own (one per server instance).

Exported on ``--metrics-port`` (host ``--metrics-host``, default the gRPC bind host) through
:class:`reward_core.metrics_http.MetricsEndpoint`:

- ``rm_requests_total{method,code}``       — calls by method and gRPC status code
- ``rm_request_seconds{method}``           — call latency (histogram)
- ``rm_items_scored_total``                — pairs answered with a score
- ``rm_items_truncated_total``             — scored pairs cut to the model's max length
- ``rm_items_dropped_total``                — queued pairs never run: their call was cancelled,
  expired or failed first (or the server shut down)
- ``rm_batch_items`` / ``rm_batch_tokens`` — pairs and padded tokens per forward pass
  (histograms; ``_count`` is the number of forward passes, ``rm_batch_items_sum`` the pairs run)
- ``rm_queue_items``                       — pairs waiting in the batcher (gauge, read at scrape time)
- ``rm_reloads_total{outcome}``            — Reload calls: ``ok``, ``failed`` (load error, old
  model kept) or ``refused`` (bad path, outside the root, draining, one already running)
- ``rm_model_load_seconds``                — seconds the serving checkpoint took to load
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from reward_core.metrics_http import MetricsEndpoint

RELOAD_OUTCOMES = ("ok", "failed", "refused")
_ITEM_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
_TOKEN_BUCKETS = (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
_SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class RewardModelMetrics:
    """The server's series; also the batcher's :class:`~reward_service.rm.dynamic_batcher.BatchObserver`."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self._endpoint = MetricsEndpoint(self.registry)
        r = self.registry
        self.requests = Counter("rm_requests", "Calls by method and gRPC status code", ["method", "code"],
                                registry=r)
        self.request_seconds = Histogram("rm_request_seconds", "Wall time per call", ["method"], registry=r,
                                         buckets=_SECONDS_BUCKETS)
        self.scored = Counter("rm_items_scored", "Pairs answered with a score", registry=r)
        self.truncated = Counter("rm_items_truncated", "Scored pairs truncated to the model's max length",
                                       registry=r)
        self.dropped = Counter("rm_items_dropped",
                                     "Queued pairs never run because their call ended first", registry=r)
        self.batch_items = Histogram("rm_batch_items", "Pairs per forward pass", registry=r, buckets=_ITEM_BUCKETS)
        self.batch_tokens = Histogram("rm_batch_tokens", "Padded tokens (pairs x longest) per forward pass",
                                      registry=r, buckets=_TOKEN_BUCKETS)
        self.queue_items = Gauge("rm_queue_items", "Pairs waiting in the dynamic batcher", registry=r)
        self.reloads = Counter("rm_reloads", "Reload calls by outcome", ["outcome"], registry=r)
        self.model_load_seconds = Gauge("rm_model_load_seconds", "Seconds the serving checkpoint took to load",
                                        registry=r)
        for outcome in RELOAD_OUTCOMES:  # every outcome exported from the start, at 0
            self.reloads.labels(outcome)

    # --- the batcher's observer ---------------------------------------------------------------

    def batch_run(self, items: int, padded_tokens: int) -> None:
        self.batch_items.observe(items)
        self.batch_tokens.observe(padded_tokens)

    def items_dropped(self, count: int) -> None:
        self.dropped.inc(count)

    # --- the servicer and the server ----------------------------------------------------------

    def track_queue(self, queued_items: Callable[[], int]) -> None:
        """The queue gauge reads ``queued_items()`` at every scrape."""
        self.queue_items.set_function(queued_items)

    def observe_call(self, method: str, code: str, seconds: float) -> None:
        self.requests.labels(method, code).inc()
        self.request_seconds.labels(method).observe(seconds)

    def observe_scored(self, items: int, truncated: int) -> None:
        self.scored.inc(items)
        self.truncated.inc(truncated)

    def observe_reload(self, outcome: str) -> None:
        if outcome not in RELOAD_OUTCOMES:
            raise ValueError(f"reload outcome must be one of {RELOAD_OUTCOMES}, got {outcome!r}")
        self.reloads.labels(outcome).inc()

    def observe_load(self, seconds: float) -> None:
        self.model_load_seconds.set(seconds)

    # --- /metrics ------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The /metrics port (0 when not serving)."""
        return self._endpoint.port

    def serve_http(self, port: int, host: str) -> None:
        """Serves ``http://host:port/metrics`` until :meth:`close`."""
        self._endpoint.serve(port, host)

    def close(self) -> None:
        self._endpoint.close()
