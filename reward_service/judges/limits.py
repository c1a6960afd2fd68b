"""Fair use of a judge endpoint: concurrency, requests per minute and tokens per minute.

One :class:`EndpointLimiter` per endpoint in this server process, shared by every task and
every client. Callers (the request's client id) wait in their own queues, served round-robin:
a client that sends a thousand judgements at once delays another client's one by at most one
turn, never by a thousand. A caller whose turn cannot come (a free slot, enough quota) before
its deadline is refused at once with :class:`QuotaExceeded` and the wait it would have needed.

The clock is injected, so the quota arithmetic is tested without sleeping.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

Clock = Callable[[], float]

#: The refill window of the per-minute quotas: a bucket holds at most one minute's worth.
MINUTE_S = 60.0


class QuotaExceeded(Exception):
    """No turn for this call before its deadline; ``retry_after_s`` is when one may be free."""

    def __init__(self, reason: str, retry_after_s: float) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after_s = retry_after_s


class TokenBucket:
    """A quota of ``per_minute`` units, refilled continuously, holding at most a minute's worth.

    Not thread-safe on its own: :class:`EndpointLimiter` calls it under its lock.
    """

    def __init__(self, per_minute: float, now: float) -> None:
        if per_minute <= 0:
            raise ValueError(f"per_minute must be > 0, not {per_minute}")
        self.capacity = float(per_minute)
        self.rate = per_minute / MINUTE_S  # units per second
        self.level = self.capacity
        self.updated = now

    def wait_for(self, amount: float, now: float) -> float:
        """Seconds until ``amount`` units are there (0.0: now). An amount over the capacity waits for
        a full bucket (it is never refused for good)."""
        self._refill(now)
        need = min(amount, self.capacity)
        return 0.0 if self.level >= need else (need - self.level) / self.rate

    def take(self, amount: float, now: float) -> None:
        """Takes ``amount`` (capped at the capacity); call after ``wait_for`` said 0."""
        self._refill(now)
        self.level -= min(amount, self.capacity)

    def _refill(self, now: float) -> None:
        if now > self.updated:
            self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
            self.updated = now


@dataclass(frozen=True)
class LimiterStats:
    in_flight: int
    waiting: int
    refused: int


class _Waiter:
    __slots__ = ("caller", "tokens")

    def __init__(self, caller: str, tokens: int) -> None:
        self.caller = caller
        self.tokens = tokens


class EndpointLimiter:
    """Admission to one endpoint: at most ``max_concurrency`` calls in flight, within the quotas.

    ``acquire`` blocks until the caller's turn (round-robin over callers, first come first served
    within one caller), a free slot and enough quota, or raises :class:`QuotaExceeded` as soon as
    that cannot happen before ``deadline`` (a value of ``clock``). Each successful ``acquire``
    is paired with one ``release``.
    """

    def __init__(self, max_concurrency: int, requests_per_minute: float = 0.0, tokens_per_minute: float = 0.0,
                 clock: Clock = time.monotonic, typical_call_s: float = 1.0) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, not {max_concurrency}")
        self.max_concurrency = max_concurrency
        self._clock = clock
        now = clock()
        self._requests = TokenBucket(requests_per_minute, now) if requests_per_minute > 0 else None
        self._tokens = TokenBucket(tokens_per_minute, now) if tokens_per_minute > 0 else None
        self._cv = threading.Condition(threading.Lock())
        # caller -> its waiters, oldest first; the dict's order is the round-robin order.
        self._queues: collections.OrderedDict[str, collections.deque[_Waiter]] = collections.OrderedDict()
        self._in_flight = 0
        self._refused = 0
        self._call_s = typical_call_s  # moving average of a call's time: the retry hint when slots are full

    def acquire(self, caller: str, tokens: int, deadline: float) -> None:
        """Waits for this call's turn; raises QuotaExceeded when it cannot come before ``deadline``."""
        me = _Waiter(caller, tokens)
        with self._cv:
            self._queues.setdefault(caller, collections.deque()).append(me)
            try:
                while True:
                    now = self._clock()
                    if self._next() is me and self._in_flight < self.max_concurrency:
                        wait = self._quota_wait(tokens, now)
                        if wait == 0.0:
                            self._admit(me, now)
                            return
                        if now + wait > deadline:
                            raise self._refuse(f"over the endpoint's quota for {wait:.2f} s more, past the deadline",
                                               wait)
                        self._cv.wait(timeout=wait)
                        continue
                    if now >= deadline:
                        raise self._refuse(f"no turn at the endpoint before the deadline ({self._in_flight} of "
                                           f"{self.max_concurrency} slots busy, {self._waiting() - 1} other calls "
                                           "waiting)", self._busy_hint())
                    self._cv.wait(timeout=deadline - now)
            finally:
                queue = self._queues.get(caller)
                if queue is not None and me in queue:  # refused (or interrupted): leave the line
                    queue.remove(me)
                    if not queue:
                        del self._queues[caller]
                    self._cv.notify_all()

    def release(self, call_s: float | None = None) -> None:
        """Frees the slot of a finished call (``call_s``: how long it took, for the retry hint)."""
        with self._cv:
            self._in_flight -= 1
            if call_s is not None:
                self._call_s = 0.9 * self._call_s + 0.1 * call_s
            self._cv.notify_all()

    def stats(self) -> LimiterStats:
        with self._cv:
            return LimiterStats(self._in_flight, self._waiting(), self._refused)

    def waiting(self, caller: str | None = None) -> int:
        """Calls waiting for their turn (of ``caller`` alone, when given)."""
        with self._cv:
            return len(self._queues.get(caller, ())) if caller is not None else self._waiting()

    def _next(self) -> _Waiter | None:
        """The waiter whose turn it is: the oldest of the caller first in round-robin order."""
        for queue in self._queues.values():
            return queue[0]
        return None

    def _quota_wait(self, tokens: int, now: float) -> float:
        waits = [0.0]
        if self._requests is not None:
            waits.append(self._requests.wait_for(1, now))
        if self._tokens is not None:
            waits.append(self._tokens.wait_for(tokens, now))
        return max(waits)

    def _admit(self, me: _Waiter, now: float) -> None:
        if self._requests is not None:
            self._requests.take(1, now)
        if self._tokens is not None:
            self._tokens.take(me.tokens, now)
        queue = self._queues.pop(me.caller)
        queue.popleft()
        if queue:  # the caller goes to the back of the round
            self._queues[me.caller] = queue
        self._in_flight += 1
        self._cv.notify_all()

    def _refuse(self, reason: str, retry_after_s: float) -> QuotaExceeded:
        self._refused += 1
        return QuotaExceeded(reason, max(retry_after_s, 0.001))

    def _waiting(self) -> int:
        return sum(len(q) for q in self._queues.values())

    def _busy_hint(self) -> float:
        return self._call_s * (1 + self._waiting() / self.max_concurrency)
