"""Fair use of a judge endpoint: token buckets, refusal before the deadline, round-robin between callers."""

from __future__ import annotations

import threading
import time

import pytest

from reward_service.judges.limits import EndpointLimiter, QuotaExceeded, TokenBucket


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_bucket_starts_full_and_refills_at_its_rate() -> None:
    bucket = TokenBucket(per_minute=60, now=0.0)  # one a second, holds 60
    assert bucket.wait_for(60, 0.0) == 0.0
    bucket.take(60, 0.0)
    assert bucket.wait_for(1, 0.0) == pytest.approx(1.0)
    assert bucket.wait_for(1, 0.5) == pytest.approx(0.5)
    assert bucket.wait_for(1, 1.0) == 0.0


def test_a_bucket_never_holds_more_than_a_minute() -> None:
    bucket = TokenBucket(per_minute=60, now=0.0)
    assert bucket.wait_for(61, 10_000.0) == 0.0  # capped at the capacity: it waits for a full bucket
    bucket.take(61, 10_000.0)
    assert bucket.wait_for(1, 10_000.0) == pytest.approx(1.0)


def test_over_the_request_quota_past_the_deadline_is_refused_at_once_with_the_wait() -> None:
    clock = FakeClock()
    limiter = EndpointLimiter(8, requests_per_minute=6, clock=clock)  # one per 10 s, 6 at once
    for _ in range(6):
        limiter.acquire("a", 1, deadline=clock() + 1)
        limiter.release()
    with pytest.raises(QuotaExceeded) as info:
        limiter.acquire("a", 1, deadline=clock() + 5)
    assert info.value.retry_after_s == pytest.approx(10.0)
    assert limiter.stats().refused == 1 and limiter.waiting() == 0


def test_the_token_quota_counts_each_calls_tokens() -> None:
    clock = FakeClock()
    limiter = EndpointLimiter(8, tokens_per_minute=1000, clock=clock)
    limiter.acquire("a", 800, deadline=clock() + 1)
    with pytest.raises(QuotaExceeded) as info:
        limiter.acquire("a", 800, deadline=clock() + 30)
    assert info.value.retry_after_s == pytest.approx(600 / (1000 / 60))
    clock.now += 36.0
    limiter.acquire("a", 800, deadline=clock() + 1)  # refilled: admitted without waiting


def test_quota_refills_with_the_clock() -> None:
    clock = FakeClock()
    limiter = EndpointLimiter(8, requests_per_minute=60, clock=clock)
    for _ in range(60):
        limiter.acquire("a", 1, deadline=clock())
        limiter.release()
    with pytest.raises(QuotaExceeded):
        limiter.acquire("a", 1, deadline=clock() + 0.5)
    clock.now += 1.0
    limiter.acquire("a", 1, deadline=clock())


def test_no_free_slot_by_the_deadline_is_refused_with_a_hint() -> None:
    clock = FakeClock()
    limiter = EndpointLimiter(1, clock=clock)
    limiter.acquire("a", 1, deadline=clock())
    with pytest.raises(QuotaExceeded, match="1 of 1 slots busy") as info:
        limiter.acquire("b", 1, deadline=clock())
    assert info.value.retry_after_s > 0
    assert limiter.stats().in_flight == 1 and limiter.waiting() == 0


def _wait_until(predicate, what: str) -> None:
    for _ in range(2000):
        if predicate():
            return
        time.sleep(0.005)
    raise AssertionError(f"timed out waiting until {what}")


def test_callers_take_turns_so_a_flood_from_one_does_not_starve_another() -> None:
    limiter = EndpointLimiter(1)
    limiter.acquire("holder", 1, deadline=time.monotonic() + 60)
    order: list[str] = []

    def call(caller: str, name: str) -> None:
        limiter.acquire(caller, 1, deadline=time.monotonic() + 60)
        order.append(name)
        limiter.release()

    threads = []
    for i, (caller, name) in enumerate([("A", "A1"), ("A", "A2"), ("A", "A3"), ("A", "A4"), ("B", "B1")]):
        threads.append(threading.Thread(target=call, args=(caller, name)))
        threads[-1].start()
        _wait_until(lambda n=i + 1: limiter.waiting() == n, f"{name} is queued")
    limiter.release()
    for t in threads:
        t.join(timeout=30)
    assert order == ["A1", "B1", "A2", "A3", "A4"]


def test_within_one_caller_calls_go_in_arrival_order() -> None:
    limiter = EndpointLimiter(1)
    limiter.acquire("holder", 1, deadline=time.monotonic() + 60)
    order: list[int] = []

    def call(i: int) -> None:
        limiter.acquire("A", 1, deadline=time.monotonic() + 60)
        order.append(i)
        limiter.release()

    threads = []
    for i in range(5):
        threads.append(threading.Thread(target=call, args=(i,)))
        threads[-1].start()
        _wait_until(lambda n=i + 1: limiter.waiting("A") == n, f"call {i} is queued")
    limiter.release()
    for t in threads:
        t.join(timeout=30)
    assert order == [0, 1, 2, 3, 4]


def test_concurrency_never_exceeds_the_limit() -> None:
    limiter = EndpointLimiter(3)
    peak = 0
    lock = threading.Lock()
    inside = 0

    def call(caller: str) -> None:
        nonlocal peak, inside
        limiter.acquire(caller, 1, deadline=time.monotonic() + 60)
        with lock:
            inside += 1
            peak = max(peak, inside)
        time.sleep(0.002)
        with lock:
            inside -= 1
        limiter.release()

    threads = [threading.Thread(target=call, args=(f"c{i % 4}",)) for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert peak <= 3 and limiter.stats().in_flight == 0
