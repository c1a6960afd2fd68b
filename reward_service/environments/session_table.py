"""The sessions a manager holds, by id, and a bounded record of why the ones gone are gone.

A session is held from its open until it is closed or reaped (ended or not). Asking for one that is
gone is SESSION_LOST, with the reason kept for it (the last ``max_tombstones`` are kept).
"""

from __future__ import annotations

import collections

from reward_core.episode_contract import EpisodeError, EpisodeStatus
from reward_service.environments.session_state import EpisodeSession


class SessionTable:
    """The held sessions and the tombstones of the gone (use it inside one event loop)."""

    def __init__(self, max_tombstones: int) -> None:
        self._max_tombstones = max_tombstones
        self._sessions: dict[str, EpisodeSession] = {}
        self._gone: collections.OrderedDict[str, str] = collections.OrderedDict()  # id -> why it is gone

    def __len__(self) -> int:
        return len(self._sessions)

    def add(self, session: EpisodeSession) -> None:
        """Holds ``session`` under its id."""
        self._sessions[session.session_id] = session

    def get(self, session_id: str) -> EpisodeSession:
        """The held session; EpisodeError(SESSION_LOST) saying why when it is not held."""
        session = self._sessions.get(session_id)
        if session is None:
            why = self._gone.get(session_id, "no session has this id here (a replica that held it may be gone)")
            raise EpisodeError(EpisodeStatus.SESSION_LOST, f"session {session_id!r} is lost: {why}")
        return session

    def pop(self, session_id: str) -> EpisodeSession | None:
        """Stops holding the session (None when it is not held); :meth:`forget` records why."""
        return self._sessions.pop(session_id, None)

    def forget(self, session_id: str, why: str) -> None:
        """Records why the session is gone (the oldest records beyond ``max_tombstones`` are dropped)."""
        self._gone[session_id] = why
        while len(self._gone) > self._max_tombstones:
            self._gone.popitem(last=False)

    def sessions(self) -> list[EpisodeSession]:
        """The held sessions, now."""
        return list(self._sessions.values())

    def ids(self) -> list[str]:
        """The held sessions' ids, now."""
        return list(self._sessions)
