"""An ASGI app served by uvicorn on a loopback port, in a thread of this process, until ``stop()``.

The local judge endpoint and the fault proxy run this way in tests and benchmarks (port 0: the
kernel picks a free port, read back once uvicorn listens); their CLIs run uvicorn in the foreground.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from reward_core.keep_alive import SERVER_KEEP_ALIVE_S

START_TIMEOUT_S = 60.0


class ServedApp:
    """``app`` served on ``host:port`` (0: any free port) in a daemon thread; ``url`` once started."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 0, name: str = "asgi",
                 graceful_s: float = 1.0, lifespan: str = "off") -> None:
        import uvicorn

        config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan=lifespan,
                                timeout_graceful_shutdown=graceful_s,
                                timeout_keep_alive=SERVER_KEEP_ALIVE_S)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name=name, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{name}: uvicorn did not start on {host}:{port}")
            time.sleep(0.01)
        self.host = host
        self.port: int = self._server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://{host}:{self.port}"

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stops serving: open connections get ``graceful_s`` to finish, then are closed."""
        self._server.should_exit = True
        self._thread.join(timeout=timeout_s)

    def __enter__(self) -> ServedApp:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
