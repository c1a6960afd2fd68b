"""Public value types of :mod:`reward_service.pool.worker_pool`: errors, config, stats.

Everything here is re-exported by :mod:`reward_service.pool.worker_pool`; import it
from there.
"""

from __future__ import annotations

import dataclasses
import math
import os
import signal
from typing import Any, TypeVar

R = TypeVar("R")

__all__ = [
    "ItemTimeout", "JobError", "Outcome", "PayloadError", "PoolClosed", "PoolConfig",
    "PoolError", "PoolStats", "QueueFull", "WorkerCrashed", "WorkerStartError",
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


Outcome = R | PoolError
"""What :meth:`WorkerPool.map_items` returns per input: the result or the item's PoolError."""


# --------------------------------------------------------------------------- config
def _default_num_workers() -> int:
    return os.cpu_count() or 1


def positive_finite(value: object) -> bool:
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
        if not positive_finite(self.item_timeout_s):
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
        if not positive_finite(self.start_timeout_s):
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
