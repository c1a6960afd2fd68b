"""A real SessionManager on an event loop of its own thread, for tests that drive it synchronously.

    with running_manager(EnvironmentsConfig(max_sessions=2)) as (manager, run):
        start = run(manager.open(EpisodeSpec("arithmetic_tools", index=0)))

``run(coro)`` runs a coroutine on the manager's loop and returns its result (raising what it raised).
The manager is real: the sandbox, the calculator workers and the Scorer's verifier workers.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

from reward_service.environments.env_config import EnvironmentsConfig
from reward_service.environments.sessions import SessionManager, create_session_manager

T = TypeVar("T")
Runner = Callable[[Coroutine[Any, Any, T]], T]


class ManualClock:
    """A clock the test moves (``advance``), for deadlines and idle reaping without waiting."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@contextlib.contextmanager
def loop_thread() -> Iterator[tuple[asyncio.AbstractEventLoop, Runner]]:
    """An event loop running on a daemon thread, and ``run(coro)`` for it."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="test-loop", daemon=True)
    thread.start()

    def run(coro: Coroutine[Any, Any, T], timeout_s: float = 120.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout_s)

    try:
        yield loop, run
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


@contextlib.contextmanager
def running_manager(config: EnvironmentsConfig | None = None,
                    **options: Any) -> Iterator[tuple[SessionManager, Runner]]:
    """A real manager (``create_session_manager(config, **options)``) and ``run``; closed on exit."""
    config = config or EnvironmentsConfig(max_sessions=8, sandbox_concurrency=2, verify_workers=1)
    manager = create_session_manager(config, **options)
    with loop_thread() as (_, run):
        try:
            yield manager, run
        finally:
            run(manager.aclose())
