"""Per-worker bookkeeping of the pool dispatcher: worker/item records and signalling.

Used only by :mod:`reward_service.pool.dispatcher`; nothing here is public API.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import enum
import logging
import math
import multiprocessing
import multiprocessing.connection
import os
from typing import Any

__all__ = ["ForwardHandler", "Item", "Worker", "WorkerState", "signal_group"]


class WorkerState(enum.Enum):
    STARTING = "starting"  # started, waiting for MSG_READY
    IDLE = "idle"
    BUSY = "busy"
    DEAD = "dead"  # pipe closed; waiting for the process to exit, escalating signals


@dataclasses.dataclass(eq=False)
class Item:
    future: concurrent.futures.Future[Any]
    data: bytes | memoryview
    timeout_s: float
    running: bool = False  # future already moved to RUNNING


@dataclasses.dataclass(eq=False)
class Worker:
    proc: multiprocessing.process.BaseProcess
    conn: multiprocessing.connection.Connection | None
    state: WorkerState = WorkerState.STARTING
    item: Item | None = None
    deadline: float = math.inf  # start / item / next-escalation deadline, per state
    ready_seen: bool = False
    expected_exit: bool = False  # we asked it to go: not a crash
    signals_left: list[int] = dataclasses.field(default_factory=list)

    @property
    def name(self) -> str:
        return self.proc.name


def signal_group(pid: int | None, sig: int, *, group_only: bool = False) -> None:
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


class ForwardHandler(logging.Handler):
    """Re-dispatches a worker's record to the parent's logger of the same name."""

    def emit(self, record: logging.LogRecord) -> None:
        target = logging.getLogger() if record.name == "root" else logging.getLogger(record.name)
        if target.isEnabledFor(record.levelno):
            target.handle(record)
