"""The reward server: ``create_server`` builds and starts one (tests use port 0); ``serve`` runs it.

Start order matters: the Scorer (and its worker processes) exists before any
gRPC server or channel, so no worker is ever forked from a threaded gRPC process.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from dataclasses import asdict, dataclass, field

from reward.v1 import reward_pb2, sandbox_pb2
from reward_core.config_flags import nested
from reward_core.grpc_common import DEFAULT_MAX_CONNECTION_AGE_S, server_options
from reward_core.server_security import ServerSecurity, ServerSecurityConfig, prepare
from reward_core.server_shell import AioServerShell
from reward_core.stop_signals import stop_on_signals, wait_until_set
from reward_service.router.code_executor import shared_sandbox_servicer
from reward_service.router.metrics import RewardMetrics
from reward_service.router.scoring import Scorer, ScorerConfig
from reward_service.router.servicer import RequestLimits, RewardServicer
from reward_service.tasks.code_task import CodeTask
from sandbox.servicer import SandboxServicer

logger = logging.getLogger(__name__)

SERVICE = reward_pb2.DESCRIPTOR.services_by_name["RewardService"]
SANDBOX_SERVICE = sandbox_pb2.DESCRIPTOR.services_by_name["SandboxService"]
SERVICE_NAME = SERVICE.full_name

#: On shutdown, calls still waiting are handed back (partial results) this long before the
#: grace period ends, so their answers are written before the server closes.
HAND_BACK_MARGIN_S = 2.0


@dataclass(frozen=True)
class ServerConfig:
    """Everything ``reward-service serve`` needs; built from CLI flags (see cli.py)."""

    host: str = field(default="127.0.0.1", metadata={
        "help": "address to bind (0.0.0.0 for all: needs TLS, a token or --insecure)"})
    port: int = field(default=50051, metadata={"help": "port to bind; 0 picks a free one"})
    scorer: ScorerConfig = nested(ScorerConfig)      # --workers, --item-timeout-s, ..., --io-threads, endpoints
    limits: RequestLimits = nested(RequestLimits)    # --max-rollouts-per-request, ..., --max-call-s
    max_message_mb: int = field(default=64, metadata={"help": "largest request/response message"})
    grace_s: float = field(default=10.0, metadata={"help": "seconds in-flight calls get on SIGTERM"})
    max_connection_age_s: float = field(default=DEFAULT_MAX_CONNECTION_AGE_S, metadata={
        "help": "clients reconnect (re-resolving DNS) after this long, so new replicas get traffic (0: never)"})
    serve_sandbox: bool = field(default=True, metadata={
        "help": "also serve reward.v1.SandboxService on this port, on the code task's executor"})
    exit_with_parent: bool = field(default=False, metadata={
        "help": "drain and exit when the process that started this server dies (an embedded server)"})
    metrics_port: int = field(default=0, metadata={"help": "Prometheus /metrics port (0: off)"})
    metrics_host: str = field(default="", metadata={"help": "address /metrics binds (empty: the --host)"})
    security: ServerSecurityConfig = field(default_factory=ServerSecurityConfig)

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be in 0..65535, got {self.port}")
        if self.max_message_mb < 1:
            raise ValueError(f"max_message_mb must be >= 1, got {self.max_message_mb}")
        if not self.grace_s >= 0:
            raise ValueError(f"grace_s must be >= 0 seconds, got {self.grace_s}")
        if not self.scorer.item_timeout_s <= self.limits.max_item_timeout_s:
            raise ValueError(f"need 0 < item_timeout_s ({self.scorer.item_timeout_s}) <= max_item_timeout_s "
                             f"({self.limits.max_item_timeout_s})")

    def grpc_options(self) -> list[tuple[str, int]]:
        return server_options(self.max_message_mb, self.max_connection_age_s) + [
            ("grpc.keepalive_time_ms", 30_000),
            ("grpc.keepalive_timeout_ms", 10_000),
        ]


class RewardServer:
    """A started server: ``port`` is the bound port; ``stop()`` drains and shuts down."""

    def __init__(self, config: ServerConfig, scorer: Scorer, owns_scorer: bool,
                 security: ServerSecurity | None = None) -> None:
        self.config = config
        self.security = prepare(config.security, config.host) if security is None else security
        self.scorer = scorer
        self._owns_scorer = owns_scorer
        self.metrics = RewardMetrics(known_tasks=scorer.registry.names())
        self.metrics.attach_pool(scorer.pool)
        self.servicer = RewardServicer(scorer, config.limits, self.metrics)
        services = [(SERVICE, self.servicer)]
        self.sandbox_servicer = self._sandbox_servicer() if config.serve_sandbox else None
        if self.sandbox_servicer is not None:
            services.append((SANDBOX_SERVICE, self.sandbox_servicer))
        self.shell = AioServerShell("reward", services, self.security, config.host,
                                    config.port, config.grpc_options(), max_request_mb=config.max_message_mb)
        self.port = self.shell.port
        self._stopped = False
        if config.metrics_port:
            self.metrics.serve_http(config.metrics_port, config.metrics_host or config.host)

    def _sandbox_servicer(self) -> SandboxServicer | None:
        """A SandboxService on the local ``code`` task's executor (None without one)."""
        names = sorted(self.scorer.registry.names(), key=lambda n: n != "code")
        for name in names:
            task = self.scorer.registry.get(name)
            if isinstance(task, CodeTask):
                return shared_sandbox_servicer(task)
        return None

    @property
    def address(self) -> str:
        return f"{self.config.host}:{self.port}"

    def begin_drain(self) -> None:
        """Health NOT_SERVING and new calls UNAVAILABLE; calls in flight go on (``stop`` finishes)."""
        self.servicer.begin_drain()
        if self.sandbox_servicer is not None:
            self.sandbox_servicer.begin_drain()
        self.shell.set_health(False)

    def stop(self, grace_s: float | None = None) -> None:
        """Graceful shutdown within ``grace_s`` (default: the config's).

        Health turns NOT_SERVING and new calls get UNAVAILABLE at once; calls in flight may
        finish until shortly before the grace period ends, when each is handed back with
        what is verified (the rest UNAVAILABLE per rollout, retryable); then the server
        closes and the worker processes are stopped.
        """
        if self._stopped:
            return
        self._stopped = True
        grace = self.config.grace_s if grace_s is None else grace_s
        margin = min(HAND_BACK_MARGIN_S, grace / 4)
        self.shell.stop(margin, lambda: self._drain(grace - margin))
        self.metrics.close()
        if self.sandbox_servicer is not None:
            self.sandbox_servicer.close()
        if self._owns_scorer:
            self.scorer.close()

    async def _drain(self, wait_s: float) -> None:
        self.servicer.begin_drain()
        if self.sandbox_servicer is not None:
            self.sandbox_servicer.begin_drain()
        deadline = time.monotonic() + wait_s
        while self._active_calls() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        self.servicer.flush()

    def _active_calls(self) -> int:
        sandbox = self.sandbox_servicer.active_calls if self.sandbox_servicer is not None else 0
        return self.servicer.active_calls + sandbox

    def wait(self) -> None:
        self.shell.wait()


def create_server(config: ServerConfig, scorer: Scorer | None = None) -> RewardServer:
    """Builds and starts a server (and its Scorer, unless one is given, which it then won't close).

    Raises ValueError when the bind policy refuses ``config.host`` -- before any worker starts.
    """
    security = prepare(config.security, config.host)
    owns = scorer is None
    scorer = scorer or Scorer(config.scorer)
    try:
        return RewardServer(config, scorer, owns, security)
    except (OSError, RuntimeError):
        if owns:
            scorer.close()
        raise


#: How often an embedded server checks that its parent is alive.
PARENT_CHECK_S = 1.0


def watch_parent(stop: threading.Event, interval_s: float = PARENT_CHECK_S) -> threading.Thread:
    """Sets ``stop`` once this process's parent is gone (it is re-parented: ``getppid`` changes).

    Polling works whatever thread started us and needs no ``preexec_fn`` (unsafe in a threaded
    trainer), unlike PR_SET_PDEATHSIG.
    """
    parent = os.getppid()

    def watch() -> None:
        while not stop.wait(interval_s):
            if os.getppid() != parent:
                logger.warning("parent process %d is gone: draining and exiting", parent)
                stop.set()
    thread = threading.Thread(target=watch, name="parent-watch", daemon=True)
    thread.start()
    return thread


def serve(config: ServerConfig) -> None:
    """Runs until SIGTERM/SIGINT (or, with ``exit_with_parent``, its parent's death), then drains."""
    logger.info("starting reward server with config %s", asdict(config))
    server = create_server(config)
    stop = stop_on_signals()
    if config.exit_with_parent:
        watch_parent(stop)
    logger.info("reward server listening on %s with tasks %s; %s", server.address, server.scorer.registry.names(),
                server.security.describe())
    wait_until_set(stop)
    logger.info("draining (grace %.1fs)", config.grace_s)
    server.stop()
    logger.info("stopped")
