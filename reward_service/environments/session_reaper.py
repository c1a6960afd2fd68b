"""The reaper: a task that ends episodes past their deadline and drops sessions idle too long.

Every ``reap_interval_s`` it ends the running episodes past their deadline (DEADLINE_EXCEEDED) and
drops the sessions with no call for ``idle_timeout_s`` and none in flight (their next call:
SESSION_LOST); either way their work is stopped. A failing step is logged and the reaper goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from reward_core.episode_contract import EpisodeStatus
from reward_service.environments.env_config import EnvironmentsConfig
from reward_service.environments.episode_deadlines import deadline_error
from reward_service.environments.episode_ending import EpisodeEnding
from reward_service.environments.episode_metrics import EpisodeMetrics
from reward_service.environments.session_table import SessionTable

logger = logging.getLogger(__name__)


class SessionReaper:
    """Reaps one manager's sessions: :meth:`reap_once` is a step, :meth:`ensure_running` starts the task."""

    def __init__(self, sessions: SessionTable, ending: EpisodeEnding, metrics: EpisodeMetrics,
                 config: EnvironmentsConfig, clock: Callable[[], float]) -> None:
        self._sessions, self._ending, self._metrics, self._config = sessions, ending, metrics, config
        self._clock = clock
        self._task: asyncio.Task | None = None

    async def reap_once(self) -> None:
        """Ends episodes past their deadline and drops sessions idle past ``idle_timeout_s`` (the reaper's step)."""
        now = self._clock()
        for session in self._sessions.sessions():
            busy = bool(session.calls) or session.lock.locked()
            if not session.ended and now >= session.deadline_at:
                self._metrics.reaped.labels("deadline").inc()
                self._ending.end(session, EpisodeStatus.DEADLINE_EXCEEDED, error=deadline_error(session))
                await self._ending.stop_work(session)
            elif not busy and now - session.last_active >= self._config.idle_timeout_s:
                self._metrics.reaped.labels("idle").inc()
                self._sessions.pop(session.session_id)
                why = f"it was reaped after {self._config.idle_timeout_s:g} s without a call (--idle-timeout-s)"
                self._sessions.forget(session.session_id, why)
                if not session.ended:
                    self._ending.end(session, EpisodeStatus.SESSION_LOST, error=why)
                await self._ending.stop_work(session)

    def ensure_running(self) -> None:
        """Starts the reaper's task on the running loop unless it runs."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._reap_forever(), name="episode-reaper")

    async def stop(self) -> None:
        """Stops the reaper's task (if it was started) and waits for it."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _reap_forever(self) -> None:
        while True:
            await asyncio.sleep(self._config.reap_interval_s)
            try:
                await self.reap_once()
            except Exception:  # a bug of ours must not stop the reaper
                logger.exception("the episode reaper failed; it goes on")
