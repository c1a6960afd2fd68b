"""Micro-batching: many concurrent small calls become a few batched calls (asyncio).

Used by the HTTP front door (OpenRLHF and verl send one sample per HTTP call, hundreds at
once) and by the reward-model server's step scoring. Each call's items join
the open batch; the batch is sent when it holds ``max_items`` or ``max_wait_s`` after its
first item, whichever comes first; every caller gets back exactly its own results.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


@dataclass
class _Batch(Generic[Item, Result]):
    items: list[Item] = field(default_factory=list)
    waiters: list[tuple[int, int, asyncio.Future]] = field(default_factory=list)  # (start, end, future)


class MicroBatcher(Generic[Item, Result]):
    """Merges concurrent ``submit`` calls into calls of ``send(items) -> results`` (same order).

    A batch holds at most ``max_items``, except that one call larger than that is sent alone.

    ``send`` failing fails every caller of that batch with the same exception. Must be used
    from one event loop.
    """

    def __init__(self, send: Callable[[list[Item]], Awaitable[Sequence[Result]]], max_items: int = 256,
                 max_wait_s: float = 0.005) -> None:
        if max_items < 1 or max_wait_s < 0:
            raise ValueError("need max_items >= 1 and max_wait_s >= 0")
        self._send = send
        self.max_items = max_items
        self.max_wait_s = max_wait_s
        self._open: _Batch[Item, Result] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._in_flight: set[asyncio.Task] = set()
        self.batches_sent = 0
        self.items_sent = 0

    async def submit(self, items: Sequence[Item]) -> list[Result]:
        """Results for ``items``, in order, once the batch they joined is answered."""
        if not items:
            return []
        loop = asyncio.get_running_loop()
        future: asyncio.Future = loop.create_future()
        if self._open is not None and len(self._open.items) + len(items) > self.max_items:
            self._flush()  # never overfill: the open batch goes now, these items start the next
        if self._open is None:
            self._open = _Batch()
            self._timer = loop.call_later(self.max_wait_s, self._flush)
        batch = self._open
        start = len(batch.items)
        batch.items.extend(items)
        batch.waiters.append((start, len(batch.items), future))
        if len(batch.items) >= self.max_items:
            self._flush()
        return await future

    def _flush(self) -> None:
        batch, self._open = self._open, None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if batch is None or not batch.items:
            return
        task = asyncio.get_running_loop().create_task(self._run(batch))
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)

    async def _run(self, batch: _Batch[Item, Result]) -> None:
        self.batches_sent += 1
        self.items_sent += len(batch.items)
        try:
            results = list(await self._send(batch.items))
            if len(results) != len(batch.items):
                raise RuntimeError(f"upstream answered {len(results)} results for {len(batch.items)} items")
        except Exception as exc:  # noqa: BLE001 -- every caller of the batch gets the failure
            for _, _, future in batch.waiters:
                if not future.done():
                    future.set_exception(exc)
            return
        for start, end, future in batch.waiters:
            if not future.done():
                future.set_result(results[start:end])
