"""An episode's deadlines as one call sees them: its time budget, and running it within that budget.

A call gets the tool deadline or the episode's remaining time, whichever is shorter; which of the two
binds decides how a call past it ends (TOOL_FAILED or DEADLINE_EXCEEDED, in ``episode_calls.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TypeVar

from reward_core.episode_contract import EpisodeError, EpisodeStatus
from reward_service.environments.session_state import EpisodeSession

T = TypeVar("T")


class CallTimedOut(Exception):
    """A call ran past its budget (internal to the session manager's modules)."""


def deadline_error(session: EpisodeSession) -> str:
    """The error of an episode that ran past its deadline."""
    return f"the episode ran past its {session.deadline_at - session.opened_at:g} s deadline"


def call_budget(session: EpisodeSession, now: float, tool_deadline_s: float) -> tuple[float, bool]:
    """The call's time: the tool deadline or the episode's remaining time, and whether the latter binds."""
    remaining = session.deadline_at - now
    return min(tool_deadline_s, max(0.0, remaining)), remaining <= tool_deadline_s


async def run_bounded(session: EpisodeSession, work: Awaitable[T], budget: float) -> T:
    """Runs ``work`` as one of the session's calls within ``budget`` seconds; CallTimedOut past it, and
    EpisodeError when the session ended meanwhile (closed, reaped, its deadline)."""
    task = asyncio.ensure_future(work)
    session.calls.add(task)
    try:
        done, _ = await asyncio.wait({task}, timeout=budget)
    except asyncio.CancelledError:  # the caller went away: its call stops
        task.cancel()
        raise
    finally:
        session.calls.discard(task)
    if not done:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        raise CallTimedOut
    if task.cancelled():
        outcome = session.outcome
        raise EpisodeError(session.status if session.ended else EpisodeStatus.SESSION_LOST,
                           f"session {session.session_id!r} ended during the call: "
                           f"{outcome.error if outcome is not None else 'it was stopped'}")
    return task.result()
