"""The sandbox server: ``create_server`` builds and starts one (tests use port 0); ``serve`` runs it.

    python -m sandbox serve --port 50053 --workers 8 --backend process

Start order matters: the executor (and its sandbox processes: bwrap zygotes or
containers) exists before the gRPC server, so nothing is ever forked from a
threaded gRPC process. The server runs on the suite's one server shell
(``reward_core/server_shell.py``: ``grpc.aio`` on its own event-loop thread), so a call
waiting for its programs holds no thread and health answers however many calls wait; the
programs themselves run on ``--workers`` threads, one per sandbox slot. Health
(``grpc.health.v1``) answers SERVING for "" and ``reward.v1.SandboxService`` once the
server is up, NOT_SERVING while draining; server reflection is on, so
``grpcurl -plaintext localhost:50053 list`` works. This server
runs code for its callers: off loopback it needs TLS, a bearer token or an explicit
``--insecure`` (see ``reward_core/server_security.py``); health and reflection stay open.
``--metrics-port`` serves Prometheus metrics (``sandbox/server_metrics.py``) on ``/metrics``.
Every limit a request may ask for is capped by a flag (``--max-memory-mb``, ``--max-processes``,
``--max-output-bytes``, ``--max-code-bytes``, ``--max-cases``, ``--max-wall-s``, ...); a request
above one is INVALID_ARGUMENT naming the limit, the value and the flag.
"""

from __future__ import annotations

import logging
import os
from dataclasses import asdict, dataclass, field

from reward.v1 import sandbox_pb2
from reward_core.config_flags import nested
from reward_core.grpc_common import DEFAULT_MAX_CONNECTION_AGE_S, server_options
from reward_core.metrics_http import MetricsEndpoint
from reward_core.sandbox_contract import Executor
from reward_core.server_security import ServerSecurity, ServerSecurityConfig, prepare
from reward_core.server_shell import AioServerShell
from reward_core.stop_signals import stop_on_signals, wait_until_set
from sandbox.languages import Language, load_languages
from sandbox.request_limits import RequestLimits
from sandbox.servicer import SandboxServicer

logger = logging.getLogger(__name__)

SERVICE = sandbox_pb2.DESCRIPTOR.services_by_name["SandboxService"]
SERVICE_NAME = SERVICE.full_name
BACKENDS = ("process", "docker")


def available_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class SandboxServerConfig:
    """Everything ``python -m sandbox serve`` needs; built from CLI flags (see cli.py)."""

    host: str = field(default="127.0.0.1", metadata={
        "help": "address to bind (0.0.0.0 for all: needs TLS, a token or --insecure)"})
    port: int = field(default=50053, metadata={"help": "port to bind; 0 picks a free one"})
    backend: str = field(default="process", metadata={"help": "process (bwrap sandboxes) or docker (containers)"})
    workers: int = field(default=0, metadata={"help": "programs run at once (sandbox slots); 0: the CPUs available"})
    # Not "languages": its environment variable would be SANDBOX_LANGUAGES, the language *set* of
    # scripts/system_setup.sh and the runner image (core|all|a,b), a different thing.
    languages_file: str = field(default="", metadata={
        "help": "YAML or TOML file of extra or overriding languages (see sandbox/languages.toml)"})
    limits: RequestLimits = nested(RequestLimits)  # the caps on what a call may ask: --max-batch, ...
    max_message_mb: int = field(default=64, metadata={"help": "largest request/response message"})
    max_connection_age_s: float = field(default=DEFAULT_MAX_CONNECTION_AGE_S, metadata={
        "help": "clients reconnect (re-resolving DNS) after this long, so new replicas get traffic (0: never)"})
    grace_s: float = field(default=10.0, metadata={"help": "seconds in-flight calls get on SIGTERM"})
    metrics_port: int = field(default=0, metadata={"help": "Prometheus /metrics port (0: off)"})
    metrics_host: str = field(default="", metadata={"help": "address /metrics binds (empty: the --host)"})
    compile_cache_dir: str = field(default="", metadata={
        "help": "directory of successful compiles kept across executions and restarts (empty: a private "
                "temporary one); sandbox/compile_artifacts.py"})
    compile_cache_mb: int = field(default=512, metadata={"help": "megabytes of compiled artifacts kept (0: no cache)"})
    compile_cache_entries: int = field(default=1024, metadata={"help": "compiles kept (0: no cache)"})
    fork_servers: str = field(default="", metadata={
        "help": "comma-separated languages whose warm fork servers each slot (either backend) starts; "
                "'default' stands for ruby, php and R (empty: just those), e.g. default,racket,nodejs; "
                "'none': no server"})
    security: ServerSecurityConfig = field(default_factory=ServerSecurityConfig)

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be in 0..65535, got {self.port}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        if self.workers < 0:
            raise ValueError(f"workers must be >= 0 (0: one per available CPU), got {self.workers}")
        if self.max_message_mb < 1:
            raise ValueError(f"max_message_mb must be >= 1, got {self.max_message_mb}")
        if self.compile_cache_mb < 0 or self.compile_cache_entries < 0:
            raise ValueError("compile_cache_mb and compile_cache_entries must be >= 0 (0: no compile cache)")
        if not 0 <= self.metrics_port <= 65535:
            raise ValueError(f"metrics_port must be in 0..65535 (0: off), got {self.metrics_port}")
        if self.grace_s < 0:
            raise ValueError(f"grace_s must be >= 0, got {self.grace_s}")

    @property
    def concurrency(self) -> int:
        return self.workers or available_cpus()

    def executor_options(self) -> dict[str, object]:
        """The backend's own caps, set to this server's (the process backend's zygote clamps to them), and
        the compile-artifact cache's place and bounds."""
        cache = {"compile_cache_dir": self.compile_cache_dir, "compile_cache_mb": self.compile_cache_mb,
                 "compile_cache_entries": self.compile_cache_entries}
        servers = {} if not self.fork_servers else {"fork_servers": tuple(
            name.strip() for name in self.fork_servers.split(",") if name.strip() not in ("", "none"))}
        if self.backend == "process":
            return {"max_memory_mb": self.limits.max_memory_mb, "max_processes": self.limits.max_processes, **cache,
                    **servers}
        return {**cache, **servers}

    def language_table(self) -> dict[str, Language]:
        return load_languages(self.languages_file or None)


class SandboxServer:
    """A started server: ``port`` is the bound port; ``stop()`` drains and shuts down."""

    def __init__(self, config: SandboxServerConfig, executor: Executor, languages: dict[str, Language],
                 owns_executor: bool, security: ServerSecurity | None = None) -> None:
        self.config = config
        self.security = prepare(config.security, config.host) if security is None else security
        self.executor = executor
        self._owns_executor = owns_executor
        self._stopped = False
        self.servicer = SandboxServicer(executor, languages, config.limits, config.concurrency)
        if getattr(executor, "compile_cache", None) is not None:     # a local executor (not a remote one)
            self.servicer.metrics.watch_compile_cache(executor.compile_cache)
        if getattr(executor, "artifact_cache", None) is not None:    # successful compiles (compile_artifacts.py)
            self.servicer.metrics.watch_artifact_cache(executor.artifact_cache)
        self.metrics_endpoint = MetricsEndpoint(self.servicer.metrics.registry)
        try:
            if config.metrics_port:
                self.metrics_endpoint.serve(config.metrics_port, config.metrics_host or config.host)
            self.shell = AioServerShell("sandbox", [(SERVICE, self.servicer)], self.security, config.host,
                                        config.port, server_options(config.max_message_mb, config.max_connection_age_s),
                                        max_request_mb=config.max_message_mb)
        except (OSError, RuntimeError):
            self.metrics_endpoint.close()
            self.servicer.close()
            raise
        self.port = self.shell.port

    @property
    def address(self) -> str:
        return f"{self.config.host}:{self.port}"

    def begin_drain(self) -> None:
        """Reports NOT_SERVING and answers new calls UNAVAILABLE (calls already running go on)."""
        self.servicer.begin_drain()
        self.shell.set_health(False)

    def stop(self, grace_s: float | None = None) -> None:
        """Drains (see ``begin_drain``), then stops: in-flight calls may finish within ``grace_s``
        (default: the config's), then are cancelled (their programs killed); closes the sandbox."""
        if self._stopped:
            return
        self._stopped = True
        self.servicer.begin_drain()
        self.shell.stop(self.config.grace_s if grace_s is None else grace_s)
        self.servicer.close()
        self.metrics_endpoint.close()
        if self._owns_executor:
            self.executor.close()

    def wait(self) -> None:
        self.shell.wait()


def create_server(config: SandboxServerConfig, executor: Executor | None = None) -> SandboxServer:
    """Builds and starts a server, creating its executor first (unless one is given, which it won't close).

    Raises ValueError when the bind policy refuses ``config.host`` -- before any sandbox starts.
    """
    security = prepare(config.security, config.host)
    languages = config.language_table()
    owns = executor is None
    if executor is None:
        from sandbox.factory import create_executor

        executor = create_executor(config.backend, concurrency=config.concurrency, languages=languages,
                                   **config.executor_options())
    # What runs is the executor's to say where it probes its own (docker: the runner image's toolchains).
    languages = getattr(executor, "languages", None) or languages
    try:
        return SandboxServer(config, executor, languages, owns, security)
    except (OSError, RuntimeError):
        if owns:
            executor.close()
        raise


def serve(config: SandboxServerConfig) -> None:
    """Runs until SIGTERM/SIGINT, then drains gracefully."""
    logger.info("starting sandbox server with config %s", asdict(config))
    stop = stop_on_signals()     # first: a SIGTERM that arrives while the server starts still drains it
    server = create_server(config)
    logger.info("sandbox server listening on %s: %s backend, %d programs at once, languages %s; %s",
                server.address, config.backend, config.concurrency, sorted(config.language_table()),
                server.security.describe())
    wait_until_set(stop)
    logger.info("draining (grace %.1fs)", config.grace_s)
    server.stop()
    logger.info("stopped")
