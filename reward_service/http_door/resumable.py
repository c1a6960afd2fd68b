"""Work that outlives its HTTP stream: started once under a task id, awaited by any stream that names it.

ORS streams a tool call's result over SSE and announces a ``task_id`` first; a client whose stream
broke POSTs again with that ``task_id`` and gets the same run's result instead of a second run (a
tool call steps the environment: it must not run twice). The run is kept after it ends for
``linger_s`` (ORS keeps 60 s), then forgotten; an unknown id is answered as unknown. A task belongs
to one owner (the session that started it): another owner cannot read it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass


@dataclass
class _Run:
    owner: str
    task: asyncio.Task[str]


class ResumableTasks:
    """Runs by id (create inside the event loop that serves the streams)."""

    def __init__(self, linger_s: float = 60.0) -> None:
        if linger_s < 0:
            raise ValueError("linger_s must be >= 0")
        self.linger_s = linger_s
        self._runs: dict[str, _Run] = {}

    def start(self, owner: str, work: Awaitable[str]) -> str:
        """Starts ``work`` (its result: the text to stream) and returns its new task id."""
        task_id = uuid.uuid4().hex
        task = asyncio.ensure_future(work)
        self._runs[task_id] = _Run(owner, task)
        task.add_done_callback(lambda done: self._ended(task_id, done))
        return task_id

    def get(self, owner: str, task_id: str) -> asyncio.Task[str] | None:
        """The run ``task_id`` of ``owner`` (running or ended within the linger), or None."""
        run = self._runs.get(task_id)
        return run.task if run is not None and run.owner == owner else None

    def __len__(self) -> int:
        return len(self._runs)

    def _ended(self, task_id: str, task: asyncio.Task[str]) -> None:
        if not task.cancelled():
            task.exception()  # retrieved here: a run nobody streams any more is not an asyncio warning
        asyncio.get_running_loop().call_later(self.linger_s, self._runs.pop, task_id, None)

    async def aclose(self) -> None:
        """Cancels the runs still going and forgets every run."""
        running = [run.task for run in self._runs.values() if not run.task.done()]
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        self._runs.clear()
