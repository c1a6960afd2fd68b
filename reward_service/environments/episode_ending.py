"""Ending an episode: its outcome (once), its admission slot freed, its metrics; then its work stopped.

An episode ends when it is submitted, fails, runs past a deadline, is closed or reaped. Ending it
frees its admission slot at once; stopping its work (its tool calls cancelled, its programs killed)
waits up to ``cleanup_deadline_s`` for that work to end, and counts an overrun.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from reward_core.episode_contract import EpisodeOutcome, EpisodeStatus
from reward_service.environments.admission import Admission
from reward_service.environments.episode_metrics import EpisodeMetrics
from reward_service.environments.session_state import EpisodeSession

logger = logging.getLogger(__name__)


class EpisodeEnding:
    """Ends the episodes of one session manager and stops their work (use it inside one event loop)."""

    def __init__(self, clock: Callable[[], float], admission: Admission, metrics: EpisodeMetrics,
                 cleanup_deadline_s: float) -> None:
        self._clock, self._admission, self._metrics = clock, admission, metrics
        self._cleanup_deadline_s = cleanup_deadline_s

    def end(self, session: EpisodeSession, status: EpisodeStatus, *, reward: float | None = None,
            components: Mapping[str, float] | None = None, detail: str = "", error: str = "") -> None:
        """Ends the episode (once): its outcome, its slot freed, its metrics."""
        if session.ended:
            return
        duration = self._clock() - session.opened_at
        session.status = status
        session.outcome = EpisodeOutcome(session.session_id, status, reward if status.scored else None,
                                         tuple(session.step_rewards), dict(components or {}), detail, error,
                                         session.turns, duration * 1000.0)
        if session.holds_slot:
            session.holds_slot = False
            self._admission.release(duration)
        self._metrics.ended.labels(session.env.name, status.name).inc()
        self._metrics.episode_seconds.labels(session.env.name).observe(max(0.0, duration))
        if status.scored and reward is not None:
            self._metrics.reward.labels(session.env.name).observe(reward)
        if not status.scored and status is not EpisodeStatus.CLOSED:
            logger.info("episode %s (%s) ended %s: %s", session.session_id, session.env.name, status.name, error)

    async def stop_work(self, session: EpisodeSession) -> None:
        """Stops the session's calls and programs; waits up to the cleanup deadline for them to end."""
        futures = session.stop_work()
        if not futures:
            return
        _, pending = await asyncio.wait([asyncio.wrap_future(f) for f in futures],
                                        timeout=self._cleanup_deadline_s)
        if pending:
            self._metrics.cleanup_overruns.inc()
            logger.warning("session %s: %d tool call(s) still running %g s after it ended (--cleanup-deadline-s)",
                           session.session_id, len(pending), self._cleanup_deadline_s)
