"""Retry arithmetic of judge calls: backoff, Retry-After, and the one deadline that covers every retry."""

from __future__ import annotations

import pytest

from reward_service.judges.backoff import MIN_CALL_S, Backoff, retry_after_of, retry_delay

NO_JITTER = Backoff(base_s=0.2, factor=2.0, max_s=5.0, jitter=0.0)


def test_backoff_doubles_from_the_base_and_stops_at_the_cap() -> None:
    assert [NO_JITTER.delay(n, 0.0) for n in (1, 2, 3, 4, 5, 6, 7)] == [0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0]


def test_jitter_takes_off_at_most_its_share() -> None:
    backoff = Backoff(base_s=1.0, factor=2.0, max_s=10.0, jitter=0.5)
    assert backoff.delay(2, 0.0) == 2.0
    assert backoff.delay(2, 0.5) == 1.5
    assert backoff.delay(2, 0.999) == pytest.approx(1.001)


def test_no_retry_past_max_retries() -> None:
    kwargs = dict(max_retries=2, retry_after_s=None, remaining_s=100.0, backoff=NO_JITTER, draw=0.0)
    assert retry_delay(failures=2, **kwargs) == 0.4
    assert retry_delay(failures=3, **kwargs) is None


def test_retry_after_longer_than_the_backoff_is_honoured() -> None:
    assert retry_delay(failures=1, max_retries=3, retry_after_s=2.0, remaining_s=10.0, backoff=NO_JITTER,
                       draw=0.0) == 2.0


def test_retry_after_shorter_than_the_backoff_does_not_shorten_it() -> None:
    assert retry_delay(failures=3, max_retries=3, retry_after_s=0.1, remaining_s=10.0, backoff=NO_JITTER,
                       draw=0.0) == 0.8


def test_a_wait_that_leaves_no_time_for_the_call_is_no_retry() -> None:
    # 0.4 s of backoff fits in 0.4 + MIN_CALL_S, not in a hair less.
    kwargs = dict(failures=2, max_retries=5, retry_after_s=None, backoff=NO_JITTER, draw=0.0)
    assert retry_delay(remaining_s=0.4 + MIN_CALL_S, **kwargs) == 0.4
    assert retry_delay(remaining_s=0.4 + MIN_CALL_S - 1e-6, **kwargs) is None


def test_a_retry_after_past_the_deadline_is_no_retry() -> None:
    assert retry_delay(failures=1, max_retries=3, retry_after_s=30.0, remaining_s=5.0, backoff=NO_JITTER,
                       draw=0.0) is None


def test_retry_after_in_seconds_milliseconds_and_as_a_date() -> None:
    assert retry_after_of({"Retry-After": "3"}) == 3.0
    assert retry_after_of({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_of({"Retry-After": "Thu, 01 Jan 2026 00:00:10 GMT"}, now=1767225600.0) == 10.0
    assert retry_after_of({"Retry-After": "soon"}) is None
    assert retry_after_of({}) is None
