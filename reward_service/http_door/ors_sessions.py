"""The ORS door's sessions: the client's session id (``X-Session-ID``) -> the host's open episode.

An ORS client picks its session id first (``/create_session``), then ``/create`` opens the episode;
the host gives the episode its own id, so the door keeps the pairing, with what the episode started
with (prompt, tools) and when the client last showed itself (any call, ``/ping`` every 10 s). A
session not seen for ``ttl_s`` (ORS: 900 s) is closed by :meth:`OrsSessions.sweep`; the host reaps
its own idle episodes too. The door is stateful, so door replicas need session affinity.

Errors are answered in ORS's shape (``{"detail": ...}``, as FastAPI's ``HTTPException`` writes it)
with the status its client acts on: 429/503 are retried (``Retry-After`` honoured), 410 ends the
session (``SessionTerminatedError``), other 4xx are the caller's to fix.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from starlette.responses import JSONResponse

from reward_core.episode_contract import (
    EpisodeError,
    EpisodeHost,
    EpisodeSpec,
    EpisodeSpecError,
    EpisodeStart,
    EpisodeStatus,
)

#: The HTTP status for an episode that could not be opened or reached: retried (429, 503, 504) or final.
HTTP_STATUS = {
    EpisodeStatus.REFUSED: 429,            # admission: retried after Retry-After
    EpisodeStatus.SANDBOX_FAILED: 503,     # infrastructure: retried
    EpisodeStatus.TOOL_FAILED: 503,
    EpisodeStatus.DEADLINE_EXCEEDED: 504,
    EpisodeStatus.SESSION_LOST: 410,       # the session is gone: the client ends it
    EpisodeStatus.CLOSED: 410,
    EpisodeStatus.FINISHED: 410,
    EpisodeStatus.ERROR: 500,
}


class OrsError(Exception):
    """A call answered with an HTTP error in ORS's shape."""

    def __init__(self, status: int, detail: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.headers = status, detail, dict(headers or {})

    @classmethod
    def of(cls, error: EpisodeError) -> OrsError:
        """The answer for a host's :class:`EpisodeError` (its status name leads the detail); a request the
        host found unusable (:class:`EpisodeSpecError`: unknown row, bad deadline) is the caller's: 400."""
        status = 400 if isinstance(error, EpisodeSpecError) else HTTP_STATUS.get(error.status, 500)
        headers = {}
        if status in (429, 503):
            headers["Retry-After"] = str(max(1, math.ceil(error.retry_after_s or 1)))
        return cls(status, f"{error.status.name}: {error}", headers)

    def response(self) -> JSONResponse:
        return JSONResponse({"detail": self.detail}, status_code=self.status, headers=self.headers)


@dataclass
class OrsSession:
    """One ORS session: the host's episode, how it was opened and what it started with."""

    sid: str
    spec: EpisodeSpec
    start: EpisodeStart
    last_seen: float
    ended: EpisodeStatus | None = None  # set once the episode finished or failed (no more calls)
    calls: int = 0
    tool_names: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        self.tool_names = frozenset(tool.name for tool in self.start.tools)

    def next_call_id(self) -> str:
        self.calls += 1
        return f"{self.sid}/{self.calls}"


class OrsSessions:
    """The door's open ORS sessions over one episode host."""

    def __init__(self, host: EpisodeHost, ttl_s: float = 900.0) -> None:
        self.host, self.ttl_s = host, ttl_s
        self._sessions: dict[str, OrsSession] = {}
        self._opening: set[str] = set()
        self._deleted_while_opening: set[str] = set()

    def __len__(self) -> int:
        return len(self._sessions)

    async def open(self, sid: str, spec: EpisodeSpec) -> OrsSession:
        """Opens the episode for ``sid`` (waits for the host's admission); 400 if ``sid`` exists."""
        if sid in self._sessions or sid in self._opening:
            raise OrsError(400, "Session already exists")
        self._opening.add(sid)
        try:
            start = await self.host.open(spec)
        except EpisodeError as exc:
            raise OrsError.of(exc) from None
        finally:
            self._opening.discard(sid)
        if sid in self._deleted_while_opening:  # deleted before it opened: release it now
            self._deleted_while_opening.discard(sid)
            await self.host.close(start.session_id)
            raise OrsError(410, "Session deleted")
        session = OrsSession(sid, spec, start, time.monotonic())
        self._sessions[sid] = session
        return session

    def get(self, sid: str) -> OrsSession:
        """The session (and notes that its client is alive); 404 as ORS answers an unknown one."""
        session = self._sessions.get(sid)
        if session is None:
            raise OrsError(404, "Active environment not found")
        session.last_seen = time.monotonic()
        return session

    async def delete(self, sid: str) -> bool:
        """Closes the session's episode (idempotent); True if there was one."""
        if sid in self._opening:
            self._deleted_while_opening.add(sid)
        session = self._sessions.pop(sid, None)
        if session is None:
            return False
        await self.host.close(session.start.session_id)
        return True

    async def sweep(self, now: float | None = None) -> list[str]:
        """Closes the sessions not seen for ``ttl_s``; returns their ids."""
        now = time.monotonic() if now is None else now
        stale = [sid for sid, s in self._sessions.items() if now - s.last_seen > self.ttl_s]
        for sid in stale:
            await self.delete(sid)
        return stale

    async def aclose(self) -> None:
        """Closes every session (the door is stopping)."""
        await asyncio.gather(*(self.delete(sid) for sid in list(self._sessions)), return_exceptions=True)
