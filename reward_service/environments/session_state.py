"""One session as the manager holds it: its row, limits, progress, and the work it has in flight.

The work in flight (sandbox programs on threads, with the :class:`Cancellation` that stops each)
is tracked here so that closing, reaping or a deadline can stop all of it and wait for it to end:
a session that is gone holds nothing.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reward_core.episode_contract import EpisodeOutcome, EpisodeSpec, EpisodeStatus
from reward_core.sandbox_contract import Cancellation
from reward_service.environments.env_api import Environment


@dataclass(eq=False)
class EpisodeSession:
    """A session's state (mutated on the manager's event loop only)."""

    session_id: str
    env: Environment
    spec: EpisodeSpec
    row: Mapping[str, Any]
    reference: Mapping[str, Any]
    prompt_text: str
    opened_at: float
    deadline_at: float
    last_active: float
    status: EpisodeStatus = EpisodeStatus.RUNNING
    turns: int = 0
    step_rewards: list[float | None] = field(default_factory=list)
    outcome: EpisodeOutcome | None = None
    #: The ``python`` cells that ran clean, replayed by the next call (python_cells.py).
    cells: list[str] = field(default_factory=list)
    #: Whether it still holds an admission slot (released once when it ends).
    holds_slot: bool = True
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    calls: set[asyncio.Task] = field(default_factory=set)
    threads: dict[concurrent.futures.Future, Cancellation | None] = field(default_factory=dict)

    @property
    def ended(self) -> bool:
        return self.status.ended

    def track(self, future: concurrent.futures.Future, cancel: Cancellation | None) -> None:
        """Remembers work running on a thread (``cancel`` stops it) until it is done."""
        loop = asyncio.get_running_loop()
        self.threads[future] = cancel

        def forget(done: concurrent.futures.Future) -> None:  # on the thread that finished it
            try:
                loop.call_soon_threadsafe(self.threads.pop, done, None)
            except RuntimeError:  # the loop is closed: nobody waits any more
                pass

        future.add_done_callback(forget)

    def stop_work(self) -> list[concurrent.futures.Future]:
        """Cancels every tool call in flight and stops the programs they run; returns the thread work to
        wait for (each ends soon after its program is killed)."""
        for task in list(self.calls):
            task.cancel()
        for future, cancel in list(self.threads.items()):
            future.cancel()
            if cancel is not None:
                cancel.cancel()
        return list(self.threads)
