"""Worker-process side of :mod:`reward_service.pool.worker_pool`.

Everything in here runs inside a worker process forked by the multiprocessing
forkserver.  The parent talks to a worker over one duplex pipe:

* parent -> worker: one pickled payload per message; the worker runs one item
  at a time.  Closing the parent's end (EOF) tells the worker to exit.
* worker -> parent: pickled tuples whose first element is a ``MSG_*`` tag::

      (MSG_READY, pid)                                  bootstrap finished
      (MSG_INIT_ERROR, exc_type, message, traceback)    initializer raised
      (MSG_LOG, logging.LogRecord)                      a forwarded log record
      (MSG_OK, result)                                  job_fn returned
      (MSG_ERROR, exc_type, message, traceback)         job_fn raised

Log records travel over the same per-worker pipe rather than over a shared
``multiprocessing.Queue``: the pool SIGKILLs workers by design, and a worker
killed while holding a shared queue's write lock (or half-way through writing
a large record) would wedge or corrupt log delivery for every other worker.
A private pipe can only be torn by its own worker, which the parent then
treats as a dead worker.
"""

from __future__ import annotations

import ctypes
import logging
import logging.handlers
import multiprocessing
import os
import pickle
import resource
import select
import signal
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from typing import Any

MSG_READY = "ready"
MSG_INIT_ERROR = "init_error"
MSG_LOG = "log"
MSG_OK = "ok"
MSG_ERROR = "error"

_PR_SET_NAME = 15
_HANGUP_GRACE_S = 0.5
# Attributes every LogRecord has; used to strip unpicklable ``extra=`` fields.
_BASE_RECORD_KEYS = frozenset(logging.makeLogRecord({}).__dict__) | {"message"}


class _Channel:
    """Serialises messages to the parent; job threads may log concurrently."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._lock = threading.Lock()

    def send(self, message: tuple[Any, ...]) -> None:
        self.send_bytes(ForkingPickler.dumps(message))

    def send_bytes(self, data: bytes | memoryview) -> None:
        with self._lock:
            self._conn.send_bytes(data)

    def put_nowait(self, record: logging.LogRecord) -> None:
        """Queue-like entry point used by :class:`logging.handlers.QueueHandler`."""
        try:
            data = ForkingPickler.dumps((MSG_LOG, record))
        except (pickle.PicklingError, TypeError, AttributeError, ValueError):
            # An ``extra=`` attribute is unpicklable: forward the standard fields only.
            plain = {k: v for k, v in record.__dict__.items() if k in _BASE_RECORD_KEYS}
            data = ForkingPickler.dumps((MSG_LOG, logging.makeLogRecord(plain)))
        self.send_bytes(data)


def _exc_fields(exc: Exception) -> tuple[str, str, str]:
    try:
        tb = traceback.format_exc()
    except MemoryError:
        tb = ""
    return type(exc).__qualname__, str(exc), tb


def _prctl(option: int, value: int | bytes) -> None:
    """Best-effort Linux prctl(2); silently does nothing elsewhere."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _exit_when_parent_hangs_up(conn: Connection) -> None:
    """Start a daemon thread that kills this worker's process group when the parent's end closes.

    The main thread only reads the pipe between items, so a busy worker would
    not notice a dead (or closing) parent until its job finished.  The thread
    waits for POLLRDHUP (peer closed), never for data, so it does not compete
    with the main thread's reads and does not poll busily.
    """
    rdhup = getattr(select, "POLLRDHUP", None)
    if rdhup is None:  # not Linux: rely on EOF at the next read
        return
    fd = conn.fileno()

    def watch() -> None:
        poller = select.poll()
        poller.register(fd, rdhup)
        while True:
            try:
                events = poller.poll()
            except InterruptedError:
                continue
            for _fd, flags in events:
                if flags & select.POLLNVAL:
                    return
                if flags & (rdhup | select.POLLHUP | select.POLLERR):
                    time.sleep(_HANGUP_GRACE_S)  # an idle worker exits cleanly on EOF meanwhile
                    if os.getpgrp() == os.getpid():  # never the parent's group
                        os.killpg(os.getpgrp(), signal.SIGKILL)
                    os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


def _apply_memory_limit(memory_limit_mb: int) -> None:
    if memory_limit_mb <= 0:
        return
    limit = memory_limit_mb * 1024 * 1024
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY and hard < limit:
        limit = hard
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _install_log_forwarding(channel: _Channel, log_level: int) -> None:
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.addHandler(logging.handlers.QueueHandler(channel))  # type: ignore[arg-type]
    root.setLevel(log_level)


def _run_one(job_fn: Callable[[Any], Any], data: bytes) -> tuple[Any, ...]:
    try:
        payload = pickle.loads(data)
    except Exception as exc:  # any unpickling failure is reported, not fatal
        exc_type, message, tb = _exc_fields(exc)
        return (MSG_ERROR, exc_type, f"payload could not be unpickled in the worker: {message}", tb)
    try:
        return (MSG_OK, job_fn(payload))
    except Exception as exc:  # job_fn is arbitrary user code; MemoryError included
        return (MSG_ERROR, *_exc_fields(exc))


def worker_main(
    conn: Connection,
    job_fn: Callable[[Any], Any],
    initializer: Callable[..., object] | None,
    initargs: Sequence[Any],
    memory_limit_mb: int,
    log_level: int,
) -> None:
    """Bootstrap a worker process and serve items until the parent closes the pipe."""
    try:
        os.setpgid(0, 0)  # own process group: a timeout kill takes the job's children too
    except OSError:
        pass  # then only this process is killed; the watchdog checks before killpg
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's business
    _prctl(_PR_SET_NAME, multiprocessing.current_process().name.encode()[:15])
    _exit_when_parent_hangs_up(conn)
    _apply_memory_limit(memory_limit_mb)
    channel = _Channel(conn)
    _install_log_forwarding(channel, log_level)
    try:
        if initializer is not None:
            try:
                initializer(*initargs)
            except Exception as exc:  # reported to the parent, which backs off and retries
                channel.send((MSG_INIT_ERROR, *_exc_fields(exc)))
                raise SystemExit(1) from exc
        channel.send((MSG_READY, os.getpid()))
    except OSError:
        return  # the pool closed while we were starting
    while True:
        try:
            data = conn.recv_bytes()
        except (EOFError, OSError):
            return  # the parent closed the pipe or is gone: exit quietly
        reply = _run_one(job_fn, data)
        del data
        try:
            blob = ForkingPickler.dumps(reply)
        except Exception as exc:  # an unpicklable result of any kind
            exc_type, message, tb = _exc_fields(exc)
            blob = ForkingPickler.dumps(
                (MSG_ERROR, exc_type, f"job result could not be pickled: {message}", tb)
            )
        del reply
        try:
            channel.send_bytes(blob)
        except OSError:
            return
