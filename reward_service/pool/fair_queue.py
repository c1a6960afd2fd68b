"""Admission and fair dispatch in front of the worker pool.

Every client (keyed by the client id its calls carry) has its own queue of jobs; the pool
is fed round-robin from those queues and holds at most ``window`` jobs at once, so a client
that sends 10,000 rollouts delays another client's 64 by a few jobs, not by 10,000 items.
Admission is bounded twice: items pending over all clients (``max_items``) and per client
(``max_client_items``); beyond either, the request is refused as a whole with an error that
names the limit (the servicer answers ``RESOURCE_EXHAUSTED`` with a retry hint).

A job still in its client's queue is dropped when its future is cancelled (a cancelled or
expired call); a job in the pool runs to its end or its time limit, which starts when a
worker takes it (time spent queued here never counts against an item's limit).
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass, field
from typing import Any

from reward_service.pool.types import PoolError


class AdmissionRefused(RuntimeError):
    """The request would exceed a pending-items limit; ``limit_name`` says which."""

    def __init__(self, message: str, limit_name: str) -> None:
        super().__init__(message)
        self.limit_name = limit_name


@dataclass
class _Job:
    client: str
    payload: Any
    timeout_s: float
    items: int
    future: Future = field(default_factory=Future)


class FairQueue:
    """Per-client job queues feeding ``submit_to_pool`` round-robin (see the module docstring).

    ``submit_to_pool(payload, timeout_s) -> Future`` is the pool's submit. Items are counted
    from ``reserve`` until their job is done or dropped; ``release`` returns what a refused or
    partly submitted request reserved but never queued.
    """

    def __init__(self, submit_to_pool: Callable[[Any, float], Future], window: int,
                 max_items: int, max_client_items: int) -> None:
        if window < 1 or max_items < 1 or max_client_items < 1:
            raise ValueError("window, max_items and max_client_items must be >= 1")
        self._submit_to_pool = submit_to_pool
        self._window = window
        self.max_items = max_items
        self.max_client_items = max_client_items
        self._lock = threading.Lock()
        self._queues: collections.OrderedDict[str, collections.deque[_Job]] = collections.OrderedDict()
        self._pending_items: collections.Counter[str] = collections.Counter()
        self._in_pool = 0

    # --- admission ------------------------------------------------------------------------
    def reserve(self, client: str, items: int) -> None:
        """Counts ``items`` against both limits, or raises AdmissionRefused counting nothing."""
        with self._lock:
            total = sum(self._pending_items.values())
            mine = self._pending_items[client]
            if mine + items > self.max_client_items:
                raise AdmissionRefused(
                    f"client {client or '(no client id)'!r} has {mine} items pending and asked {items} more; "
                    f"the per-client limit is {self.max_client_items} (--max-client-queue): wait for results "
                    "before sending more", "max_client_queue")
            if total + items > self.max_items:
                raise AdmissionRefused(
                    f"verification queue is full: {total} items pending, {items} asked, limit {self.max_items} "
                    "(--max-queue); retry later or add replicas", "max_queue")
            self._pending_items[client] += items

    def force_reserve(self, client: str, items: int) -> None:
        """Counts ``items`` without checking the limits (a retry of items already admitted)."""
        with self._lock:
            self._pending_items[client] += items

    def release(self, client: str, items: int) -> None:
        """Returns reserved items that were never queued (a refused or failed submission)."""
        with self._lock:
            self._uncount(client, items)

    def _uncount(self, client: str, items: int) -> None:
        self._pending_items[client] -= items
        if self._pending_items[client] <= 0:
            del self._pending_items[client]

    # --- jobs -----------------------------------------------------------------------------
    def submit(self, client: str, payload: Any, timeout_s: float, items: int) -> Future:
        """Queues a job of ``items`` reserved items; its future resolves with the pool's result.

        Cancelling the future drops the job if no worker has it yet.
        """
        job = _Job(client, payload, timeout_s, items)
        with self._lock:
            self._queues.setdefault(client, collections.deque()).append(job)
        job.future.add_done_callback(lambda fut: self._on_cancel(job) if fut.cancelled() else None)
        self._dispatch()
        return job.future

    def _on_cancel(self, job: _Job) -> None:
        with self._lock:
            queue = self._queues.get(job.client)
            if queue is not None and job in queue:
                queue.remove(job)
                if not queue:
                    del self._queues[job.client]
                self._uncount(job.client, job.items)

    def _next_jobs(self) -> list[_Job]:
        """Pops jobs round-robin over clients while the pool has room (call with the lock held)."""
        taken = []
        while self._in_pool < self._window and self._queues:
            client, queue = next(iter(self._queues.items()))
            job = queue.popleft()
            self._queues.move_to_end(client)
            if not queue:
                del self._queues[client]
            if not job.future.set_running_or_notify_cancel():
                self._uncount(job.client, job.items)
                continue
            self._in_pool += 1
            taken.append(job)
        return taken

    def _dispatch(self) -> None:
        with self._lock:
            jobs = self._next_jobs()
        for job in jobs:
            try:
                pool_future = self._submit_to_pool(job.payload, job.timeout_s)
            except PoolError as exc:
                self._finish(job, None, exc)
                continue
            pool_future.add_done_callback(lambda fut, job=job: self._finish(job, fut, None))

    def _finish(self, job: _Job, pool_future: Future | None, error: BaseException | None) -> None:
        with self._lock:
            self._in_pool -= 1
            self._uncount(job.client, job.items)
        if error is None and pool_future is not None:
            error = CancelledError() if pool_future.cancelled() else pool_future.exception()
        if error is not None:
            job.future.set_exception(error)
        else:
            job.future.set_result(pool_future.result())
        self._dispatch()

    # --- statistics -----------------------------------------------------------------------
    def pending_items(self, client: str | None = None) -> int:
        """Items reserved and not yet done: over all clients, or for ``client``."""
        with self._lock:
            return sum(self._pending_items.values()) if client is None else self._pending_items[client]

    def queued_jobs(self) -> int:
        """Jobs waiting here for room in the pool."""
        with self._lock:
            return sum(len(q) for q in self._queues.values())

    def drop_queued(self) -> int:
        """Cancels every job still queued here (shutdown); returns how many."""
        with self._lock:
            jobs = [job for queue in self._queues.values() for job in queue]
        return sum(job.future.cancel() for job in jobs)
