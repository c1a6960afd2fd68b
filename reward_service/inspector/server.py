"""``reward-service inspect PATH``: index the file, then serve the page on 127.0.0.1 until Ctrl-C.

Loopback only: the page shows prompts and completions, so it is reached from elsewhere through an
SSH tunnel (``ssh -L 8765:127.0.0.1:8765 host``), never by binding a public address.
"""

from __future__ import annotations

import logging
import socket
import sys
import time
from dataclasses import dataclass
from typing import TextIO

from reward_core.keep_alive import SERVER_KEEP_ALIVE_S
from reward_core.ports import free_port
from reward_service.inspector.index import RolloutIndex

logger = logging.getLogger(__name__)

HOST = "127.0.0.1"
DEFAULT_PORT = 8765


@dataclass(frozen=True)
class InspectConfig:
    path: str  # a run directory, its rollouts.jsonl, a results JSONL or a rollouts JSONL
    rollouts: str | None = None  # the rollouts JSONL a results file was scored from (joined by id)
    port: int = DEFAULT_PORT  # 0: any free port


def _check_port(port: int) -> None:
    with socket.socket() as s:
        try:
            s.bind((HOST, port))
        except OSError as exc:
            raise OSError(f"cannot listen on {HOST}:{port} ({exc.strerror}): pick another with --port "
                          f"(--port 0: any free port)") from None


def serve_inspector(config: InspectConfig, out: TextIO = sys.stdout) -> None:
    """Indexes ``config.path`` and serves the inspector until SIGINT/SIGTERM; prints the URL to ``out``."""
    import uvicorn  # the http extra (the CLI checks for it: reward_core.extras)

    from reward_service.inspector.app import create_app

    port = config.port or free_port(HOST)
    _check_port(port)  # before indexing a large file
    started = time.perf_counter()
    index = RolloutIndex(config.path, config.rollouts)
    summary = index.summary()
    print(f"inspecting {summary['rollouts']} rollouts in {summary['groups']} groups from {index.source.path} "
          f"(indexed in {time.perf_counter() - started:.2f} s)\n"
          f"open http://{HOST}:{port}/  (Ctrl-C to stop)", file=out, flush=True)
    try:
        uvicorn.run(create_app(index), host=HOST, port=port, log_level="warning", timeout_graceful_shutdown=2,
                    timeout_keep_alive=SERVER_KEEP_ALIVE_S)
    finally:
        index.close()


def url_of(port: int, **query: str) -> str:
    """The page's address with filters in its query string (for tests and scripts)."""
    params = "&".join(f"{k}={v}" for k, v in query.items())
    return f"http://{HOST}:{port}/" + (f"?{params}" if params else "")

