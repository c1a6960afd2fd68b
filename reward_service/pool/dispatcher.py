"""The dispatcher thread behind :class:`reward_service.pool.worker_pool.WorkerPool`.

One daemon thread owns every worker: it starts them (and replacements), hands
queued items to idle workers, reads their messages (results, errors, log
records), enforces item/start deadlines by SIGKILLing process groups, reaps
dead workers via their sentinels and shuts everything down on close.  Other
threads only touch the state guarded by ``lock`` (queue, counters, gauges).
"""

from __future__ import annotations

import concurrent.futures
import itertools
import logging
import logging.handlers
import math
import multiprocessing
import multiprocessing.connection
import os
import pickle
import queue
import signal
import sys
import threading
import time
import types
from collections import deque
from collections.abc import Callable
from typing import Any

from reward_service.pool import worker_main as _wm
from reward_service.pool.types import (
    ItemTimeout,
    JobError,
    PoolClosed,
    PoolConfig,
    PoolError,
    PoolStats,
    QueueFull,
    WorkerCrashed,
    WorkerStartError,
)
from reward_service.pool.workers import ForwardHandler, Item, Worker, WorkerState, signal_group

logger = logging.getLogger(__name__)

__all__ = ["Dispatcher"]

_MAX_START_BACKOFF_S = 5.0
_MAX_MESSAGES_PER_WAKEUP = 64
_STARTS_BEFORE_FAILING_ITEMS = 3


def main_module_preload() -> list[str]:
    """The modules the fork server imports for this program's main module, beside ``preload_modules``.

    Every process the server starts runs the main module again (multiprocessing's preparation, for a script or
    ``python -m``), importing what it imports: the server holding the modules its globals come from makes that
    run cheap (the ``reward-service`` script's imports took 0.13 s a worker; 3.11's server preloads no script's
    path). Nothing for a package's ``__main__``: multiprocessing never runs it again."""
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None) or ""
    if main is None or name == "__main__" or name.endswith(".__main__"):
        return []
    names = set()
    for value in vars(main).values():
        if isinstance(value, types.ModuleType):
            names.add(value.__name__)
        elif isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)):
            names.add(value.__module__)
    # (not the main module by its name: runpy warns when it finds the module it runs already imported)
    return sorted(n for n in names if type(n) is str and n in sys.modules and n != name and not n.endswith("__main__"))


class Dispatcher:
    """Owns the workers, the item queue and the dispatcher thread of one pool."""

    def __init__(self, config: PoolConfig, job_fn: Callable[..., Any],
                 initializer: Callable[..., object] | None, initargs: tuple[Any, ...]) -> None:
        self._config = config
        self._job_fn, self._initializer, self._initargs = job_fn, initializer, initargs
        self._ctx = multiprocessing.get_context("forkserver")
        if self._config.preload_modules:
            self._ctx.set_forkserver_preload([*self._config.preload_modules, *main_module_preload()])
        self._lock = threading.Lock()
        self._pending: deque[Item] = deque()
        self._closed = False
        self._grace_deadline = math.inf
        self._counters = dict.fromkeys(("completed", "timeouts", "crashes", "job_errors", "restarts"), 0)
        self._busy = self._alive = 0
        self._pids: tuple[int, ...] = ()
        self._workers: list[Worker] = []  # dispatcher thread only
        self._ids = itertools.count(1)
        self._start_failures = 0
        self._start_failures_total = 0  # read-only statistic (start_failures()); guarded by _lock
        self._next_start_at = 0.0
        self._startup_done = threading.Event()
        self._startup_error: str | None = None
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._wake_pending = False
        self._log_queue: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
        self._listener = logging.handlers.QueueListener(self._log_queue, ForwardHandler())
        self._listener.start()
        self._thread = threading.Thread(target=self._run, name=f"{self._config.name}-dispatcher", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ called from any thread
    def wait_started(self, timeout_s: float) -> str | None:
        """Wait for every worker to be ready; return why they are not, or None."""
        if not self._startup_done.wait(timeout_s) or self._startup_error is not None:
            return self._startup_error or f"workers not ready within {timeout_s:g}s"
        return None

    def enqueue(self, future: concurrent.futures.Future[Any], data: bytes | memoryview, timeout_s: float) -> None:
        """Queue one pickled item; raise :class:`PoolClosed` or :class:`QueueFull`."""
        with self._lock:
            if self._closed:
                raise PoolClosed("the pool is closed")
            if len(self._pending) >= self._config.max_queue:
                self._pending = deque(i for i in self._pending if not i.future.cancelled())
                if len(self._pending) >= self._config.max_queue:
                    raise QueueFull(f"{len(self._pending)} items already pending (max_queue="
                                    f"{self._config.max_queue}); retry later or raise PoolConfig.max_queue")
            self._pending.append(Item(future, data, timeout_s))
        self._wake()

    def stats(self) -> PoolStats:
        """Return a consistent snapshot of counters and gauges."""
        with self._lock:
            return PoolStats(pending=len(self._pending), busy_workers=self._busy,
                             alive_workers=self._alive, **self._counters)

    def worker_pids(self) -> tuple[int, ...]:
        """Pids of the ready (idle or busy) workers."""
        with self._lock:
            return self._pids

    def start_failures(self) -> int:
        """Worker starts that failed so far (initializer raised, start timeout, exit during startup)."""
        with self._lock:
            return self._start_failures_total

    def close(self, grace_s: float) -> None:
        """Stop accepting items, give running ones ``grace_s``, join the dispatcher thread."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._grace_deadline = time.monotonic() + max(0.0, grace_s)
        self._wake(force=True)
        if threading.current_thread() is not self._thread:
            self._thread.join(max(0.0, grace_s) + 30.0)
            if self._thread.is_alive():
                logger.error("worker pool %s: dispatcher did not stop", self._config.name)

    # ------------------------------------------------------------------ dispatcher thread
    def _wake(self, force: bool = False) -> None:
        with self._lock:
            if (self._wake_pending and not force) or self._wake_w < 0:
                return
            self._wake_pending = True
            try:
                os.write(self._wake_w, b"x")
            except BlockingIOError:
                pass

    def _run(self) -> None:
        try:
            self._loop()
        except Exception as exc:  # a dispatcher bug must fail items, not hang their callers
            logger.exception("worker pool %s: dispatcher failed; closing the pool", self._config.name)
            with self._lock:
                self._closed = True
            if not self._startup_done.is_set():
                self._startup_error = f"dispatcher failed: {type(exc).__name__}: {exc}"
                self._startup_done.set()
        finally:
            self._shutdown()

    def _loop(self) -> None:
        closing = False
        while True:
            now = time.monotonic()
            self._check_deadlines(now)
            if not closing and self._closed:
                closing = True
                self._begin_closing(now)
            if closing:
                if now >= self._grace_deadline:
                    return
                if not any(w.state is WorkerState.BUSY for w in self._workers):
                    return
            else:
                self._maintain_workers(now)
                self._dispatch()
            self._update_gauges()
            self._wait_and_handle(closing)

    def _begin_closing(self, now: float) -> None:
        """Fail queued items and retire idle/starting workers; busy ones get the grace period."""
        self._fail_pending(PoolClosed("the pool was closed before the item was dispatched"))
        for w in self._workers:
            if w.state in (WorkerState.IDLE, WorkerState.STARTING):
                self._retire(w, now, [signal.SIGTERM, signal.SIGKILL])

    def _wait_and_handle(self, closing: bool) -> None:
        """Block until a pipe, sentinel or the wake-up pipe is ready (or a deadline), then handle it."""
        objects: list[Any] = [self._wake_r]
        for w in self._workers:
            objects.append(w.proc.sentinel)
            if w.conn is not None:
                objects.append(w.conn)
        ready = multiprocessing.connection.wait(objects, self._wait_timeout(closing))
        if self._wake_r in ready:
            try:  # drain first, then clear: a wake-up written in between is not lost
                while os.read(self._wake_r, 4096):
                    pass
            except BlockingIOError:
                pass
            with self._lock:
                self._wake_pending = False
        for w in list(self._workers):
            if w.conn is not None and w.conn in ready:
                self._read_messages(w)
        for w in list(self._workers):
            if w.proc.sentinel in ready:
                self._reap(w)

    def _wait_timeout(self, closing: bool) -> float | None:
        deadlines = [w.deadline for w in self._workers]
        if closing:
            deadlines.append(self._grace_deadline)
        elif self._alive_or_starting() < self._config.num_workers:
            deadlines.append(self._next_start_at)
        nearest = min(deadlines, default=math.inf)
        return None if nearest == math.inf else max(0.0, nearest - time.monotonic())

    def _alive_or_starting(self) -> int:
        return sum(w.state is not WorkerState.DEAD for w in self._workers)

    def _maintain_workers(self, now: float) -> None:
        while self._alive_or_starting() < self._config.num_workers and now >= self._next_start_at:
            self._start_worker(now)
        if (self._start_failures >= _STARTS_BEFORE_FAILING_ITEMS
                and not any(w.state in (WorkerState.IDLE, WorkerState.BUSY) for w in self._workers)):
            self._fail_pending(WorkerStartError(
                f"no worker could be started ({self._start_failures} consecutive failures)"))

    def _start_worker(self, now: float) -> None:
        parent_conn, child_conn = self._ctx.Pipe(duplex=True)
        proc = self._ctx.Process(
            target=_wm.worker_main, name=f"{self._config.name}-{next(self._ids)}", daemon=True,
            args=(child_conn, self._job_fn, self._initializer, self._initargs,
                  self._config.memory_limit_mb, logging.getLogger().getEffectiveLevel()))
        try:
            proc.start()
        except (OSError, EOFError) as exc:
            parent_conn.close()
            self._start_failed(now, f"could not start {proc.name}: {exc}")
            return
        finally:
            child_conn.close()
        if self._startup_done.is_set():
            with self._lock:
                self._counters["restarts"] += 1
        self._workers.append(Worker(proc, parent_conn, deadline=now + self._config.start_timeout_s))

    def _start_failed(self, now: float, reason: str) -> None:
        self._start_failures += 1
        with self._lock:
            self._start_failures_total += 1
        backoff = min(0.1 * 2 ** (self._start_failures - 1), _MAX_START_BACKOFF_S)
        self._next_start_at = now + backoff
        logger.error("worker pool %s: %s (retrying in %.1fs)", self._config.name, reason, backoff)
        if not self._startup_done.is_set():
            self._startup_error = reason
            self._startup_done.set()
            with self._lock:
                self._closed = True

    def _dispatch(self) -> None:
        for w in self._workers:
            if w.state is not WorkerState.IDLE:
                continue
            item = self._next_item()
            if item is None:
                return
            assert w.conn is not None
            try:
                w.conn.send_bytes(item.data)
            except OSError:  # the worker vanished before taking it: the item never ran
                with self._lock:
                    self._pending.appendleft(item)
                self._lost_pipe(w, time.monotonic())
                continue
            w.state, w.item, w.deadline = WorkerState.BUSY, item, time.monotonic() + item.timeout_s

    def _next_item(self) -> Item | None:
        while True:
            with self._lock:
                if not self._pending:
                    return None
                item = self._pending.popleft()
            if item.running or item.future.set_running_or_notify_cancel():
                item.running = True
                return item  # otherwise it was cancelled while queued: drop it

    def _fail_pending(self, error: PoolError) -> None:
        with self._lock:
            items, self._pending = list(self._pending), deque()
        for item in items:
            self._resolve(item, error=error)

    def _resolve(self, item: Item, *, result: Any = None, error: PoolError | None = None) -> None:
        self._update_gauges()  # stats() agrees with the futures a caller has seen complete
        if not item.running and not item.future.set_running_or_notify_cancel():
            return
        item.running = True
        if error is not None:
            item.future.set_exception(error)
        else:
            item.future.set_result(result)

    def _read_messages(self, w: Worker) -> None:
        # Bounded, so that a worker flooding logs cannot starve deadline checks.
        try:
            for _ in range(_MAX_MESSAGES_PER_WAKEUP):
                if w.conn is None:
                    return
                data = w.conn.recv_bytes()
                self._on_message(w, data)
                if w.conn is None or not w.conn.poll():
                    return
        except (EOFError, OSError):
            self._lost_pipe(w, time.monotonic())

    def _on_message(self, w: Worker, data: bytes) -> None:
        try:
            msg = pickle.loads(data)
        except Exception as exc:  # e.g. a result class the parent cannot import
            msg = (_wm.MSG_ERROR, type(exc).__qualname__, f"result could not be unpickled in the parent: {exc}", "")
        tag = msg[0]
        if tag == _wm.MSG_LOG:
            self._log_queue.put_nowait(msg[1])
        elif tag == _wm.MSG_READY and w.state is WorkerState.STARTING:
            w.state, w.deadline, w.ready_seen = WorkerState.IDLE, math.inf, True
            self._start_failures = 0
            if not self._startup_done.is_set() and sum(x.ready_seen for x in self._workers) >= self._config.num_workers:
                self._startup_done.set()
        elif tag == _wm.MSG_INIT_ERROR:
            logger.error("worker pool %s: initializer failed in %s: %s: %s\n%s",
                         self._config.name, w.name, msg[1], msg[2], msg[3])
            self._retire(w, time.monotonic(), [signal.SIGKILL], delay_s=1.0)
            self._start_failed(time.monotonic(), f"initializer raised {msg[1]}: {msg[2]}")
        elif tag in (_wm.MSG_OK, _wm.MSG_ERROR) and w.state is WorkerState.BUSY and w.item is not None:
            item, w.item, w.state, w.deadline = w.item, None, WorkerState.IDLE, math.inf
            with self._lock:
                self._counters["completed" if tag == _wm.MSG_OK else "job_errors"] += 1
            if tag == _wm.MSG_OK:
                self._resolve(item, result=msg[1])
            else:
                self._resolve(item, error=JobError(msg[1], msg[2], msg[3]))
            if self._closed:
                self._retire(w, time.monotonic(), [signal.SIGTERM, signal.SIGKILL])
        else:
            logger.warning("worker pool %s: unexpected %r message from %s in state %s",
                           self._config.name, tag, w.name, w.state.value)

    def _retire(self, w: Worker, now: float, signals: list[int], delay_s: float = 1.0) -> None:
        """Close the pipe (EOF asks the worker to exit) and escalate through ``signals``."""
        if w.conn is not None:
            w.conn.close()
            w.conn = None
        w.state, w.expected_exit, w.signals_left = WorkerState.DEAD, True, list(signals)
        w.deadline = now + delay_s

    def _lost_pipe(self, w: Worker, now: float) -> None:
        """The worker's pipe broke: it is dying; wait for its exit status (keep its item)."""
        if w.conn is not None:
            w.conn.close()
            w.conn = None
        if w.state is not WorkerState.DEAD:
            w.state, w.signals_left, w.deadline = WorkerState.DEAD, [signal.SIGKILL], now + 1.0

    def _check_deadlines(self, now: float) -> None:
        for w in list(self._workers):
            if w.deadline > now:
                continue
            if w.state is WorkerState.BUSY and w.item is not None:
                item, w.item = w.item, None
                logger.warning("worker pool %s: item exceeded %.3gs on %s (pid %s); killing it",
                               self._config.name, item.timeout_s, w.name, w.proc.pid)
                signal_group(w.proc.pid, signal.SIGKILL)
                self._retire(w, now, [signal.SIGKILL], delay_s=2.0)
                with self._lock:
                    self._counters["timeouts"] += 1
                self._resolve(item, error=ItemTimeout(item.timeout_s, w.name, w.proc.pid))
            elif w.state is WorkerState.STARTING:
                signal_group(w.proc.pid, signal.SIGKILL)
                self._retire(w, now, [signal.SIGKILL], delay_s=2.0)
                self._start_failed(now, f"{w.name} not ready within {self._config.start_timeout_s:g}s")
            elif w.state is WorkerState.DEAD and w.signals_left:
                signal_group(w.proc.pid, w.signals_left.pop(0))
                w.deadline = now + (1.0 if w.signals_left else 5.0)
            elif w.state is WorkerState.DEAD:
                logger.error("worker pool %s: %s (pid %s) did not exit; abandoning it",
                             self._config.name, w.name, w.proc.pid)
                self._drop(w, exitcode=None)

    def _reap(self, w: Worker) -> None:
        if w.conn is not None and w.conn.poll():
            self._read_messages(w)  # a result written just before death wins
        try:
            exitcode = w.proc.exitcode
        except (OSError, EOFError, ValueError):
            exitcode = None
        self._drop(w, exitcode)

    def _drop(self, w: Worker, exitcode: int | None) -> None:
        self._workers.remove(w)
        if w.conn is not None:
            w.conn.close()
            w.conn = None
        if exitcode is not None:  # reaped: kill children the job left in its process group
            signal_group(w.proc.pid, signal.SIGKILL, group_only=True)
        if not w.expected_exit:
            if not w.ready_seen:
                self._start_failed(time.monotonic(), f"{w.name} exited during startup (exit code {exitcode})")
            else:
                logger.error("worker pool %s: %s (pid %s) died unexpectedly (exit code %s)",
                             self._config.name, w.name, w.proc.pid, exitcode)
                with self._lock:
                    self._counters["crashes"] += 1
        if w.item is not None:
            item, w.item = w.item, None
            self._resolve(item, error=WorkerCrashed(exitcode, w.name, w.proc.pid))
        if exitcode is not None:
            w.proc.close()

    def _update_gauges(self) -> None:
        ready = [w for w in self._workers if w.state in (WorkerState.IDLE, WorkerState.BUSY)]
        with self._lock:
            self._busy = sum(w.state is WorkerState.BUSY for w in ready)
            self._alive = len(ready)
            self._pids = tuple(w.proc.pid for w in ready if w.proc.pid is not None)

    def _shutdown(self) -> None:
        """Fail what is left, stop every worker (EOF, SIGTERM, SIGKILL), reap them."""
        with self._lock:
            self._closed = True
        self._fail_pending(PoolClosed("the pool was closed before the item was dispatched"))
        now = time.monotonic()
        for w in self._workers:
            if w.item is not None:
                item, w.item = w.item, None
                self._resolve(item, error=PoolClosed("the pool was closed before the item finished"))
            if w.state is not WorkerState.DEAD:  # busy ones ran out of grace: SIGTERM right away
                delay = 0.0 if w.state is WorkerState.BUSY else 1.0
                self._retire(w, now, [signal.SIGTERM, signal.SIGKILL], delay_s=delay)
        while self._workers:
            now = time.monotonic()
            self._check_deadlines(now)
            if not self._workers:
                break
            timeout = max(0.0, min(w.deadline for w in self._workers) - now)
            ready = multiprocessing.connection.wait([w.proc.sentinel for w in self._workers], timeout)
            for w in list(self._workers):
                if w.proc.sentinel in ready:
                    self._reap(w)
        self._update_gauges()
        with self._lock:
            os.close(self._wake_r)
            os.close(self._wake_w)
            self._wake_w = -1
        self._listener.stop()
