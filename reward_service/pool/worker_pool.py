"""Supervised process pool for CPU-bound verification jobs.

``WorkerPool`` runs a module-level ``job_fn(payload) -> result`` in worker
processes forked from a ``multiprocessing`` forkserver, one item per worker at
a time, with a hard per-item time limit enforced from the parent.  It is safe
to call from any thread (e.g. a gRPC ``ThreadPoolExecutor``).

Design:

* One daemon *dispatcher* thread owns every worker.  It blocks in
  ``multiprocessing.connection.wait()`` on the workers' pipes, their process
  sentinels and a wake-up pipe (new submissions, close), with a timeout equal to
  the nearest deadline.  It dispatches queued items to idle workers, collects
  results, SIGKILLs the process group of a worker whose item ran past its
  deadline, notices dead workers via their sentinels and starts replacements.
* Workers are forked by the forkserver (a clean single-threaded process started
  when the pool is created), never by the threaded server process.
* Log records from workers come back over the worker pipes (see
  :mod:`reward_service.pool.worker_main`) and are handed to a
  ``logging.handlers.QueueListener`` thread that re-dispatches each record to
  the parent's logger of the same name, so the parent's logging config applies.
  Worker records keep ``processName`` (e.g. ``reward-worker-3``).
* Future callbacks run on the dispatcher thread: keep them short.

Modules: :mod:`reward_service.pool.types` (errors, config, stats; re-exported
here), :mod:`reward_service.pool.dispatcher` (the dispatcher thread) and
:mod:`reward_service.pool.workers` (per-worker records).
"""

from __future__ import annotations

import atexit
import concurrent.futures
import pickle
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from multiprocessing.reduction import ForkingPickler
from typing import Any, Generic, TypeVar

from reward_service.pool.dispatcher import Dispatcher
from reward_service.pool.types import (
    ItemTimeout,
    JobError,
    Outcome,
    PayloadError,
    PoolClosed,
    PoolConfig,
    PoolError,
    PoolStats,
    QueueFull,
    WorkerCrashed,
    WorkerStartError,
    positive_finite,
)

P = TypeVar("P")
R = TypeVar("R")

__all__ = [
    "ItemTimeout", "JobError", "Outcome", "PayloadError", "PoolClosed", "PoolConfig",
    "PoolError", "PoolStats", "QueueFull", "WorkerCrashed", "WorkerPool", "WorkerStartError",
]

_live_pools: weakref.WeakSet[WorkerPool[Any, Any]] = weakref.WeakSet()
_atexit_lock = threading.Lock()
_atexit_registered = False


def _close_live_pools() -> None:
    for pool in list(_live_pools):
        pool.close(grace_s=0.0)


class WorkerPool(Generic[P, R]):
    """Process pool with hard per-item timeouts, crash isolation and worker replacement.

    ``job_fn`` and ``initializer`` must be module-level functions (pickled by
    reference).  The constructor blocks until all workers are ready and raises
    :class:`WorkerStartError` if they cannot start.  Use as a context manager or
    call :meth:`close`.
    """

    def __init__(self, job_fn: Callable[[P], R], config: PoolConfig | None = None, *,
                 initializer: Callable[..., object] | None = None, initargs: Sequence[Any] = ()) -> None:
        self._config = config if config is not None else PoolConfig()
        for what, obj in (("job_fn", job_fn), ("initializer/initargs", (initializer, tuple(initargs)))):
            try:
                pickle.dumps(obj)
            except (pickle.PicklingError, TypeError, AttributeError) as exc:
                raise ValueError(f"{what} must be picklable by reference: use a module-level "
                                 f"function (not a lambda/closure) and picklable args ({exc})") from exc
        self._dispatcher = Dispatcher(self._config, job_fn, initializer, tuple(initargs))
        _register_for_atexit(self)
        reason = self._dispatcher.wait_started(2 * self._config.start_timeout_s + 5.0)
        if reason is not None:
            self.close(grace_s=0.0)
            raise WorkerStartError(f"could not start {self._config.num_workers} workers: {reason}")

    # ------------------------------------------------------------------ public API
    @property
    def config(self) -> PoolConfig:
        return self._config

    def submit(self, payload: P, timeout_s: float | None = None) -> concurrent.futures.Future[R]:
        """Queue one item; the future resolves to ``job_fn(payload)`` or raises a PoolError.

        ``timeout_s`` overrides ``config.item_timeout_s`` for this item.  Raises
        :class:`QueueFull`, :class:`PoolClosed` or :class:`PayloadError` immediately.
        """
        if timeout_s is None:
            timeout_s = self._config.item_timeout_s
        elif not positive_finite(timeout_s):
            raise ValueError(f"timeout_s={timeout_s!r}: use None or a finite number of seconds > 0")
        try:
            data = ForkingPickler.dumps(payload)
        except Exception as exc:  # pickling can fail in many ways, all the caller's to fix
            raise PayloadError(f"payload could not be pickled: {type(exc).__name__}: {exc}") from exc
        future: concurrent.futures.Future[R] = concurrent.futures.Future()
        self._dispatcher.enqueue(future, data, float(timeout_s))
        return future

    def map_items(self, payloads: Iterable[P], timeout_s: float | None = None) -> list[Outcome[R]]:
        """Run every payload and return results or per-item PoolErrors, in input order.

        Never raises for a per-item failure; waits for queue space instead of
        failing with QueueFull.
        """
        entries: list[concurrent.futures.Future[R] | PoolError] = []
        oldest = 0
        for payload in payloads:
            while True:
                try:
                    entries.append(self.submit(payload, timeout_s))
                    break
                except QueueFull:
                    while oldest < len(entries) and (isinstance(entries[oldest], PoolError)
                                                     or entries[oldest].done()):  # type: ignore[union-attr]
                        oldest += 1
                    if oldest < len(entries):
                        concurrent.futures.wait([entries[oldest]], timeout=1.0)  # type: ignore[list-item]
                    else:
                        time.sleep(0.01)  # the queue is full of other callers' items
                except PoolError as exc:
                    entries.append(exc)
                    break
        outcomes: list[Outcome[R]] = []
        for entry in entries:
            if isinstance(entry, PoolError):
                outcomes.append(entry)
                continue
            try:
                outcomes.append(entry.result())
            except PoolError as exc:
                outcomes.append(exc)
        return outcomes

    def stats(self) -> PoolStats:
        """Return a consistent snapshot of counters and gauges."""
        return self._dispatcher.stats()

    def worker_pids(self) -> tuple[int, ...]:
        """Pids of the ready (idle or busy) workers."""
        return self._dispatcher.worker_pids()

    def queue_depth(self) -> int:
        """Items queued or running right now (what a scrape reports as the pool's backlog)."""
        stats = self._dispatcher.stats()
        return stats.pending + stats.busy_workers

    def worker_losses(self) -> dict[str, int]:
        """Workers lost so far, by cause; each is replaced while the pool is open.

        ``timeout``: SIGKILLed past its item's limit; ``crash``: died unexpectedly (segfault,
        ``os._exit``, an outside SIGKILL such as the kernel's OOM killer: the pool cannot tell
        which); ``start_failure``: could not start (initializer raised, start timeout). A job
        that hits the per-worker memory limit raises MemoryError inside the worker, which
        survives: that is a job error, not a loss.
        """
        stats = self._dispatcher.stats()
        return {"timeout": stats.timeouts, "crash": stats.crashes,
                "start_failure": self._dispatcher.start_failures()}

    def close(self, grace_s: float = 5.0) -> None:
        """Stop accepting items and shut down; idempotent.

        Pending items fail with :class:`PoolClosed`; items already running get
        ``grace_s`` seconds to finish (then fail with PoolClosed).  Workers are
        then sent SIGTERM, then SIGKILL, and reaped; the dispatcher and log
        listener threads are joined.
        """
        self._dispatcher.close(grace_s)
        _live_pools.discard(self)

    def __enter__(self) -> WorkerPool[P, R]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _register_for_atexit(pool: WorkerPool[Any, Any]) -> None:
    """Close pools still open at interpreter exit (registered lazily, not at import)."""
    global _atexit_registered
    _live_pools.add(pool)
    with _atexit_lock:
        if not _atexit_registered:
            atexit.register(_close_live_pools)
            _atexit_registered = True
