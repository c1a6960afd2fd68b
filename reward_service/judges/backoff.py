"""Retry arithmetic for judge calls: when to try again, and whether it still fits the deadline.

Pure functions (the random draw is passed in), so every case is tested without sleeping.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from dataclasses import dataclass

#: A retry that would leave less than this for the call itself is not made.
MIN_CALL_S = 0.05


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with jitter: ``base_s * factor**(n-1)``, capped at ``max_s``, of which up to
    ``jitter`` (a fraction) is taken off at random so retries of many callers spread out."""

    base_s: float = 0.2
    factor: float = 2.0
    max_s: float = 5.0
    jitter: float = 0.5

    def delay(self, failures: int, draw: float) -> float:
        """The wait before retry number ``failures`` (1: after the first failure); ``draw`` in [0, 1)."""
        full = min(self.max_s, self.base_s * self.factor ** max(failures - 1, 0))
        return full * (1.0 - self.jitter * draw)


def retry_delay(*, failures: int, max_retries: int, retry_after_s: float | None, remaining_s: float,
                backoff: Backoff, draw: float) -> float | None:
    """Seconds to wait before trying again, or None when no retry may be made.

    None when ``failures`` already exceeds ``max_retries``, or when the wait (the backoff, or the
    endpoint's ``Retry-After`` when longer: it is honoured, never cut short) plus
    :data:`MIN_CALL_S` for the call itself does not fit in ``remaining_s``.
    """
    if failures > max_retries:
        return None
    wait = backoff.delay(failures, draw)
    if retry_after_s is not None:
        wait = max(wait, retry_after_s)
    if wait + MIN_CALL_S > remaining_s:
        return None
    return wait


def retry_after_of(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The wait a 429/503 asks for: ``retry-after-ms``, or ``Retry-After`` in seconds or as an HTTP
    date; None when absent or unreadable. ``now`` (epoch seconds) is for tests of the date form."""
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            return max(float(millis) / 1000.0, 0.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - (time.time() if now is None else now), 0.0)
