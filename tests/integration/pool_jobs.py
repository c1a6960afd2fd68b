"""Module-level job functions for tests/integration/test_worker_pool.py.

They run inside worker processes, so they must be importable by reference.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def square(x: int) -> int:
    return x * x


def identity(x: Any) -> Any:
    return x


def pid_of_worker(_: object) -> int:
    return os.getpid()


def parent_pid_of_worker(_: object) -> int:
    return os.getppid()


def sleep_then_return(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def dispatch(payload: tuple[str, Any]) -> Any:
    """Run the job named ``payload[0]`` with argument ``payload[1]`` (mixed batches)."""
    name, arg = payload
    return globals()[name](arg)


def sleep_forever(_: object) -> None:
    while True:
        time.sleep(3600)


def exit_with(code: int) -> None:
    os._exit(code)


def kill_self(_: object) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def segfault(_: object) -> None:
    ctypes.string_at(0)


def raise_value_error(message: str) -> None:
    raise ValueError(message)


def allocate_gb(gigabytes: int) -> int:
    block = bytearray(gigabytes * 1024**3)
    return len(block)


def spawn_child_then_hang(pid_file: str) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    Path(pid_file).write_text(f"{os.getpid()} {child.pid}")
    sleep_forever(None)


def log_warning(marker: str) -> str:
    log.warning("pool job marker %s", marker)
    return marker


def touch(path: str) -> str:
    Path(path).touch()
    return path


def return_unpicklable(_: object) -> Any:
    return lambda: None


def modules_loaded(names: list[str]) -> dict[str, bool]:
    return {name: name in sys.modules for name in names}


_initialized_with: Any = None


def remember(value: Any) -> None:
    """Initializer: stores ``value`` for :func:`initialized_value`."""
    global _initialized_with
    _initialized_with = value


def initialized_value(_: object) -> Any:
    return _initialized_with


def failing_initializer() -> None:
    raise RuntimeError("initializer exploded")


def log_flood_forever(_: object) -> None:
    flood = logging.getLogger("tests.integration.pool_jobs.flood")
    while True:
        flood.warning("flooding the log pipe")
