"""The judges' metrics: calls, cache, latency, limits, and the bias statistics of each judge.

Judge clients are shared by every task in the server process, so their series are too: they
live on one registry per process (:func:`judge_metrics`), which the reward server's /metrics
includes (``RewardMetrics.attach_judges``). Series, each labelled ``judge``:

===============================================  ==============================================
``reward_judge_calls_total{judge,outcome}``      judgements asked for, by outcome: ``ok``,
                                                 ``cached``, ``judge_failed``,
                                                 ``judge_rate_limited``, ``judge_unparseable``
``reward_judge_cache_lookups_total{judge,result}``  verdict cache ``hit`` / ``miss``
``reward_judge_retries_total{judge,reason}``     attempts made again: ``timeout``, ``connection``,
                                                 ``rate_limited`` (429), ``server_error`` (5xx)
``reward_judge_call_seconds{judge}``             time of each judgement that called the judge
                                                 (retries and waits included; histogram)
``reward_judge_in_flight{judge}``                requests to the judge in flight now
``reward_judge_rate_limited_total{judge,source}``  judgements refused: ``upstream`` (429 after
                                                 retries) or ``quota`` (this server's limits)
``reward_judge_order_pairs_total{judge,result}``  pairwise judgements made in both orders:
                                                 ``agree`` (same verdict), ``flip`` (opposite
                                                 winners) or ``partial`` (a win one way, a tie
                                                 the other)
``reward_judge_flip_rate{judge}``                flips / pairs
``reward_judge_order_agreement{judge}``          agreements / pairs
``reward_judge_length_reward_correlation{judge}``  Pearson correlation of completion length and
                                                 the judge's reward, over every scored pair seen
===============================================  ==============================================

The bias recorders (:meth:`JudgeMetrics.record_order_pair`, :meth:`JudgeMetrics.record_length_reward`)
are called by the judge tasks; :meth:`JudgeMetrics.bias` reads the figures back (for a result's
components).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric

#: Latency buckets of a judgement: a cache-free call to a model takes tens of ms to tens of s.
CALL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


@dataclass(frozen=True)
class BiasStats:
    """One judge's bias figures so far (NaN where there is nothing to compute them from)."""

    pairs: int
    flip_rate: float
    order_agreement: float
    length_samples: int
    length_reward_correlation: float


class _Correlation:
    """Running Pearson correlation (sums of x, y, x², y², xy)."""

    __slots__ = ("n", "sx", "sy", "sxx", "syy", "sxy")

    def __init__(self) -> None:
        self.n = 0
        self.sx = self.sy = self.sxx = self.syy = self.sxy = 0.0

    def add(self, x: float, y: float) -> None:
        self.n += 1
        self.sx += x
        self.sy += y
        self.sxx += x * x
        self.syy += y * y
        self.sxy += x * y

    def value(self) -> float:
        if self.n < 2:
            return math.nan
        cov = self.n * self.sxy - self.sx * self.sy
        vx = self.n * self.sxx - self.sx * self.sx
        vy = self.n * self.syy - self.sy * self.sy
        if vx <= 0 or vy <= 0:
            return math.nan
        return cov / math.sqrt(vx * vy)


class _BiasCollector:
    """Yields the bias gauges, computed from the counts when /metrics is scraped."""

    def __init__(self, metrics: JudgeMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        flip = GaugeMetricFamily("reward_judge_flip_rate", "Share of pairwise verdicts that changed with the "
                                 "order of the two answers", labels=["judge"])
        agree = GaugeMetricFamily("reward_judge_order_agreement", "Share of pairwise verdicts that agreed in "
                                  "both orders", labels=["judge"])
        corr = GaugeMetricFamily("reward_judge_length_reward_correlation", "Pearson correlation of completion "
                                 "length and judge reward", labels=["judge"])
        for judge in self._metrics.judges_with_bias():
            stats = self._metrics.bias(judge)
            if stats.pairs:
                flip.add_metric([judge], stats.flip_rate)
                agree.add_metric([judge], stats.order_agreement)
            if not math.isnan(stats.length_reward_correlation):
                corr.add_metric([judge], stats.length_reward_correlation)
        yield from (flip, agree, corr)

    def describe(self) -> Iterator[Metric]:
        yield GaugeMetricFamily("reward_judge_flip_rate", "", labels=["judge"])
        yield GaugeMetricFamily("reward_judge_order_agreement", "", labels=["judge"])
        yield GaugeMetricFamily("reward_judge_length_reward_correlation", "", labels=["judge"])


class JudgeMetrics:
    """The judges' series on their own registry (one per process: :func:`judge_metrics`)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.calls = Counter("reward_judge_calls", "Judgements asked for, by outcome", ["judge", "outcome"],
                             registry=r)
        self.cache_lookups = Counter("reward_judge_cache_lookups", "Verdict cache lookups, by result",
                                     ["judge", "result"], registry=r)
        self.retries = Counter("reward_judge_retries", "Judge requests made again, by why", ["judge", "reason"],
                               registry=r)
        self.call_seconds = Histogram("reward_judge_call_seconds", "Time of each judgement that called the judge",
                                      ["judge"], buckets=CALL_BUCKETS, registry=r)
        self.in_flight = Gauge("reward_judge_in_flight", "Requests to the judge in flight", ["judge"], registry=r)
        self.rate_limited = Counter("reward_judge_rate_limited", "Judgements refused for a rate limit, by whose",
                                    ["judge", "source"], registry=r)
        self.order_pairs = Counter("reward_judge_order_pairs", "Pairwise judgements made in both orders, by "
                                   "whether the verdicts agreed", ["judge", "result"], registry=r)
        self._lock = threading.Lock()
        self._pairs: dict[str, list[int]] = {}  # judge -> [agree, flip, partial]
        self._length: dict[str, _Correlation] = {}
        r.register(_BiasCollector(self))

    # -- the client layer's recorders ------------------------------------------------------------
    def record_call(self, judge: str, outcome: str, seconds: float | None = None) -> None:
        """One judgement's outcome (``ok``, ``cached`` or a failure kind's value) and, when the judge
        was called, its time."""
        self.calls.labels(judge, outcome).inc()
        if seconds is not None:
            self.call_seconds.labels(judge).observe(seconds)

    def record_cache(self, judge: str, hit: bool) -> None:
        self.cache_lookups.labels(judge, "hit" if hit else "miss").inc()

    # -- the judge tasks' recorders ----------------------------------------------------------------
    def record_unparseable(self, judge: str) -> None:
        """A reply the task's parser could not read (the task answers JUDGE_UNPARSEABLE)."""
        self.calls.labels(judge, "judge_unparseable").inc()

    def record_order_pair(self, judge: str, *, agreed: bool, flipped: bool | None = None) -> None:
        """A pair judged in both orders: ``agreed`` when the verdict was the same both times (a tie
        both times included); ``flipped`` when the winner changed with the order (default: not
        ``agreed``). Neither: a win one way and a tie the other (``partial``)."""
        flipped = (not agreed) if flipped is None else (flipped and not agreed)
        result = "agree" if agreed else "flip" if flipped else "partial"
        self.order_pairs.labels(judge, result).inc()
        with self._lock:
            counts = self._pairs.setdefault(judge, [0, 0, 0])
            counts[("agree", "flip", "partial").index(result)] += 1

    def record_length_reward(self, judge: str, length: float, reward: float) -> None:
        """One scored completion's length (characters or tokens: be consistent per judge) and reward."""
        if not (math.isfinite(length) and math.isfinite(reward)):
            return
        with self._lock:
            self._length.setdefault(judge, _Correlation()).add(float(length), float(reward))

    def bias(self, judge: str) -> BiasStats:
        """The judge's bias figures so far."""
        with self._lock:
            agree, flip, partial = self._pairs.get(judge, (0, 0, 0))
            corr = self._length.get(judge)
            n = corr.n if corr else 0
            value = corr.value() if corr else math.nan
        pairs = agree + flip + partial
        return BiasStats(pairs, flip / pairs if pairs else math.nan, agree / pairs if pairs else math.nan,
                         n, value)

    def judges_with_bias(self) -> list[str]:
        with self._lock:
            return sorted(set(self._pairs) | set(self._length))

    def sample(self, name: str, labels: dict[str, str]) -> float:
        """The value of one series now, 0.0 when absent (for tests, the bench and ``status``)."""
        value = self.registry.get_sample_value(name, labels)
        return 0.0 if value is None else value


_METRICS: JudgeMetrics | None = None
_METRICS_LOCK = threading.Lock()


def judge_metrics() -> JudgeMetrics:
    """This process's judge metrics (made on first use)."""
    global _METRICS
    with _METRICS_LOCK:
        if _METRICS is None:
            _METRICS = JudgeMetrics()
        return _METRICS
