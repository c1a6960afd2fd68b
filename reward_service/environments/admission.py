"""Admission of episodes: at most ``limit`` open at once; an open waits up to the queue timeout.

Past the timeout the open is REFUSED (``EpisodeError`` with ``retry_after_s``): the hint is how
long the sessions ahead of it take to end, on the recent episodes' mean duration. Waiters are
admitted first come, first served (asyncio's semaphore queues them in order).
"""

from __future__ import annotations

import asyncio

from reward_core.episode_contract import EpisodeError, EpisodeStatus

#: A retry hint is at least this and at most MAX_RETRY_S seconds.
MIN_RETRY_S = 0.5
MAX_RETRY_S = 60.0
#: Weight of the latest episode in the mean duration.
DURATION_WEIGHT = 0.1


class Admission:
    """The open-session slots of one manager (use it inside one event loop)."""

    def __init__(self, limit: int, queue_timeout_s: float) -> None:
        self.limit, self.queue_timeout_s = limit, queue_timeout_s
        self._slots = asyncio.Semaphore(limit)
        self.waiting = 0
        self.open = 0
        self._mean_s = 0.0

    async def acquire(self) -> None:
        """Takes a slot, waiting up to the queue timeout; raises EpisodeError(REFUSED) past it."""
        self.waiting += 1
        try:
            await asyncio.wait_for(self._slots.acquire(), self.queue_timeout_s)
        except asyncio.TimeoutError:
            hint = self.retry_after_s()
            raise EpisodeError(EpisodeStatus.REFUSED,
                               f"all {self.limit} episode slots stayed busy for the {self.queue_timeout_s:g} s queue "
                               f"timeout (--max-sessions, --queue-timeout-s); retry in about {hint:.1f} s",
                               retry_after_s=hint) from None
        finally:
            self.waiting -= 1
        self.open += 1

    def release(self, duration_s: float | None = None) -> None:
        """Frees a slot; ``duration_s``: how long the episode held it (for the retry hint)."""
        self.open -= 1
        self._slots.release()
        if duration_s is not None:
            self._mean_s = duration_s if self._mean_s == 0 else \
                (1 - DURATION_WEIGHT) * self._mean_s + DURATION_WEIGHT * duration_s

    def retry_after_s(self) -> float:
        """About when a slot frees for a newcomer: the waiters' share of the mean episode duration."""
        estimate = self._mean_s * (self.waiting + 1) / self.limit
        return min(MAX_RETRY_S, max(MIN_RETRY_S, estimate))
