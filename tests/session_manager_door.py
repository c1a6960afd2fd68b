"""The HTTP front door on the real in-process session manager (E1's ``SessionManager``), for the doors'
integration tests: real environments, tools, sandbox and verifier behind the protocols."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator

from starlette.applications import Starlette

from reward_service.environments.env_config import EnvironmentsConfig
from reward_service.environments.sessions import SessionManager, create_session_manager
from reward_service.http_door.door import DoorConfig, RouteFactory
from reward_service.http_door.upstream import UpstreamConfig
from tests.http_fixtures import serve_door_config


@contextlib.contextmanager
def door_on_session_manager(adapters: list[RouteFactory], *, token: str = "", **config: object
                            ) -> Iterator[tuple[str, Starlette, SessionManager]]:
    """Serves ``adapters`` over a new session manager (``config``: ``EnvironmentsConfig`` fields); yields
    ``(base URL, app, manager)``. The manager is used from the server's event loop only, and closed there
    when the app stops (after the adapters released their sessions)."""
    manager = create_session_manager(EnvironmentsConfig(**{"max_sessions": 4, "verify_workers": 1,
                                                           "sandbox_concurrency": 1, **config}))
    door_config = DoorConfig(UpstreamConfig("127.0.0.1:1"), token=token)
    closed = []

    async def close() -> None:
        await manager.aclose()
        closed.append(True)

    try:
        with serve_door_config(door_config, adapters, episodes=manager) as (url, app):
            app.state.door.on_shutdown.append(close)
            yield url, app, manager
    finally:
        if not closed:  # the server never started or stopped without its lifespan's end
            asyncio.run(close())


def settled(condition: Callable[[], bool], within_s: float = 30.0) -> bool:
    """``condition()`` once the server has caught up (a closed connection's cleanup runs after the client
    returns); False if it never holds within ``within_s``."""
    deadline = time.monotonic() + within_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()
