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
  :mod:`reward_service._worker_main`) and are handed to a
  ``logging.handlers.QueueListener`` thread that re-dispatches each record to
  the parent's logger of the same name, so the parent's logging config applies.
  Worker records keep ``processName`` (e.g. ``reward-worker-3``).
* Future callbacks run on the dispatcher thread: keep them short.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import dataclasses
import enum
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
import threading
import time
import weakref
from collections import deque
from multiprocessing.reduction import ForkingPickler
from typing import Any, Callable, Generic, Iterable, Sequence, TypeVar, Union

from reward_service import _worker_main as _wm

logger = logging.getLogger(__name__)

P = TypeVar("P")
R = TypeVar("R")

__all__ = [
    "ItemTimeout", "JobError", "Outcome", "PayloadError", "PoolClosed", "PoolConfig",
    "PoolError", "PoolStats", "QueueFull", "WorkerCrashed", "WorkerPool", "WorkerStartError",
]


# --------------------------------------------------------------------------- errors
class PoolError(Exception):
    """Base class of every error raised by :class:`WorkerPool` or set on its futures."""


class QueueFull(PoolError):
    """``submit`` found ``max_queue`` items already pending."""


class PoolClosed(PoolError):
    """The pool is closed (or closed before the item could finish)."""


class PayloadError(PoolError):
    """The payload could not be pickled for transfer to a worker."""


class WorkerStartError(PoolError):
    """Workers could not be started (initializer failed, start timeout, ...)."""


class ItemTimeout(PoolError):
    """The item ran past its hard time limit; its worker was SIGKILLed and replaced."""

    def __init__(self, timeout_s: float, worker: str = "", pid: int | None = None) -> None:
        super().__init__(f"item exceeded its {timeout_s:g}s limit; worker {worker} (pid {pid}) was killed")
        self.timeout_s, self.worker, self.pid = timeout_s, worker, pid

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.timeout_s, self.worker, self.pid))


class WorkerCrashed(PoolError):
    """The worker process died while running the item (segfault, os._exit, OOM kill, ...)."""

    def __init__(self, exitcode: int | None, worker: str = "", pid: int | None = None) -> None:
        self.exitcode, self.worker, self.pid = exitcode, worker, pid
        self.signal: int | None = -exitcode if exitcode is not None and exitcode < 0 else None
        if self.signal is not None:
            try:
                how = f"killed by signal {signal.Signals(self.signal).name} ({self.signal})"
            except ValueError:
                how = f"killed by signal {self.signal}"
        elif exitcode is None:
            how = "exit status unknown"
        else:
            how = f"exit code {exitcode}"
        super().__init__(f"worker {worker} (pid {pid}) died while running the item: {how}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.exitcode, self.worker, self.pid))


class JobError(PoolError):
    """``job_fn`` raised; the worker survived.  Carries the remote type, message, traceback."""

    def __init__(self, exc_type: str, message: str, remote_traceback: str = "") -> None:
        super().__init__(f"{exc_type}: {message}")
        self.exc_type, self.message, self.remote_traceback = exc_type, message, remote_traceback

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.exc_type, self.message, self.remote_traceback))


Outcome = Union[R, PoolError]
"""What :meth:`WorkerPool.map_items` returns per input: the result or the item's PoolError."""


# --------------------------------------------------------------------------- config
def _default_num_workers() -> int:
    return os.cpu_count() or 1


def _positive_finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


@dataclasses.dataclass(frozen=True)
class PoolConfig:
    """Configuration of a :class:`WorkerPool`; each field's ``metadata["help"]`` documents it."""

    num_workers: int = dataclasses.field(
        default_factory=_default_num_workers,
        metadata={"help": "Number of worker processes (default: os.cpu_count())."})
    item_timeout_s: float = dataclasses.field(
        default=5.0, metadata={"help": "Hard per-item limit in seconds, counted from dispatch to a "
                                       "worker; past it the worker is SIGKILLed and replaced."})
    max_queue: int = dataclasses.field(
        default=100_000, metadata={"help": "Max items waiting for a worker; submit raises QueueFull beyond."})
    memory_limit_mb: int = dataclasses.field(
        default=4096, metadata={"help": "RLIMIT_AS (virtual memory) per worker in MiB; 0 = no limit."})
    preload_modules: tuple[str, ...] = dataclasses.field(
        default=(), metadata={"help": "Modules imported once in the forkserver so new workers start "
                                      "warm, e.g. ('sympy',). Only effective when this pool starts "
                                      "the process's forkserver."})
    start_timeout_s: float = dataclasses.field(
        default=30.0, metadata={"help": "Max seconds for a worker to start and run its initializer."})
    name: str = dataclasses.field(
        default="reward-worker", metadata={"help": "Prefix of worker process names (NAME-<n>)."})

    def __post_init__(self) -> None:
        def bad_int(value: object, minimum: int) -> bool:
            return not isinstance(value, int) or isinstance(value, bool) or value < minimum

        if bad_int(self.num_workers, 1):
            raise ValueError(f"num_workers={self.num_workers!r}: use an int >= 1 (e.g. os.cpu_count())")
        if not _positive_finite(self.item_timeout_s):
            raise ValueError(f"item_timeout_s={self.item_timeout_s!r}: use a finite number of seconds > 0")
        if bad_int(self.max_queue, 1):
            raise ValueError(f"max_queue={self.max_queue!r}: use an int >= 1")
        if bad_int(self.memory_limit_mb, 0) or 0 < self.memory_limit_mb < 64:
            raise ValueError(f"memory_limit_mb={self.memory_limit_mb!r}: use 0 (no limit) or an int "
                             ">= 64 (MiB); Python cannot start under a smaller address-space limit")
        if isinstance(self.preload_modules, str):
            raise ValueError(f"preload_modules={self.preload_modules!r}: pass a tuple of module "
                             f"names, e.g. ({self.preload_modules!r},)")
        modules = tuple(self.preload_modules)
        if not all(isinstance(m, str) and m for m in modules):
            raise ValueError(f"preload_modules={self.preload_modules!r}: every entry must be a "
                             "non-empty module name string, e.g. ('sympy',)")
        object.__setattr__(self, "preload_modules", modules)
        if not _positive_finite(self.start_timeout_s):
            raise ValueError(f"start_timeout_s={self.start_timeout_s!r}: use a finite number of seconds > 0")
        if not isinstance(self.name, str) or not self.name or any(c.isspace() for c in self.name):
            raise ValueError(f"name={self.name!r}: use a non-empty name without whitespace, e.g. 'reward-worker'")


@dataclasses.dataclass(frozen=True)
class PoolStats:
    """Snapshot of pool counters (cumulative) and gauges (current)."""

    completed: int  # items whose job_fn returned
    timeouts: int  # items failed with ItemTimeout
    crashes: int  # unexpected worker deaths (with or without an item)
    job_errors: int  # items failed with JobError
    restarts: int  # replacement workers started
    pending: int  # items waiting for a worker
    busy_workers: int
    alive_workers: int  # started and ready (idle or busy)


# --------------------------------------------------------------------------- internals
class _State(enum.Enum):
    STARTING = "starting"  # started, waiting for MSG_READY
    IDLE = "idle"
    BUSY = "busy"
    DEAD = "dead"  # pipe closed; waiting for the process to exit, escalating signals


@dataclasses.dataclass(eq=False)
class _Item:
    future: concurrent.futures.Future[Any]
    data: bytes | memoryview
    timeout_s: float
    running: bool = False  # future already moved to RUNNING


@dataclasses.dataclass(eq=False)
class _Worker:
    proc: multiprocessing.process.BaseProcess
    conn: multiprocessing.connection.Connection | None
    state: _State = _State.STARTING
    item: _Item | None = None
    deadline: float = math.inf  # start / item / next-escalation deadline, per state
    ready_seen: bool = False
    expected_exit: bool = False  # we asked it to go: not a crash
    signals_left: list[int] = dataclasses.field(default_factory=list)

    @property
    def name(self) -> str:
        return self.proc.name


_MAX_START_BACKOFF_S = 5.0
_MAX_MESSAGES_PER_WAKEUP = 64
_STARTS_BEFORE_FAILING_ITEMS = 3
_live_pools: "weakref.WeakSet[WorkerPool[Any, Any]]" = weakref.WeakSet()
_atexit_lock = threading.Lock()
_atexit_registered = False


def _close_live_pools() -> None:
    for pool in list(_live_pools):
        pool.close(grace_s=0.0)


def _signal_group(pid: int | None, sig: int, *, group_only: bool = False) -> None:
    """Signal the worker's process group (its children too), else just the pid.

    ``group_only`` is for a worker already reaped: its pid may have been reused,
    but a process group of that id can only be the worker's leftover children.
    """
    if pid is None:
        return
    try:
        os.killpg(pid, sig)
        return
    except (ProcessLookupError, PermissionError):
        if group_only:
            return
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class _ForwardHandler(logging.Handler):
    """Re-dispatches a worker's record to the parent's logger of the same name."""

    def emit(self, record: logging.LogRecord) -> None:
        target = logging.getLogger() if record.name == "root" else logging.getLogger(record.name)
        if target.isEnabledFor(record.levelno):
            target.handle(record)


# --------------------------------------------------------------------------- the pool
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
        self._job_fn, self._initializer, self._initargs = job_fn, initializer, tuple(initargs)
        self._ctx = multiprocessing.get_context("forkserver")
        if self._config.preload_modules:
            self._ctx.set_forkserver_preload(list(self._config.preload_modules))
        self._lock = threading.Lock()
        self._pending: deque[_Item] = deque()
        self._closed = False
        self._grace_deadline = math.inf
        self._counters = dict.fromkeys(("completed", "timeouts", "crashes", "job_errors", "restarts"), 0)
        self._busy = self._alive = 0
        self._pids: tuple[int, ...] = ()
        self._workers: list[_Worker] = []  # dispatcher thread only
        self._ids = itertools.count(1)
        self._start_failures = 0
        self._next_start_at = 0.0
        self._startup_done = threading.Event()
        self._startup_error: str | None = None
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._wake_pending = False
        self._log_queue: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
        self._listener = logging.handlers.QueueListener(self._log_queue, _ForwardHandler())
        self._listener.start()
        self._thread = threading.Thread(target=self._run, name=f"{self._config.name}-dispatcher", daemon=True)
        self._thread.start()
        _register_for_atexit(self)
        start_wait = 2 * self._config.start_timeout_s + 5.0
        if not self._startup_done.wait(start_wait) or self._startup_error is not None:
            reason = self._startup_error or f"workers not ready within {start_wait:g}s"
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
        elif not _positive_finite(timeout_s):
            raise ValueError(f"timeout_s={timeout_s!r}: use None or a finite number of seconds > 0")
        try:
            data = ForkingPickler.dumps(payload)
        except Exception as exc:  # pickling can fail in many ways, all the caller's to fix
            raise PayloadError(f"payload could not be pickled: {type(exc).__name__}: {exc}") from exc
        future: concurrent.futures.Future[R] = concurrent.futures.Future()
        with self._lock:
            if self._closed:
                raise PoolClosed("the pool is closed")
            if len(self._pending) >= self._config.max_queue:
                self._pending = deque(i for i in self._pending if not i.future.cancelled())
                if len(self._pending) >= self._config.max_queue:
                    raise QueueFull(f"{len(self._pending)} items already pending (max_queue="
                                    f"{self._config.max_queue}); retry later or raise PoolConfig.max_queue")
            self._pending.append(_Item(future, data, float(timeout_s)))
        self._wake()
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
        with self._lock:
            return PoolStats(pending=len(self._pending), busy_workers=self._busy,
                             alive_workers=self._alive, **self._counters)

    def worker_pids(self) -> tuple[int, ...]:
        """Pids of the ready (idle or busy) workers."""
        with self._lock:
            return self._pids

    def close(self, grace_s: float = 5.0) -> None:
        """Stop accepting items and shut down; idempotent.

        Pending items fail with :class:`PoolClosed`; items already running get
        ``grace_s`` seconds to finish (then fail with PoolClosed).  Workers are
        then sent SIGTERM, then SIGKILL, and reaped; the dispatcher and log
        listener threads are joined.
        """
        with self._lock:
            if not self._closed:
                self._closed = True
                self._grace_deadline = time.monotonic() + max(0.0, grace_s)
        self._wake(force=True)
        if threading.current_thread() is not self._thread:
            self._thread.join(max(0.0, grace_s) + 30.0)
            if self._thread.is_alive():
                logger.error("worker pool %s: dispatcher did not stop", self._config.name)
        _live_pools.discard(self)

    def __enter__(self) -> WorkerPool[P, R]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ dispatcher
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
                self._fail_pending(PoolClosed("the pool was closed before the item was dispatched"))
                for w in self._workers:
                    if w.state in (_State.IDLE, _State.STARTING):
                        self._retire(w, now, [signal.SIGTERM, signal.SIGKILL])
            if closing:
                if now >= self._grace_deadline:
                    return
                if not any(w.state is _State.BUSY for w in self._workers):
                    return
            else:
                self._maintain_workers(now)
                self._dispatch()
            self._update_gauges()
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
        return sum(w.state is not _State.DEAD for w in self._workers)

    def _maintain_workers(self, now: float) -> None:
        while self._alive_or_starting() < self._config.num_workers and now >= self._next_start_at:
            self._start_worker(now)
        if (self._start_failures >= _STARTS_BEFORE_FAILING_ITEMS
                and not any(w.state in (_State.IDLE, _State.BUSY) for w in self._workers)):
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
        self._workers.append(_Worker(proc, parent_conn, deadline=now + self._config.start_timeout_s))

    def _start_failed(self, now: float, reason: str) -> None:
        self._start_failures += 1
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
            if w.state is not _State.IDLE:
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
            w.state, w.item, w.deadline = _State.BUSY, item, time.monotonic() + item.timeout_s

    def _next_item(self) -> _Item | None:
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

    def _resolve(self, item: _Item, *, result: Any = None, error: PoolError | None = None) -> None:
        self._update_gauges()  # stats() agrees with the futures a caller has seen complete
        if not item.running and not item.future.set_running_or_notify_cancel():
            return
        item.running = True
        if error is not None:
            item.future.set_exception(error)
        else:
            item.future.set_result(result)

    def _read_messages(self, w: _Worker) -> None:
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

    def _on_message(self, w: _Worker, data: bytes) -> None:
        try:
            msg = pickle.loads(data)
        except Exception as exc:  # e.g. a result class the parent cannot import
            msg = (_wm.MSG_ERROR, type(exc).__qualname__, f"result could not be unpickled in the parent: {exc}", "")
        tag = msg[0]
        if tag == _wm.MSG_LOG:
            self._log_queue.put_nowait(msg[1])
        elif tag == _wm.MSG_READY and w.state is _State.STARTING:
            w.state, w.deadline, w.ready_seen = _State.IDLE, math.inf, True
            self._start_failures = 0
            if not self._startup_done.is_set() and sum(x.ready_seen for x in self._workers) >= self._config.num_workers:
                self._startup_done.set()
        elif tag == _wm.MSG_INIT_ERROR:
            logger.error("worker pool %s: initializer failed in %s: %s: %s\n%s",
                         self._config.name, w.name, msg[1], msg[2], msg[3])
            self._retire(w, time.monotonic(), [signal.SIGKILL], delay_s=1.0)
            self._start_failed(time.monotonic(), f"initializer raised {msg[1]}: {msg[2]}")
        elif tag in (_wm.MSG_OK, _wm.MSG_ERROR) and w.state is _State.BUSY and w.item is not None:
            item, w.item, w.state, w.deadline = w.item, None, _State.IDLE, math.inf
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

    def _retire(self, w: _Worker, now: float, signals: list[int], delay_s: float = 1.0) -> None:
        """Close the pipe (EOF asks the worker to exit) and escalate through ``signals``."""
        if w.conn is not None:
            w.conn.close()
            w.conn = None
        w.state, w.expected_exit, w.signals_left = _State.DEAD, True, list(signals)
        w.deadline = now + delay_s

    def _lost_pipe(self, w: _Worker, now: float) -> None:
        """The worker's pipe broke: it is dying; wait for its exit status (keep its item)."""
        if w.conn is not None:
            w.conn.close()
            w.conn = None
        if w.state is not _State.DEAD:
            w.state, w.signals_left, w.deadline = _State.DEAD, [signal.SIGKILL], now + 1.0

    def _check_deadlines(self, now: float) -> None:
        for w in list(self._workers):
            if w.deadline > now:
                continue
            if w.state is _State.BUSY and w.item is not None:
                item, w.item = w.item, None
                logger.warning("worker pool %s: item exceeded %.3gs on %s (pid %s); killing it",
                               self._config.name, item.timeout_s, w.name, w.proc.pid)
                _signal_group(w.proc.pid, signal.SIGKILL)
                self._retire(w, now, [signal.SIGKILL], delay_s=2.0)
                with self._lock:
                    self._counters["timeouts"] += 1
                self._resolve(item, error=ItemTimeout(item.timeout_s, w.name, w.proc.pid))
            elif w.state is _State.STARTING:
                _signal_group(w.proc.pid, signal.SIGKILL)
                self._retire(w, now, [signal.SIGKILL], delay_s=2.0)
                self._start_failed(now, f"{w.name} not ready within {self._config.start_timeout_s:g}s")
            elif w.state is _State.DEAD and w.signals_left:
                _signal_group(w.proc.pid, w.signals_left.pop(0))
                w.deadline = now + (1.0 if w.signals_left else 5.0)
            elif w.state is _State.DEAD:
                logger.error("worker pool %s: %s (pid %s) did not exit; abandoning it",
                             self._config.name, w.name, w.proc.pid)
                self._drop(w, exitcode=None)

    def _reap(self, w: _Worker) -> None:
        if w.conn is not None and w.conn.poll():
            self._read_messages(w)  # a result written just before death wins
        try:
            exitcode = w.proc.exitcode
        except (OSError, EOFError, ValueError):
            exitcode = None
        self._drop(w, exitcode)

    def _drop(self, w: _Worker, exitcode: int | None) -> None:
        self._workers.remove(w)
        if w.conn is not None:
            w.conn.close()
            w.conn = None
        if exitcode is not None:  # reaped: kill children the job left in its process group
            _signal_group(w.proc.pid, signal.SIGKILL, group_only=True)
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
        ready = [w for w in self._workers if w.state in (_State.IDLE, _State.BUSY)]
        with self._lock:
            self._busy = sum(w.state is _State.BUSY for w in ready)
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
            if w.state is not _State.DEAD:  # busy ones ran out of grace: SIGTERM right away
                delay = 0.0 if w.state is _State.BUSY else 1.0
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


def _register_for_atexit(pool: WorkerPool[Any, Any]) -> None:
    """Close pools still open at interpreter exit (registered lazily, not at import)."""
    global _atexit_registered
    _live_pools.add(pool)
    with _atexit_lock:
        if not _atexit_registered:
            atexit.register(_close_live_pools)
            _atexit_registered = True
