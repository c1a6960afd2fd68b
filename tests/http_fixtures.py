"""The HTTP front door served for real (uvicorn on a loopback port, in a thread) for tests."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import uvicorn
from starlette.applications import Starlette

from reward_core.episode_contract import EpisodeHost
from reward_core.keep_alive import SERVER_KEEP_ALIVE_S
from reward_service.http_door.app import create_app
from reward_service.http_door.door import DoorConfig, RouteFactory
from reward_service.http_door.upstream import UpstreamConfig


@contextlib.contextmanager
def serve_app(reward_address: str, adapters: list[RouteFactory] | None = None, *, sandbox: str = "", rm: str = "",
              token: str = "", max_wait_ms: float = 5.0, max_batch: int = 256, nemo_gym_reward: str = "",
              timeout_s: float = 120.0) -> Iterator[tuple[str, Starlette]]:
    """Serves the front door (``adapters``: default every one) onto ``reward_address``; yields
    ``(base URL, app)`` (the app's ``state.door`` has the upstreams and the micro-batcher)."""
    config = DoorConfig(UpstreamConfig(reward_address, sandbox, rm, timeout_s, max_batch, max_wait_ms),
                        token=token, nemo_gym_reward=nemo_gym_reward)
    with serve_door_config(config, adapters) as served:
        yield served


@contextlib.contextmanager
def serve_door_config(config: DoorConfig, adapters: list[RouteFactory] | None = None,
                      episodes: EpisodeHost | None = None) -> Iterator[tuple[str, Starlette]]:
    """Serves the front door built from ``config`` (``episodes``: its environments' host); yields
    ``(base URL, app)``."""
    app = create_app(config, adapters, episodes)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on",
                                            timeout_keep_alive=SERVER_KEEP_ALIVE_S))
    thread = threading.Thread(target=server.run, name="http-door", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the HTTP front door did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", app
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@contextlib.contextmanager
def running_door(reward_address: str, **options) -> Iterator[str]:
    """``serve_app`` with every adapter; yields the base URL only."""
    with serve_app(reward_address, **options) as (url, _):
        yield url


@contextlib.contextmanager
def batches_only_when_full(batcher, size: int) -> Iterator[None]:
    """The door's micro-batcher sends a batch only once it holds ``size`` items (no timer flush).

    With ``size`` callers that each wait for their answer before the next call, every batch then
    holds exactly one call of each caller, whatever the scheduling: merging becomes countable.
    """
    saved = batcher.max_items, batcher.max_wait_s
    batcher.max_items, batcher.max_wait_s = size, 600.0
    try:
        yield
    finally:
        batcher.max_items, batcher.max_wait_s = saved
